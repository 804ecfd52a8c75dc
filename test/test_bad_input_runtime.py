"""Bad input at run time keeps orca_node up: each case is named in a warning, ignored, and the
node keeps commanding. (Covered elsewhere: NaN odometry and odometry in a wrong frame, goals in a
wrong frame or inside an obstacle, out-of-range parameters: test_orca_node.py; bad goals for the
planner: test_planner_node.py; non-finite cmd_vel: test_fleet_sim_node.py.)"""
import math
import re

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
from geometry_msgs.msg import Transform, Twist  # noqa: E402
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from test_orca_node import PERIOD, Ros  # noqa: E402
from trajectory_msgs.msg import MultiDOFJointTrajectory, MultiDOFJointTrajectoryPoint  # noqa: E402

from orca_nav.ros.convert import latched_qos  # noqa: E402

from ros_harness import harness_fixture  # noqa: E402

pytestmark = pytest.mark.ros


ros = harness_fixture(Ros)


def keeps_commanding(ros, cmds, pose=(0.0, 0.0)):
    """The node still answers odometry with finite commands toward its goal."""
    count = len(cmds)
    ros.run({'robot0': pose}, [cmds], 3)
    assert len(cmds) >= count + 3
    assert all(math.isfinite(c.linear.x) and math.isfinite(c.linear.y) for c in cmds)
    assert cmds[-1].linear.x > 0.05


