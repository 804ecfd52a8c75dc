"""`<robot>/navigate_to_pose` (nav2_msgs/action/NavigateToPose) for every robot of a planner_node.

This is what fleet managers (Open-RMF's free_fleet, behaviour trees, mission coordinators) call
on a Nav2 robot. Goals are decided by the core's `FleetPlanner`: the node passes a goal in, and
the planner's `GoalEnd`s and `progress` come back here as results and feedback.

* A goal in another frame than the global one, with a non-finite number, or sent while the
  node is not active is rejected.
* An accepted goal replaces the robot's current one; the replaced goal is aborted with
  "replaced by a new goal", the same happens to it when a goal arrives on `goal_pose`.
* Feedback at every progress check: current pose, time since the goal, estimated time and
  distance remaining along the trajectory, and the number of replans (recoveries).
* Success once the planner says reached (within `goal_tolerance` at the trajectory's end).
* Abort with the error code Nav2's bt_navigator passes up from its planner and controller
  servers, and the reason in `error_msg`: GOAL_OCCUPIED (206), GOAL_OUTSIDE_MAP (204),
  START_OCCUPIED (205), TIMEOUT (207, the planning budget), NO_VALID_PATH (208), UNKNOWN (200),
  and FAILED_TO_MAKE_PROGRESS (105) when the robot got no closer for `jam_timeout`.
* Cancel holds the robot still (an empty trajectory) and ends the goal as canceled.
"""
from __future__ import annotations

import math
from functools import partial
from typing import Callable, Dict, Optional

from nav2_msgs.action import NavigateToPose
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.task import Future

from orca_nav.core.fleet.names import robot_names
from orca_nav.core.fleet.fleet_planner import GoalEnd, Progress
from orca_nav.ros.convert import (node_now, quaternion_to_yaw, seconds_to_duration,
                                  seconds_to_time, yaw_to_quaternion)

# nav2_msgs ComputePathToPose (2xx) and FollowPath (1xx) error codes, Nav2 Jazzy, by the reason
# a goal ended in the core.
ERROR_CODES = {'goal_in_collision': 206, 'out_of_map': 204, 'start_in_collision': 205,
               'timeout': 207, 'no_path': 208, 'internal_error': 200, 'jammed': 105}
UNKNOWN = 200


class _Active:
    """One robot's goal being executed: its handle, when it started, how it ended."""

    def __init__(self, handle, started: float):
        self.handle = handle
        self.started = started
        self.end: Future = Future()     # GoalEnd, or None when canceled


class NavigateToPoseServers:
    """One action server per robot on `node` (create it in the node's configure).

    set_goal(robot, (x, y, z, yaw)) and cancel(robot) reach the planner (z counts for drones); the node hands the
    planner's ends to `end` and its progress to `feedback`."""

    def __init__(self, node, robots, frame: str, set_goal: Callable[[str, tuple], None],
                 cancel: Callable[[str], None]):
        self._node, self._frame = node, frame
        self._set_goal, self._cancel = set_goal, cancel
        self._active: Dict[str, _Active] = {}       # the robot's current goal
        self._goals: Dict[bytes, _Active] = {}       # every goal accepted and not finished
        self._servers = [ActionServer(
            node, NavigateToPose, robot_names(robot).navigate_to_pose_action,
            execute_callback=partial(self._execute, robot),
            goal_callback=lambda request, r=robot: self._check(r, request),
            handle_accepted_callback=lambda handle, r=robot: self._accepted(r, handle),
            cancel_callback=lambda handle, r=robot: self._cancel_requested(r, handle))
            for robot in robots]

    # ---- inputs from the node ------------------------------------------------------------------
    def end(self, ended: GoalEnd) -> None:
        active = self._active.get(ended.robot)
        if active is not None and not active.end.done():
            active.end.set_result(ended)

    def replaced(self, robot: str) -> None:
        """A goal from elsewhere (goal_pose) replaces the robot's action goal."""
        self.end(GoalEnd(robot, False, 'replaced', 'replaced by a goal on goal_pose'))

    def feedback(self, robot: str, progress: Optional[Progress]) -> None:
        active = self._active.get(robot)
        if active is None or progress is None or active.end.done():
            return
        now = node_now(self._node)
        msg = NavigateToPose.Feedback()
        msg.current_pose.header.frame_id = self._frame
        msg.current_pose.header.stamp = seconds_to_time(now)
        pose = [float(v) for v in progress.pose]        # x, y, (z,) yaw
        position = msg.current_pose.pose.position
        position.x, position.y = pose[0], pose[1]
        position.z = pose[2] if len(pose) == 4 else 0.0
        msg.current_pose.pose.orientation = yaw_to_quaternion(pose[-1])
        msg.navigation_time = seconds_to_duration(max(now - active.started, 0.0))
        msg.estimated_time_remaining = seconds_to_duration(progress.time_remaining)
        msg.number_of_recoveries = min(progress.recoveries, 32767)
        msg.distance_remaining = float(progress.distance_remaining)
        active.handle.publish_feedback(msg)

    # ---- action server callbacks (executor thread) ------------------------------------------------
    def _check(self, robot: str, request) -> GoalResponse:
        pose = request.pose
        problem = None
        if not self._node.active:
            problem = 'planner_node is not active'
        elif pose.header.frame_id != self._frame:
            problem = (f'pose.header.frame_id {pose.header.frame_id!r} is not the global frame '
                       f'{self._frame!r}')
        elif not all(math.isfinite(v) for v in (
                pose.pose.position.x, pose.pose.position.y, pose.pose.position.z,
                pose.pose.orientation.x,
                pose.pose.orientation.y, pose.pose.orientation.z, pose.pose.orientation.w)):
            problem = 'pose has a non-finite number'
        if problem is not None:
            self._node.get_logger().warning(f'{robot}: navigate_to_pose goal rejected: {problem}')
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _accepted(self, robot: str, handle) -> None:
        previous = self._active.get(robot)
        if previous is not None and not previous.end.done():
            previous.end.set_result(GoalEnd(robot, False, 'replaced', 'replaced by a new goal'))
        active = _Active(handle, node_now(self._node))
        self._active[robot] = self._goals[bytes(handle.goal_id.uuid)] = active
        pose = handle.request.pose.pose
        self._set_goal(robot, (pose.position.x, pose.position.y, pose.position.z,
                               quaternion_to_yaw(pose.orientation)))
        handle.execute()

    def _cancel_requested(self, robot: str, handle) -> CancelResponse:
        active = self._active.get(robot)
        if active is None or active.handle is not handle or active.end.done():
            return CancelResponse.REJECT
        self._cancel(robot)
        active.end.set_result(None)
        return CancelResponse.ACCEPT

    async def _execute(self, robot: str, handle):
        active = self._goals[bytes(handle.goal_id.uuid)]
        ended = await active.end
        del self._goals[bytes(handle.goal_id.uuid)]
        result = NavigateToPose.Result()
        if ended is None:
            handle.canceled()
        elif ended.reached:
            handle.succeed()
        else:
            result.error_code = ERROR_CODES.get(ended.reason, UNKNOWN)
            result.error_msg = ended.message
            handle.abort()
        if self._active.get(robot) is active:
            del self._active[robot]
        return result
