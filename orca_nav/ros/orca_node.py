"""orca_node: ORCA local collision avoidance for a fleet, over ROS 2 topics.

Subscribes, for every robot in `robots`, `/<robot>/odom` (nav_msgs/Odometry, pose in
`global_frame`), and for every robot it commands `/<robot>/goal_pose` (PoseStamped) and
`/<robot>/trajectory` (MultiDOFJointTrajectory); `/map` (OccupancyGrid, transient local) becomes
ORCA polygon obstacles (`core.map_polygons`, rebuilt off the control thread when the map
changes). Each control cycle runs ONE `core.orca.compute_velocities` for all robots:

    odometry -> preferred velocities (trajectory seam | toward the goal around the map's
                obstacles (core.geodesic_guidance) + deadlock breaker)
             -> ORCA (radius enlarged by the tracking-error bound for diff-drive/car robots)
             -> body twists per kinematic model -> acceleration limits -> /<robot>/cmd_vel

A cycle starts as soon as every robot with live odometry has sent a new message since the last
cycle (`cycle_trigger: odometry`, lowest odom->cmd_vel latency) and at the latest on the
`control_rate` timer. A robot whose odometry is older than `odom_timeout` gets a zero cmd_vel and
a /diagnostics warning; the others treat it as a static agent at its last pose.

Modes: `centralized` commands every robot; `per_robot` commands only `robot_name` and sees the
other robots as reciprocal agents through their odometry, so a fleet can spread over machines
(each per-robot node pays the ORCA core's fixed cost per cycle, so many of them in ONE Python
process saturate it).
Also publishes `/orca_nav/markers` (robot discs, velocity arrows, goals) and `/diagnostics`.
"""
from __future__ import annotations

import math
import threading
import time
from typing import Dict, List

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, PoseStamped, Twist, TwistStamped
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from scipy.spatial import cKDTree
from trajectory_msgs.msg import MultiDOFJointTrajectory
from visualization_msgs.msg import Marker, MarkerArray

from orca_nav.core.fleet.kinematics import (CAR, DIFF_DRIVE, RobotLimits, limit_twist,
                                      tracking_error_bound)
from orca_nav.core.fleet.guidance import GeodesicGuidance
from orca_nav.core.avoidance.map_polygons import grid_to_polygons
from orca_nav.core.avoidance import OrcaParams, prepare_obstacles, solve
from orca_nav.core.fleet.deadlock import DeadlockBreaker, DeadlockParams
from orca_nav.core.fleet.preferred_velocity import goal_velocities
from orca_nav.ros.convert import latched_qos, msg_to_grid, odom_state_from_cdr, robot_topic
from orca_nav.ros.node_main import run_node
from orca_nav.ros.params import (ParamSpec, declare_parameters, declare_robot_parameters,
                                 on_parameters_changed)
from orca_nav.ros.tracking_seam import TrackingSeam

MODES = ('centralized', 'per_robot')
TRIGGERS = ('odometry', 'timer')

NODE_SPECS = [
    ParamSpec('robots', ['robot0'], 'Names of all robots of the fleet (topic namespaces); '
              'the list order is the deadlock-breaking priority', read_only=True),
    ParamSpec('mode', 'centralized', 'centralized: command every robot; per_robot: command only '
              'robot_name, the others are reciprocal agents', choices=MODES, read_only=True),
    ParamSpec('robot_name', '', 'per_robot mode: the robot this node commands', read_only=True),
    ParamSpec('global_frame', 'map', 'Frame of odometry poses, goals and the map', read_only=True),
    ParamSpec('neighbor_dist', 5.0, 'RVO2 neighborDist: max distance to agents considered (m)',
              min=0.0, max=1000.0),
    ParamSpec('max_neighbors', 10, 'RVO2 maxNeighbors: max number of agents considered',
              min=0, max=1000),
    ParamSpec('time_horizon', 3.0, 'RVO2 timeHorizon: safe time w.r.t. other agents (s)',
              min=0.01, max=1000.0),
    ParamSpec('time_horizon_obst', 2.0, 'RVO2 timeHorizonObst: safe time w.r.t. obstacles (s)',
              min=0.01, max=1000.0),
    ParamSpec('control_rate', 20.0, 'Control cycles per second (Hz)', min=0.5, max=1000.0),
    ParamSpec('cycle_trigger', 'odometry', 'odometry: also start a cycle as soon as every live '
              'robot has new odometry; timer: only on the control_rate timer', choices=TRIGGERS),
    ParamSpec('odom_timeout', 0.5, 'Odometry older than this stops the robot (s)',
              min=0.01, max=3600.0),
    ParamSpec('safety_margin', 0.05, 'Added to every robot radius ORCA uses (m): absorbs odometry '
              'delay, acceleration limits and the discrete-time slack of ORCA', min=0.0, max=10.0),
    ParamSpec('command_latency', 0.0, 'Expected cmd_vel latency, added to the tracking-error '
              'bound of diff-drive/car robots (s)', min=0.0, max=10.0),
    ParamSpec('cmd_vel_stamped', False, 'Publish geometry_msgs/TwistStamped instead of Twist',
              read_only=True),
    ParamSpec('trajectories_only', False, 'Robots hold still until their first /<robot>/trajectory '
              'arrives (a planner owns every goal); otherwise they head straight for their goal',
              read_only=True),
    ParamSpec('require_map', False, 'Robots hold still until the first /map has become '
              'obstacle polygons (set when the fleet has a map, so nobody drives before the '
              'walls are known)',
              read_only=True),
    ParamSpec('goal_tolerance', 0.1, 'A robot within this distance of its goal has arrived (m)',
              min=0.0, max=100.0),
    ParamSpec('map_inflation', 0.0, 'Margin added around occupied map cells before they become '
              'ORCA polygons (m)', min=0.0, max=100.0),
    ParamSpec('publish_orca_lines', False, 'Add each robot\'s ORCA half-plane lines to '
              '/orca_nav/markers, drawn in velocity space around the robot like its velocity '
              'arrow (the arrow\'s tip lies left of every line when feasible)'),
    ParamSpec('marker_rate', 5.0, '/orca_nav/markers messages per second (Hz); 0 disables',
              min=0.0, max=100.0),
    ParamSpec('diagnostics_rate', 1.0, '/diagnostics messages per second (Hz)', min=0.1,
              max=100.0, read_only=True),
]

