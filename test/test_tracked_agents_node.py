"""orca_node's non-cooperative agents over real rclpy / DDS (`ros/tracked_agents.py`): one
nav_msgs/Odometry per agent on `tracked_agents`, avoided with full responsibility, dropped with a
warning once stale; bad agent messages are named and ignored; odometry covariance reaches the
controller. The avoidance itself is tested on the core (test_orca_responsibility.py)."""
import math

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
from geometry_msgs.msg import Twist  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from test_bad_input_runtime import logged  # noqa: E402
from test_orca_node import Ros, _time  # noqa: E402

from orca_nav.ros.convert import state_to_odom  # noqa: E402

from ros_harness import harness_fixture  # noqa: E402

pytestmark = pytest.mark.ros


ros = harness_fixture(Ros)


def _agent(ros, pub, agent, x, y, vx, vy=0.0, frame='map', covariance=None):
    msg = state_to_odom((x, y), math.atan2(vy, vx), (math.hypot(vx, vy), 0.0), 0.0,
                        _time(ros.clock.now_s), frame, agent)
    if covariance is not None:
        msg.pose.covariance = covariance
    pub.publish(msg)


def test_a_tracked_person_is_avoided_and_dropped_when_stale(ros, capfd):
    # (No deadlock breaker: the robot's odometry never moves, which it would take for a stall.)
    ros.orca(['robot0'], tracked_agent_timeout=0.5,
             **{'robot0.goal': [5.0, 0.0, 0.0], 'deadlock.enabled': False})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    pub = ros.publisher(Odometry, '/tracked_agents')
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 3)
    assert cmds[-1].linear.x > 0.1 and abs(cmds[-1].linear.y) < 1e-6    # straight at its goal
    # A person 1.5 m ahead walks straight at the robot: it must step aside.
    for _ in range(4):
        _agent(ros, pub, 'person0', 1.5, 0.02, -1.0)
        ros.tick({'robot0': (0.0, 0.0)}, [cmds])
    assert abs(cmds[-1].linear.y) > 0.1
    # The tracker loses the person: after tracked_agent_timeout the robot heads straight again.
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 14)
    assert logged(ros, capfd, r"tracked_agents: agent 'person0' not heard of for .* dropped")
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 10)       # (the sidestep ramps down at max_accel)
    assert cmds[-1].linear.x > 0.1 and abs(cmds[-1].linear.y) < 1e-6


