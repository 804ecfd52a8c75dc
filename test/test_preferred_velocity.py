"""Goal-seeking preferred velocities and deadlock breaking (through the real ORCA simulator)."""
import numpy as np
import pytest

from orca_nav.core.avoidance import OrcaParams, OrcaSimulator
from orca_nav.core.fleet.deadlock import DeadlockBreaker, DeadlockParams
from orca_nav.core.fleet.preferred_velocity import goal_velocities

from conftest import SHARED

CIRCLE = SHARED / 'refdata' / 'orca' / 'circle_16_tight.npz'
GOAL_TOLERANCE = 0.05


def test_goal_velocity_full_speed_far_away_and_braking_profile_near_goal():
    positions = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [5.0, 5.0]])
    goals = np.array([[10.0, 0.0], [0.0, -0.5], [1.0, 1.02], [np.nan, np.nan]])
    pref, arrived = goal_velocities(positions, goals, max_speed=2.0, max_accel=1.0,
                                    goal_tolerance=GOAL_TOLERANCE)
    np.testing.assert_allclose(pref[0], [2.0, 0.0])  # far: full speed toward the goal
    np.testing.assert_allclose(pref[1], [0.0, -1.0])  # within stopping distance: sqrt(2 a d)
    np.testing.assert_allclose(pref[2:], 0.0)  # arrived / no goal: stand still
    assert arrived.tolist() == [False, False, True, True]


def test_goal_velocity_never_overshoots_within_one_step():
    pref, _ = goal_velocities(np.zeros((1, 2)), np.array([[0.1, 0.0]]), max_speed=2.0,
                              max_accel=10.0, goal_tolerance=0.0, time_step=0.1)
    np.testing.assert_allclose(pref, [[1.0, 0.0]])  # 0.1 m in one 0.1 s step


