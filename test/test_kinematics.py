"""core/kinematics.py: exact integration, limits, velocity mapping and the tracking-error bound."""
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from orca_nav.core.fleet.kinematics import (
    RobotLimits,
    admissible_twist,
    integrate_pose,
    limit_twist,
    planar_velocity_to_car,
    planar_velocity_to_twist,
    planar_velocity_to_unicycle,
    tracking_error_bound,
)
from orca_nav.core.geometry import body_to_world, row_norms, world_to_body, wrap_angle


def _euler(pose, twist, dt, substeps=20000):
    pose = np.array(pose, dtype=float)
    h = dt / substeps
    for _ in range(substeps):
        c, s = np.cos(pose[2]), np.sin(pose[2])
        pose += h * np.array([c * twist[0] - s * twist[1], s * twist[0] + c * twist[1], twist[2]])
    return pose


def test_integrate_pose_matches_fine_euler_and_closed_form_circle():
    poses = np.array([[1.0, 2.0, 0.3], [0.0, 0.0, -2.0], [5.0, -1.0, 3.0], [0.0, 0.0, 0.0]])
    twists = np.array([[0.8, 0.0, 1.2], [0.5, -0.4, -0.7], [1.0, 0.3, 0.0], [0.0, 0.0, 2.0]])
    dt = 1.3
    exact = integrate_pose(poses, twists, dt)
    for i in range(len(poses)):
        ref = _euler(poses[i], twists[i], dt)
        assert np.allclose(exact[i, :2], ref[:2], atol=1e-4)
        assert np.isclose(wrap_angle(exact[i, 2] - ref[2]), 0.0, atol=1e-9)
    # A full circle of a unicycle comes back to its start, whatever the step count.
    pose = np.array([[2.0, -1.0, 0.7]])
    twist = np.array([[1.0, 0.0, 0.5]])     # radius 2 m, period 4 pi s
    for _ in range(7):
        pose = integrate_pose(pose, twist, 4.0 * np.pi / 7)
    assert np.allclose(pose, [[2.0, -1.0, 0.7]], atol=1e-12)


def test_integrate_pose_tiny_yaw_rate_is_straight_line():
    out = integrate_pose(np.array([[0.0, 0.0, np.pi / 2]]), np.array([[2.0, 0.0, 1e-15]]), 0.5)
    assert np.allclose(out, [[0.0, 1.0, np.pi / 2]], atol=1e-12)


def test_admissible_twist_per_model():
    lim = RobotLimits.create(['holonomic', 'diff_drive', 'car', 'quadrotor', 'car'],
                             max_speed=1.0, max_accel=1.0, max_yaw_rate=2.0,
                             min_turning_radius=[1, 1, 2.0, 1, 2.0])
    cmd = np.array([[3.0, 4.0, 5.0], [0.5, 0.5, -5.0], [1.0, 0.0, 2.0], [0.0, -0.3, 0.1],
                    [0.0, 0.0, 1.0]])
    out = admissible_twist(cmd, lim)
    assert np.allclose(out[0], [0.6, 0.8, 2.0])        # norm clipped, yaw rate clipped
    assert np.allclose(out[1], [0.5, 0.0, -2.0])       # no sideways motion
    assert np.allclose(out[2], [1.0, 0.0, 0.5])        # |wz| <= v / R_min
    assert np.allclose(out[3], [0.0, -0.3, 0.1])
    assert np.allclose(out[4], [0.0, 0.0, 0.0])        # a car cannot turn on the spot


def test_limit_twist_acceleration_and_car_curvature():
    lim = RobotLimits.create(['holonomic', 'diff_drive', 'car'], max_speed=2.0, max_accel=1.0,
                             max_yaw_rate=3.0, min_turning_radius=2.0)
    prev = np.zeros((3, 3))
    cmd = np.array([[2.0, 0.0, 0.0], [-2.0, 0.0, 1.0], [2.0, 0.0, 0.5]])
    out = limit_twist(cmd, prev, lim, 0.1)
    assert np.allclose(out[0], [0.1, 0.0, 0.0])
    assert np.allclose(out[1], [-0.1, 0.0, 1.0])
    assert np.allclose(out[2], [0.1, 0.0, 0.025])      # curvature 0.25 kept while ramping
    # Holonomic: the change is bounded as a vector.
    out = limit_twist(np.array([[0.0, 1.0, 0], [0, 0, 0], [0, 0, 0]]),
                      np.array([[1.0, 0.0, 0], [0, 0, 0], [0, 0, 0]]), lim, 0.1)
    assert np.isclose(np.linalg.norm(out[0, :2] - [1.0, 0.0]), 0.1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-5, 5), st.floats(-5, 5), st.floats(-5, 5),
                          st.floats(-2, 2), st.floats(-2, 2), st.floats(-2, 2)),
                min_size=4, max_size=4),
       st.floats(0.01, 0.5))
