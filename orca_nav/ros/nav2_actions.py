"""Nav2's navigation actions for every robot of a planner_node, in the robot's namespace.

What fleet managers (Open-RMF's free_fleet, behaviour trees, nav2_simple_commander's
BasicNavigator) call on a Nav2 robot, at `<robot>/<action>`:

* `navigate_to_pose` (NavigateToPose), `navigate_through_poses` (NavigateThroughPoses) and
  `follow_waypoints` (FollowWaypoints): a navigation task (the core's `NavigationTask`, which
  decides what each action's poses mean and when a waypoint is missed) that the planner
  executes one goal at a time;
* `compute_path_to_pose` (ComputePathToPose): the plan, as nav_msgs/Path, without executing it.

One mechanism (`Nav2ActionServers`) serves them all: a goal in another frame than the global
one, with a non-finite number, without poses, or sent while the node is not active is rejected
(the reason is logged); feedback goes out at every progress check; a goal ends with Nav2's
error code and the reason in `error_msg`. A robot has one navigation task at a time: a new one
(or a goal on `goal_pose`) replaces it, and the replaced goal is aborted saying so. Cancel holds
the robot still. The per-action parts are the `_Action` subclasses.

Error codes are those of the Jazzy actions, as bt_navigator passes them up: a planning failure
with the codes of the planner server's action (ComputePathToPose 2xx, ComputePathThroughPoses
3xx for navigate_through_poses), a robot that stopped getting closer with FollowPath's
FAILED_TO_MAKE_PROGRESS (105).
"""
from __future__ import annotations

import itertools
from functools import partial
from typing import Callable, Dict, List, Mapping, Optional, Tuple

from action_msgs.msg import GoalStatus
from nav2_msgs.action import (
    ComputePathThroughPoses,
    ComputePathToPose,
    FollowPath,
    FollowWaypoints,
    NavigateThroughPoses,
    NavigateToPose,
)
from nav2_msgs.msg import MissedWaypoint
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.task import Future

from orca_nav.core.fleet.fleet_planner import GoalEnd, Progress
from orca_nav.core.fleet.goal_sequence import Pose
from orca_nav.core.fleet.names import robot_names
from orca_nav.core.fleet.navigation_task import NavigationTask, TaskOutcome
from orca_nav.core.fleet.plan_jobs import PlanOutcome
from orca_nav.ros.convert import (
    node_now,
    pose_from_msg,
    seconds_to_duration,
    seconds_to_time,
    yaw_to_quaternion,
)
from orca_nav.ros.trajectory_msgs import reference_to_path

# The planner server's error constant for each reason a goal ends in the core (the rest are
# UNKNOWN): the same names in ComputePathToPose (2xx) and ComputePathThroughPoses (3xx).
_PLANNER_ERRORS = {'no_start': 'TF_ERROR', 'out_of_map': 'GOAL_OUTSIDE_MAP',
                   'start_in_collision': 'START_OCCUPIED', 'goal_in_collision': 'GOAL_OCCUPIED',
                   'timeout': 'TIMEOUT', 'no_path': 'NO_VALID_PATH'}


def error_code(reason: str, planner=ComputePathToPose) -> int:
    """Nav2's error code for a goal that ended for `reason` (a core GoalEnd reason): FollowPath's
    FAILED_TO_MAKE_PROGRESS for 'jammed', else the planner action `planner`'s."""
    if reason == 'jammed':
        return FollowPath.Result.FAILED_TO_MAKE_PROGRESS
    return getattr(planner.Result, _PLANNER_ERRORS.get(reason, 'UNKNOWN'))


class Planner:
    """What the action servers need from their node: give a robot a goal (x, y, z, yaw) or
    cancel it, ask for a path that is not executed (answered through
    `Nav2ActionServers.answer`, or at once with the GoalEnd that says why not), the robot's
    planning dimension and speed, and the node's live settings (`pass_radius`,
    `stop_on_failure`)."""

    def __init__(self, set_goal: Callable[[str, Pose], None], cancel: Callable[[str], None],
                 plan_path: Callable[[str, int, Pose, Optional[Pose]], Optional[GoalEnd]],
                 dim: Callable[[str], int], speed: Callable[[str], float],
                 settings: Mapping[str, object]):
        self.set_goal, self.cancel, self.plan_path = set_goal, cancel, plan_path
        self.dim, self.speed, self.settings = dim, speed, settings


