"""fleet_sim_node: the embedded fleet simulator (in place of Gazebo or real robots).

Subscribes `/<robot>/cmd_vel` (geometry_msgs/Twist, or TwistStamped with `cmd_vel_stamped`;
body frame `<robot>/base_link`) and `/map` (transient local) and publishes, per robot,
`/<robot>/odom` (nav_msgs/Odometry, REP-105: pose of `<robot>/base_link` in `global_frame`,
twist in the child frame `<robot>/base_link`, as a wheel-odometry driver reports it),
`/fleet_sim/collisions` (std_msgs/String, one JSON object per new contact),
`/diagnostics` (one status per robot, ERROR while it is in contact) and, with `publish_clock`,
`/clock`. With scripted pedestrians (`pedestrians.*`, `ros/sim_pedestrians.py`) it also
publishes them with the odometry as `tracked_agents` (what orca_node avoids) and reports
robot-person contacts. Unmapped `boxes` and per-robot laser scans (`scan.*`): `ros/sim_scans.py`.

Drones (kinematics `quadrotor`) fly: cmd_vel's linear.z is their climb rate, odometry carries
their altitude (pose z) and climb rate (twist linear.z), start altitudes are `<robot>.start_z`,
and their map is the 3-D one on `map_3d_topic` (PointCloud2, transient local; drone-voxel
collisions). Ground robots are cylinders `ground_clearance` tall for drone-ground collisions.

With `tf_layout` `namespaced` or `prefixed` it speaks like a real robot stack instead: odometry
in each robot's drifting odom frame, `odom -> base_link` and a simulated localization's
`map -> odom` on TF, a static lidar mount on tf_static (`orca_nav.ros.sim_tf`).

Motion, limits, noise, latency, the cmd_vel watchdog (`cmd_timeout`, in simulated time) and
collision semantics are those of `orca_nav.core.sim.fleet_sim`.

Time:
* By default the simulator follows the node's clock (ROS time: the system clock, or /clock under
  use_sim_time, e.g. Gazebo's): every 1/sim_rate of it, it integrates the time that passed.
* With `publish_clock` it is the clock source: simulated time starts at `start_time`, advances
  exactly 1/sim_rate per integration step and goes out on /clock after every step; odometry,
  collision reports and diagnostics carry it. `real_time_factor` paces it against the wall
  clock: at most that many simulated seconds per wall second (0: as fast as possible).
* With `lockstep` too, it advances one exchange at a time: odometry (and /clock) for the current
  time goes out, and a robot has answered once a cmd_vel of it arrives after that. When every
  robot has answered, or `lockstep_timeout` wall seconds passed (a throttled warning names the
  robots that did not), it integrates 1/odom_rate in steps of at most 1/sim_rate and opens the
  next exchange. The first exchange opens once every robot's odom has a subscriber and its
  cmd_vel a publisher and waits up to `lockstep_start_timeout` from start-up, so nothing moves
  before the controllers run; its odometry goes out again every 0.5 s to the robots that have
  not answered (a controller that had not yet matched the topic would lose it). A controller
  that answers each odometry with the command it computed from it then sees the same run
  whatever the machine's load: runs are reproducible.
"""
from __future__ import annotations

import json
import math
from typing import Dict, List, Optional

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Twist, TwistStamped
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg
from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import String

from orca_nav.core.fleet.kinematics import RobotLimits
from orca_nav.core.fleet.names import robot_names
from orca_nav.core.fleet.status import Level, RobotStatus
from orca_nav.core.sim.faults import NO_ROBOT, Faults, OdometryLink
from orca_nav.core.sim.fleet_sim import (
    ROBOT_OBSTACLE,
    ROBOT_PERSON,
    ROBOT_ROBOT,
    CollisionEvent,
    FleetSim,
)
from orca_nav.core.sim.lockstep import Lockstep, PeriodicSchedule
from orca_nav.parameters.fleet_sim_node import (
    BOXES_SPEC,
    FAULT_SPECS,
    NODE_SPECS,
    PEDESTRIAN_SPECS,
    SCAN_SPECS,
    TF_SPECS,
)
from orca_nav.ros.construction import released_on_failure
from orca_nav.ros.convert import (
    OdometryCdr,
    cloud_to_grid,
    latched_qos,
    msg_to_grid,
    node_now,
    seconds_to_nanoseconds,
    seconds_to_time,
)
from orca_nav.ros.diagnostics import robot_status_msg
from orca_nav.ros.node_main import run_node
from orca_nav.ros.params import (
    NamesUndeclaredParameters,
    declare_parameters,
    declare_robot_parameters,
    on_parameters_changed,
    robot_spec,
)
from orca_nav.ros.qos_events import publisher_events, subscription_events
from orca_nav.ros.sim_pedestrians import PedestrianPublisher, pedestrians_from_parameters
from orca_nav.ros.sim_scans import ScanPublisher, boxes_from_parameter
from orca_nav.ros.sim_tf import SimTfPublisher

