"""orca_node: ORCA local avoidance for a fleet, over ROS 2 topics. The fleet logic is
`orca_nav.core.fleet.controller.FleetController`; this node is its wiring.

In, per robot of `robots`: `/<robot>/odom` (nav_msgs/Odometry, twist in the body frame; the pose
in `global_frame`, or with `tf_layout` in any frame TF connects to it: `tf_poses`; the robot's
state counts at the message stamp); per commanded robot `/<robot>/goal_pose` (PoseStamped),
`/<robot>/trajectory` (MultiDOFJointTrajectory, transient local: a restarted node gets the
current plan) and scans (`sensor_scans`); `/map` (OccupancyGrid, transient local), prepared on
a worker thread; drones: `map_3d_topic` (`orca_drones`); non-cooperative agents
(`tracked_agents`). Out: `/<robot>/cmd_vel` (Twist or TwistStamped; linear.z: a drone's climb
rate), `/orca_nav/markers`, `/diagnostics`.

A cycle starts as soon as every robot with live odometry has sent a new message since the last
cycle (`cycle_trigger: odometry`, lowest odom->cmd_vel latency) and at the latest on the
`control_rate` timer. All times come from the node clock, so `use_sim_time` runs it on /clock.
Modes: `centralized` commands every robot, `per_robot` only `robot_name`, `shard` one block of
them (`orca_params.commanded_robots`); the others are reciprocal agents: a fleet spreads out.

A robot gets its first cmd_vel once the controller can command it (map prepared with
`require_map`, first trajectory with `trajectories_only`); then one every cycle.

Threads: every callback runs in the node's one mutually exclusive callback group; the map
preparation runs on a worker thread and comes back through `offload.Offloaded`.
"""
from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Dict, List, Optional

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, Twist, TwistStamped
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data
from trajectory_msgs.msg import MultiDOFJointTrajectory
from visualization_msgs.msg import MarkerArray

from orca_nav.core.fleet import controller, map_model
from orca_nav.core.fleet.names import MARKERS_TOPIC
from orca_nav.parameters.orca_node import DEADLOCK_SPECS, NODE_SPECS, SAFETY_SPECS
from orca_nav.ros.construction import released_on_failure
from orca_nav.ros.convert import TwistCdr, latched_qos, msg_to_grid, node_now, odom_state_from_cdr
from orca_nav.ros.diagnostics import CycleTimes, FleetDiagnostics
from orca_nav.ros.lifecycle import ManagedNode
from orca_nav.ros.markers import fleet_markers
from orca_nav.ros.node_main import run_node
from orca_nav.ros.odometry_input import BatchedOdometry
from orca_nav.ros.offload import Offloaded
from orca_nav.ros.orca_drones import DroneMap
from orca_nav.ros.orca_params import commanded_robots, controller_params, robot_specs
from orca_nav.ros.params import declare_parameters, declare_robot_parameters, on_parameters_changed
from orca_nav.ros.qos_events import publisher_events
from orca_nav.ros.robot_topics import RobotTopics
from orca_nav.ros.sensor_scans import ScanInput
from orca_nav.ros.tf_poses import FleetPoses
from orca_nav.ros.tracked_agents import TrackedAgentsInput
from orca_nav.ros.trajectory_msgs import msg_to_reference

_WARN_PERIOD_S = 2.0
# With the odometry trigger the control timer only covers late odometry: it is restarted by every
# cycle and fires this many control periods after the last one (a free-running timer would lock
# onto the odometry's phase and make every burst wait most of a period).
_LATE_ODOMETRY_PERIODS = 1.25
_CYCLE_HISTORY = 200   # cycle statistics cover the last 200 cycles (10 s at 20 Hz)


