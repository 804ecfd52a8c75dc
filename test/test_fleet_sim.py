"""core/sim/fleet_sim.py: exact integration, limits, latency, watchdog, seeded noise, collision
events once; the odometry schedule and the lockstep bookkeeping, on times passed in."""
import numpy as np
import pytest

from orca_nav.core.fleet.kinematics import RobotLimits
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.sim.fleet_sim import ROBOT_MAP, ROBOT_ROBOT, FleetSim, map_overlap
from orca_nav.core.sim.lockstep import Lockstep, PeriodicSchedule


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


def _positions_while_stepping(sim, dt, steps):
    out = []
    for _ in range(steps):
        sim.step(dt)
        out.append(sim.poses[0, 0])
    return np.array(out)


def test_watchdog_stops_a_robot_whose_command_is_older_than_cmd_timeout():
    sim = _sim(['holonomic'], [[0.0, 0.0, 0.0]], cmd_timeout=0.1)
    assert np.isinf(sim.command_age[0])
    sim.set_commands([[1.0, 0.0, 0.0]])
    x = _positions_while_stepping(sim, 0.02, 12)
    # Steps starting at 0 .. 0.1 move (age 0.1 is not older than 0.1); from 0.12 on it stands.
    assert x[5] == pytest.approx(0.12) and np.all(x[6:] == x[5])
    assert sim.twists[0, 0] == 0.0 and sim.command_age[0] == pytest.approx(0.24)
    sim.set_commands([[1.0, 0.0, 0.0]])     # a new command moves it again
    sim.step(0.02)
    assert sim.poses[0, 0] == pytest.approx(0.14) and sim.command_age[0] == pytest.approx(0.02)


def test_watchdog_counts_from_when_a_delayed_command_takes_effect():
    sim = _sim(['holonomic'], [[0.0, 0.0, 0.0]], cmd_timeout=0.1, cmd_latency=0.05)
    sim.set_commands([[1.0, 0.0, 0.0]])
    x = _positions_while_stepping(sim, 0.02, 12)
    # Takes effect in the step at 0.06 (first start >= 0.05), stale from 0.16 (0.11 > 0.1).
    assert x[2] == 0.0 and x[3] == pytest.approx(0.02)
    assert x[7] == pytest.approx(0.1) and np.all(x[8:] == x[7])


def test_watchdog_disabled_by_zero_timeout():
    sim = _sim(['holonomic'], [[0.0, 0.0, 0.0]], cmd_timeout=0.0)
    sim.set_commands([[1.0, 0.0, 0.0]])
    assert _positions_while_stepping(sim, 0.5, 10)[-1] == pytest.approx(5.0)


def test_advance_splits_a_period_into_equal_steps_no_longer_than_max_step():
    a = _sim(['diff_drive'], [[0.0, 0.0, 0.3]], cmd_timeout=0.2)
    b = _sim(['diff_drive'], [[0.0, 0.0, 0.3]], cmd_timeout=0.2)
    for sim in (a, b):
        sim.set_commands([[0.5, 0.0, 0.8]])
    for _ in range(20):
        a.advance(0.05, 0.02)              # 3 steps of 1/60 s
    for _ in range(60):
        b.step(0.05 / 3)
    assert a.time == pytest.approx(1.0) and np.allclose(a.poses, b.poses, atol=1e-12)
    a.advance(0.01, 0.02)                  # shorter than max_step: one step
    assert a.time == pytest.approx(1.01)
    with pytest.raises(ValueError, match='max_step'):
        a.advance(0.05, 0.0)


def _due_times(schedule, step, steps, start=0.0):
    times = start + step * np.arange(steps)
    return [t for t in times if schedule.due(t)]


def test_periodic_schedule_at_the_step_rate_fires_at_every_step():
    due = _due_times(PeriodicSchedule(1.0 / 50.0, tolerance=0.5 / 50.0), 1.0 / 50.0, 100)
    assert len(due) == 100


def test_periodic_schedule_keeps_the_mean_rate_between_steps():
    """20 Hz out of 50 Hz steps: intervals of 2 or 3 steps, 20 per simulated second."""
    due = _due_times(PeriodicSchedule(0.05, tolerance=0.01), 0.02, 500)
    assert len(due) == 200 and due[0] == 0.0
    assert set(np.round(np.diff(due), 9)) == {0.04, 0.06}


def test_periodic_schedule_drops_periods_missed_in_a_stall():
    schedule = PeriodicSchedule(0.1, tolerance=0.005)
    assert _due_times(schedule, 0.01, 31) == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert schedule.due(5.0)                # one output after the stall, no burst
    assert not schedule.due(5.01) and not schedule.due(5.09)
    assert schedule.due(5.1)
    with pytest.raises(ValueError, match='period'):
        PeriodicSchedule(0.0)


