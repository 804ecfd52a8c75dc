"""Trajectory tracking (core/tracking.py) and path timing (core/path_timing.py)."""
import numpy as np
import pytest

from orca_nav.core.fleet.tracking import FleetTracker, TrackingParams
from orca_nav.core.geometry import wrap_angle
from orca_nav.core.planning.path_timing import reference_from_samples, time_path
from orca_nav.core.planning.reference import Reference


def forward_then_reverse():
    """5 m forward along +x, then 3 m backward (heading stays +x): one cusp at x = 5."""
    x = np.concatenate([np.linspace(0, 5, 11), np.linspace(5, 2, 7)[1:]])
    direction = np.r_[np.ones(11), -np.ones(6)]
    return x, np.zeros_like(x), np.zeros_like(x), direction


def arc(radius, angle, n=40):
    theta = np.linspace(0.0, angle, n)
    return radius * np.sin(theta), radius * (1 - np.cos(theta)), theta, np.ones(n)


def simulate(tracker, refs, steps, dt=0.05, start=None, hold=None):
    """Integrates the preferred velocities (and yaw commands) of every robot; returns the final
    state and the command history. `hold(k)` -> bool mask of robots blocked at step k."""
    n = tracker.n
    pos = np.array([r.positions[0] for r in refs]) if start is None else np.array(start, float)
    yaw = np.array([r.yaw[0] for r in refs])
    history = []
    for k in range(steps):
        cmd = tracker.update(k * dt, pos, yaw, max_speed=1.0, max_yaw_rate=2.0)
        history.append(cmd)
        moving = np.ones(n, bool) if hold is None else ~hold(k)
        pos = pos + dt * cmd.pref_velocity * moving[:, None]
        yaw = wrap_angle(yaw + dt * cmd.yaw_rate * moving)
        if cmd.reached.all():
            break
    return pos, yaw, history


# ---------------------------------------------------------------- path timing
def test_time_path_trapezoid_stops_at_cusp_and_reverses_backward():
    ref = time_path(*forward_then_reverse(), max_speed=1.0, max_accel=0.5, cusp_dwell=0.5)
    speed = np.linalg.norm(ref.velocities, axis=1)
    assert speed.max() <= 1.0 + 1e-9
    assert speed[0] == 0.0 and speed[-1] == 0.0
    cusp = np.flatnonzero(ref.direction[1:] != ref.direction[:-1])
    assert cusp.size == 1
    c = int(cusp[0])
    assert speed[c] == 0.0 and speed[c + 1] == 0.0
    assert ref.times[c + 1] - ref.times[c] == pytest.approx(0.5)
    np.testing.assert_allclose(ref.positions[c], [5.0, 0.0])
    # Reversing: the velocity points against the heading (+x), so vx < 0 in the second segment.
    assert np.all(ref.velocities[c + 2:-1, 0] < 0.0)
    assert np.all(ref.direction[c + 1:] == -1)
    # Acceleration along each segment within the limit (finite differences of the speed).
    for seg in (slice(0, c + 1), slice(c + 1, None)):
        dv = np.diff(speed[seg]) / np.diff(ref.times[seg])
        assert np.abs(dv).max() <= 0.5 * 1.05
    # 5 m at 1 m/s with 0.5 m/s^2 ramps: 5 + 1/0.5 = 7 s; the 3 m leg: 3 + 2 = 5 s.
    assert ref.duration == pytest.approx(7.0 + 0.5 + 5.0, rel=0.02)


def test_time_path_curvature_speed_limit():
    radius = 2.0
    ref = time_path(*arc(radius, np.pi), max_speed=3.0, max_accel=1.0, max_yaw_rate=0.5,
                    max_lateral_accel=10.0)
    speed = np.linalg.norm(ref.velocities, axis=1)
    assert speed.max() <= 0.5 * radius * 1.01      # yaw-rate limit: v <= w_max * R
    ref = time_path(*arc(radius, np.pi), max_speed=3.0, max_accel=1.0, max_lateral_accel=0.5)
    assert np.linalg.norm(ref.velocities, axis=1).max() <= np.sqrt(0.5 * radius) * 1.01


def test_time_path_turn_in_place_takes_time_and_adds_no_cusp():
    x = np.array([0.0, 1.0, 1.0, 1.0, 2.0])
    y = np.zeros(5)
    yaw = np.array([0.0, 0.0, np.pi / 2, np.pi / 2, np.pi / 2])
    # After the turn the robot moves along +x while facing +y: the given direction decides (+1).
    ref = time_path(x, y, yaw, np.ones(5), max_speed=1.0, max_accel=1.0, max_yaw_rate=1.0)
    assert np.all(ref.direction == 1)
    turning = np.abs(ref.yaw_rate) > 1e-6
    assert turning.any()
    assert np.abs(ref.yaw_rate).max() <= 1.0 + 1e-6
    assert ref.duration >= np.pi / 2 / 1.0


