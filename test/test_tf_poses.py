"""Odometry in odom frames composed with TF over real DDS, in both layouts: the pose orca_node
uses, a localization jump, the transform tolerance, and a missing transform going stale with a
diagnostic that names the frame pair."""
import math

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
tf2_msgs = pytest.importorskip('tf2_msgs.msg')
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import TransformStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, qos_profile_sensor_data  # noqa: E402

from orca_nav.core.transforms import TransformError  # noqa: E402
from orca_nav.ros.convert import seconds_to_time, state_to_odom, yaw_to_quaternion  # noqa: E402
from orca_nav.ros.orca_node import OrcaNode  # noqa: E402

from ros_harness import SimClock, harness_fixture, node_time_s, sim_time  # noqa: E402

pytestmark = pytest.mark.ros
TFMessage = tf2_msgs.TFMessage
# (layout, tf topic, map frame, odom frame) of robot r0 as its localization names them
LAYOUTS = {'namespaced': ('/r0/tf', 'map', 'odom'), 'prefixed': ('/tf', 'map', 'r0/odom')}


class Stack:
    """orca_node for r0 on simulated time, with the test as r0's base driver and localization."""

    def __init__(self, ros, layout, tolerance=1.0):
        self.ros = ros
        self.node = ros.add(OrcaNode(context=ros.context, parameter_overrides=[
            sim_time(), Parameter('robots', value=['r0']), Parameter('tf_layout', value=layout),
            Parameter('transform_tolerance', value=tolerance),
            Parameter('diagnostics_rate', value=20.0)]))
        self.clock = SimClock(ros)
        self.topic, self.map_frame, self.odom_frame = LAYOUTS[layout]
        self.tf = ros.publisher(TFMessage, self.topic, QoSProfile(depth=100))
        self.odom_pub = ros.publisher(Odometry, '/r0/odom', qos_profile_sensor_data)

    def localize(self, x, y, yaw, stamp):
        """map -> odom at `stamp`, as AMCL publishes it."""
        tf = TransformStamped()
        tf.header.frame_id, tf.child_frame_id = self.map_frame, self.odom_frame
        tf.header.stamp = seconds_to_time(stamp)
        tf.transform.translation.x, tf.transform.translation.y = float(x), float(y)
        tf.transform.rotation = yaw_to_quaternion(yaw)
        self.tf.publish(TFMessage(transforms=[tf]))
        assert self.ros.wait_for(lambda: self._known(stamp))

    def _known(self, stamp):
        poses = self.node._poses
        names = poses.names['r0']
        try:
            newest = poses.buffer.latest_common_time(names.buffer_frame(self.map_frame),
                                                     names.buffer_frame(self.odom_frame))
        except TransformError:      # the frames are not in the buffer yet
            return False
        return newest >= stamp

    def advance(self, stamp):
        """Simulated time on to `stamp`, once orca_node's clock is there."""
        self.clock.now_s = max(self.clock.now_s, stamp)
        self.clock.publish()
        assert self.ros.wait_for(lambda: node_time_s(self.node) >= self.clock.now_s - 1e-6)

    def odom(self, x, y, yaw, stamp, frame=None):
        self.advance(stamp)
        self.last_odom = state_to_odom((x, y), yaw, (0.5, 0.0), 0.0, seconds_to_time(stamp),
                                       frame or self.odom_frame, 'base_link')
        self.odom_pub.publish(self.last_odom)

    def pose_at(self, stamp):
        """Waits until orca_node holds r0's state of `stamp` (the last odometry sent, sent
        again until it is taken); returns (x, y), yaw, velocity."""
        fleet = self.node.fleet
        assert self.ros.wait_for(lambda: fleet.state.stamp[0] == stamp,
                                 resend=lambda: self.odom_pub.publish(self.last_odom)), \
            fleet.state.stamp
        return (fleet.state.position[0].copy(), float(fleet.state.yaw[0]),
                fleet.state.velocity[0].copy())


ros = harness_fixture()


@pytest.mark.parametrize('layout', ['namespaced', 'prefixed'])
def test_odometry_in_odom_is_put_in_map_with_the_localization_transform(ros, layout):
    stack = Stack(ros, layout)
    stack.localize(10.0, 5.0, math.pi / 2, stamp=100.0)
    stack.odom(1.0, 0.0, 0.0, stamp=100.0)
    xy, yaw, velocity = stack.pose_at(100.0)
    np.testing.assert_allclose(xy, [10.0, 6.0], atol=1e-9)       # (1, 0) turned by 90 deg
    assert yaw == pytest.approx(math.pi / 2)
    np.testing.assert_allclose(velocity, [0.0, 0.5], atol=1e-9)  # forward = +y in map
    # AMCL corrects map -> odom by a metre: the next odometry sample is a metre further at once.
    stack.localize(11.0, 5.0, math.pi / 2, stamp=100.5)
    stack.odom(1.0, 0.0, 0.0, stamp=100.5)
    xy, _, _ = stack.pose_at(100.5)
    np.testing.assert_allclose(xy, [11.0, 6.0], atol=1e-9)


