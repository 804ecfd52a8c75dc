"""The traffic-rules annotation: lanes' directions, zones' areas, and the file's errors."""
import math

import numpy as np
import pytest

from orca_nav.core.traffic_rules import TrafficRules

RULES = {'frame_id': 'map',
         'lanes': [{'name': 'east', 'from': [0.0, 0.0], 'to': [10.0, 0.0], 'width': 2.0},
                   {'name': 'north', 'from': [5.0, -5.0], 'to': [5.0, 5.0], 'width': 2.0}],
         'zones': [{'name': 'door', 'polygon': [[20, 0], [22, 0], [22, 2], [20, 2]]},
                   {'name': 'ell', 'polygon': [[30, 0], [34, 0], [34, 1], [31, 1], [31, 4],
                                               [30, 4]]}]}


def test_travel_against_a_lane_is_more_than_120_degrees_off_its_direction():
    rules = TrafficRules.from_dict(RULES)
    x = np.full(5, 2.0)
    y = np.zeros(5)
    heading = np.radians([0.0, 90.0, 119.0, 121.0, 180.0])
    assert rules.against(x, y, heading).tolist() == [False, False, False, True, True]
    # Outside every lane, or turning in place, nothing is against.
    assert not rules.against(2.0, 1.5, math.pi)
    assert not rules.against(-0.5, 0.0, math.pi)
    assert not rules.against(2.0, 0.0, np.nan)


def test_where_lanes_overlap_a_motion_must_not_be_against_either():
    rules = TrafficRules.from_dict(RULES)
    # At the crossing (5, 0): east is along 'east' and across 'north'; west and south are not.
    heading = np.radians([0.0, 90.0, 180.0, 270.0])
    assert rules.against(np.full(4, 5.0), np.zeros(4), heading).tolist() == \
        [False, False, True, True]


def test_slack_counts_headings_closer_to_the_lane_as_against():
    rules = TrafficRules.from_dict(RULES)
    heading = np.radians([110.0, 116.0, 125.0])
    assert rules.against(np.full(3, 2.0), np.zeros(3), heading).tolist() == [False, False, True]
    assert rules.against(np.full(3, 2.0), np.zeros(3), heading, slack=np.radians(5.0)).tolist() \
        == [False, True, True]


def test_a_straight_move_is_against_a_lane_only_where_the_lane_holds_both_ends():
    rules = TrafficRules.from_dict(RULES)
    a = [[3.0, 0.0], [3.0, 0.0], [3.0, 0.8], [3.0, 0.0], [1.0, 0.0]]
    b = [[2.0, 0.0], [4.0, 0.0], [2.0, 0.8], [2.0, 1.5], [-1.0, 0.0]]
    # West inside 'east': against; east: along; 0.2 m from its edge or leaving it: not with an
    # inset of 0.5 m; at its west end, one end outside: not.
    assert rules.against_between(a, b).tolist() == [True, False, True, False, False]
    assert rules.against_between(a, b, inset=0.5).tolist() == [True, False, False, False, False]


def test_points_far_from_every_lane_are_against_none():
    rules = TrafficRules.from_dict(RULES)
    rng = np.random.default_rng(3)
    x, y, heading = rng.uniform(-10.0, 40.0, (3, 5000))
    inside = rules.in_lanes(np.column_stack([x, y]))
    cosine = np.cos(heading)[:, None] * np.array([1.0, 0.0]) + \
        np.sin(heading)[:, None] * np.array([0.0, 1.0])
    expected = (inside & (cosine < -0.5)).any(axis=1)
    assert expected.any() and np.array_equal(rules.against(x, y, heading), expected)


def test_motions_as_steps():
    rules = TrafficRules.from_dict(RULES)
    points = [[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]]
    steps = [[0.1, 0.0], [-0.1, 0.0], [0.0, 0.0]]
    assert rules.against_motion(points, steps).tolist() == [False, True, False]


def test_zones_hold_their_inside_including_concave_polygons():
    rules = TrafficRules.from_dict(RULES)
    points = [[21.0, 1.0], [23.0, 1.0], [30.5, 3.0], [33.0, 3.0], [33.0, 0.5]]
    assert rules.in_zones(points).tolist() == [[True, False], [False, False], [False, True],
                                               [False, False], [False, True]]


def test_round_trip_through_yaml(tmp_path):
    import yaml
    path = tmp_path / 'traffic.yaml'
    path.write_text(yaml.safe_dump(RULES))
    rules = TrafficRules.from_yaml(path)
    assert rules.to_dict() == TrafficRules.from_dict(rules.to_dict()).to_dict()
    assert [lane.name for lane in rules.lanes] == ['east', 'north']
    assert math.isclose(rules.lanes[1].heading, math.pi / 2)
    empty = tmp_path / 'empty.yaml'
    empty.write_text('')
    assert TrafficRules.from_yaml(empty).empty


@pytest.mark.parametrize('mend, message', [
    (lambda d: d.update(lines=[]), "unknown field 'lines'"),
    (lambda d: d.update(frame_id=''), 'frame_id must be a non-empty string'),
    (lambda d: d.update(lanes={'a': 1}), 'lanes must be a list'),
    (lambda d: d['lanes'][1].pop('width'), "lanes[1] is missing field 'width'"),
    (lambda d: d['lanes'][0].update(width=0.0), 'lanes[0].width must be finite and > 0, got 0'),
    (lambda d: d['lanes'][0].update(to=[0.0, 0.0]), 'lanes[0]: from and to are the same point'),
    (lambda d: d['lanes'][0].update(to=[1.0, 'x']), 'lanes[0].to must be [x, y] of finite'),
    (lambda d: d['lanes'][0].update(to=[1.0, 2.0, 3.0]), 'lanes[0].to must be [x, y], got'),
    (lambda d: d['lanes'][0].update(speed=1.0), "lanes[0]: unknown field 'speed'"),
    (lambda d: d['zones'][0].update(polygon=[[0, 0], [1, 1]]), 'zones[0].polygon must be 3 or'),
    (lambda d: d['zones'][0].update(polygon=[[0, 0], [1, 1], [2, 2]]), 'encloses no area'),
    (lambda d: d['zones'][1].update(name='east'), "'east' is repeated"),
    (lambda d: d['zones'][1].update(name=3), 'zones[1].name must be a non-empty string'),
])
def test_a_bad_file_is_refused_naming_the_entry_and_field(mend, message):
    import copy
    data = copy.deepcopy(RULES)
    mend(data)
    with pytest.raises(ValueError, match=None) as err:
        TrafficRules.from_dict(data, 'warehouse_traffic.yaml')
    assert message in str(err.value)
    assert str(err.value).startswith('warehouse_traffic.yaml')


def test_the_shipped_warehouse_rules_lie_in_its_aisles():
    from pathlib import Path

    from orca_nav.core.grid import OccupancyGrid
    maps = Path(__file__).resolve().parents[1] / 'config' / 'maps'
    rules = TrafficRules.from_yaml(maps / 'warehouse_traffic.yaml')
    grid = OccupancyGrid.from_map_yaml(maps / 'warehouse.yaml')
    assert len(rules.lanes) == 8 and rules.frame_id == 'map'
    for lane in rules.lanes:
        along = np.linspace(0.0, 1.0, 50)[:, None]
        centre = np.array(lane.start) + along * (np.array(lane.end) - np.array(lane.start))
        # Each lane's centre line runs through its aisle, as far from a shelf as the aisle allows.
        assert (grid.clearance_at(centre) >= 0.5 * lane.width - grid.resolution).all(), lane.name