@pytest.mark.parametrize('kwargs, words', [
    (dict(agent='', x=1.5, y=0.0, vx=-1.0), 'child_frame_id .* is empty'),
    (dict(agent='p', x=1.5, y=0.0, vx=-1.0, frame='odom'), "header.frame_id 'odom' is not"),
    (dict(agent='p', x=math.nan, y=0.0, vx=-1.0), 'not finite'),
    (dict(agent='p', x=1.5, y=0.0, vx=-1.0, covariance=[math.nan] * 36), 'not a finite 2 x 2'),
])
def test_bad_agent_messages_are_named_and_ignored(ros, capfd, kwargs, words):
    ros.orca(['robot0'], **{'robot0.goal': [5.0, 0.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    pub = ros.publisher(Odometry, '/tracked_agents')
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 2)
    for _ in range(3):
        _agent(ros, pub, **kwargs)
        ros.tick({'robot0': (0.0, 0.0)}, [cmds])
    assert logged(ros, capfd, r'tracked_agents: ignoring an agent: .*' + words)
    assert cmds[-1].linear.x > 0.1 and abs(cmds[-1].linear.y) < 1e-6     # nothing to avoid


def test_odometry_covariance_reaches_the_controller(ros):
    ros.orca(['robot0'], **{'robot0.goal': [5.0, 0.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 2)
    msg = state_to_odom((0.0, 0.0), 0.0, (0.0, 0.0), 0.0, _time(ros.clock.now_s + 0.05), 'map',
                        'robot0/base_link')
    msg.pose.covariance[0], msg.pose.covariance[1] = 0.04, 0.01
    msg.pose.covariance[6], msg.pose.covariance[7] = 0.01, 0.09
    pub = ros.publisher(Odometry, '/robot0/odom', qos_profile_sensor_data)
    pub.publish(msg)
    assert ros.wait_for(lambda: ros.node.fleet.state.covariance[0, 1, 1] > 0.0,
                        resend=lambda: pub.publish(msg))
    np.testing.assert_allclose(ros.node.fleet.state.covariance[0], [[0.04, 0.01], [0.01, 0.09]])


def _scan(ros, ranges, frame='robot0/base_link'):
    from sensor_msgs.msg import LaserScan
    msg = LaserScan()
    msg.header.stamp = _time(ros.clock.now_s)
    msg.header.frame_id = frame
    msg.angle_min, msg.angle_increment = -0.5, 0.1
    msg.angle_max = -0.5 + 0.1 * (len(ranges) - 1)
    msg.range_min, msg.range_max = 0.05, 8.0
    msg.ranges = [float(r) for r in ranges]
    return msg


def test_laser_scans_become_obstacles_and_bad_ones_are_named(ros, capfd):
    from sensor_msgs.msg import LaserScan
    ros.orca(['robot0'], scan_topic='scan',
             **{'robot0.goal': [5.0, 0.0, 0.0], 'deadlock.enabled': False})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    pub = ros.publisher(LaserScan, '/robot0/scan', qos_profile_sensor_data)
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 8)       # up to speed at max_accel
    assert cmds[-1].linear.x > 0.5
    # A wall 0.6 m ahead across the robot's path (beams -0.5..0.5 rad): it must not drive on.
    for _ in range(12):     # (slowing down at max_accel)
        pub.publish(_scan(ros, [0.6 / math.cos(-0.5 + 0.1 * k) for k in range(11)]))
        ros.tick({'robot0': (0.0, 0.0)}, [cmds])
    assert cmds[-1].linear.x < 0.2
    def send_in_laser_frame():
        pub.publish(_scan(ros, [1.0] * 11, frame='robot0/laser'))
    send_in_laser_frame()
    assert logged(ros, capfd, r"robot0: ignoring a scan: header.frame_id 'robot0/laser' is not "
                              r"the robot's base frame 'robot0/base_link'", send_in_laser_frame)


def _static_mount(ros, parent, child, x, z, yaw):
    """A sensor mount on /tf_static (prefixed layout), as robot_state_publisher sends it."""
    import tf2_msgs.msg
    from geometry_msgs.msg import TransformStamped
    from rclpy.qos import DurabilityPolicy, QoSProfile

    from orca_nav.ros.convert import yaw_to_quaternion
    pub = ros.publisher(tf2_msgs.msg.TFMessage, '/tf_static',
                        QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    tf = TransformStamped()
    tf.header.frame_id, tf.child_frame_id = parent, child
    tf.header.stamp = _time(ros.clock.now_s)
    tf.transform.translation.x, tf.transform.translation.z = float(x), float(z)
    tf.transform.rotation = yaw_to_quaternion(yaw)
    pub.publish(tf2_msgs.msg.TFMessage(transforms=[tf]))
    buffer = ros.node._poses.buffer
    assert ros.wait_for(lambda: buffer.parent_of(child) == parent)


def _slows_for(ros, cmds, send):
    """The robot gets up to speed, then `send()` shows it a wall 0.6 m ahead every tick: it
    must not drive on."""
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 8)
    assert cmds[-1].linear.x > 0.5
    for _ in range(12):     # (slowing down at max_accel)
        send()
        ros.tick({'robot0': (0.0, 0.0)}, [cmds])
    assert cmds[-1].linear.x < 0.2


def test_a_scan_from_a_mounted_lidar_is_placed_through_tf(ros, capfd):
    from sensor_msgs.msg import LaserScan
    pytest.importorskip('tf2_msgs.msg')
    ros.orca(['robot0'], scan_topic='scan', tf_layout='prefixed',
             **{'robot0.goal': [5.0, 0.0, 0.0], 'deadlock.enabled': False})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    pub = ros.publisher(LaserScan, '/robot0/scan', qos_profile_sensor_data)
    # The lidar sits 0.1 m ahead of the centre, 0.2 m up, turned to look left: the robot's
    # forward is its -y. Beams around -90 degrees see the wall at x = 0.6 in the base frame;
    # read as if in the base frame they would be on the robot's right, out of its way.
    _static_mount(ros, 'robot0/base_link', 'robot0/laser', 0.1, 0.2, math.pi / 2)
    angles = [-math.pi / 2 - 0.5 + 0.1 * k for k in range(11)]

    def send():
        msg = _scan(ros, [0.5 / math.cos(a + math.pi / 2) for a in angles], frame='robot0/laser')
        msg.angle_min = angles[0]
        pub.publish(msg)
    _slows_for(ros, cmds, send)
    def send_unplaced():
        pub.publish(_scan(ros, [1.0] * 11, frame='robot0/nowhere'))
    send_unplaced()
    assert logged(ros, capfd, r'robot0: ignoring a scan: no transform robot0/base_link <- '
                              r'robot0/nowhere', send_unplaced)


def test_a_point_cloud_becomes_obstacles_within_its_height_band(ros, capfd):
    from sensor_msgs.msg import PointCloud2

    from orca_nav.ros.convert import points_to_cloud
    pytest.importorskip('tf2_msgs.msg')
    ros.orca(['robot0'], cloud_topic='points', tf_layout='prefixed',
             **{'robot0.goal': [5.0, 0.0, 0.0], 'deadlock.enabled': False})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    pub = ros.publisher(PointCloud2, '/robot0/points', qos_profile_sensor_data)
    _static_mount(ros, 'robot0/base_link', 'robot0/camera', 0.0, 0.5, 0.0)
    # In the camera frame (0.5 m up): the floor ahead at z = -0.5 (no obstacle), a wall 0.6 m
    # ahead from the floor to 1.5 m.
    ys = np.linspace(-0.5, 0.5, 21)
    floor = [(x, y, -0.5) for x in np.linspace(0.3, 2.0, 10) for y in ys]
    wall = [(0.6, y, z) for y in ys for z in np.linspace(-0.5, 1.0, 7)]

    # The floor alone does not stop the robot.
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 8)
    for _ in range(6):
        pub.publish(points_to_cloud(floor, 'robot0/camera', _time(ros.clock.now_s)))
        ros.tick({'robot0': (0.0, 0.0)}, [cmds])
    assert cmds[-1].linear.x > 0.5
    _slows_for(ros, cmds, lambda: pub.publish(points_to_cloud(
        floor + wall, 'robot0/camera', _time(ros.clock.now_s))))
    broken = points_to_cloud(wall, 'robot0/camera', _time(ros.clock.now_s))
    broken.fields = broken.fields[:2]
    pub.publish(broken)
    assert logged(ros, capfd, r'robot0: ignoring a point cloud: fields: no z field',
                  lambda: pub.publish(broken))