def test_lockstep_advances_when_every_robot_answered_the_open_exchange():
    step = Lockstep(2, now=0.0, timeout=1.0, start_timeout=30.0)
    step.answer(0)                          # before the first odometry: not an answer
    assert step.exchange == 0 and not step.ready(1.0)
    step.open(2.0)
    assert step.exchange == 1 and step.missing == [0, 1]
    step.answer(0)
    step.answer(0)                          # a second command of the same robot counts once
    assert step.missing == [1] and not step.answered_all and not step.ready(2.1)
    step.answer(1)
    assert step.answered_all and step.ready(2.1)
    step.open(2.2)                          # the answers were for the previous exchange
    assert step.exchange == 2 and step.missing == [0, 1] and not step.ready(2.3)


def test_lockstep_times_out_the_start_up_wait_then_each_exchange():
    step = Lockstep(2, now=10.0, timeout=1.0, start_timeout=30.0)
    assert not step.timed_out(39.9) and step.timed_out(40.0)     # discovery: 30 s from start
    step.open(12.0)
    step.answer(0)
    # The first exchange has the rest of the start-up wait.
    assert step.deadline == 40.0 and not step.ready(39.9) and step.ready(40.0)
    step.open(40.0)
    step.answer(1)
    assert step.deadline == 41.0 and not step.ready(40.9) and step.ready(41.0)
    assert step.missing == [0]


def test_lockstep_waits_after_the_first_exchange_only_for_robots_that_ever_answered():
    step = Lockstep(3, now=0.0, timeout=1.0, start_timeout=30.0)
    step.open(1.0)
    step.answer(0)
    step.answer(1)                          # robot2 has no controller (yet)
    assert step.missing == [2] and not step.ready(2.0) and step.ready(31.0)
    step.open(31.0)
    step.answer(0)
    step.answer(1)
    assert step.missing == [] and step.ready(31.0)    # nobody waits for robot2 every exchange
    step.open(31.1)
    step.answer(2)                          # its first command: from now on it is waited for
    assert step.missing == [0, 1]
    step.open(31.2)
    step.answer(0)
    step.answer(1)
    assert step.missing == [2]


def test_lockstep_first_exchange_opened_late_still_waits_one_timeout():
    step = Lockstep(1, now=0.0, timeout=1.0, start_timeout=5.0)
    step.open(6.0)                          # nobody connected within 5 s: opened anyway
    assert not step.ready(6.5) and step.ready(7.0)


def test_lockstep_pacing_holds_answered_exchanges():
    step = Lockstep(1, now=0.0, timeout=1.0, start_timeout=30.0, pace_period=0.5)
    step.open(1.0)
    step.answer(0)
    assert not step.paced(1.4) and not step.ready(1.4)
    assert step.ready(1.5)


def test_lockstep_resends_the_first_exchange_to_the_robots_that_have_not_answered():
    step = Lockstep(3, now=0.0, timeout=1.0, start_timeout=30.0, resend_period=0.5)
    assert step.resend_due(5.0) == []               # no exchange open yet
    step.open(1.0)
    step.answer(1)
    assert step.resend_due(1.4) == []
    assert step.resend_due(1.5) == [0, 2]
    assert step.resend_due(1.9) == []               # once a period
    step.answer(0)
    assert step.resend_due(2.0) == [2]
    step.open(31.0)                                 # later exchanges end at their timeout
    assert step.resend_due(40.0) == []


def test_lockstep_bad_arguments():
    with pytest.raises(ValueError, match='timeout'):
        Lockstep(1, now=0.0, timeout=0.0, start_timeout=30.0)
    with pytest.raises(ValueError, match='pace_period'):
        Lockstep(1, now=0.0, timeout=1.0, start_timeout=30.0, pace_period=float('nan'))
    with pytest.raises(ValueError, match='n_robots'):
        Lockstep(0, now=0.0, timeout=1.0, start_timeout=30.0)
    with pytest.raises(ValueError, match='resend_period must be finite and > 0, got 0.0'):
        Lockstep(1, now=0.0, timeout=1.0, start_timeout=30.0, resend_period=0.0)


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
    with pytest.raises(ValueError, match='cmd_timeout'):
        _sim(['holonomic'], [[0.0, 0.0, 0.0]], cmd_timeout=np.nan)
    with pytest.raises(ValueError, match='dt'):
        sim.step(0.0)
