"""core/fleet_sim.py: exact integration, limits, latency, seeded noise, collision events once."""
import numpy as np
import pytest

from orca_nav.core.fleet.sim import ROBOT_MAP, ROBOT_ROBOT, FleetSim, map_overlap
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.fleet.kinematics import RobotLimits


def _sim(kinds, starts, radius=0.3, **kwargs):
    lim = RobotLimits.create(kinds, max_speed=1.0, max_accel=100.0, max_yaw_rate=2.0,
                             min_turning_radius=1.0)
    return FleetSim(lim, radius, np.asarray(starts, dtype=float), **kwargs)


def test_unicycle_circle_is_exact_and_step_size_independent():
    """v = 0.5, w = 0.5 from the origin: radius-1 circle, pose at t known in closed form."""
    for dt in (0.01, 0.1, 0.37):
        sim = _sim(['diff_drive'], [[0.0, 0.0, 0.0]])
        sim.set_commands([[0.5, 0.0, 0.5]])
        sim.step(1e-9)                      # reaches the commanded twist (huge max_accel)
        pose0 = sim.poses[0]
        steps = int(round(3.0 / dt))
        for _ in range(steps):
            sim.step(dt)
        t = steps * dt
        theta = pose0[2] + 0.5 * t
        expected = pose0[:2] + np.array([np.sin(theta) - np.sin(pose0[2]),
                                         np.cos(pose0[2]) - np.cos(theta)])
        assert np.allclose(sim.poses[0, :2], expected, atol=1e-9)
    assert sim.time == pytest.approx(1e-9 + steps * 0.37)


def test_acceleration_and_speed_limits_apply():
    lim = RobotLimits.create(['holonomic', 'car'], max_speed=1.0, max_accel=0.5, max_yaw_rate=1.0,
                             min_turning_radius=2.0)
    sim = FleetSim(lim, 0.2, np.zeros((2, 3)))
    sim.set_commands([[5.0, 0.0, 0.0], [5.0, 0.0, 3.0]])
    speeds = []
    for _ in range(40):
        sim.step(0.1)
        speeds.append(sim.twists[:, 0].copy())
        assert abs(sim.twists[1, 2]) <= abs(sim.twists[1, 0]) / 2.0 + 1e-12
    speeds = np.array(speeds)
    assert np.allclose(speeds[:2, 0], [0.05, 0.1])
    assert np.allclose(speeds[-1], [1.0, 1.0])
    assert np.all(np.diff(speeds, axis=0) <= 0.05 + 1e-12)


def test_latency_delays_commands():
    sim = _sim(['holonomic'], [[0.0, 0.0, 0.0]], cmd_latency=0.25)
    sim.set_commands([[1.0, 0.0, 0.0]])
    moved_at = None
    for k in range(10):
        sim.step(0.1)
        if moved_at is None and sim.poses[0, 0] > 0.0:
            moved_at = k
    assert moved_at == 3            # steps start at 0, .1, .2, .3: the one at .3 >= .25 moves
    assert sim.poses[0, 0] == pytest.approx(0.7)


def test_seeded_noise_is_reproducible_and_has_the_given_spread():
    def run(seed):
        sim = _sim(['holonomic'] * 50, np.zeros((50, 3)), noise_pos_std=0.05, noise_vel_std=0.1,
                   seed=seed)
        sim.set_commands(np.tile([0.5, 0.0, 0.0], (50, 1)))
        for _ in range(20):
            sim.step(0.05)
        return sim.poses, sim.odometry()[0]
    true_a, odom_a = run(7)
    true_b, odom_b = run(7)
    true_c, _ = run(8)
    assert np.array_equal(true_a, true_b) and np.array_equal(odom_a, odom_b)
    assert not np.array_equal(true_a, true_c)
    assert 0.02 < np.std(odom_a[:, :2] - true_a[:, :2]) < 0.08
    noiseless = _sim(['holonomic'], [[0.0, 0.0, 0.0]])
    assert np.array_equal(noiseless.odometry()[0], noiseless.poses)