def test_time_path_single_pose_holds_still():
    ref = time_path([1.0], [2.0], [0.3], [1], max_speed=1.0, max_accel=1.0)
    assert len(ref) == 2
    np.testing.assert_allclose(ref.positions, [[1, 2], [1, 2]])
    assert not ref.velocities.any()


@pytest.mark.parametrize('field, kwargs', [
    ('x', dict(x=[0.0, np.nan])),
    ('max_speed', dict(max_speed=0.0)),
    ('max_accel', dict(max_accel=-1.0)),
    ('max_yaw_rate', dict(max_yaw_rate=np.nan)),
])
def test_time_path_bad_input_names_the_field(field, kwargs):
    args = dict(x=[0.0, 1.0], y=[0.0, 0.0], yaw=[0.0, 0.0], direction=[1, 1], max_speed=1.0,
                max_accel=1.0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=field):
        time_path(**args)


def test_reference_from_samples_heading_follows_velocity_and_holds_at_rest():
    t = np.linspace(0, 2, 5)
    vel = np.array([[0, 0], [1, 0], [0, 1], [0, 1], [0, 0]], float)
    pos = np.cumsum(vel, axis=0) * 0.5
    ref = reference_from_samples(t, pos, vel, np.zeros_like(vel), start_yaw=-1.0)
    np.testing.assert_allclose(ref.yaw, [-1.0, 0.0, np.pi / 2, np.pi / 2, np.pi / 2])
    assert np.all(ref.direction == 1)


def test_reference_validation():
    good = dict(times=[0, 1], positions=np.zeros((2, 2)), velocities=np.zeros((2, 2)),
                accelerations=np.zeros((2, 2)), yaw=[0, 0], yaw_rate=[0, 0], direction=[1, 1])
    Reference(**good)
    with pytest.raises(ValueError, match='times'):
        Reference(**{**good, 'times': [0, 0]})
    with pytest.raises(ValueError, match=r'positions\[1, 0\]'):
        Reference(**{**good, 'positions': [[0, 0], [np.nan, 0]]})
    with pytest.raises(ValueError, match='direction'):
        Reference(**{**good, 'direction': [1, 0]})


# ---------------------------------------------------------------- tracking
def test_tracker_follows_cusp_path_and_reaches_goal_with_yaw():
    ref = time_path(*forward_then_reverse(), max_speed=1.0, max_accel=0.5)
    tracker = FleetTracker([True])
    tracker.set_reference(0, ref, start_time=0.0)
    pos, yaw, history = simulate(tracker, [ref], steps=600)
    assert history[-1].reached[0]
    assert np.linalg.norm(pos[0] - [2.0, 0.0]) <= TrackingParams().position_tolerance
    directions = np.array([c.direction[0] for c in history])
    # Forward first, then reversing, never back: exactly one switch.
    assert directions[0] == 1 and directions[-1] == -1
    assert np.count_nonzero(np.diff(directions)) == 1
    # The switch happens only once the robot is at the cusp.
    switch = int(np.flatnonzero(np.diff(directions))[0]) + 1
    assert abs(history[switch].reference_position[0, 0] - 5.0) < 0.3


def test_tracker_carrot_does_not_chase_stale_time_when_held_up():
    """A robot held still for 6 s then released follows a carrot near its own progress point,
    not the reference point 6 s ahead (which would make it cut the corner)."""
    ref = time_path(*arc(3.0, np.pi), max_speed=1.0, max_accel=1.0)
    params = TrackingParams(lookahead_time=1.0)
    tracker = FleetTracker([False], params=params)
    tracker.set_reference(0, ref, start_time=0.0)
    pos, _, history = simulate(tracker, [ref], steps=121, hold=lambda k: np.array([k < 120]))
    carrot = history[-1].reference_position[0]
    # Progress is still at the start; the carrot is at most lookahead_time (at <= 1 m/s) ahead.
    assert np.linalg.norm(carrot - ref.positions[0]) <= 1.0 + 1e-6
    assert np.linalg.norm(ref.position_at(6.0)[0] - ref.positions[0]) > 3.0
    # Released, it still finishes along the path.
    pos, _, history = simulate(tracker, [ref], steps=1000, start=pos)
    assert history[-1].reached[0]


