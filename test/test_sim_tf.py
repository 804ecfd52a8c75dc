"""The simulator as a real robot stack: odometry in drifting odom frames, map -> odom from a
simulated localization, both TF layouts over real DDS, read back with the TransformBuffer."""
import math

import numpy as np
import pytest

from orca_nav.core.fleet.names import robot_names
from orca_nav.core.sim.localization import SimLocalization, compose_planar
from orca_nav.core.transforms import TransformBuffer, transform_planar_poses

STARTS = np.array([[1.0, 2.0, math.pi / 2], [-3.0, 0.5, 0.3]])


def test_odometry_starts_at_zero_in_an_odom_frame_at_the_start_pose():
    loc = SimLocalization(STARTS)
    np.testing.assert_allclose(loc.odom_poses(STARTS), 0.0, atol=1e-12)
    ahead = compose_planar(STARTS, [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])    # 1 m forward
    np.testing.assert_allclose(loc.odom_poses(ahead), [[1.0, 0.0, 0.0]] * 2, atol=1e-12)


def test_drift_grows_with_distance_only_and_keeps_the_chain_consistent():
    loc = SimLocalization(STARTS, odom_drift=0.05, seed=4)
    loc.update(STARTS)                         # standing still: no drift
    np.testing.assert_allclose(loc.map_to_odom, STARTS, atol=1e-12)
    poses = STARTS.copy()
    for _ in range(100):                       # 10 m straight ahead in 0.1 m steps
        poses = compose_planar(poses, [[0.1, 0.0, 0.0]] * 2)
        loc.update(poses)
    # Dead reckoning from the start (map -> odom as it was) is off by the drift: a random
    # walk of std 0.05 * sqrt(10 m) in position and heading, the heading error also bending
    # the path (up to the heading error times the 10 m travelled).
    believed = compose_planar(STARTS, loc.odom_poses(poses))
    error = np.abs(believed - poses)
    walk = 0.05 * math.sqrt(10)
    assert np.all(error > 0.0)
    assert np.all(error[:, 2] < 5 * walk) and np.all(error[:, :2] < 5 * (walk + 10 * walk))
    # map -> odom composed with the odometry pose is the map pose, whatever the drift
    np.testing.assert_allclose(compose_planar(loc.map_to_odom, loc.odom_poses(poses)), poses,
                               atol=1e-12)
    again = SimLocalization(STARTS, odom_drift=0.05, seed=4)
    again.update(STARTS)
    poses = STARTS.copy()
    for _ in range(100):
        poses = compose_planar(poses, [[0.1, 0.0, 0.0]] * 2)
        again.update(poses)
    np.testing.assert_array_equal(again.map_to_odom, loc.map_to_odom)      # seeded


def test_map_to_odom_goes_out_every_update_post_dated_by_the_tolerance_as_amcl_sends_it():
    """AMCL sends its newest map -> odom with every scan, stamped the scan's time plus its
    transform_tolerance; a new estimate (with its jump) comes at the localization rate."""
    n = 4000
    starts = np.zeros((n, 3))
    loc = SimLocalization(starts, localization_rate=2.0, localization_jump=0.1,
                          transform_tolerance=1.0, seed=1)
    first = loc.map_to_odom_transforms(10.0)
    assert [stamp for stamp, _ in first] == [10.0, 11.0]        # exact at start, and post-dated
    for _, estimate in first:
        np.testing.assert_array_equal(estimate, starts)
    (stamp, same), = loc.map_to_odom_transforms(10.2)          # between estimates: the last one
    assert stamp == pytest.approx(11.2)
    np.testing.assert_array_equal(same, starts)
    (stamp, estimate), = loc.map_to_odom_transforms(10.5)      # a new estimate, with its error
    assert stamp == 11.5
    assert np.std(estimate[:, 0]) == pytest.approx(0.1, rel=0.05)
    assert np.std(estimate[:, 2]) == pytest.approx(0.1, rel=0.05)
    (_, again), = loc.map_to_odom_transforms(10.9)
    np.testing.assert_array_equal(again, estimate)
    (_, newer), = loc.map_to_odom_transforms(11.0)
    assert not np.array_equal(newer, estimate)
    loc.map_to_odom_transforms(15.0)                            # a stall drops missed periods
    (_, held), = loc.map_to_odom_transforms(15.4)
    (_, next_one), = loc.map_to_odom_transforms(15.5)
    assert not np.array_equal(next_one, held)


@pytest.mark.parametrize('field, value', [('odom_drift', -0.1), ('localization_jump', math.nan),
                                          ('localization_rate', 0.0),
                                          ('transform_tolerance', -1.0)])
def test_bad_parameters_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        SimLocalization(STARTS, **{field: value})


# ---------------------------------------------------------------- over DDS
rclpy = pytest.importorskip('rclpy')
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from test_fleet_sim_node import Controller, Ros, forward, lockstep  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from orca_nav.ros.convert import odom_to_state, stamp_to_seconds  # noqa: E402
from orca_nav.ros.sim_tf import SCAN_FRAME, SCAN_HEIGHT_M  # noqa: E402
from orca_nav.ros.tf_listener import TF_QOS, TF_STATIC_QOS  # noqa: E402