# A denormal car speed once rounded the kept curvature above 1 / min_turning_radius.
@example(rows=[(0.0,) * 6, (0.0,) * 6, (5e-324, 0.0, 1.0, 1.0, 0.0, 0.0), (0.0,) * 6], dt=0.5)
def test_limit_twist_never_exceeds_limits(rows, dt):
    rows = np.array(rows)
    lim = RobotLimits.create(['holonomic', 'diff_drive', 'car', 'quadrotor'], max_speed=1.5,
                             max_accel=0.7, max_yaw_rate=1.1, min_turning_radius=1.3)
    prev = admissible_twist(rows[:, 3:], lim)
    out = limit_twist(rows[:, :3], prev, lim, dt)
    eps = 1e-9
    assert np.all(np.linalg.norm(out[:, :2], axis=1) <= 1.5 + eps)
    assert np.all(np.abs(out[:, 2]) <= 1.1 + eps)
    assert np.all(np.linalg.norm(out[:, :2] - prev[:, :2], axis=1) <= 0.7 * dt + eps)
    assert np.all(out[1:3, 1] == 0.0)
    assert abs(out[2, 2]) <= abs(out[2, 0]) / 1.3 + eps


def test_body_world_round_trip():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(10, 2))
    yaw = rng.uniform(-4, 4, size=10)
    assert np.allclose(world_to_body(body_to_world(v, yaw), yaw), v)
    assert np.allclose(body_to_world([[1.0, 0.0]], [np.pi / 2]), [[0.0, 1.0]])


@pytest.mark.parametrize('shape', [(0, 2), (1, 3), (9, 2), (2000, 3), (21, 40, 3), (7, 5, 2),
                                   (50, 4)])
def test_row_norms_are_numpys_norms_bit_for_bit(shape):
    """Its components added by columns give np.linalg.norm's values exactly, over magnitudes
    where the order of the additions shows, and through strided views."""
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    v = rng.normal(size=shape) * 10.0 ** rng.integers(-150, 150, size=shape)
    single = (rng.normal(size=shape) * 10.0 ** rng.integers(-15, 15, size=shape)).astype(np.float32)
    for vectors in (v, single, np.moveaxis(np.moveaxis(v, -1, 0).copy(), 0, -1)):
        with np.errstate(over='ignore'):
            expected = np.linalg.norm(vectors, axis=-1)
            got = row_norms(vectors)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert np.array_equal(got, expected, equal_nan=True)
        assert np.array_equal(np.signbit(got), np.signbit(expected))


def test_unicycle_mapping_cases():
    v_des = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, 0.0], [3.0, 0.0]])
    yaw = np.zeros(5)
    v, w = planar_velocity_to_unicycle(v_des, yaw, max_speed=1.0, max_yaw_rate=1.0,
                                       heading_time=0.2)
    assert np.allclose(v, [1.0, 0.0, 0.0, 0.0, 1.0], atol=1e-12)
    assert np.allclose(w, [0.0, 1.0, -1.0, 0.0, 0.0])   # pi clipped; wraps to -pi
    v, w = planar_velocity_to_unicycle([[-1.0, 0.1]], [0.0], 1.0, 1.0, 0.2, allow_reverse=True)
    assert v[0] < -0.9 and w[0] < 0.0     # reverses; yaw decreases to point the tail at v_des


def test_unicycle_tracking_error_within_bound():
    """Closed loop for one control cycle: the deviation from the holonomic motion <= bound."""
    rng = np.random.default_rng(3)
    n, period = 400, 0.1
    v_des = rng.uniform(-1, 1, size=(n, 2))
    yaw = rng.uniform(-np.pi, np.pi, size=n)
    v, w = planar_velocity_to_unicycle(v_des, yaw, max_speed=2.0, max_yaw_rate=2.5,
                                       heading_time=period)
    pose = integrate_pose(np.column_stack([np.zeros((n, 2)), yaw]),
                          np.column_stack([v, np.zeros(n), w]), period)
    deviation = np.linalg.norm(pose[:, :2] - v_des * period, axis=1)
    bound = tracking_error_bound(np.linalg.norm(v_des, axis=1), period)
    assert np.all(deviation <= bound + 1e-12)
    assert deviation.max() > 0.5 * bound.max()      # and the bound is not vacuous


def test_tracking_error_bound_values_and_errors():
    assert tracking_error_bound(0.5, 0.05) == pytest.approx(0.025)
    assert tracking_error_bound(0.5, 0.05, latency=0.05) == pytest.approx(0.05)
    with pytest.raises(ValueError, match='control_period'):
        tracking_error_bound(1.0, -0.1)