def test_tracker_vectorised_over_robots_with_and_without_reference():
    refs = [time_path(*arc(2.0, np.pi / 2), max_speed=1.0, max_accel=1.0),
            time_path(*forward_then_reverse(), max_speed=0.8, max_accel=1.0),
            time_path([0, 0], [0, 4], [np.pi / 2] * 2, [1, 1], max_speed=1.0, max_accel=1.0)]
    tracker = FleetTracker([False, True, True, False])
    for i, ref in enumerate(refs):
        tracker.set_reference(i, ref, start_time=0.0)
    pos = np.array([r.positions[0] for r in refs] + [[9.0, 9.0]])
    yaw = np.array([r.yaw[0] for r in refs] + [0.0])
    for k in range(800):
        cmd = tracker.update(0.05 * k, pos, yaw, max_speed=np.array([1.0, 1.0, 1.0, 1.0]),
                             max_yaw_rate=2.0)
        assert np.all(np.linalg.norm(cmd.pref_velocity, axis=1) <= 1.0 + 1e-9)
        assert not cmd.pref_velocity[3].any() and not cmd.active[3] and not cmd.reached[3]
        pos = pos + 0.05 * cmd.pref_velocity
        yaw = wrap_angle(yaw + 0.05 * cmd.yaw_rate)
        if cmd.reached[:3].all():
            break
    assert cmd.reached[:3].all()
    for i, ref in enumerate(refs):
        assert np.linalg.norm(pos[i] - ref.positions[-1]) <= 0.15


def test_tracker_clear_stops_the_robot():
    ref = time_path(*arc(2.0, np.pi / 2), max_speed=1.0, max_accel=1.0)
    tracker = FleetTracker([False])
    tracker.set_reference(0, ref, 0.0)
    cmd = tracker.update(1.0, ref.positions[:1], [0.0], max_speed=1.0)
    assert np.linalg.norm(cmd.pref_velocity) > 0.1
    tracker.clear(0)
    cmd = tracker.update(1.1, ref.positions[:1], [0.0], max_speed=1.0)
    assert not cmd.pref_velocity.any() and not cmd.active[0]


def test_tracker_without_any_reference_answers_as_for_a_robot_without_one():
    """A fleet with no reference at all takes a short path: the same command a robot without a
    reference gets next to one that has a reference."""
    ref = time_path(*arc(2.0, np.pi / 2), max_speed=1.0, max_accel=1.0)
    mixed, idle = FleetTracker([False, True]), FleetTracker([False, True])
    mixed.set_reference(0, ref, 0.0)
    pos, yaw = np.array([ref.positions[0], [3.0, -1.0]]), np.array([0.0, 0.5])
    for k in range(3):
        full = mixed.update(0.05 * k, pos, yaw, max_speed=1.0, max_yaw_rate=2.0)
        short = idle.update(0.05 * k, pos, yaw, max_speed=1.0, max_yaw_rate=2.0)
        for name in ('pref_velocity', 'direction', 'yaw_rate', 'reference_position', 'active',
                     'reached'):
            a, b = getattr(full, name)[1], getattr(short, name)[1]
            assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert idle.progress_time()[1] == 0.0


def test_tracker_bad_input():
    tracker = FleetTracker([False, False])
    with pytest.raises(ValueError, match='positions'):
        tracker.update(0.0, [[0, 0], [np.nan, 0]], [0, 0], 1.0)
    with pytest.raises(ValueError, match='positions must have shape'):
        tracker.update(0.0, [[0, 0]], [0, 0], 1.0)
    with pytest.raises(ValueError, match='index'):
        tracker.set_reference(5, None, 0.0)
    with pytest.raises(ValueError, match='position_gain'):
        TrackingParams(position_gain=0.0)


# ---------------------------------------------------------------- tracking -> non-holonomic twists
def drive(kinematics, ref, steps=1500, dt=0.05, **limit_kw):
    """Closed loop: tracker -> tracking_twist -> exact pose integration with acceleration limits."""
    from orca_nav.core.fleet.kinematics import RobotLimits, integrate_pose, limit_twist
    from orca_nav.core.fleet.tracking import tracking_twist
    limits = RobotLimits.create([kinematics], max_speed=1.0, max_accel=2.0, max_yaw_rate=2.0,
                                **limit_kw)
    tracker = FleetTracker([True], steered=[kinematics == 'car'])
    tracker.set_reference(0, ref, 0.0)
    pose = np.array([[*ref.positions[0], ref.yaw[0]]])
    twist = np.zeros((1, 3))
    log = []
    for k in range(steps):
        cmd = tracker.update(k * dt, pose[:, :2], pose[:, 2], max_speed=1.0, max_yaw_rate=2.0)
        if cmd.reached[0]:
            return pose[0], log, True
        command = tracking_twist(cmd.pref_velocity, pose[:, 2], limits, cmd)
        log.append((cmd.direction[0], command[0].copy()))
        twist = limit_twist(command, twist, limits, dt)
        pose = integrate_pose(pose, twist, dt)
    return pose[0], log, False


