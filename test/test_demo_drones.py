"""`orca-nav demo --scenario drones | drones_sphere` end to end over real DDS: every drone at its
3-D goal (altitude included), no contact, report.json with 3-D separations and the altitude
each drone flew at, and the top + side picture."""
import json

import numpy as np
import pytest

from orca_nav.bringup.cli import load_scenario, main


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.parametrize('scenario', ['drones', 'drones_sphere'])
def test_drone_demos_reach_every_3d_goal_without_collisions(tmp_path, capsys, scenario):
    out = tmp_path / scenario
    status = main(['demo', '--scenario', scenario, '--out', str(out)])
    captured = capsys.readouterr()
    assert status == 0, captured.err[-3000:]
    report = json.loads((out / 'report.json').read_text())
    fleet = report['fleet']
    cfg = load_scenario(scenario)
    assert fleet['all_reached'] and fleet['reached'] == len(cfg.robots) >= 12
    assert fleet['collisions'] == 0 and fleet['min_separation'] > 0.0
    assert fleet['separation'] == '3-D' and report['map_3d'] == str(cfg.map_3d_path)
    for robot in cfg.robots:
        entry = report['robots'][robot.name]
        goal = np.array([*robot.goals[0][:2], robot.goal_z])
        assert entry['reached'] and entry['collisions'] == 0
        assert np.linalg.norm(np.array(entry['final_position']) - goal) <= \
            2 * cfg.demo.goal_tolerance
        low, high = entry['altitude_range']
        assert low <= min(robot.start_z, goal[2]) + 0.3 and high >= max(robot.start_z, goal[2]) - 0.3
        assert entry['min_obstacle_clearance'] > 0.0
    assert (out / 'trajectories.png').read_bytes()[:4] == b'\x89PNG'
