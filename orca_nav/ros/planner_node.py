"""planner_node: goals -> global plans -> /<robot>/plan and /<robot>/trajectory for a fleet.

Per robot (parameter `robots`, per-robot fields `<robot>.<field>` of TEAM.md) it listens to
`/<robot>/odom` and `/<robot>/goal_pose`, and to the latched `/map` for ground robots and the
latched 3-D map (`map_3d_topic`, sensor_msgs/PointCloud2 of occupied voxel centres,
`map_3d_resolution`) for drones: a `quadrotor` plans in 3-D, its start altitude from its
odometry and its goal altitude from the goal's `pose.position.z` (`<robot>.goal_z` for the
configured goal; 0 keeps the altitude the drone flies at). The planning policy (which
planner, when to plan, replan, hold still or call a goal reached) is the core's
`FleetPlanner` (`orca_nav.core.fleet.fleet_planner`); this node converts messages, runs the
plan requests it returns and publishes what it decides:

* `/<robot>/plan` (Path) and `/<robot>/trajectory` (MultiDOFJointTrajectory, with the driving
  direction, see `trajectory_msgs`), both latched (transient local, depth 1) so a restarted
  consumer gets the current plan. The trajectory is stamped with the odometry state the plan
  starts from; an empty one means "hold still";
* `/diagnostics`: every status change at once, all robots every `status_period`; each change is
  logged too (INFO for normal operation and start-up waiting, WARN/ERROR for failures);
* traffic rules (`traffic_rules_file`, read when configured): ground robots' plans keep their
  one-way lanes (`FleetPlanner`), and the rules are drawn for RViz on `/orca_nav/traffic_rules`
  (MarkerArray, latched). A file that cannot be used is refused naming the file, entry and
  field: logged and reported on /diagnostics every `status_period` (`planner_node:
  traffic_rules`, ERROR), and the node plans without rules;
* Nav2's actions per robot: `/<robot>/navigate_to_pose`, `navigate_through_poses`,
  `follow_waypoints` and `compute_path_to_pose` (`nav2_actions`), and its lifecycle state at
  `/<robot>/planner_node/get_state` too, where nav2_simple_commander's
  `BasicNavigator(namespace=<robot>).waitUntilNav2Active(navigator='planner_node', ...)` asks.

Threads: subscriptions and timers share the node's default (mutually exclusive) callback
group, so the supervisor runs on one executor thread at a time, under any executor. Plan
requests run on a thread pool (`run_request`, pure core: the worker touches neither the
supervisor nor a publisher) and come back through `offload.Offloaded`. Time is the node clock
(`use_sim_time` honoured). A managed node (`orca_nav.ros.lifecycle`): while inactive it takes
odometry and the map but ignores goals and does not replan.
"""
from __future__ import annotations

from typing import Dict, Iterable, Optional

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg
from nav_msgs.msg import Odometry, Path
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import PointCloud2
from trajectory_msgs.msg import MultiDOFJointTrajectory
from visualization_msgs.msg import MarkerArray

from orca_nav.core.fleet.fleet_planner import Actions, FleetPlanner, GoalEnd, ReplanPolicy
from orca_nav.core.fleet.plan_jobs import PlanOutcome, PlanSettings, StartState, run_request
from orca_nav.core.fleet.status import Level, RobotStatus
from orca_nav.core.traffic_rules import TrafficRules
from orca_nav.parameters.planner_node import NODE_SPECS
from orca_nav.parameters.shared import ROBOT_SPECS
from orca_nav.ros.construction import released_on_failure
from orca_nav.ros.convert import (
    cloud_to_grid,
    latched_qos,
    msg_to_grid,
    node_now,
    odom_state_from_cdr,
    pose_from_msg,
    seconds_to_time,
)
from orca_nav.ros.diagnostics import robot_status_msg, status_msg
from orca_nav.ros.lifecycle import ManagedNode
from orca_nav.ros.markers import traffic_rule_markers
from orca_nav.ros.nav2_actions import Nav2ActionServers, Planner
from orca_nav.ros.node_main import run_node
from orca_nav.ros.offload import Offloaded
from orca_nav.ros.params import (
    declare_parameters,
    declare_robot_parameters,
    on_parameters_changed,
    robot_spec,
)
from orca_nav.ros.qos_events import publisher_events, subscription_events
from orca_nav.ros.tf_poses import FleetPoses
from orca_nav.ros.trajectory_msgs import (
    empty_path,
    empty_trajectory,
    reference_to_path,
    reference_to_trajectory,
)

