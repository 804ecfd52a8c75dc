"""orca_node over real rclpy / DDS: wiring of topics, parameters, the map worker and the clock.

The fleet behaviour itself is tested on the core (`test_fleet_controller.py`). Here the node runs
on simulated time: the test owns /clock (`SimClock`) and plays each robot's odometry stamped
with it, one control period per `tick`, and waits for the cmd_vel each tick triggers. Nothing
sleeps; a loaded machine makes the tests slower, not different.
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
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rcl_interfaces.msg import ParameterType  # noqa: E402
from rcl_interfaces.srv import GetParameters  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.parameter_client import AsyncParameterClient  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from trajectory_msgs.msg import MultiDOFJointTrajectory  # noqa: E402
from visualization_msgs.msg import MarkerArray  # noqa: E402

from orca_nav.core.grid import OccupancyGrid  # noqa: E402
from orca_nav.core.planning.reference import Reference  # noqa: E402
from orca_nav.parameters.orca_node import DEADLOCK_SPECS, NODE_SPECS, SAFETY_SPECS  # noqa: E402
from orca_nav.parameters.shared import ROBOT_SPECS  # noqa: E402
from orca_nav.ros.convert import grid_to_msg, latched_qos, state_to_odom  # noqa: E402
from orca_nav.ros.orca_node import OrcaNode  # noqa: E402
from orca_nav.ros.trajectory_msgs import reference_to_trajectory  # noqa: E402

from ros_harness import (  # noqa: E402
    RosHarness,
    SimClock,
    harness_fixture,
    node_time_s,
    private_domain,
    sim_time,
)

pytestmark = pytest.mark.ros
REPO = Path(__file__).resolve().parents[1]
PERIOD = 0.05


class Ros(RosHarness):
    """The harness plus the probe playing the robots' odometry on the test's own clock."""

    def __init__(self):
        super().__init__()
        self.clock = None
        self._odom_pubs = {}
        self._parameters = None

    def orca(self, robots, **params):
        overrides = [sim_time(), Parameter('robots', value=list(robots))]
        overrides += [Parameter(name, value=value) for name, value in params.items()]
        node = self.add(OrcaNode(context=self.context, parameter_overrides=overrides))
        if self.clock is None:
            self.clock = SimClock(self)
        self.node = node
        return node

    def odom(self, robot, x, y, yaw=0.0, vx=0.0, vy=0.0, frame='map', age=0.0):
        if robot not in self._odom_pubs:
            self._odom_pubs[robot] = self.publisher(Odometry, f'/{robot}/odom',
                                                    qos_profile_sensor_data)
        stamp = self.clock.now_s - age
        msg = state_to_odom((x, y), yaw, (vx, vy), 0.0, _time(stamp), frame, f'{robot}/base_link')
        self._odom_pubs[robot].publish(msg)

    def tick(self, poses, boxes, odom_kwargs=None):
        """One control period: /clock advances, every robot of `poses` {robot: (x, y[, yaw])}
        reports odometry at the new time, and each list of `boxes` gets its next message."""
        counts = [len(box) for box in boxes]
        self.clock.advance(PERIOD)
        answered = lambda: all(len(b) > c for b, c in zip(boxes, counts))  # noqa: E731
        def report():       # sent again while unanswered: odometry is best effort
            for robot, pose in poses.items():
                self.odom(robot, *pose, **(odom_kwargs or {}).get(robot, {}))
        report()
        assert self.wait_for(answered, resend=report), self._unanswered()

    def _unanswered(self) -> str:
        """What a tick without an answer found: whether the harness still spins, the node's
        time against the test's clock, and its states (this found the handover that
        rmw_fastrtps can lose: `robot_topics`)."""
        state = self.node.fleet.state
        return (f'the tick got no answer: spinning {self._thread.is_alive()}, node time '
                f'{node_time_s(self.node):.3f} s, clock {self.clock.now_s:.3f} s, stamps '
                f'{state.stamp.tolist()}, fresh {state.fresh.tolist()}, due '
                f'{self.node.fleet.due(node_time_s(self.node))}')

    def run(self, poses, boxes, ticks, odom_kwargs=None):
        # A robot gets its first cmd_vel from the first cycle in which it is known: until every
        # box has one, a tick need not answer every robot.
        for _ in range(20):
            if all(boxes):
                break
            self.play(poses, 1)
            self.wait_for(lambda: all(boxes), timeout=1.0)
        for _ in range(ticks):
            self.tick(poses, boxes, odom_kwargs)

    def play(self, poses, ticks):
        """Like `run` for robots whose odometry alone triggers no cycle (others are missing):
        each period waits only until the node's clock has reached the new time."""
        for _ in range(ticks):
            self.clock.advance(PERIOD)
            assert self.wait_for(lambda: node_time_s(self.node) >= self.clock.now_s - 1e-6)
            for robot, pose in poses.items():
                self.odom(robot, *pose)

    def tick_until(self, poses, boxes, predicate, limit=400):
        """Ticks until `predicate()` holds (e.g. the map worker finished), at most `limit` times."""
        for _ in range(limit):
            if predicate():
                return True
            self.tick(poses, boxes)
        return predicate()

    def advance_until(self, seconds):
        """Advances /clock in control periods until the node's own clock has seen `seconds`
        more (its timers fire on the way)."""
        target = self.clock.now_s + seconds
        while self.clock.now_s < target - 1e-9:
            self.clock.advance(PERIOD)
            assert self.wait_for(lambda: node_time_s(self.node) >= self.clock.now_s - 1e-6)

    def publish_map(self, occupied, resolution=0.1):
        msg = grid_to_msg(OccupancyGrid(occupied, resolution, (0.0, 0.0)), 'map',
                          _time(self.clock.now_s))
        pub = self.publisher(OccupancyGridMsg, '/map', latched_qos())
        pub.publish(msg)
        return pub

    def goal(self, robot, x, y, frame='map'):
        msg = PoseStamped()
        msg.header.frame_id = frame
        msg.pose.position.x, msg.pose.position.y = float(x), float(y)
        msg.pose.orientation.w = 1.0
        self.publisher(PoseStamped, f'/{robot}/goal_pose').publish(msg)

    def set_parameters(self, *params):
        if self._parameters is None:
            self._parameters = AsyncParameterClient(self.probe,
                                                    self.node.get_fully_qualified_name())
            assert self._parameters.wait_for_services(timeout_sec=30.0)
        future = self._parameters.set_parameters(list(params))
        assert self.wait_for(future.done)
        return future.result().results


