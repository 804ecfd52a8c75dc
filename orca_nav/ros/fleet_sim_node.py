"""fleet_sim_node: the embedded fleet simulator (in place of Gazebo or real robots).

Subscribes `/<robot>/cmd_vel` (geometry_msgs/Twist, or TwistStamped with `cmd_vel_stamped`;
body frame `<robot>/base_link`) and `/map` (transient local) and publishes, per robot,
`/<robot>/odom` (nav_msgs/Odometry, REP-105: pose of `<robot>/base_link` in `global_frame`,
twist in the child frame `<robot>/base_link`, as a wheel-odometry driver reports it),
`/fleet_sim/collisions` (std_msgs/String, one JSON object per new contact) and
`/diagnostics` (one status per robot, ERROR while it is in contact).

Motion, limits, noise, latency and collision semantics are those of `orca_nav.core.fleet.sim`.
A robot whose last cmd_vel is older than `cmd_timeout` is commanded to stop (it still
decelerates within max_accel), like a base controller's watchdog.
"""
from __future__ import annotations

import json
import math
from typing import Dict, List

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Twist, TwistStamped
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg
from nav_msgs.msg import Odometry
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node
from std_msgs.msg import String

from orca_nav.core.fleet.sim import ROBOT_ROBOT, CollisionEvent, FleetSim
from orca_nav.core.fleet.kinematics import RobotLimits
from orca_nav.ros.convert import latched_qos, msg_to_grid, robot_topic, state_to_odom
from orca_nav.ros.node_main import run_node
from orca_nav.ros.params import (ParamSpec, declare_parameters, declare_robot_parameters,
                                 on_parameters_changed)

NODE_SPECS = [
    ParamSpec('robots', ['robot0'], 'Names of the simulated robots (topic namespaces)',
              read_only=True),
    ParamSpec('global_frame', 'map', 'Frame of the odometry poses (and of /map)', read_only=True),
    ParamSpec('sim_rate', 50.0, 'Integration steps per second (Hz)', min=1.0, max=1000.0,
              read_only=True),
    ParamSpec('odom_rate', 50.0, 'Odometry messages per robot per second (Hz); at most sim_rate',
              min=0.1, max=1000.0, read_only=True),
    ParamSpec('noise_pos_std', 0.0, 'Std. dev. of the Gaussian noise on odometry positions (m)',
              min=0.0, max=10.0),
    ParamSpec('noise_vel_std', 0.0, 'Std. dev. of the Gaussian actuation noise added to the '
              'executed linear velocity (m/s)', min=0.0, max=10.0),
    ParamSpec('cmd_latency', 0.0, 'Delay between receiving a cmd_vel and executing it (s)',
              min=0.0, max=10.0),
    ParamSpec('cmd_vel_stamped', False, 'cmd_vel is geometry_msgs/TwistStamped instead of Twist',
              read_only=True),
    ParamSpec('cmd_timeout', 0.5, 'Stop a robot whose last cmd_vel is older than this (s); '
              '0 disables the watchdog', min=0.0, max=3600.0),
    ParamSpec('seed', 0, 'Seed of the noise generator', min=0, max=2**31 - 1, read_only=True),
    ParamSpec('diagnostics_rate', 1.0, 'Diagnostics messages per second (Hz)', min=0.1,
              max=100.0, read_only=True),
]

_WARN_PERIOD_S = 2.0


