"""planner_node: goals -> global plans -> /<robot>/plan and /<robot>/trajectory for a fleet.

Per robot (parameter `robots`, per-robot fields `<robot>.<field>` of TEAM.md) it listens to
`/<robot>/odom` and `/<robot>/goal_pose`, and to the latched `/map`. The planner follows the
robot's kinematics: holonomic and quadrotor robots get a kinodynamic A* trajectory (double
integrator, in the plane of the 2-D map), diff-drive robots a hybrid A* path that may turn in
place, car-like robots a hybrid A* path with the car's turning radius (reversing as
`allow_reverse` says); hybrid paths are time-parametrised by `core.path_timing`.

Planning runs on a thread pool, one job per robot at a time; a newer goal (or replan) makes the
running job's result stale, so it is dropped and the newest request is planned next. The
executor thread only converts messages and checks trajectories, so the node stays responsive.

Replanning: when a new map blocks the rest of a robot's trajectory, or when the robot is
farther than `replan_deviation` from it. Any failure (no map, no free cell, no odometry, goal in
an obstacle, no path, timeout) publishes a status with the reason on /diagnostics and in the
log, and an empty trajectory (and Path) so the robot stops tracking and holds still.
"""
from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Dict, Optional, Tuple

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg
from nav_msgs.msg import Odometry, Path
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from trajectory_msgs.msg import MultiDOFJointTrajectory

from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.planning.path_timing import reference_from_samples, time_path
from orca_nav.core.planning.result import PlanResult, PlanStats, PlanStatus
from orca_nav.core.planning.reference import Reference
from orca_nav.ros.convert import (latched_qos, msg_to_grid, odom_state_from_cdr,
                                  quaternion_to_yaw, robot_topic)
from orca_nav.ros.node_main import run_node
from orca_nav.ros.params import (ROBOT_SPECS, ParamSpec, declare_parameters,
                                 declare_robot_parameters, on_parameters_changed)
from orca_nav.ros.trajectory_msgs import (empty_trajectory, reference_to_path,
                                          reference_to_trajectory)

OK, WARN, ERROR = DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR

NODE_SPECS = [
    ParamSpec('robots', ['robot0'], 'Robots this node plans for (topics /<robot>/...)',
              read_only=True),
    ParamSpec('global_frame', 'map', 'Frame of the map, odometry, goals and plans', read_only=True),
    ParamSpec('plan_time_budget', 1.0, 'Wall-time budget of one planning query (s)',
              min=0.01, max=120.0),
    ParamSpec('replan_deviation', 1.0, 'Replan when a robot is farther than this from its '
              'trajectory (m)', min=0.05, max=100.0),
    ParamSpec('replan_check_period', 0.25, 'Period of the trajectory deviation check (s)',
              min=0.02, max=10.0, read_only=True),
    ParamSpec('min_replan_interval', 2.0, 'Minimum time between two automatic replans of one '
              'robot (s)', min=0.0, max=120.0),
    ParamSpec('planner_threads', 2, 'Worker threads running planning queries', min=1, max=64,
              read_only=True),
    ParamSpec('allow_reverse', True, 'Car and diff-drive robots may reverse (Reeds-Shepp rather '
              'than Dubins)'),
    ParamSpec('safety_margin', 0.05, 'Clearance added to each robot radius when planning (m)',
              min=0.0, max=10.0),
    ParamSpec('sample_period', 0.1, 'Time between samples of kinodynamic trajectories (s)',
              min=0.005, max=2.0),
    ParamSpec('cusp_dwell', 0.5, 'Stop at each direction switch of a car/diff-drive path (s)',
              min=0.01, max=30.0),
    ParamSpec('goal_tolerance', 0.25, 'A robot this close to the end of its trajectory is done; '
              'it is no longer replanned (m)', min=0.01, max=10.0),
    ParamSpec('unknown_is_occupied', True, 'Unknown map cells (-1) count as obstacles',
              read_only=True),
    ParamSpec('plan_configured_goals', True, "Plan to each robot's <robot>.goal parameter once "
              'the map and its odometry are in'),
    ParamSpec('status_period', 1.0, 'Period of the per-robot status on /diagnostics (s)',
              min=0.05, max=60.0, read_only=True),
]