def test_robot_robot_collision_reported_once_per_contact():
    sim = _sim(['holonomic', 'holonomic', 'holonomic'], [[0, 0, 0], [2, 0, 0], [10, 10, 0]],
               radius=[0.55, 0.3, 0.3])
    sim.set_commands([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0, 0, 0]])
    events = []
    for _ in range(12):                 # they meet at 0.6 s, overlap for a while
        events += sim.step(0.1)
    assert len(events) == 1
    ev = events[0]
    assert ev.kind == ROBOT_ROBOT and ev.robots == (0, 1)
    assert ev.time == pytest.approx(0.6)        # first step where distance < 0.85
    assert ev.position[0] == pytest.approx(0.6 + 0.8 * 0.55 / 0.85)
    assert sim.colliding.tolist() == [True, True, False]
    # Separate, then touch again: a new event.
    sim.set_commands([[-1.0, 0, 0], [1.0, 0, 0], [0, 0, 0]])
    for _ in range(15):
        assert sim.step(0.1) == []
    assert not sim.colliding.any()
    sim.set_commands([[1.0, 0, 0], [-1.0, 0, 0], [0, 0, 0]])
    again = []
    for _ in range(20):
        again += sim.step(0.1)
    assert [e.robots for e in again] == [(0, 1)]


def _walled_grid():
    occ = np.zeros((40, 40), dtype=bool)          # 4 m x 4 m at 0.1 m
    occ[:, 30:] = True                            # wall from x = 3.0
    return OccupancyGrid(occ, 0.1, (0.0, 0.0))


def test_robot_map_collision_exact_to_the_cell_edge():
    grid = _walled_grid()
    pos = np.array([[2.69, 2.05], [2.71, 2.05], [1.0, 1.0], [0.25, 2.0], [5.0, 2.0]])
    got = map_overlap(grid, pos, np.full(5, 0.3))
    assert got.tolist() == [False, True, False, True, True]   # 3.0 - 0.3 = 2.7 is the edge;
    # the map border (x = 0) and the outside count as obstacles.


def test_robot_map_event_once_then_again_after_leaving():
    sim = _sim(['holonomic'], [[2.05, 2.0, 0.0]], grid=_walled_grid())
    sim.set_commands([[1.0, 0.0, 0.0]])
    events = []
    for _ in range(9):
        events += sim.step(0.1)
    assert len(events) == 1 and events[0].kind == ROBOT_MAP and events[0].robots == (0,)
    assert events[0].time == pytest.approx(0.7)   # x = 2.75 > 2.7
    sim.set_commands([[-1.0, 0.0, 0.0]])
    for _ in range(5):
        sim.step(0.1)
    sim.set_commands([[1.0, 0.0, 0.0]])
    for _ in range(5):
        events += sim.step(0.1)
    assert len(events) == 2


def test_many_robots_vectorised_collisions():
    rng = np.random.default_rng(0)
    n = 300
    starts = np.column_stack([rng.uniform(0, 30, n), rng.uniform(0, 30, n), np.zeros(n)])
    sim = _sim(['holonomic'] * n, starts, radius=0.3)
    events = sim.step(0.01)
    d = np.linalg.norm(starts[:, None, :2] - starts[None, :, :2], axis=2)
    expected = {(i, j) for i in range(n) for j in range(i + 1, n) if d[i, j] < 0.6}
    assert {e.robots for e in events} == expected and expected


def test_bad_inputs():
    with pytest.raises(ValueError, match=r'start_poses'):
        _sim(['holonomic'], [[0.0, np.nan, 0.0]])
    with pytest.raises(ValueError, match=r'radius\[1\]'):
        _sim(['holonomic', 'holonomic'], np.zeros((2, 3)), radius=[0.3, -1.0])
    sim = _sim(['holonomic'], [[0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match='twists'):
        sim.set_commands([[np.inf, 0.0, 0.0]])
    with pytest.raises(ValueError, match='robots'):
        sim.set_commands([[0.0, 0.0, 0.0]], robots=[3])
    with pytest.raises(ValueError, match='cmd_latency'):
        _sim(['holonomic'], [[0.0, 0.0, 0.0]], cmd_latency=-1.0)