class FleetSimNode(Node):
    """Simulates the robots named by `robots`; see the module docstring for the interface."""

    def __init__(self, **kwargs):
        super().__init__('fleet_sim', **kwargs)
        self.params = declare_parameters(self, NODE_SPECS)
        if self.params['odom_rate'] > self.params['sim_rate']:
            raise ValueError(f"odom_rate: {self.params['odom_rate']} Hz exceeds sim_rate "
                             f"{self.params['sim_rate']} Hz (odometry is sent after a step)")
        self.robots: List[str] = list(self.params['robots'])
        if not self.robots:
            raise ValueError('robots: the list of robots is empty')
        if len(set(self.robots)) != len(self.robots):
            raise ValueError(f'robots: duplicate names in {self.robots}')
        self.robot_params = declare_robot_parameters(self, self.robots)
        self.global_frame = self.params['global_frame']
        starts = np.array([self.robot_params[r]['start'] for r in self.robots], dtype=float)
        self.sim = FleetSim(self._limits(), self._radii(), starts,
                            noise_pos_std=self.params['noise_pos_std'],
                            noise_vel_std=self.params['noise_vel_std'],
                            cmd_latency=self.params['cmd_latency'], seed=self.params['seed'])
        on_parameters_changed(self, self._apply_changes)

        self._last_cmd_s = np.full(len(self.robots), -math.inf)   # node clock, receive time
        self._stopped = np.ones(len(self.robots), dtype=bool)     # no command yet = stop
        self._last_warn_s: Dict[str, float] = {}
        self._collision_counts = np.zeros(len(self.robots), dtype=int)

        cmd_type = TwistStamped if self.params['cmd_vel_stamped'] else Twist
        # Per-robot topics go without rclpy's default QoS-event handlers: each one is a waitable
        # that every executor spin walks in Python, and with hundreds of robots those walks
        # cost more than the messages (the cost is an incompatible-QoS warning not logged).
        quiet_pub = PublisherEventCallbacks(use_default_callbacks=False)
        quiet_sub = SubscriptionEventCallbacks(use_default_callbacks=False)
        self._odom_pubs = [self.create_publisher(Odometry, robot_topic(r, 'odom'), 10,
                                                 event_callbacks=quiet_pub)
                           for r in self.robots]
        self._odom_msgs = [state_to_odom(start[:2], start[2], (0.0, 0.0), 0.0,
                                         self.get_clock().now().to_msg(), self.global_frame,
                                         f'{robot}/base_link')
                           for robot, start in zip(self.robots, starts)]
        for index, robot in enumerate(self.robots):
            self.create_subscription(cmd_type, robot_topic(robot, 'cmd_vel'),
                                     lambda msg, i=index: self._on_cmd_vel(i, msg), 10,
                                     event_callbacks=quiet_sub)
        self.create_subscription(OccupancyGridMsg, '/map', self._on_map, latched_qos())
        self._collision_pub = self.create_publisher(String, '/fleet_sim/collisions', 100)
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)

        # Odometry goes out from the simulation timer (every step or every few steps): one timer
        # callback less per period, and every message carries a freshly integrated pose.
        self._last_step_s = self._now_s()
        self._odom_period = 1.0 / self.params['odom_rate']
        self._next_odom_s = self._last_step_s
        self.create_timer(1.0 / self.params['sim_rate'], self._on_sim_timer)
        self.create_timer(1.0 / self.params['diagnostics_rate'], self._publish_diagnostics)
        self.get_logger().info(f'simulating {len(self.robots)} robots at '
                               f'{self.params["sim_rate"]:.0f} Hz in frame {self.global_frame}')

    # ------------------------------------------------------------------ parameters
    def _limits(self) -> RobotLimits:
        def field(name):
            return [self.robot_params[r][name] for r in self.robots]
        return RobotLimits.create(field('kinematics'), max_speed=field('max_speed'),
                                  max_accel=field('max_accel'), max_yaw_rate=field('max_yaw_rate'),
                                  min_turning_radius=field('min_turning_radius'))

    def _radii(self) -> np.ndarray:
        return np.array([self.robot_params[r]['radius'] for r in self.robots], dtype=float)

    def _apply_changes(self, changed: Dict[str, object]) -> None:
        for name, value in changed.items():
            robot, _, field = name.rpartition('.')
            if robot in self.robot_params:
                self.robot_params[robot][field] = value
            else:
                self.params[name] = value
        self.sim.limits = self._limits()
        self.sim.radius = self._radii()
        self.sim.noise_pos_std = self.params['noise_pos_std']
        self.sim.noise_vel_std = self.params['noise_vel_std']
        self.sim.cmd_latency = self.params['cmd_latency']

    # ------------------------------------------------------------------ inputs
    def _now_s(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _warn_throttled(self, robot: str, text: str) -> None:
        now = self._now_s()
        if now - self._last_warn_s.get(robot, -math.inf) >= _WARN_PERIOD_S:
            self._last_warn_s[robot] = now
            self.get_logger().warn(text)

    def _on_cmd_vel(self, index: int, msg) -> None:
        robot = self.robots[index]
        twist = msg.twist if isinstance(msg, TwistStamped) else msg
        values = (twist.linear.x, twist.linear.y, twist.angular.z)
        if not all(math.isfinite(v) for v in values):
            self._warn_throttled(robot, f'{robot}: ignoring cmd_vel with non-finite values '
                                        f'(linear.x, linear.y, angular.z) = {values}')
            return
        self.sim.set_commands([values], robots=[index])
        self._last_cmd_s[index] = self._now_s()
        self._stopped[index] = False

    def _on_map(self, msg: OccupancyGridMsg) -> None:
        try:
            self.sim.set_grid(msg_to_grid(msg, frame_id=self.global_frame))
        except ValueError as err:
            self.get_logger().error(f'/map: ignoring the map: {err}')
            return
        self.get_logger().info(f'/map: {msg.info.width} x {msg.info.height} cells at '
                               f'{msg.info.resolution:.4g} m for robot-map collisions')

    # ------------------------------------------------------------------ simulation
    def _on_sim_timer(self) -> None:
        now = self._now_s()
        # Integrate the time that really passed (bounded, so a stalled process does not jump).
        dt = min(now - self._last_step_s, 5.0 / self.params['sim_rate'])
        self._last_step_s = now
        if dt <= 0.0:
            return
        timeout = self.params['cmd_timeout']
        if timeout > 0.0:
            stale = np.flatnonzero(~self._stopped & (now - self._last_cmd_s > timeout))
            if stale.size:
                self.sim.set_commands(np.zeros((stale.size, 3)), robots=stale)
                self._stopped[stale] = True
        events = self.sim.step(dt)
        for event in events:
            self._report_collision(event, now)
        if events:
            self._publish_diagnostics()
        # Half a step of tolerance absorbs timer jitter when both rates are equal.
        if now >= self._next_odom_s - 0.5 / self.params['sim_rate']:
            self._publish_odometry()
            self._next_odom_s = max(self._next_odom_s + self._odom_period, now - self._odom_period)

    def _report_collision(self, event: CollisionEvent, now_s: float) -> None:
        names = [self.robots[i] for i in event.robots]
        self._collision_counts[list(event.robots)] += 1
        record = {'time': now_s, 'sim_time': event.time, 'kind': event.kind, 'robots': names,
                  'position': list(event.position)}
        self._collision_pub.publish(String(data=json.dumps(record)))
        what = ' and '.join(names) if event.kind == ROBOT_ROBOT else f'{names[0]} and the map'
        self.get_logger().warn(f'collision between {what} at '
                               f'({event.position[0]:.2f}, {event.position[1]:.2f})')

    # ------------------------------------------------------------------ outputs
    def _publish_odometry(self) -> None:
        poses, twists = self.sim.odometry()
        stamp = self.get_clock().now().to_msg()
        pos_var = self.params['noise_pos_std'] ** 2
        half_yaw = 0.5 * poses[:, 2]
        qz, qw = np.sin(half_yaw).tolist(), np.cos(half_yaw).tolist()
        poses, twists = poses.tolist(), twists.tolist()
        # Messages are built once and updated in place: constructing an Odometry costs about
        # twice as much as publishing it, which matters at 100+ robots x 50 Hz.
        for index, msg in enumerate(self._odom_msgs):
            msg.header.stamp = stamp
            pose, twist = msg.pose.pose, msg.twist.twist
            pose.position.x, pose.position.y = poses[index][0], poses[index][1]
            pose.orientation.z, pose.orientation.w = qz[index], qw[index]
            twist.linear.x, twist.linear.y = twists[index][0], twists[index][1]
            twist.angular.z = twists[index][2]
            msg.pose.covariance[0] = msg.pose.covariance[7] = pos_var
            self._odom_pubs[index].publish(msg)

    def _publish_diagnostics(self) -> None:
        now = self._now_s()
        poses, twists = self.sim.poses, self.sim.twists
        partners = {i: [] for i in range(len(self.robots))}
        for a, b in self.sim.robot_contacts:
            partners[a].append(self.robots[b])
            partners[b].append(self.robots[a])
        on_map = self.sim.map_contacts
        out = DiagnosticArray()
        out.header.stamp = self.get_clock().now().to_msg()
        for i, robot in enumerate(self.robots):
            status = DiagnosticStatus(name=f'fleet_sim: {robot}', hardware_id=robot)
            touching = partners[i] + (['map'] if on_map[i] else [])
            if touching:
                status.level = DiagnosticStatus.ERROR
                status.message = 'in collision with ' + ', '.join(touching)
            else:
                status.level = DiagnosticStatus.OK
                status.message = 'ok'
            cmd_age = now - self._last_cmd_s[i]
            status.values = [
                KeyValue(key='x', value=f'{poses[i, 0]:.3f}'),
                KeyValue(key='y', value=f'{poses[i, 1]:.3f}'),
                KeyValue(key='yaw', value=f'{poses[i, 2]:.3f}'),
                KeyValue(key='speed', value=f'{float(np.hypot(*twists[i, :2])):.3f}'),
                KeyValue(key='collisions', value=str(int(self._collision_counts[i]))),
                KeyValue(key='cmd_vel_age', value='never' if math.isinf(cmd_age)
                         else f'{cmd_age:.3f}'),
            ]
            out.status.append(status)
        self._diag_pub.publish(out)


def main(args=None) -> None:
    run_node(FleetSimNode, 'fleet_sim', args)


if __name__ == '__main__':
    main()
