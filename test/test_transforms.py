"""TransformBuffer against tf2's semantics, with scipy's rotations and slerp as the reference."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation, Slerp

from orca_nav.core.transforms import (
    ConnectivityError,
    ExtrapolationError,
    FrameNotFoundError,
    TransformBuffer,
    slerp,
    transform_planar_poses,
)


def q_yaw(yaw):
    return Rotation.from_euler('z', yaw).as_quat()      # x, y, z, w like geometry_msgs


def rot(q):
    return Rotation.from_quat(q)


def assert_same_rotation(q, expected, atol=1e-9):
    assert abs(abs(np.dot(q, expected)) - 1.0) < atol, (q, expected)


@pytest.fixture
def robot_tree():
    """map -> odom (localization at 1 and 2 s), odom -> base_link (odometry every 0.5 s from
    1 to 3 s), base_link -> laser (static, with a tilt so the chain is properly 3D)."""
    buf = TransformBuffer()
    buf.set_transform('map', 'odom', 1.0, [1.0, 2.0, 0.0], q_yaw(0.1))
    buf.set_transform('map', 'odom', 2.0, [1.5, 2.0, 0.0], q_yaw(0.5))
    for k, t in enumerate(np.arange(1.0, 3.01, 0.5)):
        buf.set_transform('odom', 'base_link', t, [0.4 * k, 0.1 * k, 0.0], q_yaw(0.2 * k))
    laser_q = Rotation.from_euler('zyx', [0.3, 0.2, 0.0]).as_quat()
    buf.set_transform('base_link', 'laser', 0.0, [0.2, 0.0, 0.3], laser_q, static=True)
    return buf, laser_q


def test_chain_interpolates_translation_linearly_and_rotation_by_slerp(robot_tree):
    buf, laser_q = robot_tree
    t = 1.75
    # map -> odom at 1.75: 3/4 of the way from the 1 s sample to the 2 s one
    map_odom_t = np.array([1.0, 2.0, 0.0]) + 0.75 * np.array([0.5, 0.0, 0.0])
    map_odom_r = Slerp([1.0, 2.0], Rotation.from_quat([q_yaw(0.1), q_yaw(0.5)]))(t)
    # odom -> base_link at 1.75: half way between the samples at 1.5 (k=1) and 2.0 (k=2)
    odom_base_t = np.array([0.6, 0.15, 0.0])
    odom_base_r = Slerp([1.5, 2.0], Rotation.from_quat([q_yaw(0.2), q_yaw(0.4)]))(t)
    expected_r = map_odom_r * odom_base_r * rot(laser_q)
    expected_t = (map_odom_t + map_odom_r.apply(odom_base_t)
                  + (map_odom_r * odom_base_r).apply([0.2, 0.0, 0.3]))

    got = buf.lookup('map', 'laser', t)
    np.testing.assert_allclose(got.translation, expected_t, atol=1e-12)
    assert_same_rotation(got.rotation, expected_r.as_quat())
    assert got.stamp == t
    # the inverse direction is the inverse transform
    back = buf.lookup('laser', 'map', t)
    np.testing.assert_allclose(back.translation, expected_r.inv().apply(-expected_t), atol=1e-12)
    assert_same_rotation(back.rotation, expected_r.inv().as_quat())


def test_exact_sample_times_and_the_buffer_ends_are_inside(robot_tree):
    buf, _ = robot_tree
    for t in (1.0, 2.0):
        got = buf.lookup('map', 'odom', t)
        np.testing.assert_allclose(got.translation, [1.0 if t == 1.0 else 1.5, 2.0, 0.0])


def test_extrapolation_is_refused_naming_frames_edge_and_times(robot_tree):
    buf, _ = robot_tree
    with pytest.raises(ExtrapolationError) as future:
        buf.lookup('map', 'base_link', 2.5)       # odom -> base_link has it, map -> odom not
    msg = str(future.value)
    assert 'into the future' in msg and '2.500000000' in msg and '2.000000000' in msg
    assert '[base_link]' in msg and '[map]' in msg and '[map] -> [odom]' in msg
    with pytest.raises(ExtrapolationError, match='into the past.*0.500000000.*1.000000000'):
        buf.lookup('odom', 'base_link', 0.5)


def test_late_tf_policy_newest_transform_within_the_tolerance_else_the_error(robot_tree):
    """Odometry newer than the newest map -> odom by up to the tolerance gets the newest
    transform; further ahead, or older than the buffer holds, it is the extrapolation error."""
    buf, _ = robot_tree
    newest = buf.lookup('map', 'odom', 2.0)
    late = buf.lookup_late('map', 'odom', 2.8, tolerance=1.0)
    np.testing.assert_allclose(late.translation, newest.translation)
    assert late.stamp == 2.0
    inside = buf.lookup_late('map', 'odom', 1.5, tolerance=1.0)     # covered: interpolated
    np.testing.assert_allclose(inside.translation, [1.25, 2.0, 0.0])
    with pytest.raises(ExtrapolationError, match='into the future.*3.100000000.*2.000000000'):
        buf.lookup_late('map', 'odom', 3.1, tolerance=1.0)
    with pytest.raises(ExtrapolationError, match='into the past'):
        buf.lookup_late('map', 'odom', 0.5, tolerance=1.0)


def test_a_single_sample_answers_only_its_own_time():
    buf = TransformBuffer()
    buf.set_transform('map', 'odom', 5.0, [1.0, 0.0, 0.0], q_yaw(0.0))
    assert buf.lookup('map', 'odom', 5.0).translation[0] == 1.0
    with pytest.raises(ExtrapolationError, match='only time 5.000000000 is in the buffer'):
        buf.lookup('map', 'odom', 5.1)


def test_time_zero_is_the_latest_common_time_of_the_chain(robot_tree):
    buf, _ = robot_tree
    assert buf.latest_common_time('map', 'laser') == 2.0      # map -> odom's newest sample
    got = buf.lookup('map', 'laser', 0.0)
    assert got.stamp == 2.0
    np.testing.assert_allclose(got.translation, buf.lookup('map', 'laser', 2.0).translation)
    assert buf.lookup('odom', 'base_link', 0).stamp == 3.0
    # a static-only chain holds at any time; its latest common time is 0 as in tf2
    assert buf.latest_common_time('base_link', 'laser') == 0.0
    np.testing.assert_allclose(buf.lookup('base_link', 'laser', 123.0).translation,
                               [0.2, 0.0, 0.3])


def test_frames_of_different_branches_meet_at_their_common_ancestor():
    buf = TransformBuffer()
    buf.set_transform('map', 'a/odom', 1.0, [1.0, 0.0, 0.0], q_yaw(0.0))
    buf.set_transform('a/odom', 'a/base_link', 1.0, [0.0, 1.0, 0.0], q_yaw(np.pi / 2))
    buf.set_transform('map', 'b/odom', 1.0, [5.0, 0.0, 0.0], q_yaw(0.0))
    buf.set_transform('b/odom', 'b/base_link', 1.0, [0.0, 0.0, 0.0], q_yaw(0.0))
    got = buf.lookup('a/base_link', 'b/base_link', 1.0)     # b seen from a
    # a is at (1, 1) facing +y; b is at (5, 0), i.e. (4, -1) away: (-1, -4) in a's frame
    np.testing.assert_allclose(got.translation, [-1.0, -4.0, 0.0], atol=1e-12)
    assert_same_rotation(got.rotation, q_yaw(-np.pi / 2))
    identity = buf.lookup('a/odom', 'a/odom', 0)
    np.testing.assert_allclose(identity.translation, 0.0)


def test_the_cache_keeps_cache_time_behind_the_newest_sample_and_refuses_older_inserts():
    buf = TransformBuffer(cache_time=2.0)
    for t in range(0, 6):
        assert buf.set_transform('odom', 'base_link', float(t), [t, 0.0, 0.0], q_yaw(0.0))
    buf.lookup('odom', 'base_link', 3.0)
    with pytest.raises(ExtrapolationError, match='earliest data is at time 3.0'):
        buf.lookup('odom', 'base_link', 2.5)
    assert not buf.set_transform('odom', 'base_link', 2.5, [0.0, 0.0, 0.0], q_yaw(0.0))
    # out of order but within the cache: inserted in time order
    assert buf.set_transform('odom', 'base_link', 4.5, [10.0, 0.0, 0.0], q_yaw(0.0))
    assert buf.lookup('odom', 'base_link', 4.5).translation[0] == 10.0
    assert buf.lookup('odom', 'base_link', 4.25).translation[0] == pytest.approx(7.0)


def test_a_sample_at_an_existing_stamp_replaces_it_and_a_new_static_replaces_the_old():
    buf = TransformBuffer()
    buf.set_transform('map', 'odom', 1.0, [1.0, 0.0, 0.0], q_yaw(0.0))
    buf.set_transform('map', 'odom', 2.0, [2.0, 0.0, 0.0], q_yaw(0.0))
    buf.set_transform('map', 'odom', 2.0, [4.0, 0.0, 0.0], q_yaw(0.0))
    assert buf.lookup('map', 'odom', 1.5).translation[0] == pytest.approx(2.5)
    buf.set_transform('base_link', 'laser', 0.0, [0.1, 0.0, 0.0], q_yaw(0.0), static=True)
    buf.set_transform('base_link', 'laser', 0.0, [0.3, 0.0, 0.0], q_yaw(0.0), static=True)
    assert buf.lookup('base_link', 'laser', 7.0).translation[0] == 0.3


def test_a_jump_back_in_time_clears_dynamic_transforms_but_keeps_static_ones(robot_tree):
    buf, _ = robot_tree
    assert not buf.observe_time(10.0)
    assert not buf.observe_time(10.0)
    assert buf.observe_time(3.0)
    with pytest.raises(FrameNotFoundError):
        buf.lookup('map', 'odom', 0)
    np.testing.assert_allclose(buf.lookup('base_link', 'laser', 0).translation, [0.2, 0.0, 0.3])
    # and it fills again from the new time on
    buf.set_transform('map', 'odom', 0.5, [0.0, 0.0, 0.0], q_yaw(0.0))
    assert buf.lookup('map', 'odom', 0.5).stamp == 0.5


def test_unknown_and_unconnected_frames_and_loops_are_errors(robot_tree):
    buf, _ = robot_tree
    with pytest.raises(FrameNotFoundError, match=r'\[robot9/odom\].*target_frame'):
        buf.lookup('robot9/odom', 'base_link', 0)
    buf.set_transform('world', 'other', 1.0, [0.0, 0.0, 0.0], q_yaw(0.0))
    with pytest.raises(ConnectivityError, match='not part of the same tree'):
        buf.lookup('map', 'other', 1.0)
    buf.set_transform('other', 'world', 1.0, [0.0, 0.0, 0.0], q_yaw(0.0))
    with pytest.raises(ConnectivityError, match='loop'):
        buf.lookup('map', 'other', 1.0)
    with pytest.raises(FrameNotFoundError, match='start with'):
        buf.lookup('/map', 'odom', 1.0)


@pytest.mark.parametrize('parent, child, stamp, t, q, match', [
    ('map', 'map', 1.0, [0, 0, 0], [0, 0, 0, 1], 'itself'),
    ('', 'odom', 1.0, [0, 0, 0], [0, 0, 0, 1], 'parent frame'),
    ('map', '/odom', 1.0, [0, 0, 0], [0, 0, 0, 1], 'child frame'),
    ('map', 'odom', 1.0, [np.nan, 0, 0], [0, 0, 0, 1], 'non-finite'),
    ('map', 'odom', np.inf, [0, 0, 0], [0, 0, 0, 1], 'non-finite'),
    ('map', 'odom', 1.0, [0, 0, 0], [0, 0, 0, 0], 'non-unit'),
    ('map', 'odom', 1.0, [0, 0, 0], [0, 0, 1, 1], 'non-unit'),
])
def test_invalid_transforms_are_rejected_naming_what_is_wrong(parent, child, stamp, t, q, match):
    with pytest.raises(ValueError, match=match):
        TransformBuffer().set_transform(parent, child, stamp, t, q)


def test_nearly_unit_quaternions_are_normalised():
    buf = TransformBuffer()
    buf.set_transform('map', 'odom', 1.0, [0, 0, 0], [0.0, 0.0, 0.0, 1.004])
    np.testing.assert_allclose(buf.lookup('map', 'odom', 1.0).rotation, [0, 0, 0, 1])


def test_lookup_many_matches_single_lookups_and_fails_rows_alone():
    """Namespaced trees of 5 robots in one buffer (frames qualified per robot): every robot's
    map -> odom at its own stamp in one call."""
    rng = np.random.default_rng(3)
    buf = TransformBuffer()
    robots = [f'robot{i}' for i in range(5)]
    for r in robots:
        for t in (1.0, 2.0, 3.0):
            buf.set_transform(f'{r}/map', f'{r}/odom', t, rng.normal(size=3),
                              Rotation.random(random_state=rng).as_quat())
    stamps = np.array([1.5, 2.0, 0.0, 2.9, 3.5])          # time 0 = latest; 3.5 extrapolates
    got = buf.lookup_many([f'{r}/map' for r in robots], [f'{r}/odom' for r in robots], stamps)
    assert got.ok.tolist() == [True, True, True, True, False]
    assert 'into the future' in got.errors[4] and '[robot4/odom]' in got.errors[4]
    assert np.isnan(got.translation[4]).all()
    for i, r in enumerate(robots[:4]):
        one = buf.lookup(f'{r}/map', f'{r}/odom', stamps[i])
        np.testing.assert_allclose(got.translation[i], one.translation, atol=1e-12)
        np.testing.assert_allclose(got.rotation[i], one.rotation, atol=1e-12)
        assert got.stamp[i] == one.stamp
    assert got.stamp[2] == 3.0
    # the same pair at several stamps, and an unknown frame, in one call
    many = buf.lookup_many(['robot0/map'] * 3 + ['robot7/map'], ['robot0/odom'] * 4,
                           [1.0, 1.25, 2.0, 1.0])
    assert many.ok.tolist() == [True, True, True, False]
    assert 'robot7/map' in many.errors[3]


def test_slerp_takes_the_shorter_arc_and_matches_scipy():
    q0, q1 = q_yaw(0.2), -q_yaw(1.0)            # the same rotation as +q_yaw(1.0)
    for ratio in (0.0, 0.3, 1.0):
        expected = Slerp([0, 1], Rotation.from_quat([q_yaw(0.2), q_yaw(1.0)]))(ratio).as_quat()
        assert_same_rotation(slerp(q0, q1, ratio), expected)
    assert_same_rotation(slerp(q0, q0, 0.5), q0)


def test_planar_poses_move_with_the_transform():
    poses = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, np.pi / 2]])
    moved = transform_planar_poses([10.0, 0.0, 0.0], q_yaw(np.pi / 2), poses)
    np.testing.assert_allclose(moved, [[10.0, 1.0, np.pi / 2], [8.0, 0.0, np.pi]], atol=1e-12)


def test_long_histories_of_many_edges_survive_compaction_and_growth():
    """30 s of 50 Hz odometry for 12 robots (more edges and samples than the buffer starts
    with room for): the last 10 s stay, exactly, and in order despite a late sample."""
    buf = TransformBuffer(cache_time=10.0)
    robots = range(12)
    for k in range(1500):
        t = k * 0.02
        for i in robots:
            buf.set_transform(f'r{i}/odom', f'r{i}/base_link', t, [t + i, 0.0, 0.0], q_yaw(0.0))
        if k == 1200:       # a late sample, 0.01 s in the past, goes in between
            buf.set_transform('r3/odom', 'r3/base_link', t - 0.01, [t - 0.01 + 3, 1.0, 0.0],
                              q_yaw(0.0))
    newest = 1499 * 0.02
    times = np.linspace(newest - 10.0 + 1e-6, newest, len(robots))
    got = buf.lookup_many([f'r{i}/odom' for i in robots], [f'r{i}/base_link' for i in robots],
                          times)
    assert got.ok.all()
    np.testing.assert_allclose(got.translation[:, 0], times + np.arange(len(robots)), atol=1e-9)
    with pytest.raises(ExtrapolationError, match='into the past'):
        buf.lookup('r0/odom', 'r0/base_link', newest - 10.1)
    late = buf.lookup('r3/odom', 'r3/base_link', 1200 * 0.02 - 0.01)
    np.testing.assert_allclose(late.translation, [1200 * 0.02 - 0.01 + 3, 1.0, 0.0], atol=1e-9)
