"""orca_node over real rclpy / DDS: a probe node plays odometry and listens on cmd_vel.

No timing asserts: waits are generous and only behaviour is checked.
"""
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip('rclpy')
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import PoseStamped, Twist, TwistStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rcl_interfaces.msg import ParameterType  # noqa: E402
from rcl_interfaces.srv import GetParameters  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.parameter_client import AsyncParameterClient  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from visualization_msgs.msg import MarkerArray  # noqa: E402

from orca_nav.core.grid import OccupancyGrid  # noqa: E402
from orca_nav.ros.convert import grid_to_msg, latched_qos, state_to_odom  # noqa: E402
from orca_nav.ros.orca_node import OrcaNode  # noqa: E402
from ros_harness import RosHarness, private_domain, wait_for  # noqa: E402

pytestmark = pytest.mark.ros
REPO = Path(__file__).resolve().parents[1]


class Ros(RosHarness):
    """The harness plus the probe playing the robots' odometry and goals."""

    def __init__(self):
        super().__init__()
        self._odom_pubs = {}

    def orca(self, robots, **params):
        # A loaded machine can hold the executor for a few hundred ms; only the staleness
        # tests ask for the 0.5 s default.
        params.setdefault('odom_timeout', 2.0)
        # The probe replays fixed poses, which the deadlock breaker would read as a stall after
        # stall_time and answer with a detour.
        params.setdefault('deadlock.enabled', False)
        overrides = [Parameter('robots', value=list(robots))]
        overrides += [Parameter(name, value=value) for name, value in params.items()]
        return self.add(OrcaNode(context=self.context, parameter_overrides=overrides))

    def odom(self, robot, x, y, yaw=0.0, vx=0.0, vy=0.0, frame='map'):
        if robot not in self._odom_pubs:
            self._odom_pubs[robot] = self.probe.create_publisher(Odometry, f'/{robot}/odom', 10)
        msg = state_to_odom((x, y), yaw, (vx, vy), 0.0, self.probe.get_clock().now().to_msg(),
                            frame, f'{robot}/base_link')
        self._odom_pubs[robot].publish(msg)
        return msg

    def goal(self, robot, x, y, frame='map'):
        pub = self.probe.create_publisher(PoseStamped, f'/{robot}/goal_pose', 10)
        wait_for(lambda: pub.get_subscription_count() > 0)
        msg = PoseStamped()
        msg.header.frame_id = frame
        msg.pose.position.x, msg.pose.position.y = float(x), float(y)
        msg.pose.orientation.w = 1.0
        pub.publish(msg)


@pytest.fixture
def ros():
    env = Ros()
    yield env
    env.shutdown()


def play(ros, poses, seconds, rate=20.0, **odom_kwargs):
    """Publishes odometry for {robot: (x, y[, yaw])} at `rate` for `seconds`.

    Commands that arrive later than odom_timeout after the last message are stale-odometry
    zeros, so tests look at the commands received while playing (`live`).
    """
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for robot, pose in poses.items():
            ros.odom(robot, *pose, **odom_kwargs.get(robot, {}))
        time.sleep(1.0 / rate)


def live(box):
    """A snapshot of the messages received so far (call right after `play`)."""
    return list(box)


