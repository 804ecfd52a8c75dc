"""planner_node's other Nav2 actions per robot, driven by real rclpy ActionClients over DDS:
`follow_waypoints`, `navigate_through_poses` and `compute_path_to_pose`, with Nav2's error codes,
rejections, replacement across actions, and planner_node's lifecycle state in the robot's
namespace. The test plays the robot's odometry itself (navigate_to_pose: test_navigate_to_pose.py).
"""
import time

import pytest

rclpy = pytest.importorskip('rclpy')
nav2_msgs = pytest.importorskip('nav2_msgs.action')
from action_msgs.msg import GoalStatus  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from lifecycle_msgs.srv import GetState  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from test_planner_node import HOLONOMIC, Ros, nonempty  # noqa: E402

from orca_nav.ros.convert import yaw_to_quaternion  # noqa: E402

from ros_harness import WAIT_S, harness_fixture  # noqa: E402
from scenes import room  # noqa: E402

FollowWaypoints = nav2_msgs.FollowWaypoints
NavigateThroughPoses = nav2_msgs.NavigateThroughPoses
NavigateToPose = nav2_msgs.NavigateToPose
ComputePathToPose = nav2_msgs.ComputePathToPose
pytestmark = pytest.mark.ros
IN_THE_WALL = (5.0, 0.05)


def pose(x, y, frame='map'):
    msg = PoseStamped()
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y = float(x), float(y)
    msg.pose.orientation = yaw_to_quaternion(0.0)
    return msg


class Client:
    """An ActionClient for one of robot0's actions."""

    def __init__(self, ros, action, name):
        self.ros, self.feedback = ros, []
        self.client = ActionClient(ros.probe, action, f'/robot0/{name}')
        assert ros.wait_for(self.client.server_is_ready)

    def send(self, goal):
        sent = self.client.send_goal_async(goal, feedback_callback=self.feedback.append)
        assert self.ros.wait_for(sent.done)
        return sent.result()

    def result(self, handle):
        future = handle.get_result_async()
        assert self.ros.wait_for(future.done)
        return future.result()

    def seen(self, predicate):
        return self.ros.wait_for(lambda: any(predicate(f.feedback) for f in self.feedback))


ros = harness_fixture(Ros)


def started(ros, *extra):
    ros.start(HOLONOMIC, Parameter('jam_timeout', value=60.0), *extra)
    ros.publish_map(room())
    ros.odom(2.0, 5.0, stamp_s=10.0)


def planned_to(ros, x, y):
    """Waits for a trajectory that ends at (x, y)."""
    assert ros.wait_for(lambda: any(
        abs(t.points[-1].transforms[0].translation.x - x) < 0.1
        and abs(t.points[-1].transforms[0].translation.y - y) < 0.1
        for t in nonempty(ros.trajectories))), (x, y)


def waypoints(*points, goal_index=0, loops=0):
    return FollowWaypoints.Goal(poses=[pose(*p) for p in points], goal_index=goal_index,
                                number_of_loops=loops)


def test_waypoints_are_reached_in_turn_and_a_missed_one_is_listed_with_nav2s_code(ros):
    started(ros, Parameter('stop_on_failure', value=False))
    follow = Client(ros, FollowWaypoints, 'follow_waypoints')
    handle = follow.send(waypoints((4.0, 5.0), IN_THE_WALL, (7.0, 7.0)))
    assert handle.accepted
    planned_to(ros, 4.0, 5.0)
    assert follow.seen(lambda f: f.current_waypoint == 0)
    ros.odom(4.0, 5.0, stamp_s=11.0)        # at the first: the second is missed, on to the third
    planned_to(ros, 7.0, 7.0)
    assert follow.seen(lambda f: f.current_waypoint == 2)
    ros.odom(7.0, 7.0, stamp_s=12.0)
    result = follow.result(handle)
    assert result.status == GoalStatus.STATUS_SUCCEEDED
    (missed,) = result.result.missed_waypoints
    assert (missed.index, missed.error_code) == (1, ComputePathToPose.Result.GOAL_OCCUPIED)
    assert missed.goal == pose(*IN_THE_WALL)
    assert result.result.error_code == FollowWaypoints.Result.NONE