def test_car_mapping_respects_turning_radius_and_reverses():
    rng = np.random.default_rng(1)
    n = 200
    v_des = rng.uniform(-2, 2, size=(n, 2))
    yaw = rng.uniform(-np.pi, np.pi, size=n)
    v, w = planar_velocity_to_car(v_des, yaw, min_turning_radius=2.5, max_speed=1.5)
    assert np.all(np.abs(v) <= 1.5 + 1e-12)
    assert np.all(np.abs(w) <= np.abs(v) / 2.5 + 1e-12)
    heading = np.column_stack([np.cos(yaw), np.sin(yaw)])
    ahead = np.einsum('ij,ij->i', v_des, heading)
    assert np.all(np.sign(v[np.abs(ahead) > 1e-6]) == np.sign(ahead[np.abs(ahead) > 1e-6]))
    v, w = planar_velocity_to_car([[-1.0, 0.0]], [0.0], 2.0, 1.0, allow_reverse=False)
    assert v[0] > 0.0 and abs(w[0]) == pytest.approx(v[0] / 2.0)   # turns around forward
    # Per car: each as it would be alone.
    both = planar_velocity_to_car([[-1.0, 0.0]] * 2, [0.0] * 2, 2.0, 1.0,
                                  allow_reverse=[True, False])
    alone = [planar_velocity_to_car([[-1.0, 0.0]], [0.0], 2.0, 1.0, allow_reverse=flag)
             for flag in (True, False)]
    np.testing.assert_array_equal(both, np.hstack(alone))
    assert both[0][0] < 0.0 < both[0][1]


def test_car_drives_to_a_point_behind_it_by_reversing():
    pose = np.array([[0.0, 0.0, 0.0]])
    target = np.array([-4.0, 1.0])
    lim = RobotLimits.create(['car'], max_speed=1.0, max_accel=2.0, max_yaw_rate=2.0,
                             min_turning_radius=1.5)
    twist = np.zeros((1, 3))
    for _ in range(400):
        error = target - pose[0, :2]
        v_des = (error / max(np.linalg.norm(error), 1e-9) * min(1.0, np.linalg.norm(error)))[None]
        twist = limit_twist(planar_velocity_to_twist(v_des, pose[:, 2], lim), twist, lim, 0.05)
        assert abs(twist[0, 2]) <= abs(twist[0, 0]) / 1.5 + 1e-12
        pose = integrate_pose(pose, twist, 0.05)
    assert np.linalg.norm(pose[0, :2] - target) < 0.3


def test_planar_velocity_to_twist_holonomic_is_body_frame():
    lim = RobotLimits.create(['holonomic', 'diff_drive'], 1.0, 1.0, 1.0)
    twist = planar_velocity_to_twist([[0.0, 0.5], [0.5, 0.0]], [np.pi / 2, 0.0], lim)
    assert np.allclose(twist, [[0.5, 0.0, 0.0], [0.5, 0.0, 0.0]], atol=1e-12)


def test_bad_inputs_name_the_field():
    with pytest.raises(ValueError, match=r'kinematics\[1\]'):
        RobotLimits.create(['holonomic', 'tank'], 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match=r'max_speed\[0\]'):
        RobotLimits.create(['holonomic'], -1.0, 1.0, 1.0)
    lim = RobotLimits.create(['holonomic'], 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match=r'twist\[0, 1\]'):
        admissible_twist([[0.0, np.nan, 0.0]], lim)
    with pytest.raises(ValueError, match=r'v_des'):
        planar_velocity_to_unicycle([[np.inf, 0.0]], [0.0], 1.0, 1.0)
    with pytest.raises(ValueError, match='dt'):
        limit_twist([[0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0]], lim, 0.0)


def test_car_tracking_error_within_its_documented_bound():
    rng = np.random.default_rng(5)
    n, period, fraction = 400, 0.1, 0.5
    v_des = rng.uniform(-1, 1, size=(n, 2))
    yaw = rng.uniform(-np.pi, np.pi, size=n)
    speed = np.linalg.norm(v_des, axis=1)
    for reverse, factor in ((True, np.sqrt(1 + fraction ** 2)), (False, 1 + fraction)):
        v, w = planar_velocity_to_car(v_des, yaw, min_turning_radius=1.0, max_speed=2.0,
                                      heading_time=period, allow_reverse=reverse,
                                      min_speed_fraction=fraction)
        pose = integrate_pose(np.column_stack([np.zeros((n, 2)), yaw]),
                              np.column_stack([v, np.zeros(n), w]), period)
        deviation = np.linalg.norm(pose[:, :2] - v_des * period, axis=1)
        assert np.all(deviation <= factor * speed * period + 1e-12)