def test_cmd_vel_heads_for_the_goal_in_the_body_frame_and_markers_show_the_fleet(ros):
    robots = ['robot0', 'robot1', 'robot2']
    ros.orca(robots, **{'robot0.goal': [5.0, 0.0, 0.0], 'robot1.goal': [0.0, 5.0, 0.0],
                        'robot2.kinematics': 'diff_drive', 'robot2.goal': [-3.0, -10.0, 0.0]})
    cmds = {r: ros.collect(Twist, f'/{r}/cmd_vel') for r in robots}
    markers = ros.collect(MarkerArray, '/orca_nav/markers')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    # robot1 faces +y (yaw pi/2): its goal straight ahead is +x in its base_link (REP-103).
    poses = {'robot0': (0.0, 0.0, 0.0), 'robot1': (0.0, 2.0, math.pi / 2),
             'robot2': (-3.0, -2.0, 0.0)}
    play(ros, poses, 1.5)
    last = {r: live(cmds[r])[-1] for r in robots}
    assert last['robot0'].linear.x > 0.1 and abs(last['robot0'].linear.y) < 0.05
    assert last['robot1'].linear.x > 0.1 and abs(last['robot1'].linear.y) < 0.05
    # Diff-drive robot facing +x with its goal at -y: turns right (clockwise), no sideways speed.
    assert last['robot2'].angular.z < -0.1 and last['robot2'].linear.y == 0.0
    assert wait_for(lambda: len(markers) > 0)
    namespaces = {m.ns for m in markers[-1].markers}
    assert namespaces == set(robots)
    disc = next(m for m in markers[-1].markers if m.ns == 'robot0' and m.id == 0)
    assert disc.header.frame_id == 'map' and disc.scale.x == pytest.approx(0.6)  # radius 0.3
    assert wait_for(lambda: any(len(d.status) == 4 for d in diagnostics))
    names = {s.name for s in diagnostics[-1].status}
    assert {'orca_node: robot0', 'orca_node: control cycle'} <= names


def test_jammed_robots_report_infeasible_orca_in_diagnostics(ros):
    # Overlapping by 0.5 m, each would have to leave the other at several m/s within one
    # 0.05 s cycle: infeasible every cycle. The robot far away is fine.
    ros.orca(['robot0', 'robot1', 'robot2'], **{
        'robot0.goal': [5.0, 0.0, 0.0], 'robot1.goal': [-5.0, 0.0, 0.0],
        'robot2.goal': [15.0, 0.0, 0.0], 'robot0.radius': 0.5, 'robot1.radius': 0.5})
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    play(ros, {'robot0': (0.0, 0.0), 'robot1': (0.5, 0.0), 'robot2': (10.0, 0.0)}, 2.5)

    def robot_status(name):
        for array in reversed(live(diagnostics)):
            for status in array.status:
                if status.name == f'orca_node: {name}' and \
                        int({kv.key: kv.value for kv in status.values}['orca_cycles']) > 0:
                    return status
        return None

    for name in ('robot0', 'robot1'):
        status = robot_status(name)
        assert status is not None and status.level == DiagnosticStatus.WARN
        assert 'ORCA infeasible' in status.message
    free = robot_status('robot2')
    assert free.level == DiagnosticStatus.OK
    assert {kv.key: kv.value for kv in free.values}['orca_infeasible_cycles'] == '0'


def test_orca_lines_drawn_on_markers_when_asked(ros):
    node = ros.orca(['robot0', 'robot1'], publish_orca_lines=True,
                    **{'robot0.goal': [5.0, 0.0, 0.0], 'robot1.goal': [-5.0, 0.0, 0.0]})
    markers = ros.collect(MarkerArray, '/orca_nav/markers')
    play(ros, {'robot0': (0.0, 0.0), 'robot1': (1.5, 0.0)}, 1.2)
    latest = live(markers)[-1]
    for robot in ('robot0', 'robot1'):
        mine = {m.id: m for m in latest.markers if m.ns == robot}
        lines, arrow = mine[3], mine[1]
        assert lines.type == lines.LINE_LIST and len(lines.points) >= 2
        # The velocity arrow's tip is a permitted velocity: left of (or on) every line.
        tip = np.array([arrow.points[1].x, arrow.points[1].y])
        ends = np.array([[p.x, p.y] for p in lines.points]).reshape(-1, 2, 2)
        along, to_tip = ends[:, 1] - ends[:, 0], tip - ends[:, 0]
        assert (along[:, 0] * to_tip[:, 1] - along[:, 1] * to_tip[:, 0] >= -1e-3).all()
    client = AsyncParameterClient(ros.probe, node.get_fully_qualified_name())
    assert client.wait_for_services(timeout_sec=10.0)
    future = client.set_parameters([Parameter('publish_orca_lines', value=False)])
    assert wait_for(future.done) and future.result().results[0].successful
    count = len(markers)
    play(ros, {'robot0': (0.0, 0.0), 'robot1': (1.5, 0.0)}, 1.0)
    assert not any(m.id == 3 for array in live(markers)[count + 1:] for m in array.markers)