def _time(seconds):
    from builtin_interfaces.msg import Time
    sec = int(math.floor(seconds))
    return Time(sec=sec, nanosec=int(round((seconds - sec) * 1e9)))


def map_prepared(diagnostics, robot='robot0'):
    """The node reports on robot no longer waiting for the map (require_map)."""
    latest = [s.message for d in diagnostics for s in d.status if s.name == f'orca_node: {robot}']
    return bool(latest) and 'waiting for the map' not in latest[-1]


def goals_on_markers(markers, robot):
    """The goal the node shows for `robot` on its newest markers (None: no goal)."""
    for array in reversed(markers):
        for m in array.markers:
            if m.ns == robot and m.id == 2:
                return None if m.action == m.DELETE else (m.pose.position.x, m.pose.position.y)
    return 'no markers'


ros = harness_fixture(Ros)


def test_cmd_vel_in_the_body_frame_markers_and_diagnostics(ros):
    robots = ['robot0', 'robot1', 'robot2']
    ros.orca(robots, marker_rate=20.0, diagnostics_rate=20.0,
             **{'robot0.goal': [5.0, 0.0, 0.0], 'robot1.goal': [0.0, 25.0, 0.0],
                'robot2.kinematics': 'diff_drive', 'robot2.goal': [-3.0, -10.0, 0.0]})
    cmds = {r: ros.collect(Twist, f'/{r}/cmd_vel') for r in robots}
    markers = ros.collect(MarkerArray, '/orca_nav/markers')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    # robot1 faces +y (yaw pi/2): its goal straight ahead is +x in its base_link (REP-103).
    poses = {'robot0': (0.0, 0.0, 0.0), 'robot1': (0.0, 20.0, math.pi / 2),
             'robot2': (-3.0, -2.0, 0.0)}
    ros.run(poses, list(cmds.values()), 10)
    last = {r: cmds[r][-1] for r in robots}
    assert last['robot0'].linear.x > 0.1 and abs(last['robot0'].linear.y) < 1e-6
    assert last['robot1'].linear.x > 0.1 and abs(last['robot1'].linear.y) < 1e-6
    # Diff-drive robot facing +x with its goal at -y: turns right (clockwise), no sideways speed.
    assert last['robot2'].angular.z < -0.1 and last['robot2'].linear.y == 0.0
    assert ros.wait_for(lambda: any({m.ns for m in a.markers} == set(robots) for a in markers))
    disc = next(m for m in markers[-1].markers if m.ns == 'robot0' and m.id == 0)
    assert disc.header.frame_id == 'map' and disc.scale.x == pytest.approx(0.6)  # radius 0.3
    assert ros.wait_for(lambda: any(len(d.status) == 4 for d in diagnostics))
    names = {s.name for s in diagnostics[-1].status}
    assert {'orca_node: robot0', 'orca_node: control cycle'} <= names