@pytest.mark.parametrize('kwargs, name', [
    ({'max_speed': [1.0, -1.0]}, r'max_speed\[1\]'),
    ({'max_accel': 0.0}, r'max_accel\[0\]'),
    ({'goal_tolerance': np.nan}, r'goal_tolerance\[0\]'),
    ({'goals': np.array([[1.0, np.nan], [0.0, 0.0]])}, r'goals\[0\]'),
    ({'positions': np.array([[0.0, np.inf], [0.0, 0.0]])}, r'positions\[0\]'),
    ({'time_step': 0.0}, 'time_step'),
])
def test_goal_velocity_rejects_bad_input_naming_it(kwargs, name):
    args = dict(positions=np.zeros((2, 2)), goals=np.ones((2, 2)), max_speed=1.0, max_accel=1.0,
                goal_tolerance=0.1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        goal_velocities(**args)


def test_goal_velocity_follows_given_headings_and_brakes_on_the_route_length():
    positions = np.zeros((2, 2))
    goals = np.array([[1.0, 0.0], [1.0, 0.0]])
    headings = np.array([[0.0, 1.0], [1.0, 0.0]])
    pref, arrived = goal_velocities(positions, goals, 2.0, 1.0, GOAL_TOLERANCE,
                                    headings=headings, route_lengths=[8.0, 0.5])
    np.testing.assert_allclose(pref[0], [0.0, 2.0])  # route 8 m: full speed along the heading
    np.testing.assert_allclose(pref[1], [np.sqrt(2.0), 0.0])  # route < straight: brake on 1 m
    assert not arrived.any()
    with pytest.raises(ValueError, match='headings and route_lengths'):
        goal_velocities(positions, goals, 2.0, 1.0, 0.1, headings=headings, route_lengths=[1.0])


def test_progress_along_a_route_is_not_a_stall():
    """Going round an obstacle the straight distance to the goal stays put; the route shrinks."""
    by_route, by_straight = (DeadlockBreaker(1, DeadlockParams(stall_time=1.0)) for _ in range(2))
    goals = np.array([[10.0, 0.0]])
    positions = np.zeros((1, 2))   # only the progress measure matters here
    pref = np.array([[0.0, 1.0]])
    for step in range(40):   # full speed along the route, 10 m from the goal all along
        now = 0.1 * step
        out = by_route.update(now, positions, pref, [False], goals, max_speed=1.0, radius=0.5,
                              distances=[20.0 - 0.1 * step])
        np.testing.assert_allclose(out, pref)
        by_straight.update(now, positions, pref, [False], goals, max_speed=1.0, radius=0.5)
    assert by_straight.detouring(3.9).all()   # judged on the straight distance: stalled


def test_stalled_head_on_pair_one_yields_the_other_turns_right():
    breaker = DeadlockBreaker(2, DeadlockParams(stall_time=1.0, recovery_time=2.0))
    positions = np.array([[-0.6, 0.0], [0.6, 0.0]])  # blocked face to face, not moving
    goals = np.array([[5.0, 0.0], [-5.0, 0.0]])
    pref, arrived = goal_velocities(positions, goals, 1.0, 1.0, GOAL_TOLERANCE)
    for now in np.arange(0.0, 1.0, 0.1):
        out = breaker.update(now, positions, pref, arrived, goals, max_speed=1.0, radius=0.5)
        np.testing.assert_allclose(out, pref)  # not stalled yet
    out = breaker.update(1.0, positions, pref, arrived, goals, max_speed=1.0, radius=0.5)
    assert breaker.detouring(1.0).tolist() == [True, False]
    assert breaker.yielding(1.0).tolist() == [False, True]
    give_way = [DeadlockParams().give_way_speed, 0.0]   # lower priority backs away from it
    np.testing.assert_allclose(out[1], give_way)
    turn = pref[0, 0] * out[0, 1] - pref[0, 1] * out[0, 0]
    assert turn < 0.0 and np.linalg.norm(out[0]) == pytest.approx(1.0)  # clockwise: right
    out = breaker.update(2.9, positions, pref, arrived, goals, max_speed=1.0, radius=0.5)
    np.testing.assert_allclose(out[1], give_way)  # still within recovery_time
    # After recovery_time, progress made since the stall ends the recovery.
    moved = positions + np.array([[0.5, 0.0], [-0.5, 0.0]])
    pref, arrived = goal_velocities(moved, goals, 1.0, 1.0, GOAL_TOLERANCE)
    out = breaker.update(3.05, moved, pref, arrived, goals, max_speed=1.0, radius=0.5)
    np.testing.assert_allclose(out, pref)
    assert not breaker.detouring(3.05).any() and not breaker.yielding(3.05).any()


def test_a_robot_standing_at_its_goal_steps_aside_for_a_stalled_one_and_returns():
    """Robot 1 stands at its goal where robot 0 (stalled, a long way to go) needs to pass, as
    a parked robot in a corridor does: it backs away from robot 0 for recovery_time, and once
    that is over it heads back to its goal. A robot that only arrived does not move for a
    robot that is not stalled."""
    breaker = DeadlockBreaker(2, DeadlockParams(stall_time=1.0, recovery_time=2.0))
    positions = np.array([[0.0, 0.0], [0.9, 0.3]])
    goals = np.array([[10.0, 0.0], [0.9, 0.3]])
    for now in np.arange(0.0, 0.95, 0.1):       # robot 0 makes no progress, not yet stalled
        pref, arrived = goal_velocities(positions, goals, 1.0, 1.0, GOAL_TOLERANCE)
        out = breaker.update(now, positions, pref, arrived, goals, max_speed=1.0, radius=0.3,
                             parked=arrived)
        np.testing.assert_allclose(out[1], 0.0)
    out = breaker.update(1.0, positions, pref, arrived, goals, max_speed=1.0, radius=0.3,
                         parked=arrived)
    away = (positions[1] - positions[0]) / np.linalg.norm(positions[1] - positions[0])
    np.testing.assert_allclose(out[1], DeadlockParams().give_way_speed * away)
    assert breaker.yielding(1.0).tolist() == [False, True]
    moved = positions + [[0.0, 0.0], [0.5, 0.2]]     # it stepped aside, off its goal
    pref, arrived = goal_velocities(moved, goals, 1.0, 1.0, GOAL_TOLERANCE)
    out = breaker.update(3.1, moved, pref, arrived, goals, max_speed=1.0, radius=0.3,
                         parked=arrived)
    assert not breaker.yielding(3.1).any()
    assert np.dot(out[1], goals[1] - moved[1]) > 0.0      # back to its goal


def test_a_detour_into_a_wall_turns_left_where_there_is_room():
    # Robot 0 drives east with a wall 0.05 m below its disc (y <= -0.3); robot 1 in the open.
    def room(points):
        return np.asarray(points)[:, 1] + 0.3      # clearance from the wall below y = -0.3

    breaker = DeadlockBreaker(2, DeadlockParams(stall_time=1.0, recovery_time=2.0))
    positions = np.array([[0.0, 0.0], [0.0, 10.0]])
    goals = np.array([[5.0, 0.0], [5.0, 10.0]])
    pref, arrived = goal_velocities(positions, goals, 1.0, 1.0, GOAL_TOLERANCE)
    for now in np.arange(0.0, 1.05, 0.1):       # neither moves: both stall at 1 s
        out = breaker.update(now, positions, pref, arrived, goals, max_speed=1.0, radius=0.25,
                             room=room)
    assert breaker.detouring(1.0).tolist() == [True, True]
    assert out[0, 1] > 0.0 and out[1, 1] < 0.0      # the walled robot turns left, the other right
    angle = DeadlockParams().detour_angle           # robot 0's, mirrored: 40 degrees left
    np.testing.assert_allclose(out[0], [np.cos(angle), np.sin(angle)])
    assert np.linalg.norm(out[1]) == pytest.approx(1.0)


def test_moving_robots_are_never_stalled():
    breaker = DeadlockBreaker(3)
    goals = np.array([[100.0, 0.0], [0.0, 100.0], [-100.0, 0.0]])
    positions = np.zeros((3, 2))
    for step in range(100):
        pref, arrived = goal_velocities(positions, goals, 1.0, 1.0, GOAL_TOLERANCE)
        out = breaker.update(step * 0.1, positions, pref, arrived, goals, max_speed=1.0, radius=0.5)
        np.testing.assert_allclose(out, pref)
        positions = positions + 0.5 * pref * 0.1  # half speed: progress well above 30 %


def test_bad_deadlock_params_are_named():
    with pytest.raises(ValueError, match='detour_angle'):
        DeadlockParams(detour_angle=np.pi)
    with pytest.raises(ValueError, match='min_progress'):
        DeadlockParams(min_progress=1.5)
    with pytest.raises(ValueError, match='stall_time'):
        DeadlockParams(stall_time=0.0)


def circle_setup():
    data = np.load(CIRCLE)
    params = OrcaParams(time_step=float(data['time_step']),
                        neighbor_dist=float(data['neighbor_dist']),
                        max_neighbors=int(data['max_neighbors']),
                        time_horizon=float(data['time_horizon']),
                        time_horizon_obst=float(data['time_horizon_obst']),
                        radius=float(data['radius'][0]), max_speed=float(data['max_speed'][0]))
    return data['pos'][0].astype(float), data['goals'].astype(float), params


def run_fleet(starts, goals, params, breaker, max_time):
    """Closed loop: preferred velocities -> OrcaSimulator. Returns (time or None, min gap, sim)."""
    sim = OrcaSimulator(params)
    for start in starts:
        sim.add_agent(start)
    n = len(starts)
    min_gap = np.inf
    while sim.global_time < max_time:
        positions = sim.positions
        gaps = np.linalg.norm(positions[:, None] - positions[None], axis=2) + np.eye(n) * 1e9
        min_gap = min(min_gap, gaps.min())
        pref, arrived = goal_velocities(positions, goals, params.max_speed, 1.0, GOAL_TOLERANCE,
                                        time_step=params.time_step)
        if arrived.all():
            return sim.global_time, min_gap, sim
        if breaker is not None:
            pref = breaker.update(sim.global_time, positions, pref, arrived, goals,
                                  params.max_speed, params.radius)
        sim.set_pref_velocities(pref)
        sim.step()
    return None, min_gap, sim


def test_plain_orca_deadlocks_on_circle_16_tight():
    starts, goals, params = circle_setup()
    finished, _, sim = run_fleet(starts, goals, params, breaker=None, max_time=40.0)
    assert finished is None
    remaining = np.linalg.norm(sim.positions - goals, axis=1)
    assert remaining.min() > 7.0  # a jammed ring of radius ~2.56, nobody near its goal
    assert np.linalg.norm(sim.velocities, axis=1).max() < 1e-3


def test_deadlock_breaker_brings_circle_16_tight_home_without_collision():
    starts, goals, params = circle_setup()
    breaker = DeadlockBreaker(len(starts))
    finished, min_gap, sim = run_fleet(starts, goals, params, breaker, max_time=150.0)
    assert finished is not None, np.linalg.norm(sim.positions - goals, axis=1)
    assert np.all(np.linalg.norm(sim.positions - goals, axis=1) <= GOAL_TOLERANCE)
    # ORCA is collision-free up to its own discrete-time slack (RVO2 shows the same ~0.1 %).
    assert min_gap >= 0.99 * 2 * params.radius


@pytest.mark.slow
def test_deadlock_breaker_clears_a_larger_ring():
    n, ring = 32, 10.0
    angle = 2 * np.pi * np.arange(n) / n
    starts = ring * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    params = OrcaParams(time_step=0.1, neighbor_dist=4.0, max_neighbors=10, time_horizon=3.0,
                        time_horizon_obst=3.0, radius=0.5, max_speed=1.0)
    finished, min_gap, _ = run_fleet(starts, -starts, params, DeadlockBreaker(n), max_time=250.0)
    assert finished is not None
    assert min_gap >= 0.95 * 2 * params.radius


def test_deadlock_breaker_with_reference_rvo2():
    pyrvo = pytest.importorskip('pyrvo')
    starts, goals, params = circle_setup()
    sim = pyrvo.RVOSimulator()
    sim.set_time_step(params.time_step)
    sim.set_agent_defaults(params.neighbor_dist, params.max_neighbors, params.time_horizon,
                           params.time_horizon_obst, params.radius, params.max_speed)
    for start in starts:
        sim.add_agent((float(start[0]), float(start[1])))
    n = len(starts)
    breaker = DeadlockBreaker(n)
    for step in range(1500):
        positions = np.array([sim.get_agent_position(i).to_tuple() for i in range(n)])
        pref, arrived = goal_velocities(positions, goals, params.max_speed, 1.0, GOAL_TOLERANCE,
                                        time_step=params.time_step)
        if arrived.all():
            break
        pref = breaker.update(step * params.time_step, positions, pref, arrived, goals,
                              params.max_speed, params.radius)
        for i in range(n):
            sim.set_agent_pref_velocity(i, (float(pref[i, 0]), float(pref[i, 1])))
        sim.do_step()
    assert arrived.all()