_ROBOT_FAULTS = ('dead_robot', 'faulty_robot', 'jump_robot')


def faults_from_parameters(values: Dict[str, object], robots: List[str]) -> Faults:
    """The `fault.*` parameter values as core Faults (robot names to indices)."""
    fields = dict(values)
    for name in _ROBOT_FAULTS:
        robot = fields[name]
        if robot and robot not in robots:
            raise ValueError(f'fault.{name}: {robot!r} is not one of the robots '
                             f'({", ".join(robots)})')
        fields[name] = robots.index(robot) if robot else NO_ROBOT
    return Faults(**fields)
# ---- end of fault injection parameters


COLLISION_HISTORY = 1000   # collision reports a late subscriber still receives
_WARN_PERIOD_S = 2.0
_MAX_CATCH_UP_STEPS = 5     # following a clock: a stalled process integrates at most 5 steps
_STARTUP_POLL_S = 0.1       # lockstep start-up: wall seconds between checks for the controllers


def _check_parameter_combinations(params: Dict[str, object]) -> None:
    if params['odom_rate'] > params['sim_rate']:
        raise ValueError(f"odom_rate: {params['odom_rate']:g} Hz exceeds sim_rate "
                         f"{params['sim_rate']:g} Hz (odometry is sent after a step)")
    if params['lockstep'] and not params['publish_clock']:
        raise ValueError('lockstep: requires publish_clock (only a simulator that owns the time '
                         'can hold it until the robots answer)')


def _check_fault_combinations(params: Dict[str, object], faults: Faults) -> None:
    if params['lockstep'] and faults.odometry_faulty:
        raise ValueError('fault.odom_drop_rate / odom_delay / odom_jitter: need a simulator '
                         'that is not in lockstep (an exchange whose odometry is lost or late '
                         'would wait for lockstep_timeout every time)')