class _Goal:
    """An accepted goal: its action, handle and robot, when it started, its task (None for a
    path query), and how it ended (status, result)."""

    def __init__(self, action: '_Action', robot: str, handle, started: float):
        self.action, self.robot, self.handle, self.started = action, robot, handle, started
        self.task: Optional[NavigationTask] = None
        self.end: Future = Future()

    def finish(self, status: int, result) -> None:
        if not self.end.done():
            self.end.set_result((status, result))


# ---------------------------------------------------------------------- the per-action parts
class _Action:
    """One action: its name and type, the goal's poses by field name, further problems of a
    goal, and (navigation actions) the task, feedback and result."""

    name: str
    type: type
    navigates = True

    def poses(self, request) -> List[Tuple[str, object]]:
        return [(f'poses[{k}]', pose) for k, pose in enumerate(request.poses)]

    def problem(self, request) -> Optional[str]:
        return None if request.poses else 'poses is empty: no goal given'

    def task(self, request, goals: List[Pose], dim: int, planner: Planner) -> NavigationTask:
        raise NotImplementedError

    def feedback(self, goal: _Goal, progress: Progress, speed: float, now: float, frame: str):
        raise NotImplementedError

    def result(self, goal: _Goal, outcome: TaskOutcome):
        result = self.type.Result()
        if not outcome.succeeded:
            result.error_code = error_code(outcome.reason)
            result.error_msg = outcome.message
        return result


def _navigation_feedback(msg, goal: _Goal, progress: Progress, now: float, frame: str):
    """Fills NavigateToPose's (and NavigateThroughPoses') feedback fields."""
    msg.current_pose.header.frame_id = frame
    msg.current_pose.header.stamp = seconds_to_time(now)
    pose = [float(v) for v in progress.pose]        # x, y, (z,) yaw
    position = msg.current_pose.pose.position
    position.x, position.y = pose[0], pose[1]
    position.z = pose[2] if len(pose) == 4 else 0.0
    msg.current_pose.pose.orientation = yaw_to_quaternion(pose[-1])
    msg.navigation_time = seconds_to_duration(max(now - goal.started, 0.0))
    msg.estimated_time_remaining = seconds_to_duration(progress.time_remaining)
    msg.number_of_recoveries = min(progress.recoveries, 32767)
    msg.distance_remaining = float(progress.distance_remaining)
    return msg


class _NavigateToPose(_Action):
    name, type = 'navigate_to_pose', NavigateToPose

    def poses(self, request):
        return [('pose', request.pose)]

    def problem(self, request):
        return None

    def task(self, request, goals, dim, planner):
        return NavigationTask('to_pose', goals, dim)

    def feedback(self, goal, progress, speed, now, frame):
        return _navigation_feedback(NavigateToPose.Feedback(), goal, progress, now, frame)


class _NavigateThroughPoses(_Action):
    name, type = 'navigate_through_poses', NavigateThroughPoses

    def task(self, request, goals, dim, planner):
        return NavigationTask('through_poses', goals, dim,
                              pass_radius=planner.settings['pass_radius'])

    def feedback(self, goal, progress, speed, now, frame):
        msg = _navigation_feedback(NavigateThroughPoses.Feedback(), goal,
                                   goal.task.progress(progress, speed), now, frame)
        msg.number_of_poses_remaining = min(goal.task.remaining(), 32767)
        return msg

    def result(self, goal, outcome):
        result = NavigateThroughPoses.Result()
        if not outcome.succeeded:
            result.error_code = error_code(outcome.reason, ComputePathThroughPoses)
            result.error_msg = outcome.message
        return result