def test_car_drives_reversing_segment_backward_and_reaches_goal():
    # Forward along a quarter circle of radius 3, then straight back along the final heading.
    x, y, yaw, d = arc(3.0, np.pi / 2, n=30)
    back = np.linspace(0.0, 2.0, 11)[1:]
    x = np.r_[x, np.full(10, x[-1])]
    y = np.r_[y, y[-1] - back]
    yaw = np.r_[yaw, np.full(10, yaw[-1])]
    ref = time_path(x, y, yaw, np.r_[d, -np.ones(10)], max_speed=1.0, max_accel=1.0,
                    max_yaw_rate=2.0)
    pose, log, reached = drive('car', ref, min_turning_radius=2.5)
    assert reached
    assert np.linalg.norm(pose[:2] - ref.positions[-1]) <= TrackingParams().car_lateral_tolerance
    assert abs(wrap_angle(pose[2] - ref.yaw[-1])) <= 0.2
    reversing = [tw for direction, tw in log if direction < 0]
    forward = [tw for direction, tw in log if direction > 0]
    assert reversing and all(tw[0] <= 1e-9 for tw in reversing)
    assert all(tw[0] >= -1e-9 for tw in forward)
    # Curvature within the car's limit throughout.
    assert all(abs(tw[2]) <= abs(tw[0]) / 2.5 + 1e-9 for _, tw in log)


def test_a_car_ends_a_turn_at_its_steering_limit_at_the_turns_end():
    """A quarter turn at the car's min turning radius, then its goal: steering the path's own
    curve (not only once a heading error built up) the car follows it to within the position
    tolerance of its end, not beside it (where only a manoeuvre would fix the error)."""
    x, y, yaw, d = arc(2.0, np.pi / 2)
    ref = time_path(x, y, yaw, d, max_speed=1.0, max_accel=1.0, max_yaw_rate=1.0)
    pose, log, reached = drive('car', ref, min_turning_radius=2.0)
    assert reached
    assert np.linalg.norm(pose[:2] - ref.positions[-1]) <= TrackingParams().position_tolerance
    assert all(abs(tw[2]) <= abs(tw[0]) / 2.0 + 1e-9 for _, tw in log)


def test_diff_drive_turns_in_place_and_aligns_final_yaw():
    x = np.array([0.0, 2.0, 2.0, 2.0])
    y = np.zeros(4)
    yaw = np.array([0.0, 0.0, np.pi / 2, np.pi / 2])
    x, y, yaw = np.r_[x, 2.0], np.r_[y, 2.0], np.r_[yaw, np.pi / 2]
    ref = time_path(x, y, yaw, np.ones(5), max_speed=1.0, max_accel=1.0, max_yaw_rate=1.5)
    pose, log, reached = drive('diff_drive', ref)
    assert reached
    np.testing.assert_allclose(pose[:2], [2.0, 2.0], atol=0.15)
    assert abs(wrap_angle(pose[2] - np.pi / 2)) <= 0.2
    assert any(abs(tw[0]) < 1e-6 and abs(tw[2]) > 0.3 for _, tw in log)   # turned on the spot


def test_car_at_the_end_closes_only_the_error_along_its_heading():
    """A car that stopped 0.3 m beside and 0.3 m short of its goal creeps forward along its
    heading, never steers around to fix the sideways error, and counts as arrived."""
    ref = time_path([0.0, 5.0], [0.0, 0.0], [0.0, 0.0], [1, 1], max_speed=1.0, max_accel=1.0)
    tracker = FleetTracker([True], steered=[True])
    tracker.set_reference(0, ref, start_time=-100.0)    # long past the end
    pos, yaw = np.array([[4.7, 0.3]]), np.zeros(1)
    for k in range(200):
        cmd = tracker.update(0.05 * k, pos, yaw, max_speed=1.0)
        assert abs(cmd.pref_velocity[0, 1]) < 1e-12 and cmd.direction[0] == 1
        pos = pos + 0.05 * cmd.pref_velocity
        if cmd.reached[0]:
            break
    assert cmd.reached[0]
    assert abs(pos[0, 0] - 5.0) <= TrackingParams().position_tolerance and pos[0, 1] == 0.3
    # Overshot: it backs up (direction -1) along its heading.
    cmd = tracker.update(20.0, np.array([[5.6, 0.3]]), yaw, max_speed=1.0)
    assert cmd.direction[0] == -1 and cmd.pref_velocity[0, 0] < 0.0