def test_a_missed_waypoint_stops_the_goal_by_default(ros):
    started(ros)
    follow = Client(ros, FollowWaypoints, 'follow_waypoints')
    result = follow.result(follow.send(waypoints(IN_THE_WALL, (7.0, 7.0))))
    assert result.status == GoalStatus.STATUS_ABORTED
    assert [m.index for m in result.result.missed_waypoints] == [0]
    assert 'goal_in_collision' in result.result.error_msg
    assert not any(abs(t.points[-1].transforms[0].translation.y - 7.0) < 0.1
                   for t in nonempty(ros.trajectories))         # the second never planned


def test_waypoints_start_at_goal_index_and_loop(ros):
    started(ros)
    follow = Client(ros, FollowWaypoints, 'follow_waypoints')
    handle = follow.send(waypoints((4.0, 5.0), (6.0, 5.0), goal_index=1, loops=1))
    for k, x in enumerate((6.0, 4.0, 6.0)):          # index 1, then a whole round
        planned_to(ros, x, 5.0)
        count = len(nonempty(ros.trajectories))
        ros.odom(x, 5.0, stamp_s=11.0 + k)
        if k < 2:
            assert ros.wait_for(lambda: len(nonempty(ros.trajectories)) > count)
    result = follow.result(handle)
    assert result.status == GoalStatus.STATUS_SUCCEEDED
    assert list(result.result.missed_waypoints) == []


def test_through_poses_passes_the_intermediate_poses_and_ends_at_the_last(ros):
    started(ros)
    through = Client(ros, NavigateThroughPoses, 'navigate_through_poses')
    handle = through.send(NavigateThroughPoses.Goal(poses=[pose(4.0, 5.0), pose(6.0, 5.0),
                                                           pose(8.0, 5.0)]))
    planned_to(ros, 4.0, 5.0)
    assert through.seen(lambda f: f.number_of_poses_remaining == 3
                        and abs(f.distance_remaining - 6.0) < 0.2)
    ros.odom(3.5, 5.0, stamp_s=11.0)        # within 0.7 m of the first: on to the second
    planned_to(ros, 6.0, 5.0)
    assert through.seen(lambda f: f.number_of_poses_remaining == 2)
    ros.odom(5.5, 5.0, stamp_s=12.0)
    planned_to(ros, 8.0, 5.0)
    ros.odom(8.0, 5.0, stamp_s=13.0)
    result = through.result(handle)
    assert result.status == GoalStatus.STATUS_SUCCEEDED and result.result.error_code == 0


def test_through_poses_aborts_with_the_through_poses_planner_code(ros):
    started(ros)
    through = Client(ros, NavigateThroughPoses, 'navigate_through_poses')
    result = through.result(through.send(NavigateThroughPoses.Goal(
        poses=[pose(*IN_THE_WALL), pose(8.0, 5.0)])))
    assert result.status == GoalStatus.STATUS_ABORTED
    assert result.result.error_code == \
        nav2_msgs.ComputePathThroughPoses.Result.GOAL_OCCUPIED      # 306