from ros_harness import harness_fixture  # noqa: E402

PERIOD = 0.02


ros = harness_fixture(Ros)


def fill(buffer, names_by_topic, messages, static):
    for topic, msgs in messages.items():
        names = names_by_topic[topic]
        for msg in list(msgs):
            for t in msg.transforms:
                tr, q = t.transform.translation, t.transform.rotation
                buffer.set_transform(names.buffer_frame(t.header.frame_id),
                                     names.buffer_frame(t.child_frame_id),
                                     stamp_to_seconds(t.header.stamp), (tr.x, tr.y, tr.z),
                                     (q.x, q.y, q.z, q.w), static=static)


@pytest.mark.parametrize('layout', ['namespaced', 'prefixed'])
def test_both_layouts_publish_odom_frames_and_a_tree_that_gives_the_map_pose(ros, layout):
    robots = ['robot0', 'robot1']
    names = [robot_names(r, layout) for r in robots]
    tf_topics = {n.tf_topic: n for n in names}        # prefixed: one shared topic
    tf = {topic: ros.collect(TFMessage, topic, TF_QOS) for topic in tf_topics}
    ros.sim(robots, extra=lockstep() + [Parameter('tf_layout', value=layout),
                                        Parameter('localization_rate', value=5.0)],
            kinematics=['holonomic'] * 2, start=[list(s) for s in STARTS], max_accel=[10.0] * 2)
    answers = 40
    ctl = Controller(ros, robots, lambda robot, k: forward(0.5) if k < answers else None)
    assert ros.wait_for(lambda: all(len(ctl.odom[r]) > answers for r in robots))
    # tf_static is latched: a subscriber that comes now still gets the lidar mounts
    static = {n.tf_static_topic: ros.collect(TFMessage, n.tf_static_topic, TF_STATIC_QOS)
              for n in names}
    assert ros.wait_for(lambda: all(static.values()))
    newest = answers * PERIOD
    assert ros.wait_for(lambda: all(
        any(stamp_to_seconds(t.header.stamp) >= newest for m in msgs for t in m.transforms)
        for msgs in tf.values()))

    buffer = TransformBuffer()
    by_static_topic = {n.tf_static_topic: n for n in names}
    fill(buffer, tf_topics, tf, static=False)
    fill(buffer, by_static_topic, static, static=True)
    for n, start in zip(names, STARTS):
        msg = ctl.odom[n.robot][answers]
        assert (msg.header.frame_id, msg.child_frame_id) == (n.odom_frame, n.base_frame)
        stamp = stamp_to_seconds(msg.header.stamp)
        state = odom_to_state(msg)
        odom_pose = [*state.position[:2], state.yaw]
        # no drift, no jumps: the odometry is the motion from the start, 0.5 m/s body-forward
        travelled = odom_pose[0]
        assert travelled == pytest.approx(0.5 * (stamp - 2 * PERIOD), abs=0.02)
        assert odom_pose[1] == pytest.approx(0.0, abs=1e-9)
        # map -> base_link through the tree at the odometry's stamp = where the robot is
        via_tf = buffer.lookup(n.buffer_frame('map'), n.buffer_frame(n.base_frame), stamp)
        expected = compose_planar(start, [travelled, 0.0, 0.0])
        pose = transform_planar_poses(via_tf.translation, via_tf.rotation, [0.0, 0.0, 0.0])
        np.testing.assert_allclose(pose, expected, atol=1e-9)
        # ... and so is map -> odom composed with the odometry pose
        map_odom = buffer.lookup(n.buffer_frame('map'), n.buffer_frame(n.odom_frame), stamp)
        np.testing.assert_allclose(
            transform_planar_poses(map_odom.translation, map_odom.rotation, odom_pose),
            expected, atol=1e-9)
        scan = buffer.lookup(n.buffer_frame(n.base_frame),
                             n.buffer_frame(n.robot_frame(SCAN_FRAME)), stamp)
        np.testing.assert_allclose(scan.translation, [0.0, 0.0, SCAN_HEIGHT_M])


def test_without_a_tf_layout_odometry_stays_in_the_global_frame_and_no_tf_goes_out(ros):
    tf = ros.collect(TFMessage, '/tf', TF_QOS)
    ros.sim(['robot0'], extra=lockstep())
    ctl = Controller(ros, ['robot0'], lambda robot, k: forward(0.1) if k < 5 else None)
    assert ros.wait_for(lambda: len(ctl.odom['robot0']) > 5)
    msg = ctl.odom['robot0'][5]
    assert (msg.header.frame_id, msg.child_frame_id) == ('map', 'robot0/base_link')
    assert ros.probe.count_publishers('/tf') == 0 and tf == []
    assert isinstance(msg, Odometry)
