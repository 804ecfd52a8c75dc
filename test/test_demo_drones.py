"""`orca-nav demo --scenario drones | drones_sphere` end to end over real DDS: every drone at its
3-D goal (altitude included), no contact, report.json with 3-D separations and the altitude
each drone flew at, and the top + side picture."""
import json

import numpy as np
import pytest

from orca_nav.bringup.cli import main
from orca_nav.bringup.demo import load_scenario


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
        assert low <= min(robot.start_z, goal[2]) + 0.3
        assert high >= max(robot.start_z, goal[2]) - 0.3
        assert entry['min_obstacle_clearance'] > 0.0
    assert (out / 'trajectories.png').read_bytes()[:4] == b'\x89PNG'


@pytest.mark.ros
def test_drones_the_planner_cannot_plan_for_end_the_run_early_and_the_report_says_why(tmp_path):
    """A budget of one expansion (four on the second try) plans for no drone: both hold still;
    the run ends as soon as the planner said so, not at the 120 s limit, and the report, the
    summary table and the exit status say what happened."""
    from orca_nav.bringup.demo import demo_exit_status, run_demo
    from orca_nav.bringup.fleet_file import load_fleet_config
    from orca_nav.bringup.report import format_table
    raw = load_scenario('drones', 2).to_dict()
    raw['planner_node'] = {**raw.get('planner_node', {}), 'plan_max_expansions': 1}
    cfg = load_fleet_config(raw)
    report = run_demo(cfg, tmp_path / 'out')
    assert report['fleet']['recorded_time'] < 30.0 < cfg.demo.duration
    assert demo_exit_status(report) == 1 and report['fleet']['reached'] == 0
    table = format_table(report)
    for robot in cfg.robots:
        entry = report['robots'][robot.name]
        assert entry['outcome'] == 'planning failed', entry
        assert entry['planning_failure'].startswith(
            'planning failed (timeout): expansion budget 4 spent after'), entry
        assert entry['planning_failure'].endswith(
            '(tried again with 4x the budget of 1 expansions)'), entry
        assert f'planning failed: {entry["planning_failure"]}' in table
    assert '0/2 robots at their goals (2 could not be planned for)' in table
    stored = json.loads((tmp_path / 'out' / 'report.json').read_text())
    assert stored['robots'] == report['robots']