def test_a_big_fleet_is_reported_in_parts_spread_over_the_period(ros):
    """120 robots: three /diagnostics messages of at most 50 robot statuses a period, each robot
    in one of them, the cycle timing with the first; a period later the same again."""
    robots = [f'robot{i}' for i in range(120)]
    ros.orca(robots, diagnostics_rate=1.0 / (3 * PERIOD))     # one part a control period
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics', publishers=1)
    for _ in range(6):
        ros.tick({}, [diagnostics])
    robot_names = [[s.name for s in d.status if s.name.startswith('orca_node: robot')]
                   for d in diagnostics[:6]]
    assert [len(names) for names in robot_names] == [40, 40, 40, 40, 40, 40]
    for period in (robot_names[:3], robot_names[3:]):
        assert sorted(sum(period, [])) == sorted(f'orca_node: {r}' for r in robots)
    assert [any(s.name.endswith('control cycle') for s in d.status)
            for d in diagnostics[:6]] == [True, False, False] * 2


def test_orca_lines_on_markers_follow_the_parameter_at_run_time(ros):
    ros.orca(['robot0', 'robot1'], publish_orca_lines=True, marker_rate=20.0,
             **{'robot0.goal': [5.0, 0.0, 0.0], 'robot1.goal': [-5.0, 0.0, 0.0]})
    cmds = [ros.collect(Twist, f'/robot{i}/cmd_vel') for i in range(2)]
    markers = ros.collect(MarkerArray, '/orca_nav/markers')
    poses = {'robot0': (0.0, 0.0), 'robot1': (1.5, 0.0)}
    ros.run(poses, cmds, 3)
    assert ros.wait_for(lambda: any(m.id == 3 for a in markers for m in a.markers))
    latest = next(a for a in reversed(markers) if any(m.id == 3 for m in a.markers))
    for robot in ('robot0', 'robot1'):
        mine = {m.id: m for m in latest.markers if m.ns == robot}
        lines, arrow = mine[3], mine[1]
        assert lines.type == lines.LINE_LIST and len(lines.points) >= 2
        # The velocity arrow's tip is a permitted velocity: left of (or on) every line.
        tip = np.array([arrow.points[1].x, arrow.points[1].y])
        ends = np.array([[p.x, p.y] for p in lines.points]).reshape(-1, 2, 2)
        along, to_tip = ends[:, 1] - ends[:, 0], tip - ends[:, 0]
        assert (along[:, 0] * to_tip[:, 1] - along[:, 1] * to_tip[:, 0] >= -1e-3).all()
    assert ros.set_parameters(Parameter('publish_orca_lines', value=False))[0].successful
    count = len(markers)
    ros.run(poses, cmds, 3)
    assert ros.wait_for(lambda: len(markers) > count + 1)
    assert not any(m.id == 3 for array in markers[count + 1:] for m in array.markers)