def test_infinite_odometry_is_named_and_ignored(ros, capfd):
    ros.orca(['robot0'], **{'robot0.goal': [5.0, 0.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 2)
    ros.odom('robot0', math.inf, 0.0)
    ros.odom('robot0', 0.0, 0.0, vx=-math.inf)
    ros.advance_until(0.2)
    keeps_commanding(ros, cmds)
    err = capfd.readouterr().err
    assert re.search(r'robot0: ignoring odometry: .*inf', err), err


@pytest.mark.parametrize('x, y', [(math.nan, 1.0), (2.0, math.inf)])
def test_non_finite_goal_is_named_and_refused(ros, capfd, x, y):
    ros.orca(['robot0'], **{'robot0.goal': [5.0, 0.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 2)
    ros.goal('robot0', x, y)
    assert logged(ros, capfd, 'refusing goal')
    keeps_commanding(ros, cmds)         # still heading for the goal it had


def test_non_finite_trajectory_is_named_and_the_robot_holds(ros, capfd):
    ros.orca(['robot0'], **{'robot0.goal': [5.0, 0.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 2)
    msg = MultiDOFJointTrajectory()
    msg.header.frame_id = 'map'
    msg.joint_names = ['base_link']
    for k, x in enumerate((0.0, math.nan)):
        point = MultiDOFJointTrajectoryPoint()
        transform = Transform()
        transform.translation.x = x
        transform.rotation.w = 1.0
        point.transforms = [transform]
        point.time_from_start.sec = k
        msg.points.append(point)
    ros.publisher(MultiDOFJointTrajectory, '/robot0/trajectory', latched_qos()).publish(msg)
    assert logged(ros, capfd, 'rejecting trajectory, holding still')
    count = len(cmds)
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 6)
    # It brakes within its acceleration limit, then stands.
    speeds = [c.linear.x for c in cmds[count:]]
    assert all(b <= a for a, b in zip(speeds, speeds[1:])), speeds
    assert speeds[-3:] == [0.0, 0.0, 0.0] and all(c.linear.y == 0.0 for c in cmds[count:])


def map_message(width, height, resolution=0.1, data=None):
    msg = OccupancyGridMsg()
    msg.header.frame_id = 'map'
    msg.info.width, msg.info.height = width, height
    msg.info.resolution = float(resolution)
    msg.info.origin.orientation.w = 1.0
    msg.data = list(data) if data is not None else [0] * (width * height)
    return msg


def logged(ros, capfd, pattern, resend=None):
    """Whether the node's log shows `pattern` soon, on stderr or on /rosout (rclpy's console
    output may reach the captured stderr late or not at all when a test session has run long;
    /rosout carries every node's log over DDS, transient local). The log is written outside any
    callback: the wait looks again whenever a callback runs (the SimClock's repeat is one);
    `resend()`, when given, publishes the message that should be logged again (a best-effort
    sample may be lost on a loaded machine)."""
    rosout = ros.rosout()
    seen = []

    def found():
        seen.append(capfd.readouterr().err)
        text = ''.join(seen) + '\n' + '\n'.join(entry.msg for entry in list(rosout))
        return re.search(pattern, text) is not None
    return ros.wait_for(found, resend=resend)


@pytest.mark.parametrize('msg, words', [
    (map_message(0, 0), 'rejecting /map'),
    (map_message(4, 4, resolution=math.nan), 'rejecting /map: .*resolution'),
    (map_message(4, 4, resolution=math.inf), 'rejecting /map: .*resolution'),
    (map_message(4, 4, data=[0] * 15), 'rejecting /map: data: 15 cells'),
])
def test_bad_maps_are_named_and_ignored(ros, capfd, msg, words):
    ros.orca(['robot0'], **{'robot0.goal': [5.0, 0.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 2)
    ros.publisher(OccupancyGridMsg, '/map', latched_qos()).publish(msg)
    assert logged(ros, capfd, words)
    keeps_commanding(ros, cmds)
    assert ros.node.fleet.map is None


@pytest.mark.slow
def test_a_huge_map_is_prepared_while_the_node_keeps_commanding(ros, capfd):
    """4,000 x 4,000 cells with 20,000 specks: once received, prepared on the worker thread
    while the control cycles go on; the log says how long it took."""
    ros.orca(['robot0'], **{'robot0.goal': [105.0, 100.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    start = (100.0, 100.0)
    ros.run({'robot0': start}, [cmds], 2)
    rng = np.random.default_rng(0)
    data = np.zeros((4000, 4000), dtype=np.int8)
    cells = rng.integers(0, 4000, size=(20000, 2))
    data[cells[:, 1], cells[:, 0]] = 100
    data[1990:2010, 1990:2010] = 0      # the robot's start is clear
    msg = map_message(4000, 4000, resolution=0.05, data=data.reshape(-1).tolist())
    # From a participant of its own, as a map server in another process: the 16 MB sample
    # then does not queue in front of the test's odometry in one participant's transport.
    context = rclpy.Context()
    rclpy.init(context=context)
    server = rclpy.create_node('big_map_server', context=context)
    try:
        server.create_publisher(OccupancyGridMsg, '/map', latched_qos()).publish(msg)
        # The 16 MB sample's transfer is DDS's business (seconds over UDP on a loaded machine):
        # play on until the node has it and its preparation started...
        for _ in range(600):
            ros.clock.advance(PERIOD)
            ros.odom('robot0', *start)
            if ros.wait_for(lambda: ros.node._map_version > 0, timeout=0.5):
                break
        assert ros.node._map_version > 0
        # ...then, while it is prepared, every tick is answered (ros.tick asserts it).
        ticks = 0
        while ros.node.fleet.map is None:
            ros.tick({'robot0': start}, [cmds])
            ticks += 1
            assert ticks < 4000
        assert ticks > 0
    finally:
        server.destroy_node()
        rclpy.try_shutdown(context=context)
    assert logged(ros, capfd,
                  r'map 4000 x 4000 cells -> \d+ obstacle polygons \(\d+ vertices\) in \d+ ms')
    keeps_commanding(ros, cmds, start)


@pytest.mark.parametrize('param, name', [
    (Parameter('time_horizon', value='long'), 'time_horizon'),
    (Parameter('control_rate', value=True), 'control_rate'),
    (Parameter('robot0.radius', value='wide'), 'robot0.radius'),
    (Parameter('max_neighbors', value=2.5), 'max_neighbors'),
])
def test_wrong_type_parameters_at_run_time_are_named_and_refused(ros, capfd, param, name):
    node = ros.orca(['robot0'], **{'robot0.goal': [5.0, 0.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 2)
    before = node.get_parameter(name).value
    result = ros.set_parameters(param)[0]
    assert not result.successful
    assert node.get_parameter(name).value == before
    # rclpy's refusal says only the type; the warning names the parameter and the value.
    err = capfd.readouterr().err
    assert f'refusing parameter change: {name}: expected' in err, err
    assert repr(param.value) in err
    keeps_commanding(ros, cmds)
