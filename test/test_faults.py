"""`orca-nav faults`: a short version of every built-in fault, run on a small fleet over real
DDS; each must end with no collision and every robot that can still reach its goal there."""
import json

import numpy as np
import pytest

from orca_nav.bringup.faults import (
    FAULT_TIME_S,
    OUTAGE_S,
    NodeOutage,
    fault_cases,
    format_fault_table,
    outage_times,
    run_case,
    suite_passed,
    summarize,
)
from orca_nav.bringup.fleet_file import load_fleet_config
from orca_nav.bringup.report import RobotTrack

ODOM_TIMEOUT_S = 0.5        # orca_node's default


def small_fleet():
    """Three robots swapping across a 2.5 m ring: about 6 s of motion, the faults at 2 s."""
    ring = [(2.5, 0.0), (-1.25, 2.165), (-1.25, -2.165)]
    return load_fleet_config({
        'name': 'fault_ring', 'defaults': {'radius': 0.25, 'max_speed': 1.0},
        'robots': [{'name': f'robot{i}', 'start': [x, y], 'goal': [-x, -y]}
                   for i, (x, y) in enumerate(ring)],
        'demo': {'duration': 20.0, 'goal_tolerance': 0.25}})


CASES = {case.name: case for case in fault_cases('robot0')}


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.parametrize('name', list(CASES))
def test_each_fault_ends_without_collision_and_with_every_able_robot_at_its_goal(name):
    case = CASES[name]
    result = run_case(small_fleet(), case, real_time_factor=1.0)
    assert result['collisions'] == 0, result
    assert result['at_goal'] == result['able'] == (2 if case.dead_robot else 3), result
    assert result['min_separation'] > 0.0, result
    if case.kill == '/orca_node':
        # The robots stand within 2 x odom_timeout of the kill (the bases' cmd_vel watchdog,
        # then braking) and move again once it is back.
        assert result['stopped_after'] is not None
        assert result['stopped_after'] <= 2.0 * ODOM_TIMEOUT_S, result
        assert result['resumed_after'] is not None and result['resumed_after'] <= 1.0, result
    if case.kill == '/planner_node':
        assert result['resumed_after'] is not None, result


def test_the_rows_that_need_no_wall_time_run_in_lockstep():
    """Faults inside the simulated robots run in lockstep (the same run whatever the load);
    lost or late odometry, killed nodes and busy loops must be able to cost time."""
    assert {case.name for case in CASES.values() if case.lockstep} == {
        'no fault', 'one robot dead mid-path', 'one robot faulty (speed x0.6, turned 30 deg)',
        'localization jump 0.5 m'}


def test_outage_times_are_when_the_robot_stood_and_moved_not_a_window_later():
    """A robot at 1 m/s brakes at 2 m/s^2 from 0.5 s after the kill (it stands 1.0 s after it)
    and starts again at 2 m/s^2 0.2 s after the restart: speed 0.05 m/s, the threshold, 0.975 s
    after the kill and 0.225 s after the restart. Measured within one odometry period of that."""
    kill, restart = 2.0, 4.0
    t = np.arange(0.0, 6.0, 0.02)
    braking, starting = np.clip(t - (kill + 0.5), 0.0, 0.5), np.clip(t - (restart + 0.2), 0.0, None)
    x = np.minimum(t, kill + 0.5) + braking - braking ** 2 + starting ** 2
    track = RobotTrack('robot0', 0.25, t, np.stack([x, np.zeros_like(x)], axis=1), np.zeros((0, 2)))
    outage = NodeOutage('/orca_node')
    outage.killed_at, outage.restarted_at = kill, restart
    report = {'robots': {'robot0': {'reached': False, 'time_to_goal': None}}}
    stopped, resumed = outage_times([track], report, outage)
    assert stopped == pytest.approx(0.975, abs=0.02)
    assert resumed == pytest.approx(0.225, abs=0.02)