class _FollowWaypoints(_Action):
    name, type = 'follow_waypoints', FollowWaypoints

    def problem(self, request):
        if not request.poses:
            return 'poses is empty: no waypoint given'
        if request.goal_index >= len(request.poses):
            return (f'goal_index {request.goal_index} is not one of the {len(request.poses)} '
                    f'poses (0..{len(request.poses) - 1})')
        return None

    def task(self, request, goals, dim, planner):
        return NavigationTask('waypoints', goals, dim, start=request.goal_index,
                              loops=request.number_of_loops,
                              stop_on_failure=planner.settings['stop_on_failure'])

    def feedback(self, goal, progress, speed, now, frame):
        return FollowWaypoints.Feedback(current_waypoint=goal.task.sequence.index)

    def result(self, goal, outcome):
        # As Jazzy's waypoint_follower: each missed waypoint carries the navigation's error
        # code; the result's own error_code stays NONE (its UNKNOWN and TASK_EXECUTOR_FAILED
        # are about waypoint task plugins, which orca_nav does not have).
        poses = goal.handle.request.poses
        return FollowWaypoints.Result(
            missed_waypoints=[MissedWaypoint(index=m.index, goal=poses[m.index],
                                             error_code=error_code(m.reason))
                              for m in outcome.missed],
            error_msg='' if outcome.succeeded and not outcome.missed else outcome.message)


class _ComputePathToPose(_Action):
    name, type = 'compute_path_to_pose', ComputePathToPose
    navigates = False

    def poses(self, request):
        return [('goal', request.goal)] + ([('start', request.start)] if request.use_start
                                           else [])

    def problem(self, request):
        if request.planner_id:
            return (f'planner_id {request.planner_id!r}: orca_nav plans with the planner of '
                    "the robot's kinematics; leave planner_id empty")
        return None


ACTIONS = (_NavigateToPose(), _NavigateThroughPoses(), _FollowWaypoints(), _ComputePathToPose())


