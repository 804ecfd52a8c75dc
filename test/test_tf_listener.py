"""TfListener over real DDS: the fleet's TF topics per layout into one TransformBuffer, static
transforms from tf_static, bad transforms skipped, the buffer cleared when /clock jumps back."""
import math

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
from geometry_msgs.msg import TransformStamped  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from orca_nav.core.fleet.names import robot_names  # noqa: E402
from orca_nav.core.transforms import FrameNotFoundError, TransformBuffer, TransformError  # noqa: E402
from orca_nav.ros.convert import seconds_to_time  # noqa: E402
from orca_nav.ros.tf_listener import TF_QOS, TF_STATIC_QOS, TfListener  # noqa: E402

from ros_harness import SimClock, harness_fixture, sim_time  # noqa: E402

pytestmark = pytest.mark.ros


ros = harness_fixture()


def transform(parent, child, stamp, x, yaw=0.0):
    t = TransformStamped()
    t.header.stamp = seconds_to_time(stamp)
    t.header.frame_id, t.child_frame_id = parent, child
    t.transform.translation.x = float(x)
    t.transform.rotation.z, t.transform.rotation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    return t


def latest(buffer, target, source):
    """The latest common time, or None while the listener has not (or no longer) got the frames:
    the test reads the buffer while the executor's thread fills it."""
    try:
        return buffer.latest_common_time(target, source)
    except TransformError:
        return None


def listener_node(ros, names):
    node = ros.add(rclpy.create_node('tf_reader', context=ros.context,
                                     parameter_overrides=[sim_time()]))
    buffer = TransformBuffer()
    return node, buffer, TfListener(node, names, buffer)


def test_namespaced_trees_land_apart_in_one_buffer(ros):
    names = [robot_names(r, 'namespaced') for r in ('robot0', 'robot1')]
    node, buffer, listener = listener_node(ros, names)
    pubs = [ros.publisher(TFMessage, n.tf_topic, TF_QOS) for n in names]
    statics = [ros.publisher(TFMessage, n.tf_static_topic, TF_STATIC_QOS) for n in names]
    for i, (pub, static) in enumerate(zip(pubs, statics)):
        static.publish(TFMessage(transforms=[transform('base_link', 'base_scan', 0.0, 0.1 * i)]))
        pub.publish(TFMessage(transforms=[transform('map', 'odom', 9.0, i), transform(
            'map', 'odom', 10.0, i + 1.0), transform('odom', 'odom', 10.0, 0.0)]))
    assert ros.wait_for(lambda: all(f'robot{i}/base_scan' in buffer.frames()
                                    and f'robot{i}/odom' in buffer.frames() for i in (0, 1)))
    assert ros.wait_for(lambda: all(latest(buffer, f'robot{i}/map', f'robot{i}/odom') == 10.0
                                    for i in (0, 1)))
    got = buffer.lookup_many(['robot0/map', 'robot1/map'], ['robot0/odom', 'robot1/odom'],
                             [9.5, 9.5])
    np.testing.assert_allclose(got.translation[:, 0], [0.5, 1.5])
    assert buffer.lookup('robot1/base_link', 'robot1/base_scan', 0).translation[0] == 0.1


def test_prefixed_tree_is_read_once_and_a_clock_jump_back_clears_it(ros):
    names = [robot_names(r, 'prefixed') for r in ('robot0', 'robot1')]
    node, buffer, listener = listener_node(ros, names)
    clock = SimClock(ros, start_s=50.0)         # once the node listens to /clock
    assert ros.wait_for(lambda: node.get_clock().now().nanoseconds == 50 * 10**9)
    pub = ros.publisher(TFMessage, '/tf', TF_QOS)
    static = ros.publisher(TFMessage, '/tf_static', TF_STATIC_QOS)
    static.publish(TFMessage(transforms=[
        transform('robot0/base_link', 'robot0/base_scan', 0, 1)]))
    pub.publish(TFMessage(transforms=[transform('map', 'robot0/odom', 50.0, 2.0),
                                      transform('map', 'robot1/odom', 50.0, 3.0)]))
    assert ros.wait_for(lambda: {'robot0/odom', 'robot1/odom', 'robot0/base_scan'}
                        <= set(buffer.frames()))
    assert buffer.lookup('map', 'robot1/odom', 50.0).translation[0] == 3.0
    assert len(listener.subscriptions) == 2     # /tf and /tf_static, once each

    clock.advance(-40.0)                        # a simulation restarted
    assert ros.wait_for(lambda: node.get_clock().now().nanoseconds == 10 * 10**9)
    pub.publish(TFMessage(transforms=[transform('map', 'robot0/odom', 10.0, 7.0)]))
    assert ros.wait_for(lambda: latest(buffer, 'map', 'robot0/odom') == 10.0)
    with pytest.raises(FrameNotFoundError):     # the old history went with the jump
        buffer.lookup('map', 'robot1/odom', 0)
    assert buffer.lookup('robot0/base_link', 'robot0/base_scan', 0).translation[0] == 1.0
