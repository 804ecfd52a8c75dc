"""Report metrics from recorded arrays, checked against hand-computed geometry."""
import json
import math

import numpy as np
import pytest

from orca_nav.bringup.report import (
    RobotTrack,
    fleet_report,
    format_table,
    pairwise_minima,
    path_length,
    resample,
)
from orca_nav.core.grid import OccupancyGrid


def straight(name, start, goal, t_end, radius=0.25, samples=101, reached=True, t0=0.0):
    t = np.linspace(t0, t_end, samples)
    xy = np.asarray(start) + (t - t0)[:, None] / (t_end - t0) * (np.asarray(goal) - start)
    return RobotTrack(name=name, radius=radius, t=t, xy=xy, goals=[goal],
                      goal_times=[t_end if reached else None])


def test_path_length_of_a_polyline():
    assert path_length([[0, 0], [3, 4], [3, 5]]) == pytest.approx(6.0)
    assert path_length(np.zeros((1, 2))) == 0.0


def test_path_length_does_not_change_with_samples_at_rest():
    """A lockstep demo's report is the same twice although the recording may stop a sample or
    two later: a robot standing at its goal adds zero-length segments."""
    xy = np.cumsum(np.random.default_rng(201).uniform(-0.05, 0.05, (201, 2)), axis=0)
    for extra in range(1, 9):     # (a plain numpy sum of these differs in its last digit)
        assert path_length(np.vstack([xy, np.repeat(xy[-1:], extra, axis=0)])) == path_length(xy)


def test_head_on_pair_closest_at_the_midpoint():
    """Two robots on parallel lanes 1 m apart pass each other at t = 5 s."""
    a = straight('a', [-5.0, 0.0], [5.0, 0.0], 10.0)
    b = straight('b', [5.0, 1.0], [-5.0, 1.0], 10.0, radius=0.3)
    report = fleet_report([a, b], sample_dt=0.05)
    ra, rb = report['robots']['a'], report['robots']['b']
    assert ra['min_center_distance'] == pytest.approx(1.0, abs=1e-6)
    assert ra['min_separation'] == pytest.approx(1.0 - 0.55, abs=1e-6)
    assert ra['closest_robot'] == 'b' and rb['closest_robot'] == 'a'
    assert ra['path_length'] == pytest.approx(10.0)
    assert ra['reached'] and ra['time_to_goal'] == pytest.approx(10.0)
    fleet = report['fleet']
    assert fleet['all_reached'] and fleet['makespan'] == pytest.approx(10.0)
    assert fleet['min_separation'] == pytest.approx(0.45, abs=1e-6)
    assert fleet['total_path_length'] == pytest.approx(20.0)
    assert ra['min_obstacle_clearance'] is None      # no map


def test_unsynchronised_samples_are_interpolated():
    """Robot b's odometry arrives at other instants; the minimum is still found."""
    a = straight('a', [-5.0, 0.0], [5.0, 0.0], 10.0, samples=41)
    b = straight('b', [5.0, 0.5], [-5.0, 0.5], 10.0, samples=37, t0=0.013)
    gap = fleet_report([a, b], sample_dt=0.01)['robots']['a']['min_center_distance']
    assert gap == pytest.approx(0.5, abs=0.01)


def test_unreached_goal_and_collisions():
    a = straight('a', [0.0, 0.0], [4.0, 0.0], 4.0, reached=False)
    a.collisions = 2
    b = straight('b', [0.0, 3.0], [4.0, 3.0], 4.0)
    report = fleet_report([a, b], collision_events=2)
    assert not report['robots']['a']['reached']
    assert report['robots']['a']['final_goal_distance'] == pytest.approx(0.0)
    assert report['robots']['a']['time_to_goal'] is None
    assert report['fleet']['reached'] == 1 and not report['fleet']['all_reached']
    assert report['fleet']['makespan'] is None
    assert report['fleet']['collisions'] == 2 and report['fleet']['robots_with_collisions'] == 1
    json.dumps(report, allow_nan=False)      # strict JSON: no inf/NaN anywhere