class OrcaNode(ManagedNode):
    """The fleet's ORCA controller node, a managed node (`orca_nav.ros.lifecycle`). kwargs go to
    rclpy.node.Node (parameter_overrides, ...)."""

    @released_on_failure
    def __init__(self, **kwargs):
        kwargs.setdefault('node_name', 'orca_node')
        super().__init__(**kwargs)
        self._cfg = declare_parameters(self, NODE_SPECS)
        self.robots: List[str] = list(self._cfg['robots'])
        self._robot_cfg = declare_robot_parameters(self, self.robots)
        self._deadlock_cfg = declare_parameters(self, DEADLOCK_SPECS, prefix='deadlock.')
        self._safety_cfg = declare_parameters(self, SAFETY_SPECS, prefix='safety.')
        self.global_frame = self._cfg['global_frame']
        self.fleet: Optional[controller.FleetController] = None
        self._map_jobs = self.own_for_life(Offloaded(self, self._take_prepared_map, 1, 'orca_map'))
        on_parameters_changed(self, self._on_parameters)
        self.start()

    def configure(self) -> None:
        self._poses = FleetPoses(self, self.robots, self._cfg['tf_layout'], self.global_frame,
                                 self._cfg['transform_tolerance'])
        specs = robot_specs(self.robots, self._robot_cfg)
        self.fleet = controller.FleetController(
            specs, controller_params(self._cfg, self._deadlock_cfg, self._safety_cfg),
            commanded=commanded_robots(self._cfg))
        self.commanded = [r for r in self.robots if self.fleet.commanded[self.fleet.index[r]]]
        for robot, fields in self._robot_cfg.items():
            if len(fields['goal']) == 3:
                self._set_goal(self.fleet.index[robot], fields['goal'], 'parameter',
                               fields['goal_z'])
        self._last_warn: Dict[tuple, float] = {}
        self._unstamped: set = set()            # robots warned about odometry without a stamp
        self._said_waiting = False              # "waiting for /map" logged
        self._cycle_times = CycleTimes(f'{self.get_fully_qualified_name()[1:]}: control cycle',
                                       _CYCLE_HISTORY)
        self._map_version = 0       # the newest map (or inflation) being prepared
        self._sim_time = bool(self.get_parameter('use_sim_time').value)
        cmd_in, cmd_out = self._cfg['cmd_vel_in'], self._cfg['cmd_vel_out']
        if cmd_in == cmd_out:
            raise ValueError(f'cmd_vel_in: {cmd_in!r} is also cmd_vel_out (a loop)')
        stamped = self._cfg['cmd_vel_stamped']
        self._cmd_out = []      # (row, publisher, serializer) per commanded robot
        for robot in self.commanded:
            self._cmd_out.append((self.fleet.index[robot], self.create_lifecycle_publisher(
                TwistStamped if stamped else Twist, self._poses.names[robot].topic(cmd_out), 10,
                event_callbacks=publisher_events()),
                TwistCdr(self._poses.names[robot].base_frame if stamped else None)))
        self._marker_pub = self.create_lifecycle_publisher(MarkerArray, MARKERS_TOPIC, 10)
        topics = self.own(RobotTopics(self, self._after_inputs, self._cfg['batch_robot_topics']))
        self._odometry = BatchedOdometry(self.fleet, self.global_frame, self._on_odom)
        for i, robot in enumerate(self.robots):
            # Best effort (REP-2003 sensor data): only the newest odometry matters, and it
            # matches reliable and best-effort publishers alike. Raw: decoded by the node.
            topics.subscribe(Odometry, self._poses.names[robot].odom_topic,
                             lambda raw, i=i: self._odometry.add(i, raw),
                             qos_profile_sensor_data, raw=True)
            # Every robot's goal: the deadlock breaker's priorities need to know who travels.
            topics.subscribe(PoseStamped, self._poses.names[robot].goal_topic,
                             lambda msg, i=i: self._on_goal(i, msg), 10, rare=True)
        in_type = TwistStamped if self._cfg['cmd_vel_in_stamped'] else Twist
        for robot in self.commanded:
            i = self.fleet.index[robot]
            if cmd_in:
                topics.subscribe(in_type, self._poses.names[robot].topic(cmd_in),
                                 lambda msg, i=i: self._on_cmd_vel_in(i, msg), 10)
            else:
                topics.subscribe(MultiDOFJointTrajectory, self._poses.names[robot].trajectory_topic,
                                 lambda msg, i=i: self._on_trajectory(i, msg), latched_qos(),
                                 rare=True)
        topics.start()
        self.create_subscription(OccupancyGridMsg, '/map', self._on_map, latched_qos())
        self._others = TrackedAgentsInput(self, self.fleet, self._cfg, self.global_frame,
                                          self._warn)
        ScanInput(self, self.fleet, self._cfg, self._poses, self.commanded, self._warn)
        DroneMap(self, self.fleet, self._cfg, specs, self._goal_warning, self._engage_ready_robots)
        self._timer = self._marker_timer = None
        self._make_control_timer()
        self._set_marker_timer(self._cfg['marker_rate'])
        self._diagnostics = FleetDiagnostics(
            self, self.fleet, self.create_lifecycle_publisher(DiagnosticArray, '/diagnostics', 10),
            self._cycle_times, self._cfg['diagnostics_rate'])
        self.get_logger().info(
            f'{len(self.commanded)} of {len(self.robots)} robots commanded ({self._cfg["mode"]}), '
            f'{self._cfg["control_rate"]:g} Hz, trigger {self._cfg["cycle_trigger"]}')

    def activated(self) -> None:
        self._engage_ready_robots()

    def deactivating(self) -> None:
        """Every commanded robot gets one zero command: stopped, not left on its last one."""
        self._publish_commands(np.zeros((len(self.robots), 3)), self.fleet.commanded)

    # ------------------------------------------------------------------ parameters -> core
    def _on_parameters(self, changed: Dict) -> None:
        goals = {}
        for name, value in changed.items():
            if name.startswith('deadlock.'):
                self._deadlock_cfg[name[len('deadlock.'):]] = value
            elif name.startswith('safety.'):
                self._safety_cfg[name[len('safety.'):]] = value
            elif '.' in name:
                robot, field = name.split('.', 1)
                self._robot_cfg[robot][field] = value
                if field == 'goal':
                    goals[robot] = value
            else:
                self._cfg[name] = value
        if not self.configured:
            return      # the next configure reads them
        old_inflation = self.fleet.params.map_inflation
        for note in self.fleet.configure(
                controller_params(self._cfg, self._deadlock_cfg, self._safety_cfg),
                robot_specs(self.robots, self._robot_cfg)):
            self.get_logger().warning(note)
        for robot, goal in goals.items():
            self._set_goal(self.fleet.index[robot], goal if len(goal) == 3 else None, 'parameter',
                           self._robot_cfg[robot]['goal_z'])
        if changed.keys() & {'control_rate', 'cycle_trigger'}:
            self._make_control_timer()
        if 'marker_rate' in changed:
            self._set_marker_timer(self._cfg['marker_rate'])
        if self.fleet.params.map_inflation != old_inflation and self.fleet.map is not None:
            self._prepare_map(self.fleet.map.grid)

    def _make_control_timer(self) -> None:
        if self._timer is not None:
            self.destroy_timer(self._timer)
        period = 1.0 / self._cfg['control_rate']
        if self._cfg['cycle_trigger'] == 'odometry':
            period *= _LATE_ODOMETRY_PERIODS
        self._timer = self.create_timer(period, self._on_timer)

    def _set_marker_timer(self, rate: float) -> None:
        if self._marker_timer is not None:
            self.destroy_timer(self._marker_timer)
            self._marker_timer = None
        if rate > 0.0:
            self._marker_timer = self.create_timer(1.0 / rate, self._publish_markers)

    def _warn(self, key: tuple, text: str) -> None:
        """A warning at most every few seconds per (robot, kind)."""
        now = node_now(self)
        if now - self._last_warn.get(key, -math.inf) >= _WARN_PERIOD_S:
            self._last_warn[key] = now
            self.get_logger().warning(text)

    # ------------------------------------------------------------------ inputs
    def _on_odom(self, i: int, raw: bytes) -> None:
        robot = self.robots[i]
        try:
            state = odom_state_from_cdr(raw)
        except ValueError as err:
            self._warn((robot, 'odom'), f'{robot}: ignoring odometry: {err}')
            return
        # Time 0 is a real stamp only while the clock itself is near 0 (simulated time just
        # started); later it is a driver that never stamps: the best we know is the arrival.
        if state.stamp_s <= 0.0 and node_now(self) > self.fleet.params.odom_timeout:
            state = replace(state, stamp_s=node_now(self))
            if robot not in self._unstamped:
                self._unstamped.add(robot)
                self.get_logger().warning(f'{robot}: odometry has no header.stamp; using the '
                                          'time it arrives')
        stamp = state.stamp_s
        try:
            position, velocity, yaw = self._poses.to_global(robot, state)
        except ValueError as err:
            self.fleet.note_input_problem(i, str(err))
            self._warn((robot, 'odom_frame'), f'{robot}: rejecting odometry: {err}')
            return
        problem = self.fleet.set_state(i, stamp, position, velocity, yaw, state.position_covariance)
        if problem is not None:
            self._warn((robot, 'covariance'), f'{robot}: largest uncertainty margin: {problem}')

    def _after_inputs(self) -> None:
        """After each batch of per-robot messages: the cycle, when odometry triggers it and
        every live robot's state is in (once a batch: the check is over the whole fleet)."""
        self._odometry.take()
        if not self.active:
            return
        now = self.fleet.cycle_time(node_now(self))
        if self._cfg['cycle_trigger'] == 'odometry' and self.fleet.states_complete(now):
            self._cycle(now)
        else:
            self._engage_ready_robots()

    def _on_goal(self, i: int, msg: PoseStamped) -> None:
        robot = self.robots[i]
        if msg.header.frame_id != self.global_frame:
            self._goal_warning(i, f'{robot}: rejecting goal: header.frame_id '
                                  f'{msg.header.frame_id!r} is not the global frame '
                                  f'{self.global_frame!r}')
            return
        p = msg.pose.position
        self._set_goal(i, (p.x, p.y), 'goal_pose', p.z)

    def _set_goal(self, i: int, xy, source: str, altitude=None) -> None:
        reason = self.fleet.set_goal(i, xy, altitude)
        if reason is not None:
            self._goal_warning(i, f'{self.robots[i]}: refusing goal from {source}: {reason}')

    def _goal_warning(self, i: int, text: str) -> None:
        """Goals of robots another node commands are only tracked, their problems not reported."""
        if self.fleet.commanded[i]:
            self.get_logger().warning(text)

    def _on_trajectory(self, i: int, msg: MultiDOFJointTrajectory) -> None:
        robot = self.robots[i]
        if msg.points and msg.header.frame_id != self.global_frame:
            self._warn((robot, 'trajectory_frame'),
                       f'{robot}: rejecting trajectory: header.frame_id '
                       f'{msg.header.frame_id!r} is not the global frame {self.global_frame!r}')
            return
        try:
            reference, start_s, _frame = msg_to_reference(msg, dim=self.fleet.dim(i))
        except ValueError as err:
            self._warn((robot, 'trajectory'),
                       f'{robot}: rejecting trajectory, holding still: {err}')
            reference, start_s = None, node_now(self)
        self.fleet.set_trajectory(i, reference, start_s)
        self._engage_ready_robots()

    def _on_cmd_vel_in(self, i: int, msg) -> None:
        """Filter mode: the twist counts from its arrival (the node clock), stamped or not."""
        twist = msg.twist if isinstance(msg, TwistStamped) else msg
        try:
            self.fleet.set_input_twist(i, node_now(self),
                                       (twist.linear.x, twist.linear.y, twist.angular.z))
        except ValueError as err:
            self._warn((self.robots[i], 'cmd_vel_in'),
                       f'{self.robots[i]}: ignoring {self._cfg["cmd_vel_in"]}: {err}')

    def _engage_ready_robots(self) -> None:
        """A robot that just became commandable gets its first command, a zero, now and not at
        the next cycle (whose odometry a simulator in lockstep holds back until every robot
        answered)."""
        rows = self.fleet.engage(self.fleet.cycle_time(node_now(self)))
        if rows.size:
            publish = np.zeros(len(self.robots), dtype=bool)
            publish[rows] = True
            self._publish_commands(np.zeros((len(self.robots), 3)), publish)

    def _on_map(self, msg: OccupancyGridMsg) -> None:
        try:
            grid = msg_to_grid(msg, frame_id=self.global_frame)
        except ValueError as err:
            self.get_logger().warning(f'rejecting /map: {err}')
            return
        self._prepare_map(grid)

    def _prepare_map(self, grid) -> None:
        """Prepares the map on a worker thread (a large map must not stall control cycles)."""
        self._map_version += 1
        self._map_jobs.submit(_timed_prepare_map, self._map_version, grid,
                              self.fleet.params.map_inflation, self.fleet.guided,
                              *self.fleet.goals_to_prepare())

    def _take_prepared_map(self, prepared) -> None:
        version, model, seconds = prepared
        if version == self._map_version:    # else a newer map (or inflation) is on its way
            self._use_map(model, seconds)
            self._engage_ready_robots()

    def _use_map(self, model: map_model.MapModel, seconds: float) -> None:
        # Said before the map is in use: whoever sees the map in use also finds the line.
        ny, nx = model.grid.shape
        self.get_logger().info(f'map {nx} x {ny} cells -> {model.polygon_count} obstacle polygons '
                               f'({model.vertex_count} vertices) in {1e3 * seconds:.0f} ms')
        for i, reason in self.fleet.set_map(model):
            self._goal_warning(i, f'{self.robots[i]}: dropping goal after the new map: {reason}')

    # ------------------------------------------------------------------ control cycle
    def _on_timer(self) -> None:
        now = node_now(self)
        if self.active and self.fleet.due(now):
            self._cycle(now)

    def _cycle(self, now: float) -> None:
        started = self._cycle_times.start()
        if self._cfg['cycle_trigger'] == 'odometry':
            self._timer.reset()     # the timer waits for late odometry from now on
        self._others.refresh(now)
        # On the wall clock a command goes out this much after `now`: the safety layer counts it
        # as reaction time. On simulated time (lockstep) time stands still while we compute.
        delay = 0.0 if self._sim_time else self._cycle_times.recent_wall_s()
        out = self.fleet.step(now, delay)
        self._publish_commands(out.twists, out.publish, out.climb_rates)
        if self.fleet.params.require_map and self.fleet.map is None and not self._said_waiting:
            self._said_waiting = True      # normal start-up: said once, at INFO
            self.get_logger().info('waiting for /map (require_map): holding every robot still')
        if out.newly_stale:     # one line a cycle: an rclpy log call costs ~0.7 ms
            self.get_logger().warning(f'{_listed([self.robots[i] for i in out.newly_stale])}: '
                                      f'odometry older than {self.fleet.params.odom_timeout:g} s, '
                                      'stopping')
            self._diagnostics.publish(out.newly_stale)
        if out.ran.any():   # idle cycles (nobody to command) would flatter the statistics
            self._cycle_times.record(started)

    def _publish_commands(self, twists, publish, climb_rates=None) -> None:
        stamp_ns = self.get_clock().now().nanoseconds
        values = twists.tolist()
        climb = np.zeros(len(values)).tolist() if climb_rates is None else climb_rates.tolist()
        for row, pub, twist in self._cmd_out:
            if publish[row]:
                vx, vy, wz = values[row]
                pub.publish(twist.pack((vx, vy, climb[row]), wz, stamp_ns))

    # ------------------------------------------------------------------ outputs
    def _publish_markers(self) -> None:
        self._marker_pub.publish(fleet_markers(
            self.fleet.view(node_now(self)), self.robots, self.global_frame,
            self.get_clock().now().to_msg(), self._cfg['publish_orca_lines']))


def _listed(names: List[str], shown: int = 10) -> str:
    more = f' and {len(names) - shown} more' if len(names) > shown else ''
    return ', '.join(names[:shown]) + more


def _timed_prepare_map(version, *args):
    started = time.perf_counter()
    model = map_model.prepare_map(*args)
    return version, model, time.perf_counter() - started


def main(args=None):
    run_node(OrcaNode, 'orca_node', args)


if __name__ == '__main__':
    main()