_DEFAULT_DEADLOCK = DeadlockParams()
DEADLOCK_SPECS = [
    ParamSpec('enabled', True, 'Break symmetric stalls (progress watch, yielding, right-hand '
              'detours); see orca_nav.core.fleet.preferred_velocity'),
    ParamSpec('stall_time', _DEFAULT_DEADLOCK.stall_time, 'Window over which progress is judged (s)',
              min=0.1, max=600.0),
    ParamSpec('min_progress', _DEFAULT_DEADLOCK.min_progress, 'Required fraction of the progress '
              'max_speed allows within stall_time', min=0.01, max=0.99),
    ParamSpec('recovery_time', _DEFAULT_DEADLOCK.recovery_time, 'How long a stalled robot yields '
              'or detours (s)', min=0.1, max=600.0),
    ParamSpec('yield_factor', _DEFAULT_DEADLOCK.yield_factor, 'A stalled robot yields to a '
              'higher-priority robot closer than this many times their summed radii', min=1.0,
              max=100.0),
    ParamSpec('detour_angle', _DEFAULT_DEADLOCK.detour_angle, 'Clockwise rotation of a detouring '
              "robot's preferred velocity (rad)", min=0.01, max=1.57),
    ParamSpec('detour_spread', _DEFAULT_DEADLOCK.detour_spread, 'Range of the per-robot offset '
              'subtracted from detour_angle (rad)', min=0.0, max=1.57),
]

_WARN_PERIOD_S = 2.0
# With the odometry trigger the control timer only covers late odometry: it is restarted by every
# cycle and fires this many control periods after the last one.
_LATE_ODOMETRY_PERIODS = 1.25
_CYCLE_HISTORY = 200   # cycle statistics cover the last 200 cycles (10 s at 20 Hz)