class FleetSimNode(NamesUndeclaredParameters, Node):
    """Simulates the robots named by `robots`; see the module docstring for the interface."""

    @released_on_failure
    def __init__(self, **kwargs):
        super().__init__('fleet_sim', **kwargs)
        self.params = declare_parameters(self, NODE_SPECS + TF_SPECS + [BOXES_SPEC])
        _check_parameter_combinations(self.params)
        self.robots: List[str] = list(self.params['robots'])
        if not self.robots:
            raise ValueError('robots: the list of robots is empty')
        if len(set(self.robots)) != len(self.robots):
            raise ValueError(f'robots: duplicate names in {self.robots}')
        self.robot_params = declare_robot_parameters(self, self.robots)
        self.global_frame = self.params['global_frame']
        starts = np.array([self.robot_params[r]['start'] for r in self.robots], dtype=float)
        altitudes = np.array([self.robot_params[r]['start_z'] for r in self.robots])
        specs = [robot_spec(r, self.robot_params[r]) for r in self.robots]
        for spec, z in zip(specs, altitudes):
            if z != 0.0 and not spec.flies:
                raise ValueError(f'{spec.name}.start_z: {z:g} m, but only quadrotors fly (a '
                                 f'{spec.kinematics} robot is at z = 0)')
        faults = faults_from_parameters(declare_parameters(self, FAULT_SPECS, prefix='fault.'),
                                        self.robots)
        _check_fault_combinations(self.params, faults)
        walk = declare_parameters(self, PEDESTRIAN_SPECS, prefix='pedestrians.')
        pedestrians = pedestrians_from_parameters(walk, self.params['seed'])
        self.sim = FleetSim(self._limits(), self._radii(), starts,
                            noise_pos_std=self.params['noise_pos_std'],
                            noise_vel_std=self.params['noise_vel_std'],
                            cmd_latency=self.params['cmd_latency'], seed=self.params['seed'],
                            cmd_timeout=self.params['cmd_timeout'], faults=faults,
                            pedestrians=pedestrians,
                            boxes=boxes_from_parameter(self.params['boxes']),
                            start_altitudes=altitudes,
                            ground_clearance=self.params['ground_clearance'])
        scan_cfg = declare_parameters(self, SCAN_SPECS, prefix='scan.')
        self._pedestrian_pub = (PedestrianPublisher(self, pedestrians, walk['topic'],
                                                    self.global_frame)
                                if pedestrians is not None else None)
        # Lost or late odometry passes through a link; without those faults it goes out directly.
        self.odometry_link = OdometryLink(faults) if faults.odometry_faulty else None
        on_parameters_changed(self, self._apply_changes)

        self._last_warn_s: Dict[str, float] = {}
        self._collision_counts = np.zeros(len(self.robots), dtype=int)
        self._step_s = 1.0 / self.params['sim_rate']
        self._odom_period_s = 1.0 / self.params['odom_rate']
        # Half a step of tolerance: an output at the step rate goes out at every step.
        self._odometry_due = PeriodicSchedule(self._odom_period_s, tolerance=0.5 * self._step_s)
        self._diagnostics_due = PeriodicSchedule(1.0 / self.params['diagnostics_rate'],
                                                 tolerance=0.5 * self._step_s)

        cmd_type = TwistStamped if self.params['cmd_vel_stamped'] else Twist
        self._odom_pubs = [self.create_publisher(Odometry, robot_names(r).odom_topic, 10,
                                                 event_callbacks=publisher_events())
                           for r in self.robots]
        names = [robot_names(r, self.params['tf_layout'], self.global_frame)
                 for r in self.robots]
        self._odom_out = [OdometryCdr(n.odom_frame, n.base_frame) for n in names]
        self._odom_sent: List[bytes] = [b''] * len(names)     # each robot's last odometry out
        self._tf = (SimTfPublisher(self, names, starts, self.params)
                    if self.params['tf_layout'] != 'none' else None)
        self._scans = (ScanPublisher(self, self.sim, names, scan_cfg, self._step_s)
                       if scan_cfg['rate'] > 0.0 else None)
        self._cmd_subs = [self.create_subscription(cmd_type, robot_names(robot).cmd_vel_topic,
                                                   lambda msg, i=index: self._on_cmd_vel(i, msg),
                                                   10, event_callbacks=subscription_events())
                          for index, robot in enumerate(self.robots)]
        self.create_subscription(OccupancyGridMsg, '/map', self._on_map, latched_qos())
        if any(spec.flies for spec in specs):
            self.create_subscription(PointCloud2, self.params['map_3d_topic'], self._on_map_3d,
                                     latched_qos())
        # Transient local with a deep history: a listener that connects late (the demo's
        # recorder, a test) still gets every contact, including one at t = 0.
        self._collision_pub = self.create_publisher(String, '~/collisions',
                                                    latched_qos(COLLISION_HISTORY))
        self._collisions_reported = 0
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)

        # Wall time enters this node only to pace the simulation and bound the lockstep waits
        # when it is the clock source; a steady clock, so system clock jumps change neither.
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._ticks = 0     # with publish_clock: integration steps, or lockstep exchanges, so far
        self._tick_s = self._odom_period_s if self.params['lockstep'] else self._step_s
        self.lockstep: Optional[Lockstep] = None
        if self.params['publish_clock']:
            self._clock_pub = self.create_publisher(ClockMsg, '/clock', QoSProfile(depth=10))
            self._clock_msg = ClockMsg()
            if self.params['lockstep']:
                self._start_lockstep()
            else:
                self._start_clock_source()
        else:
            self._start_following_the_clock()
        self.get_logger().info(self._describe())

    def _describe(self) -> str:
        p = self.params
        text = (f'simulating {len(self.robots)} robots in frame {self.global_frame}: steps at '
                f"{p['sim_rate']:g} Hz, odometry at {p['odom_rate']:g} Hz, ")
        if not p['publish_clock']:
            return text + 'on the node clock'
        pace = (f"real-time factor {p['real_time_factor']:g}" if p['real_time_factor'] > 0.0
                else 'as fast as possible')
        text += f"publishing /clock from {p['start_time']:g} s, {pace}"
        if p['lockstep']:
            text += (f"; lockstep with the controllers (timeout {p['lockstep_timeout']:g} s, "
                     f"{p['lockstep_start_timeout']:g} s at start-up)")
        return text

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
        self.sim.cmd_timeout = self.params['cmd_timeout']
        self.sim.ground_clearance = self.params['ground_clearance']
        if self._tf is not None:
            self._tf.set_localization_jump(self.params['localization_jump'])

    # ------------------------------------------------------------------ time
    def _sim_now(self) -> float:
        """Simulated time, with publish_clock: counted in ticks so it never drifts."""
        return self.params['start_time'] + self._ticks * self._tick_s

    def _wall_now(self) -> float:
        return self._steady.now().nanoseconds * 1e-9

    def _start_following_the_clock(self) -> None:
        self._last_step_s = node_now(self)
        self.create_timer(self._step_s, self._on_follow_step)     # on the node clock (ROS time)

    def _on_follow_step(self) -> None:
        now = node_now(self)
        # Integrates the time that really passed, bounded so a stalled process does not jump.
        dt = min(now - self._last_step_s, _MAX_CATCH_UP_STEPS * self._step_s)
        self._last_step_s = now
        if dt > 0.0:
            self._publish_outputs(now, self.sim.step(dt))

    def _start_clock_source(self) -> None:
        self._publish_clock()
        self._publish_outputs(self._sim_now(), [])
        rtf = self.params['real_time_factor']
        # Pacing against the wall clock, at most one step per period: a slow machine slows the
        # simulated time down rather than stretching a step.
        period = self._step_s / rtf if rtf > 0.0 else 0.0
        self.create_timer(period, self._on_clock_step, clock=self._steady)

    def _on_clock_step(self) -> None:
        events = self.sim.step(self._step_s)
        self._ticks += 1
        self._publish_clock()
        self._publish_outputs(self._sim_now(), events)

    # ------------------------------------------------------------------ lockstep
    def _start_lockstep(self) -> None:
        rtf = self.params['real_time_factor']
        pace_period = self._odom_period_s / rtf if rtf > 0.0 else 0.0
        self.lockstep = Lockstep(len(self.robots), self._wall_now(),
                                 timeout=self.params['lockstep_timeout'],
                                 start_timeout=self.params['lockstep_start_timeout'],
                                 pace_period=pace_period)
        self._publish_clock()
        # Both armed when an exchange opens: the timeout and the moment pacing allows the next.
        self._timeout_timer = self.create_timer(self.lockstep.timeout, self._on_timeout_timer,
                                                clock=self._steady, autostart=False)
        self._pace_timer = (self.create_timer(pace_period, self._on_pace_timer,
                                              clock=self._steady, autostart=False)
                            if pace_period > 0.0 else None)
        self._startup_timer = self.create_timer(_STARTUP_POLL_S, self._on_startup_poll,
                                                clock=self._steady)

    def _unconnected_robots(self) -> List[str]:
        listeners = self.params['lockstep_subscribers']
        return [robot for robot, pub, sub in zip(self.robots, self._odom_pubs, self._cmd_subs)
                if pub.get_subscription_count() < listeners or sub.get_publisher_count() == 0]

    def _on_startup_poll(self) -> None:
        """Until the first exchange closes: repeats the start time for late /clock subscribers
        (its QoS keeps no history for them), opens the first exchange when the controllers are
        connected or the start-up wait ran out, and ends the first exchange at its deadline."""
        now = self._wall_now()
        self._publish_clock()
        if self.lockstep.exchange > 0:
            for index in self.lockstep.resend_due(now):
                self._odom_pubs[index].publish(self._odom_sent[index])
            self._try_advance(now)
            return
        unconnected = self._unconnected_robots()
        if unconnected and not self.lockstep.timed_out(now):
            return
        if unconnected:
            self.get_logger().warn(
                f"lockstep: no controller connected for {', '.join(unconnected)} within "
                f"{self.lockstep.start_timeout:g} s (odom with fewer than "
                f"{self.params['lockstep_subscribers']} subscribers or cmd_vel without "
                'publisher); starting without')
        self._open_exchange(now)

    def _open_exchange(self, now: float) -> None:
        self.lockstep.open(now)
        self._publish_odometry(self._sim_now())
        self._timeout_timer.reset()
        if self._pace_timer is not None:
            self._pace_timer.reset()

    def _on_timeout_timer(self) -> None:
        self._try_advance(self._wall_now())

    def _on_pace_timer(self) -> None:
        now = self._wall_now()
        if self.lockstep.paced(now):
            self._pace_timer.cancel()    # the last answer advances from here; re-armed on open
        self._try_advance(now)

    def _try_advance(self, now: float) -> None:
        # Timers of a closed exchange may still fire once: ready() rechecks on the open one.
        if self.lockstep.ready(now):
            self._advance_exchange(now)

    def _advance_exchange(self, now: float) -> None:
        missing = [self.robots[i] for i in self.lockstep.missing]
        if missing:
            self._warn_throttled('lockstep', f"lockstep: no cmd_vel from {', '.join(missing)} "
                                 f'at t = {self._sim_now():.3f} s before the timeout; advancing '
                                 'with their last commands')
        if self._startup_timer is not None:
            self.destroy_timer(self._startup_timer)
            self._startup_timer = None
        events = self.sim.advance(self._odom_period_s, self._step_s)
        self._ticks += 1
        self._publish_clock()
        self._report(self._sim_now(), events)
        self._open_exchange(now)

    # ------------------------------------------------------------------ inputs
    def _warn_throttled(self, key: str, text: str) -> None:
        now = node_now(self)
        if now - self._last_warn_s.get(key, -math.inf) >= _WARN_PERIOD_S:
            self._last_warn_s[key] = now
            self.get_logger().warn(text)

    def _on_cmd_vel(self, index: int, msg) -> None:
        robot = self.robots[index]
        twist = msg.twist if isinstance(msg, TwistStamped) else msg
        values = (twist.linear.x, twist.linear.y, twist.angular.z)
        if not all(math.isfinite(v) for v in values + (twist.linear.z,)):
            shown = ', '.join(f'{v:.6g}' for v in values + (twist.linear.z,))
            self._warn_throttled(robot, f'{robot}: ignoring cmd_vel with non-finite values '
                                        f'(linear.x, linear.y, angular.z, linear.z) = ({shown})')
            return
        self.sim.set_commands([values], robots=[index], climb_rates=[twist.linear.z])
        if self.lockstep is not None:
            self.lockstep.answer(index)
            if self.lockstep.answered_all:
                self._try_advance(self._wall_now())

    def _on_map(self, msg: OccupancyGridMsg) -> None:
        try:
            self.sim.set_grid(msg_to_grid(msg, frame_id=self.global_frame))
        except ValueError as err:
            self.get_logger().error(f'/map: ignoring the map: {err}')
            return
        if self.sim.pedestrians is not None:     # random walkers keep off the walls
            self.sim.pedestrians.grid = self.sim.grid
        self.get_logger().info(f'/map: {msg.info.width} x {msg.info.height} cells at '
                               f'{msg.info.resolution:.4g} m for robot-map collisions')

    def _on_map_3d(self, msg: PointCloud2) -> None:
        topic = self.params['map_3d_topic']
        try:
            grid, note = cloud_to_grid(msg, self.params['map_3d_resolution'],
                                       frame_id=self.global_frame)
        except ValueError as err:
            self.get_logger().error(f'{topic}: ignoring the 3-D map: {err}')
            return
        if note is not None:
            self.get_logger().warn(f'{topic}: {note}')
        self.sim.set_grid_3d(grid)
        nz, ny, nx = grid.shape
        self.get_logger().info(f'{topic}: {nx} x {ny} x {nz} voxels at {grid.resolution:.4g} m '
                               'for drone-map collisions')

    # ------------------------------------------------------------------ outputs
    def _publish_outputs(self, now: float, events: List[CollisionEvent]) -> None:
        self._report(now, events)
        if self._odometry_due.due(now):
            self._publish_odometry(now)
        elif self.odometry_link is not None:
            self._deliver_late_odometry(now)

    def _report(self, now: float, events: List[CollisionEvent]) -> None:
        """Collision reports, and diagnostics when due or something collided."""
        for event in events:
            self._report_collision(event, now)
        diagnostics_due = self._diagnostics_due.due(now)
        if diagnostics_due or events:
            self._publish_diagnostics(now)

    def _publish_clock(self) -> None:
        self._clock_msg.clock = seconds_to_time(self._sim_now())
        self._clock_pub.publish(self._clock_msg)

    def _report_collision(self, event: CollisionEvent, now: float) -> None:
        names = [self.robots[i] for i in event.robots]
        self._collision_counts[list(event.robots)] += 1
        self._collisions_reported += 1
        # `count`: contacts reported so far, this one included; a listener that got only the
        # newest reports (beyond the history) still knows how many there were.
        record = {'time': now, 'sim_time': event.time, 'kind': event.kind,
                  'category': event.category, 'robots': names, 'position': list(event.position),
                  'speeds': list(event.speeds), 'moving': event.moving(),
                  'count': self._collisions_reported}
        if event.kind == ROBOT_PERSON:
            record['person'] = f'person{event.person}'
        self._collision_pub.publish(String(data=json.dumps(record)))
        what = (' and '.join(names) if event.kind == ROBOT_ROBOT else
                f"{names[0]} and {record['person']}" if event.kind == ROBOT_PERSON else
                f'{names[0]} and an unmapped box' if event.kind == ROBOT_OBSTACLE else
                f'{names[0]} and the map')
        where = ', '.join(f'{v:.2f}' for v in event.position)
        speeds = ', '.join(f'{v:.2f}' for v in event.speeds)
        state = 'moving' if event.moving() else 'at rest'
        self.get_logger().warn(f'collision between {what} at ({where}), robot {state} '
                               f'(speed {speeds} m/s)')

    def _publish_odometry(self, now: float) -> None:
        if self._pedestrian_pub is not None:
            self._pedestrian_pub.publish(now)
        if self._scans is not None:
            self._scans.publish_if_due(now)
        poses, twists = self.sim.odometry()
        if self._tf is not None:
            poses = self._tf.odometry_poses(now, self.sim.poses, poses)
        altitudes, climb = self.sim.altitudes.tolist(), self.sim.climb_rates.tolist()
        if self.odometry_link is not None:
            self.odometry_link.send(now, np.column_stack([poses, twists, altitudes, climb]))
            self._deliver_late_odometry(now)
            return
        stamp_ns = seconds_to_nanoseconds(now)
        pos_var = float(self.params['noise_pos_std']) ** 2
        # Serialized here and published as bytes: rclpy's conversion of an Odometry object
        # costs several times the encoding, which matters at 100+ robots x 50 Hz.
        for index, ((x, y, yaw), (vx, vy, wz)) in enumerate(zip(poses.tolist(), twists.tolist())):
            self._odom_sent[index] = self._odom_out[index].pack(
                stamp_ns, (x, y, altitudes[index]), yaw, pos_var, (vx, vy, climb[index]), wz)
            self._odom_pubs[index].publish(self._odom_sent[index])

    def _deliver_late_odometry(self, now: float) -> None:
        """Odometry the link delivers by `now`, stamped with its measurement time."""
        pos_var = float(self.params['noise_pos_std']) ** 2
        for index, stamp, row in self.odometry_link.deliver(now):
            x, y, yaw, vx, vy, wz, z, climb = (float(v) for v in row)
            self._odom_pubs[index].publish(self._odom_out[index].pack(
                seconds_to_nanoseconds(stamp), (x, y, z), yaw, pos_var, (vx, vy, climb), wz))

    def _publish_diagnostics(self, now: float) -> None:
        poses, twists, altitudes = self.sim.poses, self.sim.twists, self.sim.altitudes
        partners = {i: [] for i in range(len(self.robots))}
        for a, b in self.sim.robot_contacts:
            partners[a].append(self.robots[b])
            partners[b].append(self.robots[a])
        for robot, person in self.sim.person_contacts:
            partners[robot].append(f'person{person}')
        for robot in np.flatnonzero(self.sim.box_contacts):
            partners[robot].append('an unmapped box')
        on_map = self.sim.map_contacts
        cmd_age = self.sim.command_age
        out = DiagnosticArray()
        out.header.stamp = seconds_to_time(now)
        for i, robot in enumerate(self.robots):
            touching = partners[i] + (['map'] if on_map[i] else [])
            level, message = ((Level.ERROR, 'in collision with ' + ', '.join(touching))
                              if touching else (Level.OK, 'ok'))
            out.status.append(robot_status_msg('fleet_sim', RobotStatus(robot, level, message, {
                'x': f'{poses[i, 0]:.3f}', 'y': f'{poses[i, 1]:.3f}',
                'z': f'{altitudes[i]:.3f}', 'yaw': f'{poses[i, 2]:.3f}',
                'speed': f'{float(np.hypot(*twists[i, :2])):.3f}',
                'collisions': str(int(self._collision_counts[i])),
                'cmd_vel_age': 'never' if math.isinf(cmd_age[i]) else f'{cmd_age[i]:.3f}'})))
        self._diag_pub.publish(out)


def main(args=None) -> None:
    run_node(FleetSimNode, 'fleet_sim', args)


if __name__ == '__main__':
    main()