TRAFFIC_RULES_TOPIC = '/orca_nav/traffic_rules'


def goal_values(dim: int, x: float, y: float, z: float, yaw: float) -> np.ndarray:
    """The core goal of a `dim`-D robot: (x, y, yaw), or (x, y, z, yaw) for a drone."""
    return np.array([x, y, z, yaw] if dim == 3 else [x, y, yaw], dtype=float)


def goal_from_msg(msg: PoseStamped, frame: str, dim: int = 2) -> np.ndarray:
    """The core goal (`goal_values`) of a goal message; ValueError naming the field when it is
    unusable."""
    return goal_values(dim, *pose_from_msg(msg, frame))


class PlannerNode(ManagedNode):
    """Global planning for a fleet, a managed node (`orca_nav.ros.lifecycle`); see the module
    docstring."""

    @released_on_failure
    def __init__(self, **kwargs):
        super().__init__('planner_node', **kwargs)
        self.settings = declare_parameters(self, NODE_SPECS)
        self.frame = self.settings['global_frame']
        self.robot_configs = declare_robot_parameters(self, self.settings['robots'], ROBOT_SPECS)
        self.supervisor = None
        self._jobs = self.own_for_life(Offloaded(self, self._on_outcome,
                                                 self.settings['planner_threads'], 'planner'))
        on_parameters_changed(self, self._on_parameters)
        self.serve_state_per_robot(self.robot_configs)
        self.start()

    def configure(self) -> None:
        self._poses = FleetPoses(self, list(self.robot_configs), self.settings['tf_layout'],
                                 self.frame, self.settings['transform_tolerance'])
        self._traffic, self._traffic_status = self._load_traffic_rules()
        self.supervisor = FleetPlanner(
            {name: robot_spec(name, config) for name, config in self.robot_configs.items()},
            PlanSettings.from_values(self.settings), ReplanPolicy.from_values(self.settings),
            self._traffic)
        self._traffic_pub = None if self._traffic is None else self.create_lifecycle_publisher(
            MarkerArray, TRAFFIC_RULES_TOPIC, latched_qos())
        self._plan_pubs, self._traj_pubs = {}, {}
        for name in self.robot_configs:
            self._plan_pubs[name] = self.create_lifecycle_publisher(
                Path, self._poses.names[name].plan_topic, latched_qos(),
                event_callbacks=publisher_events())
            self._traj_pubs[name] = self.create_lifecycle_publisher(
                MultiDOFJointTrajectory, self._poses.names[name].trajectory_topic, latched_qos(),
                event_callbacks=publisher_events())
            self.create_subscription(Odometry, self._poses.names[name].odom_topic,  # as orca_node's
                                     lambda raw, n=name: self._on_odom(n, raw),
                                     qos_profile_sensor_data, raw=True,
                                     event_callbacks=subscription_events())
            self.create_subscription(PoseStamped, self._poses.names[name].goal_topic,
                                     lambda msg, n=name: self._on_goal(n, msg), 10,
                                     event_callbacks=subscription_events())
        dims = {self.supervisor.dim(name) for name in self.robot_configs}
        if 2 in dims:
            self.create_subscription(OccupancyGridMsg, '/map', self._on_map, latched_qos())
        if 3 in dims:
            self.create_subscription(PointCloud2, self.settings['map_3d_topic'], self._on_map_3d,
                                     latched_qos())
        self._navigation = Nav2ActionServers(self, list(self.robot_configs), self.frame, Planner(
            self._navigate, self._cancel_goal, self._plan_path, self.supervisor.dim,
            lambda name: self.supervisor.spec(name).max_speed, self.settings))
        self._diag_pub = self.create_lifecycle_publisher(DiagnosticArray, '/diagnostics', 10)
        self.create_timer(self.settings['replan_check_period'], self._check_progress)
        self.create_timer(self.settings['status_period'],
                          lambda: self._publish_statuses(self.supervisor.statuses(),
                                                         self._traffic_status))
        self.get_logger().info(f'planning for {len(self.robot_configs)} robots: '
                               f'{", ".join(self.robot_configs)} in frame {self.frame!r}')

    def _load_traffic_rules(self):
        """The rules of `traffic_rules_file` (None: no file, or refused) and the node status
        that reports them (None: no file)."""
        path = self.settings['traffic_rules_file']
        if not path:
            return None, None
        name = 'planner_node: traffic_rules'
        try:
            rules = TrafficRules.from_yaml(path)
            if rules.frame_id != self.frame:
                raise ValueError(f'{path}: frame_id {rules.frame_id!r} is not the planner\'s '
                                 f'global_frame {self.frame!r}')
        except ValueError as err:
            message = f'traffic_rules_file refused: {err}; planning without traffic rules'
            self.get_logger().error(message)
            return None, status_msg(name, '', Level.ERROR, message, {'file': path})
        message = (f'{len(rules.lanes)} one-way lanes and {len(rules.zones)} one-robot zones '
                   f'from {path}')
        self.get_logger().info(f'traffic rules: {message}')
        return rules, status_msg(name, '', Level.OK, message, {'file': path})

    def activated(self) -> None:
        if self._traffic_pub is not None:
            self._traffic_pub.publish(traffic_rule_markers(self._traffic, seconds_to_time(0.0)))
        if self.settings['plan_configured_goals']:
            for name, config in self.robot_configs.items():
                if len(config['goal']) == 3:
                    x, y, yaw = config['goal']
                    goal = goal_values(self.supervisor.dim(name), x, y, config['goal_z'], yaw)
                    self._apply(self.supervisor.set_goal(name, goal, node_now(self)))

    # ------------------------------------------------------------------ inputs
    def _on_parameters(self, changed: Dict[str, object]) -> None:
        for full_name, value in changed.items():
            robot, _, field_name = full_name.partition('.')
            if robot in self.robot_configs and field_name:
                self.robot_configs[robot][field_name] = value
                if self.supervisor is not None:
                    self.supervisor.set_robot(robot, robot_spec(robot, self.robot_configs[robot]))
            elif full_name in self.settings:
                self.settings[full_name] = value
        if self.supervisor is None:
            return      # the next configure reads them
        self.supervisor.configure(PlanSettings.from_values(self.settings),
                                  ReplanPolicy.from_values(self.settings))

    def _on_odom(self, name: str, raw: bytes) -> None:
        try:
            odom = odom_state_from_cdr(raw)
            position, velocity, yaw = self._poses.to_global(name, odom)
        except ValueError as err:
            self.get_logger().warning(f'{name}: odometry ignored: {err}',
                                      throttle_duration_sec=5.0)
            return
        dim = self.supervisor.dim(name)
        state = StartState(pose=(*position[:dim], yaw), velocity=velocity[:dim],
                           stamp_s=odom.stamp_s)
        self._apply(self.supervisor.set_start_state(name, state, node_now(self)))

    def _on_goal(self, name: str, msg: PoseStamped) -> None:
        if not self.active:
            self.get_logger().warning(f'{name}: goal ignored: planner_node is not active')
            return
        try:
            goal = goal_from_msg(msg, self.frame, self.supervisor.dim(name))
        except ValueError as err:
            self._apply(self.supervisor.reject_goal(name, str(err)))
            return
        self._navigation.replaced(name)
        self._apply(self.supervisor.set_goal(name, goal, node_now(self)))

    def _navigate(self, name: str, pose) -> None:
        """A goal (x, y, z, yaw) from navigate_to_pose: it may end jammed."""
        self._apply(self.supervisor.set_goal(name, goal_values(self.supervisor.dim(name), *pose),
                                             node_now(self),
                                             jam_timeout=self.settings['jam_timeout']))

    def _cancel_goal(self, name: str) -> None:
        self._apply(self.supervisor.cancel(name, node_now(self)))

    def _plan_path(self, name: str, query: int, goal, start) -> Optional[GoalEnd]:
        """A path to `goal` (x, y, z, yaw) from the robot's state, or from `start` (at rest),
        for compute_path_to_pose; the outcome goes to the action servers."""
        dim = self.supervisor.dim(name)
        start_state = None if start is None else StartState(
            pose=goal_values(dim, *start), velocity=np.zeros(dim), stamp_s=node_now(self))
        request, failed = self.supervisor.path_request(name, goal_values(dim, *goal), query,
                                                       start_state)
        if request is not None:
            self._jobs.submit(run_request, request)
        return failed

    def _on_map(self, msg: OccupancyGridMsg) -> None:
        try:
            grid = msg_to_grid(msg, unknown_occupied=self.settings['unknown_is_occupied'],
                               frame_id=self.frame)
        except ValueError as err:
            self.get_logger().error(f'/map ignored: {err}')
            return
        actions = self.supervisor.set_map(grid, node_now(self))
        blocked = '' if self.supervisor.map_has_free_cell(2) else ': it has no free cell'
        self.get_logger().info(f'map {grid.shape[1]} x {grid.shape[0]} cells at '
                               f'{grid.resolution:g} m{blocked}')
        self._apply(actions)

    def _on_map_3d(self, msg: PointCloud2) -> None:
        topic = self.settings['map_3d_topic']
        try:
            grid, note = cloud_to_grid(msg, self.settings['map_3d_resolution'], self.frame)
        except ValueError as err:
            self.get_logger().error(f'{topic} ignored: {err}')
            return
        if note is not None:
            self.get_logger().warning(f'{topic}: {note}')
        actions = self.supervisor.set_map(grid, node_now(self))
        lower, upper = grid.extent
        self.get_logger().info(
            f'3-D map {" x ".join(str(n) for n in grid.shape[::-1])} voxels at '
            f'{grid.resolution:g} m spanning ' + ', '.join(
                f'{axis} {lo:.2f}..{hi:.2f}' for axis, lo, hi in zip('xyz', lower, upper)))
        self._apply(actions)

    def _check_progress(self) -> None:
        if self.active:
            self._apply(self.supervisor.check_progress(node_now(self)))
            for name in self.robot_configs:
                self._navigation.feedback(name, self.supervisor.progress(name))

    def _on_outcome(self, outcome: PlanOutcome) -> None:
        if outcome.request.query:
            self._navigation.answer(outcome)
        else:
            self._apply(self.supervisor.finish(outcome, node_now(self)))

    # ------------------------------------------------------------------ outputs
    def _apply(self, actions: Actions) -> None:
        for request in actions.plan:
            self._jobs.submit(run_request, request)
        for update in actions.publish:
            name, reference, start_s = update.robot, update.reference, update.start_s
            if reference is None:
                self._plan_pubs[name].publish(empty_path(self.frame, start_s))
                self._traj_pubs[name].publish(empty_trajectory(self.frame, start_s))
            else:
                self._plan_pubs[name].publish(reference_to_path(reference, self.frame, start_s))
                self._traj_pubs[name].publish(reference_to_trajectory(
                    reference, self.frame, start_s, self._poses.names[name].base_frame))
        for ended in actions.ended:
            self._navigation.end(ended)
        for status in actions.status:
            self._log(status)
        if actions.status:
            self._publish_statuses(actions.status)

    def _log(self, status: RobotStatus) -> None:
        # One call per severity: rclpy's logger fixes the severity of each call site.
        text = f'{status.robot}: {status.message}'
        if status.level is Level.ERROR:
            self.get_logger().error(text)
        elif status.level is Level.WARN:
            self.get_logger().warning(text)
        else:
            self.get_logger().info(text)

    def _publish_statuses(self, statuses: Iterable[RobotStatus], node_status=None) -> None:
        msg = DiagnosticArray()
        msg.header.stamp = seconds_to_time(node_now(self))
        msg.status = [robot_status_msg('planner_node', s) for s in statuses]
        if node_status is not None:
            msg.status.append(node_status)
        self._diag_pub.publish(msg)

def main(args=None):
    run_node(PlannerNode, 'planner_node', args)


if __name__ == '__main__':
    main()