def test_compute_path_returns_the_plan_without_executing_it(ros):
    ros.start(HOLONOMIC)
    ros.publish_map(room())
    compute = Client(ros, ComputePathToPose, 'compute_path_to_pose')
    # Without the robot's pose yet, as Nav2's planner server: TF_ERROR (once planner_node has
    # the latched map; before, it says it has no map).
    deadline = time.monotonic() + WAIT_S
    while True:
        early = compute.result(compute.send(ComputePathToPose.Goal(goal=pose(8.0, 5.0))))
        if 'no map yet' not in early.result.error_msg:
            break
        assert time.monotonic() < deadline, early.result.error_msg
    assert early.status == GoalStatus.STATUS_ABORTED
    assert early.result.error_code == ComputePathToPose.Result.TF_ERROR
    ros.odom(2.0, 5.0, stamp_s=10.0)
    deadline = time.monotonic() + WAIT_S
    while True:         # until planner_node has taken the odometry in
        result = compute.result(compute.send(ComputePathToPose.Goal(goal=pose(8.0, 5.0))))
        if result.result.error_code != ComputePathToPose.Result.TF_ERROR:
            break
        assert time.monotonic() < deadline, result.result.error_msg
    assert result.status == GoalStatus.STATUS_SUCCEEDED
    path = result.result.path
    assert path.header.frame_id == 'map' and len(path.poses) > 2
    first, last = path.poses[0].pose.position, path.poses[-1].pose.position
    assert (first.x, first.y) == pytest.approx((2.0, 5.0), abs=0.05)
    assert (last.x, last.y) == pytest.approx((8.0, 5.0), abs=0.1)
    assert result.result.error_code == 0
    assert nonempty(ros.trajectories) == []         # nothing executed
    given = compute.result(compute.send(ComputePathToPose.Goal(
        goal=pose(8.0, 5.0), start=pose(3.0, 3.0), use_start=True)))
    start = given.result.path.poses[0].pose.position
    assert (start.x, start.y) == pytest.approx((3.0, 3.0), abs=0.05)
    blocked = compute.result(compute.send(ComputePathToPose.Goal(goal=pose(*IN_THE_WALL))))
    assert blocked.status == GoalStatus.STATUS_ABORTED
    assert blocked.result.error_code == ComputePathToPose.Result.GOAL_OCCUPIED
    assert 'occupied' in blocked.result.error_msg


@pytest.mark.parametrize('action, name, goal', [
    (FollowWaypoints, 'follow_waypoints', FollowWaypoints.Goal()),
    (FollowWaypoints, 'follow_waypoints', waypoints((4.0, 5.0), goal_index=1)),
    (NavigateThroughPoses, 'navigate_through_poses', NavigateThroughPoses.Goal(
        poses=[pose(4.0, 5.0), pose(6.0, 5.0, frame='odom')])),
    (ComputePathToPose, 'compute_path_to_pose', ComputePathToPose.Goal(
        goal=pose(8.0, 5.0), planner_id='GridBased')),
    (ComputePathToPose, 'compute_path_to_pose', ComputePathToPose.Goal(
        goal=pose(8.0, 5.0), start=pose(float('nan'), 1.0), use_start=True))])
def test_goals_it_cannot_take_are_rejected(ros, action, name, goal):
    started(ros)
    assert not Client(ros, action, name).send(goal).accepted


def test_a_goal_of_another_action_replaces_the_robots_task(ros):
    started(ros)
    navigate = Client(ros, NavigateToPose, 'navigate_to_pose')
    first = navigate.send(NavigateToPose.Goal(pose=pose(8.0, 5.0)))
    follow = Client(ros, FollowWaypoints, 'follow_waypoints')
    second = follow.send(waypoints((4.0, 7.0)))
    replaced = navigate.result(first)
    assert replaced.status == GoalStatus.STATUS_ABORTED
    assert 'replaced by a new follow_waypoints goal' in replaced.result.error_msg
    planned_to(ros, 4.0, 7.0)
    cancel = second.cancel_goal_async()
    assert ros.wait_for(cancel.done) and cancel.result().goals_canceling
    assert follow.result(second).status == GoalStatus.STATUS_CANCELED
    assert ros.wait_for(lambda: ros.trajectories[-1].points == [])     # held still


def test_planner_nodes_lifecycle_state_answers_in_the_robots_namespace(ros):
    started(ros)
    client = ros.probe.create_client(GetState, '/robot0/planner_node/get_state')
    assert ros.wait_for(client.service_is_ready)
    answer = client.call_async(GetState.Request())
    assert ros.wait_for(answer.done)
    assert answer.result().current_state.label == 'active'
    ros.node.trigger_deactivate()
    answer = client.call_async(GetState.Request())
    assert ros.wait_for(answer.done)
    assert answer.result().current_state.label == 'inactive'