class OrcaNode(Node):
    """The fleet's ORCA controller. kwargs go to rclpy.node.Node (parameter_overrides, ...)."""

    def __init__(self, **kwargs):
        kwargs.setdefault('node_name', 'orca_node')
        super().__init__(**kwargs)
        cfg = declare_parameters(self, NODE_SPECS)
        self.robots: List[str] = list(cfg['robots'])
        if not self.robots:
            raise ValueError('robots: must name at least one robot')
        if len(set(self.robots)) != len(self.robots):
            raise ValueError(f'robots: names must be unique, got {self.robots}')
        per_robot = declare_robot_parameters(self, self.robots)
        deadlock = declare_parameters(self, DEADLOCK_SPECS, prefix='deadlock.')
        self.global_frame = cfg['global_frame']
        self.commanded = self._commanded_robots(cfg)
        self.index = {name: i for i, name in enumerate(self.robots)}
        n = len(self.robots)

        self._cfg = dict(cfg)
        self._robot_cfg = per_robot
        self._deadlock_cfg = dict(deadlock)
        self._is_commanded = np.array([r in self.commanded for r in self.robots])
        self._rebuild_robot_arrays()

        # Latest odometry, one row per robot (NaN until the first message).
        self._position = np.full((n, 2), np.nan)
        self._velocity = np.zeros((n, 2))
        self._yaw = np.zeros(n)
        self._odom_time = np.full(n, -np.inf)   # monotonic receipt time
        self._fresh = np.zeros(n, dtype=bool)    # new odometry since the last cycle
        self._goal = np.full((n, 2), np.nan)
        for robot, fields in per_robot.items():
            if len(fields['goal']) == 3:
                self._goal[self.index[robot]] = fields['goal'][:2]
        self._twist = np.zeros((n, 3))           # last published body twist
        self._orca_velocity = np.zeros((n, 2))
        self._arrived = np.zeros(n, dtype=bool)
        self._was_stale = np.zeros(n, dtype=bool)
        self._orca_lines = None   # (rows, OrcaLines) of the last cycle, for the markers
        # Per robot, since the last diagnostics: cycles it was commanded in, and those in which
        # its ORCA constraints were infeasible (linearProgram3 picked the least-bad velocity).
        self._orca_cycles = np.zeros(n, dtype=np.int64)
        self._infeasible_cycles = np.zeros(n, dtype=np.int64)
        self._breaker = DeadlockBreaker(n, self._deadlock_params())
        self._seam = self.make_trajectory_seam()
        self._last_warn: Dict[tuple, float] = {}
        self._last_cycle = -math.inf
        self._cycle_ms: List[float] = []       # wall-clock duration of recent cycles
        self._cycle_cpu_ms: List[float] = []   # CPU time of this thread in them (load-independent)
        self._map_lock = threading.Lock()
        self._grid = None
        self._obstacles = prepare_obstacles([])
        self._guidance = None   # GeodesicGuidance of the current map (None: straight to goal)
        self._map_version = 0
        self._map_changed = False

        twist_type = TwistStamped if cfg['cmd_vel_stamped'] else Twist
        # (row, publisher, message) per commanded robot; messages are reused every cycle.
        self._cmd_out = []
        for robot in self.commanded:
            msg = twist_type()
            if cfg['cmd_vel_stamped']:
                msg.header.frame_id = f'{robot}/base_link'
            self._cmd_out.append((self.index[robot], self.create_publisher(
                twist_type, robot_topic(robot, 'cmd_vel'), 10), msg))
        self._marker_pub = self.create_publisher(MarkerArray, '/orca_nav/markers', 10)
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        for robot in self.robots:
            i = self.index[robot]
            # Best effort (REP-2003 sensor data): only the newest odometry matters, a lost sample
            # must not hold back later ones while reliable delivery repairs it, and it matches
            # both reliable and best-effort odometry publishers. Raw: read without rclpy's full
            # deserialization (convert.odom_state_from_cdr).
            self.create_subscription(Odometry, robot_topic(robot, 'odom'),
                                     lambda raw, i=i: self._on_odom(i, raw),
                                     qos_profile_sensor_data, raw=True)
            # Every robot's goal: the deadlock breaker's priorities need to know who travels.
            self.create_subscription(PoseStamped, robot_topic(robot, 'goal_pose'),
                                     lambda msg, i=i: self._on_goal(i, msg), 10)
        for robot in self.commanded:
            i = self.index[robot]
            self.create_subscription(MultiDOFJointTrajectory, robot_topic(robot, 'trajectory'),
                                     lambda msg, i=i: self._on_trajectory(i, msg), 10)
        self.create_subscription(OccupancyGridMsg, '/map', self._on_map, latched_qos())
        self._timer = None
        self._make_control_timer()
        self._marker_timer = None
        self._set_marker_timer(cfg['marker_rate'])
        self.create_timer(1.0 / cfg['diagnostics_rate'], self._publish_diagnostics)
        on_parameters_changed(self, self._on_parameters)
        self.get_logger().info(
            f'orca_node: {len(self.commanded)} of {n} robots commanded ({cfg["mode"]}), '
            f'{cfg["control_rate"]:g} Hz, trigger {cfg["cycle_trigger"]}')

    # ------------------------------------------------------------------ configuration
    def make_trajectory_seam(self) -> TrackingSeam:
        """The seam between trajectories and ORCA: stores each robot's trajectory, gives the
        preferred velocities of the robots that follow one and the body twists that execute
        ORCA's velocities (`orca_nav.ros.tracking_seam`). Override to plug in another tracker."""
        return TrackingSeam(self.robots, [self._robot_cfg[r]['kinematics'] for r in self.robots],
                            trajectories_only=self._cfg['trajectories_only'])

    def _commanded_robots(self, cfg) -> List[str]:
        if cfg['mode'] == 'per_robot':
            if not cfg['robot_name']:
                raise ValueError('robot_name: required in per_robot mode (which robot to command)')
            chosen, field = [cfg['robot_name']], 'robot_name'
        else:
            chosen, field = list(self.robots), 'robots'
        unknown = [r for r in chosen if r not in self.robots]
        if unknown:
            raise ValueError(f'{field}: {unknown[0]!r} is not in robots {self.robots}')
        return chosen

    def _deadlock_params(self) -> DeadlockParams:
        d = self._deadlock_cfg
        return DeadlockParams(stall_time=d['stall_time'], min_progress=d['min_progress'],
                              recovery_time=d['recovery_time'], yield_factor=d['yield_factor'],
                              detour_angle=d['detour_angle'],
                              detour_spread=min(d['detour_spread'], d['detour_angle']))

    def _rebuild_robot_arrays(self) -> None:
        """Per-robot arrays and ORCA parameters from the current parameter values."""
        fields = [self._robot_cfg[r] for r in self.robots]
        self._limits = RobotLimits.create(
            [f['kinematics'] for f in fields], [f['max_speed'] for f in fields],
            [f['max_accel'] for f in fields], [f['max_yaw_rate'] for f in fields],
            [f['min_turning_radius'] for f in fields])
        radius = np.array([f['radius'] for f in fields])
        # NH-ORCA: a diff-drive/car robot tracks the ORCA velocity only up to a bounded error,
        # so ORCA keeps it apart by its radius plus that bound (kinematics.tracking_error_bound).
        non_holonomic = (self._limits.model == DIFF_DRIVE) | (self._limits.model == CAR)
        bound = tracking_error_bound(self._limits.max_speed, 1.0 / self._cfg['control_rate'],
                                     self._cfg['command_latency'])
        self._radius = radius
        self._orca_radius = radius + self._cfg['safety_margin'] + np.where(non_holonomic, bound, 0.0)

    def _orca_params(self, rows: np.ndarray, time_step: float) -> OrcaParams:
        c = self._cfg
        return OrcaParams(time_step=time_step, neighbor_dist=c['neighbor_dist'],
                          max_neighbors=c['max_neighbors'], time_horizon=c['time_horizon'],
                          time_horizon_obst=c['time_horizon_obst'],
                          radius=self._orca_radius[rows], max_speed=self._limits.max_speed[rows])

    def _on_parameters(self, changed: Dict) -> None:
        robots_changed = False
        for name, value in changed.items():
            if name.startswith('deadlock.'):
                self._deadlock_cfg[name[len('deadlock.'):]] = value
                self._breaker = DeadlockBreaker(len(self.robots), self._deadlock_params())
            elif '.' in name:
                robot, field = name.split('.', 1)
                if robot in self._robot_cfg:
                    self._robot_cfg[robot][field] = value
                    robots_changed = True
                    if field == 'goal':
                        self._set_goal(self.index[robot], value[:2] if len(value) == 3 else None,
                                       'parameter')
                    elif field == 'kinematics':  # the tracker is built per model
                        self._seam = self.make_trajectory_seam()
                        self.get_logger().warning(f'{robot}: kinematics changed to {value!r}; '
                                                  'current trajectories dropped')
            else:
                self._cfg[name] = value
                if name in ('control_rate', 'cycle_trigger'):
                    self._make_control_timer()
                    robots_changed = robots_changed or name == 'control_rate'
                elif name in ('command_latency', 'safety_margin'):
                    robots_changed = True
                elif name == 'marker_rate':
                    self._set_marker_timer(value)
                elif name == 'map_inflation' and self._grid is not None:
                    self._rebuild_obstacles(self._grid)
        if robots_changed:
            self._rebuild_robot_arrays()

    def _make_control_timer(self) -> None:
        """(Re)creates the control timer. A free-running timer under the odometry trigger would
        lock onto the odometry's phase: firing just before each burst lands, it would run the
        cycle on old data and make the burst wait most of a period for the next tick."""
        if self._timer is not None:
            self._timer.cancel()
            self.destroy_timer(self._timer)
        period = 1.0 / self._cfg['control_rate']
        if self._cfg['cycle_trigger'] == 'odometry':
            period *= _LATE_ODOMETRY_PERIODS
        self._timer = self.create_timer(period, self._on_timer)

    def _set_marker_timer(self, rate: float) -> None:
        if self._marker_timer is not None:
            self._marker_timer.cancel()
            self.destroy_timer(self._marker_timer)
            self._marker_timer = None
        if rate > 0.0:
            self._marker_timer = self.create_timer(1.0 / rate, self._publish_markers)

    def _warn(self, key: tuple, text: str) -> None:
        """A warning at most every few seconds per (robot, kind)."""
        now = time.monotonic()
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
        if state.frame_id != self.global_frame:
            self._warn((robot, 'odom_frame'),
                       f'{robot}: rejecting odometry: header.frame_id {state.frame_id!r} is not '
                       f'the global frame {self.global_frame!r}')
            return
        self._position[i] = state.position[:2]
        self._velocity[i] = state.velocity[:2]
        self._yaw[i] = state.yaw
        self._odom_time[i] = time.monotonic()
        self._fresh[i] = True
        if self._cfg['cycle_trigger'] == 'odometry' and self._fresh[self._live()].all() and \
                self._due():
            self._cycle()

    def _live(self) -> np.ndarray:
        """(N,) bool: robots whose odometry is within odom_timeout."""
        return time.monotonic() - self._odom_time <= self._cfg['odom_timeout']

    def _on_goal(self, i: int, msg: PoseStamped) -> None:
        robot = self.robots[i]
        if msg.header.frame_id != self.global_frame:
            self._goal_warning(i, f'{robot}: rejecting goal: header.frame_id '
                                  f'{msg.header.frame_id!r} is not the global frame '
                                  f'{self.global_frame!r}')
            return
        p = msg.pose.position
        for field, value in (('pose.position.x', p.x), ('pose.position.y', p.y)):
            if not math.isfinite(value):
                self._goal_warning(i, f'{robot}: rejecting goal: {field} is {value}')
                return
        self._set_goal(i, (p.x, p.y), 'goal_pose')

    def _goal_warning(self, i: int, text: str) -> None:
        """Goals of robots another node commands are only tracked, their problems not reported."""
        if self._is_commanded[i]:
            self.get_logger().warning(text)

    def _set_goal(self, i: int, xy, source: str) -> bool:
        """Sets (or clears, xy None) robot i's goal unless it lies inside an obstacle."""
        robot = self.robots[i]
        if xy is not None and self._grid is not None:
            clearance = float(self._grid.clearance_at(np.asarray([xy], dtype=float))[0])
            if clearance <= self._radius[i]:
                self._goal_warning(i, 
                    f'{robot}: refusing goal ({xy[0]:.3f}, {xy[1]:.3f}) from {source}: inside an '
                    f'obstacle (clearance {clearance:.3f} m <= radius {self._radius[i]:.3f} m)')
                return False
        self._goal[i] = xy if xy is not None else (np.nan, np.nan)
        self._arrived[i] = False
        self._breaker.reset(i)
        return True

    def _on_trajectory(self, i: int, msg: MultiDOFJointTrajectory) -> None:
        if msg.points and msg.header.frame_id != self.global_frame:
            self._warn((self.robots[i], 'trajectory_frame'),
                       f'{self.robots[i]}: rejecting trajectory: header.frame_id '
                       f'{msg.header.frame_id!r} is not the global frame {self.global_frame!r}')
            return
        self._seam.set_trajectory(i, msg, self.get_clock().now().nanoseconds * 1e-9)

    def _on_map(self, msg: OccupancyGridMsg) -> None:
        try:
            grid = msg_to_grid(msg, frame_id=self.global_frame)
        except ValueError as err:
            self.get_logger().warning(f'rejecting /map: {err}')
            return
        self._rebuild_obstacles(grid)

    def _rebuild_obstacles(self, grid) -> None:
        """Polygons on a worker thread: a large map must not stall the control cycles."""
        with self._map_lock:
            self._map_version += 1
            version = self._map_version
        inflation = self._cfg['map_inflation']

        def build():
            started = time.perf_counter()
            polygons = grid_to_polygons(grid, inflation=inflation)
            obstacles = prepare_obstacles(polygons)
            with self._map_lock:
                if version != self._map_version:
                    return      # a newer map arrived meanwhile
                # The old map's guidance would route through the new map's obstacles.
                self._grid, self._obstacles, self._guidance = grid, obstacles, None
                self._map_changed = True   # goals are re-checked by the next cycle
            self.get_logger().info(
                f'map {grid.shape[1]}x{grid.shape[0]} -> {len(polygons)} obstacle polygons '
                f'({sum(len(p) for p in polygons)} vertices) in '
                f'{1e3 * (time.perf_counter() - started):.0f} ms')
            if self._cfg['trajectories_only']:
                return      # every robot follows a planner's trajectory: guidance is never used
            # Then the goal guidance (obstacles first: they keep robots safe meanwhile). The
            # distance fields of the goals known now are built here, off the control thread;
            # later goals get theirs on first use.
            started = time.perf_counter()
            guidance = GeodesicGuidance(grid.inflated(inflation) if inflation > 0.0 else grid)
            goals = self._goal.copy()
            known = np.isfinite(goals[:, 0]) & self._is_commanded
            guidance.prepare(goals[known], self._orca_radius[known])
            with self._map_lock:
                if version != self._map_version:
                    return
                self._guidance = guidance
            self.get_logger().info(
                f'goal guidance: distance fields for the goals of {int(known.sum())} robots in '
                f'{1e3 * (time.perf_counter() - started):.0f} ms')

        threading.Thread(target=build, name='orca_map_polygons', daemon=True).start()

    def _recheck_goals(self) -> None:
        for i in np.flatnonzero(~np.isnan(self._goal[:, 0])):
            if not self._set_goal(i, tuple(self._goal[i]), 'the new map'):
                self._goal[i] = np.nan

    # ------------------------------------------------------------------ control cycle
    def _due(self) -> bool:
        """Cycles are at least 0.9 control periods apart, whatever triggers them."""
        return time.monotonic() - self._last_cycle >= 0.9 / self._cfg['control_rate']

    def _on_timer(self) -> None:
        if self._due():
            self._cycle()

    def _cycle(self) -> None:
        started, started_cpu = time.perf_counter(), time.thread_time()
        now = time.monotonic()
        period = 1.0 / self._cfg['control_rate']
        dt = min(max(now - self._last_cycle, 1e-3), 2.0 * period)
        self._last_cycle = now
        if self._cfg['cycle_trigger'] == 'odometry':
            self._timer.reset()     # the timer waits for late odometry from now on
        self._fresh[:] = False
        if self._map_changed:
            self._map_changed = False
            self._recheck_goals()
        live = now - self._odom_time <= self._cfg['odom_timeout']
        known = np.isfinite(self._position[:, 0])
        commanded = self._is_commanded
        twist = np.zeros((len(self.robots), 3))
        run = commanded & live
        if self._cfg['require_map'] and self._grid is None:
            if run.any():
                self._warn(('fleet', 'no_map'), 'waiting for /map (require_map): holding every '
                           'robot still')
            run = np.zeros_like(run)
        if run.any():
            agents = self._agents(known, run)
            twist[agents] = self._command(agents, live[agents], run[agents], now, period, dt)
        twist[~run] = 0.0
        self._twist = np.where(run[:, None], twist, 0.0)
        self._publish_commands(twist)
        newly_stale = commanded & known & ~live & ~self._was_stale
        self._was_stale = commanded & known & ~live
        if newly_stale.any():
            for i in np.flatnonzero(newly_stale):
                self._warn((self.robots[i], 'stale'),
                           f'{self.robots[i]}: odometry older than '
                           f'{self._cfg["odom_timeout"]:g} s, stopping it')
            self._publish_diagnostics()
        if run.any():   # idle cycles (nobody to command) would flatter the statistics
            self._cycle_ms.append(1e3 * (time.perf_counter() - started))
            self._cycle_cpu_ms.append(1e3 * (time.thread_time() - started_cpu))
        for history in (self._cycle_ms, self._cycle_cpu_ms):
            del history[:max(0, len(history) - _CYCLE_HISTORY)]

    def _agents(self, known: np.ndarray, run: np.ndarray) -> np.ndarray:
        """Indices of the agents ORCA needs: the robots to command and every known robot within
        neighbor_dist of one of them (their output is discarded)."""
        candidates = np.flatnonzero(known)
        if run[candidates].all() or len(candidates) == 0:
            return candidates
        commanded = np.flatnonzero(run)
        nearest, _ = cKDTree(self._position[commanded]).query(
            self._position[candidates], k=1, distance_upper_bound=self._cfg['neighbor_dist'])
        # inf: no commanded robot within range (commanded robots are kept even at range 0).
        return np.union1d(commanded, candidates[np.isfinite(nearest)])

    def _command(self, rows: np.ndarray, live: np.ndarray, run: np.ndarray, now: float,
                 period: float, dt: float) -> np.ndarray:
        """Body twists (len(rows), 3) for the agents `rows`; `run` marks those commanded.

        Agents not commanded here keep their measured velocity as preferred velocity (ORCA's
        answer for them is not used); stale ones are static agents at their last pose.
        """
        positions = self._position[rows]
        velocities = np.where(live[:, None], self._velocity[rows], 0.0)
        limits = _subset_limits(self._limits, rows)
        pref = self._preferred(rows, live, positions, limits, now, period)
        pref = np.where(run[:, None], pref, velocities)
        with self._map_lock:
            obstacles = self._obstacles
        solution = solve(positions, velocities, pref, self._orca_params(rows, period), obstacles)
        new_v = solution.velocities
        self._orca_velocity[rows] = new_v
        self._orca_cycles[rows] += run
        self._infeasible_cycles[rows] += run & solution.infeasible
        self._orca_lines = (rows, solution.lines) if self._cfg['publish_orca_lines'] else None
        command = self._seam.body_twists(new_v, self._yaw[rows], limits, rows)
        twist = limit_twist(command, self._twist[rows], limits, dt)
        return np.where(run[:, None], twist, 0.0)

    def _preferred(self, rows, live, positions, limits, now, period) -> np.ndarray:
        """Trajectory tracking where a trajectory is active, else toward the goal (around the
        map's obstacles once a map is known) with the deadlock breaker on top."""
        goals = self._goal[rows]
        tracked_pref, tracked = self._seam.preferred_velocities(now, positions, self._yaw[rows],
                                                                limits, rows)
        with self._map_lock:
            guidance = self._guidance
        route = np.hypot(*(goals - positions).T)
        headings = None
        if guidance is not None:
            headings = np.zeros_like(positions)
            guided = self._is_commanded[rows] & ~tracked & np.isfinite(goals[:, 0])
            headings[guided], route[guided] = guidance.directions(
                positions[guided], goals[guided], self._orca_radius[rows[guided]])
            # Robots not guided here keep the straight heading.
            straight = goals[~guided] - positions[~guided]
            norm = np.hypot(*straight.T)[:, None]
            headings[~guided] = np.divide(straight, norm, out=np.zeros_like(straight),
                                          where=norm > 0.0)
        pref, arrived = goal_velocities(positions, goals, limits.max_speed, limits.max_accel,
                                        self._cfg['goal_tolerance'], time_step=period,
                                        headings=headings,
                                        route_lengths=None if headings is None else route)
        self._arrived[rows] = arrived
        if self._deadlock_cfg['enabled']:
            n = len(self.robots)
            all_pos = np.where(np.isfinite(self._position), self._position, 0.0)
            all_pref = np.zeros((n, 2))
            all_pref[rows] = pref
            # Robots outside this cycle, stale, tracked or arrived neither stall nor outrank.
            exempt = np.ones(n, dtype=bool)
            exempt[rows] = arrived | tracked | ~live
            all_route = np.zeros(n)
            all_route[rows] = route
            out = self._breaker.update(now, all_pos, all_pref, exempt, np.nan_to_num(self._goal),
                                       self._limits.max_speed, self._radius, distances=all_route)
            pref = out[rows]
        return np.where(tracked[:, None], tracked_pref, pref)

    def _publish_commands(self, twist: np.ndarray) -> None:
        stamped = self._cfg['cmd_vel_stamped']
        stamp = self.get_clock().now().to_msg() if stamped else None
        values = twist.tolist()
        for row, pub, msg in self._cmd_out:
            vx, vy, wz = values[row]
            if stamped:
                msg.header.stamp = stamp
                body = msg.twist
            else:
                body = msg
            body.linear.x, body.linear.y, body.angular.z = vx, vy, wz
            pub.publish(msg)

    # ------------------------------------------------------------------ outputs
    def cycle_times_ms(self):
        """(wall-clock, CPU) durations of the last control cycles (ms), oldest first."""
        return np.array(self._cycle_ms), np.array(self._cycle_cpu_ms)

    def _publish_markers(self) -> None:
        stamp = self.get_clock().now().to_msg()
        out = MarkerArray()
        for robot in self.commanded:
            i = self.index[robot]
            if not np.isfinite(self._position[i, 0]):
                continue
            x, y = (float(v) for v in self._position[i])
            disc = _marker(robot, 0, Marker.CYLINDER, self.global_frame, stamp)
            disc.pose.position.x, disc.pose.position.y = x, y
            disc.scale.x = disc.scale.y = 2.0 * float(self._radius[i])
            disc.scale.z = 0.1
            healthy = not self._was_stale[i]
            disc.color.r, disc.color.g, disc.color.b, disc.color.a = \
                (0.2, 0.5, 1.0, 0.6) if healthy else (1.0, 0.3, 0.1, 0.8)
            arrow = _marker(robot, 1, Marker.ARROW, self.global_frame, stamp)
            vx, vy = (float(v) for v in self._orca_velocity[i])
            arrow.points = [Point(x=x, y=y, z=0.1), Point(x=x + vx, y=y + vy, z=0.1)]
            arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.05, 0.1, 0.1
            arrow.color.g, arrow.color.a = 0.9, 1.0
            goal = _marker(robot, 2, Marker.SPHERE, self.global_frame, stamp)
            if np.isfinite(self._goal[i, 0]):
                goal.pose.position.x, goal.pose.position.y = (float(v) for v in self._goal[i])
                goal.scale.x = goal.scale.y = goal.scale.z = 0.2
                goal.color.r, goal.color.g, goal.color.a = 1.0, 0.8, 1.0
            else:
                goal.action = Marker.DELETE
            out.markers.extend([disc, arrow, goal])
        if self._orca_lines is not None:
            out.markers.extend(self._orca_line_markers(stamp))
        self._marker_pub.publish(out)

    def _orca_line_markers(self, stamp) -> List[Marker]:
        rows, lines = self._orca_lines
        markers = []
        for column, i in enumerate(rows):
            if not self._is_commanded[i]:
                continue
            ends = lines.segments(column, half_length=float(self._limits.max_speed[i]))
            ends += self._position[i]
            marker = _marker(self.robots[i], 3, Marker.LINE_LIST, self.global_frame, stamp)
            marker.points = [Point(x=float(x), y=float(y), z=0.1) for x, y in ends.reshape(-1, 2)]
            marker.scale.x = 0.02
            marker.color.r, marker.color.g, marker.color.b, marker.color.a = 1.0, 0.5, 0.0, 0.9
            marker.lifetime.sec = 1     # gone soon after publish_orca_lines is switched off
            markers.append(marker)
        return markers

    def _publish_diagnostics(self) -> None:
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        now = time.monotonic()
        detouring = self._breaker.detouring(now)
        yielding = self._breaker.yielding(now)
        for robot in self.commanded:
            i = self.index[robot]
            age = now - self._odom_time[i]
            status = DiagnosticStatus(name=f'orca_node: {robot}', hardware_id=robot)
            if not math.isfinite(age):
                status.level, status.message = DiagnosticStatus.WARN, 'no odometry yet'
            elif age > self._cfg['odom_timeout']:
                status.level = DiagnosticStatus.WARN
                status.message = f'stale odometry ({age:.2f} s old): stopped'
            elif self._cfg['require_map'] and self._grid is None:
                status.level = DiagnosticStatus.WARN
                status.message = 'waiting for /map: holding still'
            elif not np.isfinite(self._goal[i, 0]):
                status.level, status.message = DiagnosticStatus.OK, 'ok: no goal'
            elif self._arrived[i]:
                status.level, status.message = DiagnosticStatus.OK, 'goal reached'
            elif 2 * self._infeasible_cycles[i] > self._orca_cycles[i]:
                status.level = DiagnosticStatus.WARN
                status.message = (f'ORCA infeasible in {self._infeasible_cycles[i]} of '
                                  f'{self._orca_cycles[i]} cycles: jammed, moving at the '
                                  'least-penetrating velocity')
            else:
                status.level = DiagnosticStatus.OK
                status.message = 'ok: yielding (deadlock breaker)' if yielding[i] else \
                    'ok: detouring (deadlock breaker)' if detouring[i] else 'ok'
            speed = np.hypot(*self._orca_velocity[i])
            status.values = [KeyValue(key='odom_age_s', value=f'{age:.3f}'),
                             KeyValue(key='speed', value=f'{speed:.3f}'),
                             KeyValue(key='orca_cycles', value=str(self._orca_cycles[i])),
                             KeyValue(key='orca_infeasible_cycles',
                                      value=str(self._infeasible_cycles[i]))]
            msg.status.append(status)
        self._orca_cycles[:] = 0
        self._infeasible_cycles[:] = 0
        wall, cpu = self.cycle_times_ms()
        fleet = DiagnosticStatus(name='orca_node: control cycle', level=DiagnosticStatus.OK,
                                 message=f'last {len(wall)} cycles')
        if len(wall):
            fleet.values = [KeyValue(key=f'cycle{kind}_p{q}_ms', value=f'{np.percentile(t, q):.3f}')
                            for kind, t in (('', wall), ('_cpu', cpu)) for q in (50, 99)]
            fleet.values.append(KeyValue(key='cycles', value=str(len(wall))))
        msg.status.append(fleet)
        self._diag_pub.publish(msg)


def _marker(ns: str, marker_id: int, kind: int, frame: str, stamp) -> Marker:
    m = Marker()
    m.header.frame_id, m.header.stamp = frame, stamp
    m.ns, m.id, m.type, m.action = ns, marker_id, kind, Marker.ADD
    m.pose.orientation.w = 1.0
    return m


def _subset_limits(limits: RobotLimits, rows: np.ndarray) -> RobotLimits:
    return RobotLimits(model=limits.model[rows], max_speed=limits.max_speed[rows],
                       max_accel=limits.max_accel[rows], max_yaw_rate=limits.max_yaw_rate[rows],
                       min_turning_radius=limits.min_turning_radius[rows])


def main(args=None):
    run_node(OrcaNode, 'orca_node', args)


if __name__ == '__main__':
    main()