@dataclass
class PlanRequest:
    """Everything one planning job needs, copied when it is submitted (the job owns it)."""

    generation: int
    grid: OccupancyGrid
    map_generation: int
    start: np.ndarray           # (3,) x, y, yaw
    start_velocity: np.ndarray  # (2,) global frame
    goal: np.ndarray            # (3,) x, y, yaw
    robot: dict                 # the robot's parameter fields
    settings: dict              # node parameters at submission time


@dataclass
class RobotState:
    name: str
    config: dict
    odom: Optional[object] = None           # convert.OdomState
    goal: Optional[np.ndarray] = None       # (3,) x, y, yaw
    generation: int = 0                     # bumped by each new goal or replan request
    busy: bool = False                      # a job of this robot is in the pool
    waiting: bool = False                   # a goal waits for the map / odometry / a new map
    reference: Optional[Reference] = None
    reference_start: float = 0.0
    progress_time: float = 0.0
    done: bool = True
    last_request: float = -math.inf
    planners: Dict[tuple, object] = field(default_factory=dict)   # planner_key -> planner
    level: bytes = OK
    message: str = 'idle: no goal yet'
    values: Dict[str, str] = field(default_factory=dict)


def planner_key(request: PlanRequest) -> tuple:
    """What a cached planner depends on: the map and the robot's planning parameters."""
    r, s = request.robot, request.settings
    return (request.map_generation, r['kinematics'], r['radius'], r['max_speed'], r['max_accel'],
            r['max_yaw_rate'], r['wheelbase'], r['min_turning_radius'], s['safety_margin'],
            s['allow_reverse'], s['plan_time_budget'])


def build_planner(request: PlanRequest):
    """The core planner for the request's robot kinematics."""
    r, s = request.robot, request.settings
    if r['kinematics'] in ('holonomic', 'quadrotor'):
        from orca_nav.core.planning.kinodynamic_astar import KinodynamicAStar, KinodynamicParams
        params = KinodynamicParams(max_vel=r['max_speed'], max_acc=r['max_accel'],
                                   max_speed=r['max_speed'], max_acc_norm=r['max_accel'],
                                   robot_radius=r['radius'],
                                   safety_margin=s['safety_margin'],
                                   max_time=s['plan_time_budget'])
        return KinodynamicAStar(request.grid, params)
    from orca_nav.core.planning.hybrid_astar import HybridAStar, HybridParams
    params = HybridParams(wheelbase=r['wheelbase'], min_turning_radius=r['min_turning_radius'],
                          robot_radius=r['radius'], allow_reverse=s['allow_reverse'],
                          model='diff_drive' if r['kinematics'] == 'diff_drive' else 'car',
                          collision_margin=max(s['safety_margin'], 1e-3),
                          timeout=s['plan_time_budget'])
    return HybridAStar(request.grid, params)


def plan_reference(planner, request: PlanRequest) -> Tuple[PlanResult, Optional[Reference]]:
    """Runs the planner; on success also returns the time-parametrised reference."""
    r, s = request.robot, request.settings
    start, goal = request.start, request.goal
    try:
        if r['kinematics'] in ('holonomic', 'quadrotor'):
            speed = np.linalg.norm(request.start_velocity)
            limit = 0.95 * r['max_speed']     # odometry may overshoot the limit a little
            start_vel = request.start_velocity * (min(1.0, limit / speed) if speed > 0 else 0.0)
            result = planner.plan(start[:2], start_vel, goal[:2], np.zeros(2))
            if not result.success:
                return result, None
            t, pos, vel, acc = result.trajectory.sample(s['sample_period'])
            return result, reference_from_samples(t, pos[:, :2], vel[:, :2], acc[:, :2],
                                                  start_yaw=start[2])
        result = planner.plan(tuple(start), tuple(goal))
        if not result.success:
            return result, None
        path = result.path
        reference = time_path(path.x, path.y, path.yaw, path.direction,
                              max_speed=r['max_speed'], max_accel=r['max_accel'],
                              max_yaw_rate=r['max_yaw_rate'], cusp_dwell=s['cusp_dwell'])
        return result, reference
    except ValueError as err:       # the planners raise for starts/goals outside the map
        return PlanResult(PlanStatus.OUT_OF_MAP, str(err), PlanStats()), None