def test_several_goals_reached_in_turn():
    t = np.linspace(0.0, 8.0, 81)
    xy = np.column_stack([np.minimum(t, 4.0), np.maximum(t - 4.0, 0.0)])
    track = RobotTrack('r', 0.2, t, xy, goals=[[4.0, 0.0], [4.0, 4.0]], goal_times=[4.0, 8.0])
    entry = fleet_report([track])['robots']['r']
    assert entry['reached'] and entry['goals_reached'] == 2 and entry['time_to_goal'] == 8.0
    assert entry['path_length'] == pytest.approx(8.0)
    assert entry['min_separation'] is None          # no other robot
    partial = RobotTrack('r', 0.2, t[:61], xy[:61], goals=[[4.0, 0.0], [4.0, 4.0]],
                         goal_times=[4.0, None])
    entry = fleet_report([partial])['robots']['r']
    assert not entry['reached'] and entry['goals_reached'] == 1
    assert entry['final_goal_distance'] == pytest.approx(2.0)     # at (4, 2), heading for (4, 4)
    assert entry['final_position'] == pytest.approx([4.0, 2.0])


def test_obstacle_clearance_against_a_wall():
    """A wall of cells at x >= 2 m; a robot of radius 0.25 drives from x = 1.0 up to 1.5.

    (The map border counts as an obstacle too; it is farther than the wall here.)"""
    occupied = np.zeros((40, 40), bool)
    occupied[:, 20:] = True
    grid = OccupancyGrid(occupied, 0.1, (0.0, 0.0))
    track = straight('a', [1.0, 2.0], [1.5, 2.0], 2.0)
    clearance = fleet_report([track], grid=grid)['robots']['a']['min_obstacle_clearance']
    assert clearance == pytest.approx(2.0 - 1.5 - 0.25, abs=0.1)


def test_pairwise_minima_in_chunks_matches_brute_force(monkeypatch):
    import orca_nav.bringup.report as report_module
    rng = np.random.default_rng(3)
    positions = rng.uniform(-3, 3, size=(50, 7, 2))
    radii = rng.uniform(0.1, 0.4, size=7)
    monkeypatch.setattr(report_module, '_PAIR_CHUNK', 49 * 3)   # three time steps per chunk
    gap, centre, other = pairwise_minima(positions, radii)
    for i in range(7):
        best = (math.inf, None, None)
        for t in range(50):
            for j in range(7):
                if j != i:
                    d = np.linalg.norm(positions[t, i] - positions[t, j])
                    if d - radii[i] - radii[j] < best[0]:
                        best = (d - radii[i] - radii[j], d, j)
        assert gap[i] == pytest.approx(best[0]) and centre[i] == pytest.approx(best[1])
        assert other[i] == best[2]


def test_resample_holds_the_last_pose():
    a = RobotTrack('a', 0.2, [0.0, 1.0], [[0, 0], [1, 0]], goals=[[1, 0]], goal_times=[1.0])
    b = RobotTrack('b', 0.2, [0.0, 3.0], [[0, 5], [3, 5]], goals=[[3, 5]], goal_times=[3.0])
    times, positions = resample([a, b], 0.5)
    assert times[-1] == pytest.approx(3.0) and positions.shape == (7, 2, 2)
    assert positions[-1, 0].tolist() == [1.0, 0.0]


@pytest.mark.parametrize('kwargs, message', [
    ({'t': [0.0, 1.0], 'xy': [[0, 0]]}, 't has 2 samples but xy 1'),
    ({'t': [0.0, float('nan')], 'xy': [[0, 0], [1, 1]]}, 'non-finite'),
    ({'t': [1.0, 0.0], 'xy': [[0, 0], [1, 1]]}, 't must not decrease'),
])
def test_bad_tracks_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RobotTrack('r', 0.2, goals=[[0, 0]], goal_times=[None], **kwargs)
    with pytest.raises(ValueError, match='sample_dt'):
        resample([], 0.0)


def test_table_lists_every_robot_and_the_totals():
    a = straight('a', [-5.0, 0.0], [5.0, 0.0], 10.0)
    b = straight('b', [5.0, 1.0], [-5.0, 1.0], 10.0, reached=False)
    text = format_table(fleet_report([a, b]))
    lines = text.splitlines()
    assert lines[0].split()[:3] == ['robot', 'reached', 'time_s']
    assert lines[2].split()[:3] == ['a', '1/1', '10.0']
    assert lines[3].split()[:3] == ['b', '0/1', '-']
    assert '1/2 robots at their goals' in lines[-1]