def test_node_outage_kills_then_restarts_at_mission_times():
    class Graph:
        def __init__(self):
            self.calls = []

        def stop_node(self, name):
            self.calls.append(('stop', name))
            return 'spec'

        def start_node(self, spec):
            self.calls.append(('start', spec))

    class Mission:
        now = 0.0

        def elapsed(self):
            return self.now
    graph, mission, outage = Graph(), Mission(), NodeOutage('/orca_node')
    for now in (1.0, FAULT_TIME_S, FAULT_TIME_S + 1.0, FAULT_TIME_S + OUTAGE_S, 9.0):
        mission.now = now
        outage(graph, mission)
    assert graph.calls == [('stop', '/orca_node'), ('start', 'spec')]
    assert (outage.killed_at, outage.restarted_at) == (FAULT_TIME_S, FAULT_TIME_S + OUTAGE_S)


def test_rows_sum_runs_and_the_table_shows_them():
    case = CASES['orca_node killed and restarted']
    from orca_nav.bringup.report import empty_contact_tally
    touched = empty_contact_tally()
    touched['robot_robot']['moving'] = 1
    runs = [{'collisions': 0, 'contacts': empty_contact_tally(), 'at_goal': 3, 'able': 3,
             'min_separation': 0.2, 'finished': 7.0, 'stopped_after': 0.9, 'resumed_after': 0.3},
            {'collisions': 1, 'contacts': touched, 'at_goal': 2, 'able': 3,
             'min_separation': -0.1, 'finished': None, 'stopped_after': 1.1,
             'resumed_after': None}]
    row = summarize(case, runs, baseline=6.0)
    assert row == {'fault': case.name, 'runs': 2, 'collisions': 1, 'contacts': touched,
                   'robots_at_goal': 5,
                   'robots_able': 6, 'worst_min_separation': -0.1, 'finished': None,
                   'recovery_time': None, 'stopped_after': 1.1, 'resumed_after': 0.3}
    assert not suite_passed([row])
    table = format_fault_table([row])
    assert 'orca_node killed and restarted' in table and '5/6' in table and '-0.10 m' in table
    json.dumps(row)     # the JSON output takes it as it is


def _stop_then_start(t, kill, start):
    """x(t) of a robot that brakes as above after `kill` and starts again at `start`."""
    braking, starting = np.clip(t - (kill + 0.5), 0.0, 0.5), np.clip(t - start, 0.0, None)
    x = np.minimum(t, kill + 0.5) + braking - braking ** 2 + starting ** 2
    return np.stack([x, np.zeros_like(x)], axis=1)


def test_a_robot_that_waits_for_another_to_pass_counts_from_its_own_start():
    """After a planner restart a coordinated fleet lets robot1 wait while robot0 passes: robot0
    moves 0.225 s after the restart and stops again, robot1 only 1.025 s after it. The fleet has
    resumed when the last of them moved, though the two never moved at one instant."""
    kill, restart = 2.0, 4.0
    t = np.arange(0.0, 7.0, 0.02)
    first = _stop_then_start(t, kill, restart + 0.2)
    first[t > restart + 0.6] = first[np.searchsorted(t, restart + 0.6)]   # passed; stands
    tracks = [RobotTrack('robot0', 0.25, t, first, np.zeros((0, 2))),
              RobotTrack('robot1', 0.25, t, _stop_then_start(t, kill, restart + 1.0) + [0.0, 2.0],
                         np.zeros((0, 2)))]
    outage = NodeOutage('/planner_node')
    outage.killed_at, outage.restarted_at = kill, restart
    report = {'robots': {name: {'reached': False, 'time_to_goal': None}
                         for name in ('robot0', 'robot1')}}
    _, resumed = outage_times(tracks, report, outage)
    assert resumed == pytest.approx(1.025, abs=0.02)
    tracks[1] = RobotTrack('robot1', 0.25, t, _stop_then_start(t, kill, 99.0), np.zeros((0, 2)))
    assert outage_times(tracks, report, outage)[1] is None, 'robot1 never moved again'
