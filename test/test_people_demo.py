"""The `people` and `pallet` scenarios end to end (`orca-nav demo`: fleet_sim_node's
pedestrians, scans and boxes, orca_node's tracked agents and scans, the recorder and the
report), and the report's separation to people and clearance to unmapped boxes."""
import json

import numpy as np
import pytest

from orca_nav.bringup.report import PersonTrack, RobotTrack, fleet_report, format_table


def test_the_report_gives_the_separation_to_people():
    robots = [RobotTrack('a', 0.3, [0.0, 1.0], [[0.0, 0.0], [1.0, 0.0]], [[1.0, 0.0]], [1.0]),
              RobotTrack('b', 0.3, [0.0, 1.0], [[0.0, 5.0], [0.0, 5.0]], [[0.0, 5.0]], [0.0])]
    people = [PersonTrack('person0', 0.25, np.array([0.0, 1.0]), np.array([[2.0, 0.0],
                                                                           [1.7, 0.0]])),
              PersonTrack('person1', 0.25, np.array([0.0, 1.0]), np.array([[0.0, 6.0],
                                                                           [0.0, 6.0]]))]
    report = fleet_report(robots, people=people, person_contacts=0, sample_dt=0.1)
    # a ends 0.7 m from person0 (centres): 0.7 - 0.3 - 0.25; b stays 1 m from person1.
    assert report['robots']['a']['min_person_separation'] == pytest.approx(0.15)
    assert report['robots']['a']['closest_person'] == 'person0'
    assert report['robots']['b']['min_person_separation'] == pytest.approx(0.45)
    assert report['fleet']['min_person_separation'] == pytest.approx(0.15)
    assert report['fleet']['people'] == 2 and report['fleet']['person_contacts'] == 0
    assert 'robot-person contacts 0' in format_table(report)
    assert 'people' not in fleet_report(robots)['fleet']        # no people: no such entries


@pytest.mark.ros
@pytest.mark.slow
def test_people_demo_meets_people_only_at_rest_and_arrives(tmp_path, capsys):
    from orca_nav.bringup.cli import main
    out = tmp_path / 'people'
    status = main(['demo', '--scenario', 'people', '--out', str(out)])
    report = json.loads((out / 'report.json').read_text())
    fleet = report['fleet']
    print(capsys.readouterr().out)
    assert status == 0
    assert fleet['all_reached'] and fleet['robots'] == 6
    # People who avoid no one walk into robots; the safety layer keeps every robot at rest then.
    contacts = fleet['contacts']
    assert fleet['people'] == 10 and fleet['contacts_while_moving'] == 0
    assert contacts['robot_robot'] == contacts['robot_obstacle'] == {'moving': 0, 'rest': 0}
    assert (out / 'trajectories.png').stat().st_size > 10_000


def test_the_report_gives_the_clearance_to_unmapped_boxes():
    robots = [RobotTrack('a', 0.3, [0.0, 1.0], [[0.0, 0.0], [1.0, 0.0]], [[1.0, 0.0]], [1.0])]
    report = fleet_report(robots, boxes=np.array([[1.5, -1.0, 2.0, 1.0]]))
    assert report['robots']['a']['min_unmapped_clearance'] == pytest.approx(0.2)
    assert report['fleet']['unmapped_obstacles'] == 1
    assert report['fleet']['min_unmapped_clearance'] == pytest.approx(0.2)
    assert 'min clearance to them 0.20 m' in format_table(report)


@pytest.mark.ros
@pytest.mark.slow
def test_pallet_demo_goes_around_the_unmapped_pallet(tmp_path, capsys):
    from orca_nav.bringup.cli import main
    out = tmp_path / 'pallet'
    status = main(['demo', '--scenario', 'pallet', '--out', str(out)])
    fleet = json.loads((out / 'report.json').read_text())['fleet']
    print(capsys.readouterr().out)
    assert status == 0 and fleet['all_reached'] and fleet['collisions'] == 0
    assert fleet['unmapped_obstacles'] == 1 and fleet['min_unmapped_clearance'] > 0.0