def test_picture_is_written(tmp_path):
    pytest.importorskip('matplotlib')
    from orca_nav.bringup.report_plot import plot_trajectories
    occupied = np.zeros((30, 30), bool)
    occupied[10:20, 10:20] = True
    grid = OccupancyGrid(occupied, 0.2, (-3.0, -3.0))
    a = straight('a', [-2.5, -2.5], [2.5, 2.5], 5.0)
    out = plot_trajectories(tmp_path / 't.png', [a], starts=[[-2.5, -2.5]], grid=grid,
                            plans={'a': [np.array([[-2.5, -2.5], [2.5, 2.5]])]}, title='x')
    assert out.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and out.stat().st_size > 5000


def test_drones_are_separated_in_3d_and_cleared_in_the_3d_map(tmp_path):
    from orca_nav.bringup.report_plot import plot_trajectories
    from orca_nav.core.grid import OccupancyGrid
    occupied = np.zeros((20, 50, 50), bool)
    occupied[0] = True                                   # a floor, z 0..0.2
    occupied[:, 20:30, 24:26] = True                     # a wall x 4.8..5.2, y 4..6
    grid = OccupancyGrid(occupied, 0.2, (0.0, 0.0, 0.0))
    t = np.linspace(0.0, 10.0, 101)
    # Two drones cross above each other (same x, y at t = 5) 1.0 m apart in z.
    x = 1.0 + 0.8 * t
    low = np.column_stack([x, np.full_like(t, 2.0), np.full_like(t, 1.0)])
    high = np.column_stack([x[::-1], np.full_like(t, 2.0), np.full_like(t, 2.0)])
    tracks = [RobotTrack('low', 0.3, t, low, goals=[low[-1]], goal_times=[10.0]),
              RobotTrack('high', 0.3, t, high, goals=[high[-1]], goal_times=[10.0])]
    report = fleet_report(tracks, grid_3d=grid)
    assert report['fleet']['separation'] == '3-D'
    assert report['fleet']['min_separation'] == pytest.approx(1.0 - 0.6, abs=1e-6)
    assert report['robots']['low']['altitude_range'] == [1.0, 1.0]
    assert report['robots']['low']['min_center_distance'] == pytest.approx(1.0, abs=1e-6)
    # The floor's top is 0.8 m below the low drone's centre: 0.8 - 0.3 (radius), to a voxel.
    assert report['robots']['low']['min_obstacle_clearance'] == pytest.approx(0.5, abs=0.11)
    assert report['robots']['high']['final_position'] == [1.0, 2.0, 2.0]
    out = plot_trajectories(tmp_path / 'drones.png', tracks, starts=[low[0], high[0]],
                            grid_3d=grid, title='two drones')
    assert out.stat().st_size > 10_000


def test_a_robot_pushed_off_its_goal_after_reaching_it_has_not_reached_it():
    """It reached its goal at t = 4 and stood 0.33 m off it when the run ended (tolerance 0.25):
    `reached then displaced`, not counted, and the demo's exit status says the run failed."""
    from orca_nav.bringup.demo import demo_exit_status
    t = np.linspace(0.0, 8.0, 81)
    x = np.minimum(t, 4.0)
    y = np.where(t > 6.0, 0.33, 0.0)
    pushed = RobotTrack('pushed', 0.25, t, np.column_stack([x, y]), goals=[[4.0, 0.0]],
                        goal_times=[4.0])
    other = straight('other', [0.0, 3.0], [4.0, 3.0], 8.0)
    report = fleet_report([pushed, other], goal_tolerance=0.25)
    entry = report['robots']['pushed']
    assert entry['outcome'] == 'reached then displaced' and not entry['reached']
    assert entry['goal_times'] == [4.0] and entry['time_to_goal'] is None
    assert entry['final_goal_distance'] == pytest.approx(0.33)
    assert report['robots']['other']['outcome'] == 'reached'
    assert report['fleet']['reached'] == 1 and not report['fleet']['all_reached']
    assert demo_exit_status(report) == 1
    row = format_table(report).splitlines()[2]
    assert row.startswith('pushed')
    assert row.endswith('reached then displaced (0.33 m off at the end)')
    # within the tolerance at the end it counts
    assert fleet_report([pushed], goal_tolerance=0.4)['robots']['pushed']['outcome'] == 'reached'