# ---------------------------------------------------------------------- the mechanism
class Nav2ActionServers:
    """Every action of ACTIONS for every robot on `node` (create it in the node's configure).

    The node passes in the planner's goal ends (`end`), a goal from elsewhere that replaces a
    robot's task (`replaced`), progress at every check (`feedback`) and the outcomes of path
    queries (`answer`)."""

    def __init__(self, node, robots, frame: str, planner: Planner):
        self._node, self._frame, self._planner = node, frame, planner
        self._tasks: Dict[str, _Goal] = {}      # each robot's navigation goal
        self._goals: Dict[bytes, _Goal] = {}    # every accepted goal not finished
        self._queries: Dict[int, _Goal] = {}    # path queries out, by id
        self._query_ids = itertools.count(1)
        self._servers = [ActionServer(
            node, action.type, robot_names(robot).topic(action.name),
            execute_callback=self._execute,
            goal_callback=partial(self._check, robot, action),
            handle_accepted_callback=partial(self._accepted, robot, action),
            cancel_callback=self._cancel_requested)
            for robot in robots for action in ACTIONS]

    # ---- inputs from the node ------------------------------------------------------------------
    def end(self, ended: GoalEnd) -> None:
        """The planner ended a robot's current goal: the task goes on or ends."""
        goal = self._tasks.get(ended.robot)
        if goal is None or goal.end.done():
            return
        following = goal.task.ended(ended, node_now(self._node))
        if following is not None:
            self._planner.set_goal(goal.robot, following)
        else:
            self._finish_task(goal)

    def replaced(self, robot: str) -> None:
        """A goal from elsewhere (goal_pose) replaces the robot's task."""
        self._abort(robot, 'replaced by a goal on goal_pose')

    def feedback(self, robot: str, progress: Optional[Progress]) -> None:
        goal = self._tasks.get(robot)
        if goal is None or progress is None or goal.end.done():
            return
        now = node_now(self._node)
        following = goal.task.moved(progress.pose[:-1], now)
        if following is not None:
            self._planner.set_goal(robot, following)
        goal.handle.publish_feedback(goal.action.feedback(
            goal, progress, self._planner.speed(robot), now, self._frame))

    def answer(self, outcome: PlanOutcome) -> None:
        """A path query's plan (or why there is none)."""
        goal = self._queries.pop(outcome.request.query, None)
        if goal is None or goal.end.done():
            return      # canceled meanwhile
        if outcome.reference is None:
            self._path_failed(goal, outcome.result.status.value, outcome.result.message)
            return
        result = ComputePathToPose.Result(
            path=reference_to_path(outcome.reference, self._frame, outcome.request.start.stamp_s),
            planning_time=seconds_to_duration(outcome.result.stats.plan_time))
        goal.finish(GoalStatus.STATUS_SUCCEEDED, result)

    # ---- action server callbacks (executor thread) ---------------------------------------------
    def _check(self, robot: str, action: _Action, request) -> GoalResponse:
        problem = 'planner_node is not active' if not self._node.active else \
            action.problem(request)
        if problem is None:
            try:
                self._poses(action, request)
            except ValueError as err:
                problem = str(err)
        if problem is not None:
            self._node.get_logger().warning(f'{robot}: {action.name} goal rejected: {problem}')
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _poses(self, action: _Action, request) -> List[Pose]:
        """The goal's poses as (x, y, z, yaw); ValueError naming the field of a bad one."""
        poses = []
        for field, msg in action.poses(request):
            try:
                poses.append(pose_from_msg(msg, self._frame))
            except ValueError as err:
                raise ValueError(f'{field}.{err}') from None
        return poses

    def _accepted(self, robot: str, action: _Action, handle) -> None:
        goal = _Goal(action, robot, handle, node_now(self._node))
        self._goals[bytes(handle.goal_id.uuid)] = goal
        handle.execute()
        poses = self._poses(action, handle.request)
        if not action.navigates:
            query = next(self._query_ids)
            self._queries[query] = goal
            failed = self._planner.plan_path(robot, query, poses[0],
                                             poses[1] if len(poses) > 1 else None)
            if failed is not None:
                del self._queries[query]
                self._path_failed(goal, failed.reason, failed.message)
            return
        self._abort(robot, f'replaced by a new {action.name} goal')
        goal.task = action.task(handle.request, poses, self._planner.dim(robot), self._planner)
        self._tasks[robot] = goal
        self._planner.set_goal(robot, goal.task.goal())

    def _cancel_requested(self, handle) -> CancelResponse:
        goal = self._goals.get(bytes(handle.goal_id.uuid))
        if goal is None or goal.end.done():
            return CancelResponse.REJECT
        if goal.task is not None:
            self._planner.cancel(goal.robot)
        goal.finish(GoalStatus.STATUS_CANCELED, goal.action.type.Result())
        return CancelResponse.ACCEPT

    async def _execute(self, handle):
        goal = self._goals[bytes(handle.goal_id.uuid)]
        status, result = await goal.end
        del self._goals[bytes(handle.goal_id.uuid)]
        if self._tasks.get(goal.robot) is goal:
            del self._tasks[goal.robot]
        if status == GoalStatus.STATUS_SUCCEEDED:
            handle.succeed()
        elif status == GoalStatus.STATUS_ABORTED:
            handle.abort()
        else:
            handle.canceled()
        return result

    # ---- endings ---------------------------------------------------------------------------------
    def _finish_task(self, goal: _Goal) -> None:
        outcome = goal.task.outcome
        goal.finish(GoalStatus.STATUS_SUCCEEDED if outcome.succeeded else
                    GoalStatus.STATUS_ABORTED, goal.action.result(goal, outcome))

    def _abort(self, robot: str, message: str) -> None:
        """Ends the robot's navigation task, if any, as aborted with `message`."""
        goal = self._tasks.get(robot)
        if goal is not None and not goal.end.done():
            goal.finish(GoalStatus.STATUS_ABORTED,
                        goal.action.result(goal, TaskOutcome(False, 'replaced', message,
                                                             tuple(goal.task.sequence.missed))))

    def _path_failed(self, goal: _Goal, reason: str, message: str) -> None:
        goal.finish(GoalStatus.STATUS_ABORTED, ComputePathToPose.Result(
            error_code=error_code(reason), error_msg=message))