def test_stale_odometry_stops_only_that_robot_and_is_reported(ros):
    ros.orca(['robot0', 'robot1'], odom_timeout=0.5,
             **{'robot0.goal': [5.0, 0.0, 0.0], 'robot1.goal': [5.0, 5.0, 0.0]})
    cmds = {r: ros.collect(Twist, f'/{r}/cmd_vel') for r in ('robot0', 'robot1')}
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    ros.run({'robot0': (0.0, 0.0), 'robot1': (0.0, 5.0)}, list(cmds.values()), 5)
    assert cmds['robot0'][-1].linear.x > 0.05
    # Only robot1 keeps reporting: 0.5 s of simulated time later robot0 is stale.
    ros.play({'robot1': (0.0, 5.0)}, 12)
    assert ros.wait_for(lambda: cmds['robot0'][-1].linear.x == 0.0)
    assert cmds['robot0'][-1].angular.z == 0.0
    ros.run({'robot1': (0.0, 5.0)}, [cmds['robot1']], 2)
    assert cmds['robot1'][-1].linear.x > 0.05      # the other robot carries on
    assert ros.wait_for(lambda: any(
        s.name == 'orca_node: robot0' and s.level == DiagnosticStatus.WARN
        and 'stale' in s.message for d in diagnostics for s in d.status))