def test_accelerates_within_max_accel(ros):
    ros.orca(['robot0'], control_rate=20.0, **{'robot0.goal': [50.0, 0.0, 0.0],
                                               'robot0.max_accel': 0.5, 'robot0.max_speed': 2.0})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    play(ros, {'robot0': (0.0, 0.0)}, 1.0)
    speeds = np.array([c.linear.x for c in live(cmds)])
    assert len(speeds) > 5
    # The robot does not move (odometry stays put), so the command ramps by <= a * dt per cycle
    # (dt at most two control periods).
    assert np.all(np.diff(speeds) <= 0.5 * 2 * 0.05 + 1e-9)
    assert speeds[-1] < 2.0


def test_two_robots_head_on_avoid_each_other(ros):
    ros.orca(['a', 'b'], **{'a.goal': [4.0, 0.0, 0.0], 'b.goal': [-4.0, 0.0, 0.0]})
    cmds = {r: ros.collect(Twist, f'/{r}/cmd_vel') for r in 'ab'}
    # Close and approaching each other: ORCA slows them well below the 1 m/s they prefer.
    play(ros, {'a': (-0.35, 0.0), 'b': (0.35, 0.0, math.pi)}, 1.5,
         a={'vx': 0.5}, b={'vx': 0.5})
    a, b = live(cmds['a']), live(cmds['b'])
    assert len(a) > 5 and len(b) > 5
    assert a[-1].linear.x < 0.5 and b[-1].linear.x < 0.5


def test_stale_odometry_stops_only_that_robot_within_two_timeouts(ros):
    timeout = 1.0
    ros.orca(['robot0', 'robot1'], odom_timeout=timeout,
             **{'robot0.goal': [5.0, 0.0, 0.0], 'robot1.goal': [5.0, 5.0, 0.0]})
    cmds = {r: ros.collect(Twist, f'/{r}/cmd_vel') for r in ('robot0', 'robot1')}
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    play(ros, {'robot0': (0.0, 0.0), 'robot1': (0.0, 5.0)}, 1.0)
    assert wait_for(lambda: cmds['robot0'] and cmds['robot0'][-1].linear.x > 0.05)
    stopped_at = time.monotonic()
    count = len(cmds['robot0'])
    # Only robot1 keeps reporting.
    play(ros, {'robot1': (0.0, 5.0)}, 2 * timeout + 0.5)
    zero_times = [i for i, c in enumerate(cmds['robot0'][count:]) if c.linear.x == 0.0]
    assert zero_times, 'robot0 never got a zero cmd_vel'
    assert cmds['robot0'][-1].linear.x == 0.0 and cmds['robot0'][-1].angular.z == 0.0
    # Zero within 2 x timeout: count the commands sent before the first zero (20 Hz).
    assert zero_times[0] <= 2 * timeout * 20 + 2
    assert time.monotonic() - stopped_at >= 2 * timeout
    assert cmds['robot1'][-1].linear.x > 0.05  # the other robot carries on

    def stale_warning():
        return any(s.name == 'orca_node: robot0' and s.level == DiagnosticStatus.WARN
                   and 'stale' in s.message for d in diagnostics for s in d.status)
    assert wait_for(stale_warning)