def test_odometry_newer_than_localization_within_the_tolerance_uses_the_newest_transform(ros):
    stack = Stack(ros, 'namespaced', tolerance=1.0)
    stack.localize(2.0, 0.0, 0.0, stamp=100.0)
    stack.odom(1.0, 0.0, 0.0, stamp=100.8)
    xy, _, _ = stack.pose_at(100.8)
    np.testing.assert_allclose(xy, [3.0, 0.0])
    # Beyond the tolerance the sample is refused: r0 keeps its last state.
    stack.odom(1.5, 0.0, 0.0, stamp=101.5)
    stack.odom(1.0, 0.0, 0.0, stamp=100.9, frame='map')     # a marker: taken (map needs no TF)
    xy, _, _ = stack.pose_at(100.9)
    np.testing.assert_allclose(xy, [1.0, 0.0])


def test_odometry_beyond_the_tolerance_goes_stale_and_the_diagnostic_names_the_transform(ros):
    """The late-TF policy's other side: map -> odom stopped at 100 s; odometry more than the
    tolerance newer is refused, the robot's state goes stale and it stops, and /diagnostics
    says so, naming the transform and the times."""
    stack = Stack(ros, 'namespaced', tolerance=1.0)
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics', qos=50)
    stack.localize(2.0, 0.0, 0.0, stamp=100.0)
    stack.odom(1.0, 0.0, 0.0, stamp=100.0)
    stack.pose_at(100.0)
    for k in range(1, 8):
        stack.odom(1.0 + 0.1 * k, 0.0, 0.0, stamp=101.0 + 0.1 * k)

    def stale_reports():
        return [s.message for d in diagnostics for s in d.status if s.hardware_id == 'r0'
                and s.message.startswith('stale odometry') and 'map <- odom' in s.message]
    assert ros.wait_for(stale_reports), [s.message for d in diagnostics for s in d.status]
    message = stale_reports()[-1]
    assert 'stopped; newer odometry refused: no transform map <- odom at 101.' in message
    assert 'only time 100.000000000 is in the buffer' in message
    assert stack.node.fleet.state.stamp[0] == 100.0          # the state of the last usable sample


def test_a_missing_transform_stops_the_robot_and_the_diagnostic_names_the_frames(ros):
    stack = Stack(ros, 'prefixed')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics', qos=50)
    for k in range(3):
        stack.odom(1.0, 0.0, 0.0, stamp=100.0 + 0.1 * k)
    # The report after the refusal says why: a clock tick that came first reported without it.
    assert ros.wait_for(lambda: 0 in stack.node.fleet.state.input_problem)
    stack.advance(100.3)

    def says_why():
        return [s.message for d in diagnostics for s in d.status
                if s.hardware_id == 'r0' and 'map <- r0/odom' in s.message]
    assert ros.wait_for(says_why), [s.message for d in diagnostics for s in d.status]
    assert 'no odometry yet' in says_why()[-1]


def test_tf_layout_none_refuses_odometry_outside_the_global_frame(ros):
    node = ros.add(OrcaNode(context=ros.context, parameter_overrides=[
        Parameter('robots', value=['r0'])]))
    pub = ros.publisher(Odometry, '/r0/odom', qos_profile_sensor_data)
    pub.publish(state_to_odom((1.0, 0.0), 0.0, (0.0, 0.0), 0.0, seconds_to_time(5.0), 'odom',
                              'base_link'))
    assert ros.wait_for(lambda: 0 in node.fleet.state.input_problem)
    assert 'tf_layout none' in node.fleet.state.input_problem[0]


def test_static_transforms_count_at_every_time(ros):
    stack = Stack(ros, 'namespaced')
    static = ros.publisher(TFMessage, '/r0/tf_static',
                           QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    tf = TransformStamped()
    tf.header.frame_id, tf.child_frame_id = 'map', 'odom'
    tf.header.stamp = seconds_to_time(1.0)
    tf.transform.translation.x = 3.0
    tf.transform.rotation.w = 1.0
    static.publish(TFMessage(transforms=[tf]))
    assert ros.wait_for(lambda: stack.node._poses.buffer.parent_of('r0/odom') == 'r0/map')
    stack.odom(1.0, 1.0, 0.0, stamp=250.0)
    xy, _, _ = stack.pose_at(250.0)
    np.testing.assert_allclose(xy, [4.0, 1.0])


def test_a_fleet_launched_in_a_namespace_keeps_its_topics_inside_it(ros):
    """Per-robot names are relative: under /site1 every robot topic and TF tree is /site1/...;
    /map and /diagnostics stay global."""
    node = ros.add(OrcaNode(context=ros.context, namespace='site1', parameter_overrides=[
        Parameter('robots', value=['r0']), Parameter('tf_layout', value='namespaced'),
        Parameter('cmd_vel_stamped', value=True)]))
    assert node._cmd_out[0][2].frame_id == 'base_link'     # r0's own tree names it so
    assert ros.wait_for(lambda: node.count_publishers('/site1/r0/cmd_vel') == 1)
    topics = dict(node.get_topic_names_and_types())
    assert {'/site1/r0/odom', '/site1/r0/goal_pose', '/site1/r0/trajectory', '/site1/r0/tf',
            '/site1/r0/tf_static', '/site1/orca_nav/markers', '/map', '/diagnostics'} <= set(topics)
    assert not any(name.startswith('/r0/') for name in topics)