def test_the_odometry_stamp_is_the_state_time(ros):
    # Messages that keep arriving but carry a stamp 1 s old are old odometry: they refresh
    # nothing, and once the last good state is odom_timeout old the robot is stopped.
    ros.orca(['robot0'], odom_timeout=0.5, cycle_trigger='timer',
             **{'robot0.goal': [5.0, 0.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 4)
    assert cmds[-1].linear.x > 0.05
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 12, {'robot0': {'age': 1.0}})
    assert cmds[-1].linear.x == 0.0


def test_a_silent_robot_is_stopped_by_the_timer(ros):
    ros.orca(['robot0'], odom_timeout=0.5, **{'robot0.goal': [5.0, 0.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 4)
    assert cmds[-1].linear.x > 0.05
    ros.advance_until(1.0)      # no odometry at all: the late-odometry timer runs the cycles
    assert ros.wait_for(lambda: cmds[-1].linear.x == 0.0)


def test_non_finite_and_wrong_frame_odometry_is_ignored(ros):
    ros.orca(['robot0'], **{'robot0.goal': [5.0, 0.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 4)
    # NaN and foreign-frame odometry would move the robot past its goal: both are ignored, so
    # these ticks get their answers only from the late-odometry timer.
    count = len(cmds)
    for bad in ((math.nan, 0.0, 'map'), (9.0, 0.0, 'odom')):
        ros.odom('robot0', bad[0], bad[1], frame=bad[2])
    ros.advance_until(0.3)
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 3)
    assert all(math.isfinite(c.linear.x) and c.linear.x >= 0.0 for c in cmds[count:])
    assert cmds[-1].linear.x > 0.05


def test_best_effort_and_reliable_odometry_publishers_are_both_heard(ros):
    ros.orca(['robot0', 'robot1'],
             **{'robot0.goal': [5.0, 0.0, 0.0], 'robot1.goal': [5.0, 5.0, 0.0]})
    cmds = [ros.collect(Twist, f'/robot{i}/cmd_vel') for i in range(2)]
    reliable = ros.publisher(Odometry, '/robot1/odom', 10)

    def both_driving():
        return cmds[0] and cmds[1] and cmds[0][-1].linear.x > 0.05 and cmds[1][-1].linear.x > 0.05
    for _ in range(40):
        if both_driving():
            break
        ros.clock.advance(PERIOD)
        assert ros.wait_for(lambda: node_time_s(ros.node) >= ros.clock.now_s - 1e-6)
        ros.odom('robot0', 0.0, 0.0)        # best effort (sensor data QoS)
        reliable.publish(state_to_odom((0.0, 5.0), 0.0, (0.0, 0.0), 0.0, _time(ros.clock.now_s),
                                       'map', 'robot1/base_link'))
        ros.wait_for(both_driving, timeout=0.5)
    assert both_driving()


def test_require_map_holds_every_robot_until_the_map_is_prepared(ros):
    ros.orca(['robot0'], require_map=True, diagnostics_rate=20.0,
             **{'robot0.goal': [3.0, 0.5, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    ros.play({'robot0': (0.5, 0.5)}, 4)
    assert ros.wait_for(lambda: any(
        s.level == DiagnosticStatus.WARN and 'waiting for the map' in s.message
        for d in diagnostics for s in d.status if s.name == 'orca_node: robot0'))
    assert cmds == []       # not commanded before the walls are known: it stands as it is
    ros.publish_map(np.zeros((20, 40), dtype=bool))
    # Prepared on a worker thread: the first command comes as soon as it is in, clock or not.
    assert ros.wait_for(lambda: cmds)
    ros.run({'robot0': (0.5, 0.5)}, [cmds], 4)
    assert cmds[-1].linear.x > 0.05


def test_goals_in_a_wrong_frame_or_inside_an_obstacle_are_refused(ros):
    ros.orca(['robot0'], marker_rate=20.0, diagnostics_rate=20.0, require_map=True)
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    markers = ros.collect(MarkerArray, '/orca_nav/markers')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    occ = np.zeros((40, 40), dtype=bool)
    occ[10:20, 25:35] = True  # block over x in [2.5, 3.5], y in [1.0, 2.0]
    ros.publish_map(occ)
    assert ros.tick_until({'robot0': (0.5, 0.5)}, [cmds], lambda: map_prepared(diagnostics))
    ros.goal('robot0', 1.5, 3.0, frame='odom')   # wrong frame: rejected
    ros.goal('robot0', 3.0, 1.5)                  # inside the block: refused
    ros.run({'robot0': (0.5, 0.5)}, [cmds], 3)
    assert all(c.linear.x == 0.0 and c.linear.y == 0.0 for c in cmds[-3:])
    assert ros.wait_for(lambda: goals_on_markers(markers, 'robot0') is None)
    ros.goal('robot0', 1.5, 3.0)                  # free: accepted
    assert ros.tick_until({'robot0': (0.5, 0.5)}, [cmds], lambda: cmds[-1].linear.y > 0.05)
    # Markers come on the node's clock: it advances until one shows the goal.
    assert ros.tick_until({'robot0': (0.5, 0.5)}, [cmds],
                          lambda: goals_on_markers(markers, 'robot0') == pytest.approx((1.5, 3.0)))
    count = len(cmds)
    ros.goal('robot0', 3.0, 1.5)                  # refused: the robot keeps its goal
    ros.run({'robot0': (0.5, 0.5)}, [cmds], 3)
    assert all(c.linear.y > 0.05 for c in cmds[count:])


def test_map_obstacles_stop_a_robot_at_the_wall(ros):
    ros.orca(['robot0'], require_map=True, diagnostics_rate=20.0, time_horizon_obst=2.0,
             **{'robot0.goal': [3.5, 0.5, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    occ = np.zeros((10, 40), dtype=bool)
    occ[:, 20:22] = True  # wall at x in [2.0, 2.2]
    ros.publish_map(occ)
    at_wall = {'robot0': (1.65, 0.5)}      # 0.05 m from touching the wall
    assert ros.tick_until(at_wall, [cmds], lambda: map_prepared(diagnostics))
    ros.run(at_wall, [cmds], 5)
    assert 0.0 <= cmds[-1].linear.x < 0.1


def test_per_robot_mode_commands_only_its_robot(ros):
    ros.orca(['robot0', 'robot1'], mode='per_robot', robot_name='robot1',
             **{'robot0.goal': [5.0, 0.0, 0.0], 'robot1.goal': [3.0, 5.0, 0.0]})
    cmds = {r: ros.collect(Twist, f'/{r}/cmd_vel') for r in ('robot0', 'robot1')}
    ros.run({'robot0': (0.0, 0.0), 'robot1': (3.0, 0.0)}, [cmds['robot1']], 5)
    assert cmds['robot1'][-1].linear.y > 0.05
    assert cmds['robot0'] == []


def test_cmd_vel_stamped_carries_the_body_frame_and_the_clock(ros):
    ros.orca(['robot0'], cmd_vel_stamped=True, **{'robot0.goal': [0.0, -5.0, 0.0]})
    cmds = ros.collect(TwistStamped, '/robot0/cmd_vel')
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 3)
    assert cmds[-1].header.frame_id == 'robot0/base_link'
    assert cmds[-1].twist.linear.y < -0.05
    stamp = cmds[-1].header.stamp.sec + 1e-9 * cmds[-1].header.stamp.nanosec
    assert abs(stamp - ros.clock.now_s) <= PERIOD + 1e-6     # simulated time, not wall time


def test_trajectories_are_latched_and_steer_a_robot(ros):
    # The plan is published before orca_node starts (as after a restart): transient local
    # delivers it all the same.
    times = np.linspace(0.0, 10.0, 21)
    reference = Reference(times=times, positions=np.stack([0 * times, 0.5 * times], axis=1),
                          velocities=np.tile([0.0, 0.5], (21, 1)), accelerations=np.zeros((21, 2)),
                          yaw=np.zeros(21), yaw_rate=np.zeros(21), direction=np.ones(21))
    pub = ros.probe.create_publisher(MultiDOFJointTrajectory, '/robot0/trajectory', latched_qos())
    pub.publish(reference_to_trajectory(reference, 'map', 100.0, 'robot0/base_link'))
    ros.orca(['robot0'], trajectories_only=True, **{'robot0.goal': [5.0, 0.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 6)
    # The goal is along +x, the trajectory along +y: the trajectory wins.
    assert cmds[-1].linear.y > 0.2 and abs(cmds[-1].linear.x) < 0.2


def test_bad_set_parameters_rejected_with_a_reason(ros):
    node = ros.orca(['robot0'])
    for param, name in ((Parameter('time_horizon', value=-1.0), 'time_horizon'),
                        (Parameter('mode', value='swarm'), 'mode'),
                        (Parameter('robot0.radius', value=0.0), 'robot0.radius'),
                        (Parameter('deadlock.detour_angle', value=3.0), 'deadlock.detour_angle')):
        result = ros.set_parameters(param)[0]
        assert not result.successful
        assert name in result.reason
    assert ros.set_parameters(Parameter('neighbor_dist', value=7.5))[0].successful
    assert node.get_parameter('neighbor_dist').value == 7.5


def test_timer_trigger_set_at_run_time_runs_cycles_without_odometry(ros):
    ros.orca(['robot0'], control_rate=20.0, odom_timeout=100.0,
             **{'robot0.goal': [5.0, 0.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    ros.run({'robot0': (0.0, 0.0)}, [cmds], 2)
    results = ros.set_parameters(Parameter('cycle_trigger', value='timer'),
                                 Parameter('control_rate', value=10.0))
    assert all(r.successful for r in results)
    count = len(cmds)
    ros.advance_until(2.0)      # 2 s of simulated time, no odometry: ~20 cycles at 10 Hz
    assert ros.wait_for(lambda: len(cmds) - count >= 18)
    assert len(cmds) - count <= 22


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


def test_config_yaml_documents_exactly_the_declared_parameters():
    params = yaml.safe_load((REPO / 'config' / 'orca_node.yaml').read_text())
    params = params['orca_node']['ros__parameters']

    def flat(tree, prefix=''):
        for key, value in tree.items():
            if isinstance(value, dict):
                yield from flat(value, prefix + key + '.')
            else:
                yield prefix + key
    keys = set(flat(params))
    node_names = ({s.name for s in NODE_SPECS} | {'deadlock.' + s.name for s in DEADLOCK_SPECS}
                  | {'safety.' + s.name for s in SAFETY_SPECS})
    robot_names = {f'{r}.{s.name}' for r in params['robots'] for s in ROBOT_SPECS}
    assert keys - node_names - robot_names == set()
    assert node_names - keys == set()