def test_non_finite_and_wrong_frame_odometry_is_ignored(ros):
    ros.orca(['robot0'], **{'robot0.goal': [5.0, 0.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    play(ros, {'robot0': (0.0, 0.0)}, 0.8)
    assert wait_for(lambda: len(cmds) > 3)
    # NaN and foreign-frame odometry would move the robot past its goal: both must be ignored.
    play(ros, {'robot0': (float('nan'), 0.0)}, 0.3)
    play(ros, {'robot0': (9.0, 0.0)}, 0.3, robot0={'frame': 'odom'})
    count = len(cmds)
    # 0.6 s without valid odometry made the robot stale (zero command): give the acceleration
    # limit time to ramp up again, with room for a loaded machine.
    play(ros, {'robot0': (0.0, 0.0)}, 1.0)
    got = live(cmds)
    assert len(got) > count + 2
    assert all(math.isfinite(c.linear.x) for c in got)
    assert got[-1].linear.x > 0.05


def test_best_effort_odometry_publisher_is_heard(ros):
    # Drivers and simulator bridges often publish odometry best effort; a reliable
    # subscription would never match them.
    ros.orca(['robot0'], **{'robot0.goal': [5.0, 0.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    pub = ros.probe.create_publisher(Odometry, '/robot0/odom', qos_profile_sensor_data)
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        pub.publish(state_to_odom((0.0, 0.0), 0.0, (0.0, 0.0), 0.0,
                                  ros.probe.get_clock().now().to_msg(), 'map', 'robot0/base_link'))
        time.sleep(0.05)
    assert live(cmds) and live(cmds)[-1].linear.x > 0.05


def test_require_map_holds_every_robot_until_the_map_is_known(ros):
    node = ros.orca(['robot0'], require_map=True, **{'robot0.goal': [3.0, 0.5, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    play(ros, {'robot0': (0.5, 0.5)}, 1.2)
    got = live(cmds)
    assert len(got) > 5 and all(c.linear.x == 0.0 and c.linear.y == 0.0 for c in got)
    assert any(s.level == DiagnosticStatus.WARN and 'waiting for /map' in s.message
               for d in live(diagnostics) for s in d.status if s.name == 'orca_node: robot0')
    msg = grid_to_msg(OccupancyGrid(np.zeros((20, 40), dtype=bool), 0.1, (0.0, 0.0)), 'map',
                      ros.probe.get_clock().now().to_msg())
    ros.probe.create_publisher(type(msg), '/map', latched_qos()).publish(msg)
    assert wait_for(lambda: node._grid is not None)
    play(ros, {'robot0': (0.5, 0.5)}, 1.0)
    assert live(cmds)[-1].linear.x > 0.05


def test_goal_topic_wrong_frame_rejected_and_goal_in_obstacle_refused(ros):
    node = ros.orca(['robot0'])
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    occ = np.zeros((40, 40), dtype=bool)
    occ[10:20, 25:35] = True  # block over x in [2.5, 3.5], y in [1.0, 2.0]
    map_pub = ros.probe.create_publisher(type(grid_to_msg(OccupancyGrid(occ, 0.1, (0, 0)), 'map',
                                                          ros.probe.get_clock().now().to_msg())),
                                         '/map', latched_qos())
    map_pub.publish(grid_to_msg(OccupancyGrid(occ, 0.1, (0.0, 0.0)), 'map',
                                ros.probe.get_clock().now().to_msg()))
    assert wait_for(lambda: node._grid is not None)
    play(ros, {'robot0': (0.5, 0.5)}, 0.5)
    ros.goal('robot0', 3.0, 1.5)  # inside the block: refused
    ros.goal('robot0', 1.5, 3.0, frame='odom')  # wrong frame: rejected
    play(ros, {'robot0': (0.5, 0.5)}, 1.0)
    assert np.isnan(node._goal[0]).all()
    assert all(c.linear.x == 0.0 and c.linear.y == 0.0 for c in live(cmds)[-5:])
    ros.goal('robot0', 1.5, 3.0)  # free: accepted
    play(ros, {'robot0': (0.5, 0.5)}, 1.0)
    np.testing.assert_allclose(node._goal[0], [1.5, 3.0])
    assert live(cmds)[-1].linear.y > 0.05


def test_obstacle_polygons_from_the_map_stop_a_robot_at_the_wall(ros):
    node = ros.orca(['robot0'], time_horizon_obst=2.0, **{'robot0.goal': [3.5, 0.5, 0.0]})
    occ = np.zeros((10, 40), dtype=bool)
    occ[:, 20:22] = True  # wall at x in [2.0, 2.2]
    msg = grid_to_msg(OccupancyGrid(occ, 0.1, (0.0, 0.0)), 'map', ros.probe.get_clock().now().to_msg())
    ros.probe.create_publisher(type(msg), '/map', latched_qos()).publish(msg)
    assert wait_for(lambda: node._grid is not None)
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    play(ros, {'robot0': (1.65, 0.5)}, 1.0)  # 0.05 m from touching the wall
    got = live(cmds)
    assert len(got) > 5 and got[-1].linear.x < 0.1


def test_per_robot_mode_commands_only_its_robot(ros):
    ros.orca(['robot0', 'robot1'], mode='per_robot', robot_name='robot1',
             **{'robot0.goal': [5.0, 0.0, 0.0], 'robot1.goal': [0.0, 5.0, 0.0]})
    cmds = {r: ros.collect(Twist, f'/{r}/cmd_vel') for r in ('robot0', 'robot1')}
    play(ros, {'robot0': (0.0, 0.0), 'robot1': (3.0, 0.0)}, 2.0)
    got = live(cmds['robot1'])
    assert len(got) > 3 and got[-1].linear.y > 0.05
    assert cmds['robot0'] == []


def test_cmd_vel_stamped(ros):
    ros.orca(['robot0'], cmd_vel_stamped=True, **{'robot0.goal': [0.0, -5.0, 0.0]})
    cmds = ros.collect(TwistStamped, '/robot0/cmd_vel')
    play(ros, {'robot0': (0.0, 0.0)}, 0.8)
    got = live(cmds)
    assert len(got) > 2 and got[-1].header.frame_id == 'robot0/base_link'
    assert got[-1].twist.linear.y < -0.05


def test_bad_set_parameters_rejected_with_a_reason(ros):
    node = ros.orca(['robot0'])
    client = AsyncParameterClient(ros.probe, node.get_fully_qualified_name())
    assert client.wait_for_services(timeout_sec=10.0)
    for param, name in ((Parameter('time_horizon', value=-1.0), 'time_horizon'),
                        (Parameter('mode', value='swarm'), 'mode'),
                        (Parameter('robot0.radius', value=0.0), 'robot0.radius'),
                        (Parameter('deadlock.detour_angle', value=3.0), 'deadlock.detour_angle')):
        future = client.set_parameters([param])
        assert wait_for(future.done)
        result = future.result().results[0]
        assert not result.successful
        assert name in result.reason
    future = client.set_parameters([Parameter('neighbor_dist', value=7.5)])
    assert wait_for(future.done) and future.result().results[0].successful
    assert wait_for(lambda: node._cfg['neighbor_dist'] == 7.5)


def test_control_timer_follows_the_cycle_trigger(ros):
    # Odometry trigger: the timer is a late-odometry fallback, 1.25 periods, restarted by each
    # cycle; timer trigger: one period, free-running. Switching at run time rebuilds it.
    node = ros.orca(['robot0'], control_rate=20.0)
    assert node._timer.timer_period_ns == pytest.approx(1.25e9 / 20.0)
    client = AsyncParameterClient(ros.probe, node.get_fully_qualified_name())
    assert client.wait_for_services(timeout_sec=10.0)
    future = client.set_parameters([Parameter('cycle_trigger', value='timer'),
                                    Parameter('control_rate', value=10.0)])
    assert wait_for(future.done) and all(r.successful for r in future.result().results)
    assert wait_for(lambda: node._timer.timer_period_ns == pytest.approx(1e9 / 10.0))


@pytest.mark.parametrize('params, name', [
    ({'robots': []}, 'robots'),
    ({'mode': 'per_robot'}, 'robot_name'),
    ({'mode': 'per_robot', 'robot_name': 'ghost'}, 'robot_name'),
    ({'neighbor_dist': -1.0}, 'neighbor_dist'),
])
def test_bad_start_parameters_stop_start_up(ros, params, name):
    robots = params.pop('robots', ['robot0'])
    overrides = [Parameter('robots', value=robots, type_=Parameter.Type.STRING_ARRAY)]
    overrides += [Parameter(k, value=v) for k, v in params.items()]
    with pytest.raises(ValueError, match=name):
        OrcaNode(context=ros.context, parameter_overrides=overrides)


def test_params_file_start_loads_the_parameters(tmp_path):
    """`python -m orca_nav.ros.orca_node --ros-args --params-file config/orca_node.yaml`."""
    # A domain of its own: neither the in-process orca_nodes of earlier tests nor this
    # subprocess's leftovers in discovery may meet the other tests.
    domain = private_domain()
    env = {**os.environ, 'ROS_DOMAIN_ID': str(domain)}
    proc = subprocess.Popen(
        [sys.executable, '-m', 'orca_nav.ros.orca_node', '--ros-args', '--params-file',
         str(REPO / 'config' / 'orca_node.yaml')],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node('params_probe', context=context)
    try:
        client = node.create_client(GetParameters, '/orca_node/get_parameters')
        names = ['time_horizon', 'neighbor_dist', 'max_neighbors', 'control_rate',
                 'deadlock.stall_time', 'robots']
        executor = SingleThreadedExecutor(context=context)
        values = None
        end = time.monotonic() + 60.0
        # Retry: a request sent right after discovery can be lost before the reply path matches.
        while values is None and time.monotonic() < end and proc.poll() is None:
            if not client.wait_for_service(timeout_sec=1.0):
                continue
            future = client.call_async(GetParameters.Request(names=names))
            rclpy.spin_until_future_complete(node, future, executor=executor, timeout_sec=3.0)
            if future.done() and future.result() is not None:
                values = future.result().values
        if values is None:
            proc.terminate()
            output = proc.communicate(timeout=10)[0]
            pytest.fail(f'orca_node did not answer within 60 s; its output:\n{output}')
        expected = yaml.safe_load((REPO / 'config' / 'orca_node.yaml').read_text())
        expected = expected['orca_node']['ros__parameters']
        assert values[0].double_value == expected['time_horizon']
        assert values[1].double_value == expected['neighbor_dist']
        assert values[2].integer_value == expected['max_neighbors']
        assert values[3].double_value == expected['control_rate']
        assert values[4].double_value == expected['deadlock']['stall_time']
        assert values[5].type == ParameterType.PARAMETER_STRING_ARRAY
        # The file's robots differ from the default ([robot0]): proof the file was applied.
        assert list(values[5].string_array_value) == expected['robots'] == ['robot0', 'robot1']
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_trajectory_seam_steers_a_robot_along_its_trajectory(ros):
    from trajectory_msgs.msg import MultiDOFJointTrajectory

    from orca_nav.core.planning.reference import Reference
    from orca_nav.ros.trajectory_msgs import reference_to_trajectory
    ros.orca(['robot0'], **{'robot0.goal': [5.0, 0.0, 0.0]})  # goal straight ahead in +x ...
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    times = np.linspace(0.0, 10.0, 21)
    positions = np.stack([np.zeros_like(times), 0.5 * times], axis=1)  # ... trajectory along +y
    reference = Reference(times=times, positions=positions,
                          velocities=np.tile([0.0, 0.5], (len(times), 1)),
                          accelerations=np.zeros((len(times), 2)), yaw=np.full(len(times), 0.0),
                          yaw_rate=np.zeros(len(times)), direction=np.ones(len(times), dtype=int))
    now_s = ros.probe.get_clock().now().nanoseconds * 1e-9
    pub = ros.probe.create_publisher(MultiDOFJointTrajectory, '/robot0/trajectory', 10)
    assert wait_for(lambda: pub.get_subscription_count() > 0)
    pub.publish(reference_to_trajectory(reference, 'map', now_s, 'robot0/base_link'))
    play(ros, {'robot0': (0.0, 0.0)}, 1.0)
    got = live(cmds)
    assert len(got) > 5
    assert got[-1].linear.y > 0.2 and abs(got[-1].linear.x) < 0.2


def test_config_yaml_documents_exactly_the_declared_parameters():
    from orca_nav.ros.orca_node import DEADLOCK_SPECS, NODE_SPECS
    from orca_nav.ros.params import ROBOT_SPECS

    params = yaml.safe_load((REPO / 'config' / 'orca_node.yaml').read_text())
    params = params['orca_node']['ros__parameters']

    def flat(tree, prefix=''):
        for key, value in tree.items():
            if isinstance(value, dict):
                yield from flat(value, prefix + key + '.')
            else:
                yield prefix + key
    keys = set(flat(params))
    node_names = {s.name for s in NODE_SPECS} | {'deadlock.' + s.name for s in DEADLOCK_SPECS}
    robot_names = {f'{r}.{s.name}' for r in params['robots'] for s in ROBOT_SPECS}
    assert keys - node_names - robot_names == set()
    assert node_names - keys == set()