def last_segment_start(reference: Reference) -> float:
    """Start time of the reference's last driving-direction segment."""
    switches = np.flatnonzero(reference.direction[1:] != reference.direction[:-1])
    return float(reference.times[switches[-1] + 1]) if switches.size else 0.0


class PlannerNode(Node):
    """Global planning for a fleet; see the module docstring."""

    def __init__(self, **kwargs):
        super().__init__('planner_node', **kwargs)
        self.settings = declare_parameters(self, NODE_SPECS)
        self.frame = self.settings['global_frame']
        configs = declare_robot_parameters(self, self.settings['robots'], ROBOT_SPECS)
        self._lock = threading.RLock()
        self._pool = ThreadPoolExecutor(max_workers=self.settings['planner_threads'],
                                        thread_name_prefix='planner')
        self._grid: Optional[OccupancyGrid] = None
        self._map_generation = 0
        self._map_has_free_cell = False
        self.robots: Dict[str, RobotState] = {}
        self._plan_pubs, self._traj_pubs = {}, {}
        for name, config in configs.items():
            state = RobotState(name, config)
            if self.settings['plan_configured_goals'] and len(config['goal']) == 3:
                state.goal = np.array(config['goal'], dtype=float)
                state.waiting, state.done = True, False
                state.message = 'goal from parameters: waiting for map and odometry'
            self.robots[name] = state
            self._plan_pubs[name] = self.create_publisher(Path, robot_topic(name, 'plan'), 1)
            self._traj_pubs[name] = self.create_publisher(
                MultiDOFJointTrajectory, robot_topic(name, 'trajectory'), 10)
            self.create_subscription(Odometry, robot_topic(name, 'odom'),  # as orca_node's
                                     lambda raw, n=name: self._on_odom(n, raw),
                                     qos_profile_sensor_data, raw=True)
            self.create_subscription(PoseStamped, robot_topic(name, 'goal_pose'),
                                     lambda msg, n=name: self._on_goal(n, msg), 10)
        self.create_subscription(OccupancyGridMsg, '/map', self._on_map, latched_qos())
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.create_timer(self.settings['replan_check_period'], self._check_progress)
        self.create_timer(self.settings['status_period'], self._publish_diagnostics)
        on_parameters_changed(self, self._on_parameters)
        self.get_logger().info(f'planning for {len(self.robots)} robots: '
                               f'{", ".join(self.robots)} in frame {self.frame!r}')

    # ------------------------------------------------------------------ inputs
    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_parameters(self, changed: Dict[str, object]) -> None:
        with self._lock:
            for full_name, value in changed.items():
                robot, _, fieldname = full_name.partition('.')
                if robot in self.robots and fieldname:
                    self.robots[robot].config[fieldname] = value
                elif full_name in self.settings:
                    self.settings[full_name] = value

    def _on_odom(self, name: str, raw: bytes) -> None:
        try:
            odom = odom_state_from_cdr(raw)
        except ValueError as err:
            self.get_logger().warn(f'{name}: odometry ignored: {err}', throttle_duration_sec=5.0)
            return
        if odom.frame_id != self.frame:
            self.get_logger().warn(f'{name}: odometry ignored: header.frame_id '
                                   f'{odom.frame_id!r} is not {self.frame!r}',
                                   throttle_duration_sec=5.0)
            return
        with self._lock:
            robot = self.robots[name]
            first = robot.odom is None
            robot.odom = odom
            if first and robot.waiting:
                self._request_plan(robot, 'odometry arrived')

    def _on_goal(self, name: str, msg: PoseStamped) -> None:
        reason = self._goal_problem(msg)
        if reason is not None:
            text = f'{name}: goal rejected: {reason}'
            self.get_logger().warn(text)
            with self._lock:
                self._set_status(self.robots[name], WARN, text)
            return
        p, q = msg.pose.position, msg.pose.orientation
        goal = np.array([p.x, p.y, quaternion_to_yaw(q)])
        with self._lock:
            robot = self.robots[name]
            robot.goal = goal
            robot.done = False
            self.get_logger().info(f'{name}: new goal ({goal[0]:.2f}, {goal[1]:.2f}, '
                                   f'{goal[2]:.2f})')
            self._request_plan(robot, 'new goal')

    def _goal_problem(self, msg: PoseStamped) -> Optional[str]:
        if msg.header.frame_id != self.frame:
            return (f'header.frame_id {msg.header.frame_id!r} is not the global frame '
                    f'{self.frame!r}')
        p, q = msg.pose.position, msg.pose.orientation
        for fieldname, value in (('pose.position.x', p.x), ('pose.position.y', p.y),
                                 ('pose.position.z', p.z), ('pose.orientation.x', q.x),
                                 ('pose.orientation.y', q.y), ('pose.orientation.z', q.z),
                                 ('pose.orientation.w', q.w)):
            if not math.isfinite(value):
                return f'{fieldname} is not finite ({value})'
        return None

    def _on_map(self, msg: OccupancyGridMsg) -> None:
        try:
            grid = msg_to_grid(msg, unknown_occupied=self.settings['unknown_is_occupied'],
                               frame_id=self.frame)
        except ValueError as err:
            self.get_logger().error(f'/map ignored: {err}')
            return
        has_free = bool((~grid.occupied).any())
        with self._lock:
            first = self._grid is None
            self._grid = grid
            self._map_generation += 1
            self._map_has_free_cell = has_free
            self.get_logger().info(f'map {grid.shape[1]} x {grid.shape[0]} cells at '
                                   f'{grid.resolution} m' + ('' if has_free else
                                                             ': it has no free cell'))
            for robot in self.robots.values():
                if robot.goal is None:
                    continue
                if robot.waiting or not has_free:
                    self._request_plan(robot, 'map arrived' if first else 'new map')
                elif robot.reference is not None and not robot.done and \
                        not self._remaining_free(robot, grid):
                    self._request_plan(robot, 'the new map blocks the trajectory')

    # ------------------------------------------------------------------ planning
    def _request_plan(self, robot: RobotState, reason: str) -> None:
        """Plans (again) for the robot's goal, or holds it still saying why it cannot."""
        robot.generation += 1
        robot.last_request = self._now()
        if self._grid is None:
            return self._fail(robot, WARN, 'no map yet: holding still until /map arrives',
                              waiting=True)
        if not self._map_has_free_cell:
            return self._fail(robot, ERROR, 'the map has no free cell: holding still',
                              waiting=True)
        if robot.odom is None:
            return self._fail(robot, WARN, f'no odometry yet on {robot_topic(robot.name, "odom")}'
                              ': holding still', waiting=True)
        robot.waiting = False
        self._set_status(robot, OK, f'planning ({reason})')
        if robot.busy:      # the running job is now stale; its completion submits this one
            return
        self._submit(robot)

    def _submit(self, robot: RobotState) -> None:
        odom = robot.odom
        request = PlanRequest(generation=robot.generation, grid=self._grid,
                              map_generation=self._map_generation,
                              start=np.array([odom.position[0], odom.position[1], odom.yaw]),
                              start_velocity=odom.velocity[:2].copy(), goal=robot.goal.copy(),
                              robot=dict(robot.config), settings=dict(self.settings))
        robot.busy = True
        self._pool.submit(self._plan_job, robot.name, request)

    def _plan_job(self, name: str, request: PlanRequest) -> None:
        robot = self.robots[name]
        try:
            result, reference = plan_reference(self._planner(robot, request), request)
            if result.status is PlanStatus.START_IN_COLLISION and \
                    request.settings['safety_margin'] > 0.0:
                # A robot standing inside the safety margin (tracking error, pushed aside by
                # others) is not in collision: plan its way out without the margin.
                request = replace(request, settings={**request.settings, 'safety_margin': 0.0})
                result, reference = plan_reference(self._planner(robot, request), request)
        except Exception as err:    # noqa: BLE001 -- a planner bug must not kill the worker
            result = PlanResult(PlanStatus.NO_PATH, f'planner error: {err!r}', PlanStats())
            reference = None
        with self._lock:
            robot.busy = False
            if request.generation != robot.generation:     # a newer goal/replan was asked
                if robot.goal is not None and not robot.waiting:
                    self._submit(robot)
                return
            if reference is None:
                self._fail(robot, ERROR, f'planning failed ({result.status.value}): '
                                         f'{result.message}', waiting=False)
                return
            self._publish_reference(robot, reference, result)

    @staticmethod
    def _planner(robot: RobotState, request: PlanRequest):
        """The robot's planner for this request, cached (the map and parameters it depends on).
        Only this robot's one running job touches its cache."""
        key = planner_key(request)
        if key not in robot.planners:
            if len(robot.planners) >= 2:      # with and without the safety margin
                robot.planners.pop(next(iter(robot.planners)))
            robot.planners[key] = build_planner(request)
        return robot.planners[key]

    def _publish_reference(self, robot: RobotState, reference: Reference,
                           result: PlanResult) -> None:
        start = self._now()
        robot.reference, robot.reference_start, robot.progress_time = reference, start, 0.0
        robot.done = False
        self._plan_pubs[robot.name].publish(reference_to_path(reference, self.frame, start))
        self._traj_pubs[robot.name].publish(reference_to_trajectory(
            reference, self.frame, start, f'{robot.name}/base_link'))
        goal = robot.goal
        robot.values = {'plan_time': f'{result.stats.plan_time:.3f}',
                        'expanded_nodes': str(result.stats.expanded_nodes),
                        'duration': f'{reference.duration:.2f}',
                        'samples': str(len(reference))}
        self._set_status(robot, OK, f'following a {reference.duration:.1f} s trajectory to '
                                    f'({goal[0]:.2f}, {goal[1]:.2f}, {goal[2]:.2f}), planned in '
                                    f'{result.stats.plan_time * 1e3:.0f} ms')

    def _fail(self, robot: RobotState, level: bytes, message: str, waiting: bool) -> None:
        """Status + log, and an empty trajectory: the robot holds still, nothing stale remains."""
        robot.waiting = waiting
        robot.reference = None
        now = self._now()
        path = Path()
        path.header.frame_id = self.frame
        self._plan_pubs[robot.name].publish(path)
        self._traj_pubs[robot.name].publish(empty_trajectory(self.frame, now))
        text = f'{robot.name}: {message}'
        (self.get_logger().error if level == ERROR else self.get_logger().warn)(text)
        self._set_status(robot, level, message)

    # ------------------------------------------------------------------ monitoring
    def _remaining_free(self, robot: RobotState, grid: OccupancyGrid) -> bool:
        """The part of the trajectory ahead of the robot is collision-free on `grid`."""
        ref = robot.reference
        ahead = ref.positions[ref.times >= robot.progress_time]
        if ahead.shape[0] < 2:
            return True
        return bool(np.all(grid.segment_free(ahead[:-1], ahead[1:], robot.config['radius'])))

    def _check_progress(self) -> None:
        now = self._now()
        with self._lock:
            for robot in self.robots.values():
                ref, odom = robot.reference, robot.odom
                if ref is None or odom is None or robot.done or robot.busy:
                    continue
                position = odom.position[:2]
                robot.progress_time = ref.nearest_time(position, after=robot.progress_time)
                deviation = float(np.linalg.norm(position - ref.position_at(robot.progress_time)[0]))
                to_goal = float(np.linalg.norm(position - ref.positions[-1]))
                if to_goal <= self.settings['goal_tolerance'] and \
                        robot.progress_time >= last_segment_start(ref):
                    robot.done = True
                    self._set_status(robot, OK, 'goal reached')
                    continue
                if deviation > self.settings['replan_deviation'] and \
                        now - robot.last_request >= self.settings['min_replan_interval']:
                    self._request_plan(robot, f'{deviation:.2f} m off the trajectory')

    def _set_status(self, robot: RobotState, level: bytes, message: str) -> None:
        changed = (robot.level, robot.message) != (level, message)
        robot.level, robot.message = level, message
        if changed:
            self._publish_diagnostics(only=robot)

    def _publish_diagnostics(self, only: Optional[RobotState] = None) -> None:
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        with self._lock:
            for robot in ([only] if only is not None else self.robots.values()):
                values = [KeyValue(key='goal', value='none' if robot.goal is None else
                                   ', '.join(f'{v:.3f}' for v in robot.goal))]
                values += [KeyValue(key=k, value=v) for k, v in robot.values.items()]
                msg.status.append(DiagnosticStatus(
                    level=robot.level,
                    name=f'planner_node: {robot.name}', hardware_id=robot.name,
                    message=robot.message, values=values))
        self._diag_pub.publish(msg)

    def destroy_node(self):
        self._pool.shutdown(wait=False, cancel_futures=True)
        return super().destroy_node()


def main(args=None):
    run_node(PlannerNode, 'planner_node', args, multithreaded=True)


if __name__ == '__main__':
    main()
