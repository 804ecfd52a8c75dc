"""`/<robot>/navigate_to_pose` (nav2_msgs/action/NavigateToPose) of planner_node, driven by a real
rclpy ActionClient over DDS: success with feedback, aborts with Nav2's error codes, cancel,
rejection, replacement. The test plays the robot's odometry itself (the robot "drives" where
the test says)."""
import pytest

rclpy = pytest.importorskip('rclpy')
nav2_msgs = pytest.importorskip('nav2_msgs.action')
from action_msgs.msg import GoalStatus  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from test_nav2_actions import Client  # noqa: E402
from test_planner_node import HOLONOMIC, Ros, nonempty  # noqa: E402

from orca_nav.ros.convert import yaw_to_quaternion  # noqa: E402

from ros_harness import harness_fixture  # noqa: E402
from scenes import room  # noqa: E402

NavigateToPose = nav2_msgs.NavigateToPose
pytestmark = pytest.mark.ros


class Navigator(Client):
    """robot0's navigate_to_pose client, as a fleet manager would hold one."""

    def __init__(self, ros):
        super().__init__(ros, NavigateToPose, 'navigate_to_pose')

    def send(self, x, y, yaw=0.0, frame='map'):
        goal = NavigateToPose.Goal()
        goal.pose.header.frame_id = frame
        goal.pose.pose.position.x, goal.pose.pose.position.y = float(x), float(y)
        goal.pose.pose.orientation = yaw_to_quaternion(yaw)
        return super().send(goal)


ros = harness_fixture(Ros)


def started(ros, *extra):
    ros.start(HOLONOMIC, Parameter('jam_timeout', value=1.0), *extra)
    ros.publish_map(room())
    ros.odom(2.0, 5.0, stamp_s=10.0)
    return Navigator(ros)


def test_a_goal_succeeds_on_arrival_with_feedback_on_the_way(ros):
    nav = started(ros, Parameter('jam_timeout', value=60.0))
    handle = nav.send(8.0, 5.0)
    assert handle.accepted
    ros.planned()
    assert ros.wait_for(lambda: nav.feedback)
    first = nav.feedback[-1].feedback
    assert first.current_pose.header.frame_id == 'map'
    assert first.current_pose.pose.position.x == pytest.approx(2.0)
    assert first.distance_remaining == pytest.approx(6.0, abs=0.1)
    assert first.estimated_time_remaining.sec >= 6 and first.number_of_recoveries == 0
    for k, x in enumerate((4.0, 6.0)):
        ros.odom(x, 5.0, stamp_s=11.0 + k)
        assert ros.wait_for(lambda: nav.feedback[-1].feedback.current_pose.pose.position.x == x)
        assert nav.feedback[-1].feedback.distance_remaining == pytest.approx(8.0 - x, abs=0.1)
    ros.odom(8.0, 5.0, stamp_s=13.0)
    result = nav.result(handle)
    assert result.status == GoalStatus.STATUS_SUCCEEDED
    assert result.result.error_code == 0


@pytest.mark.parametrize('goal, code, words', [
    ((5.0, 0.05), 206, 'goal_in_collision'),        # in the wall
    ((15.0, 5.0), 204, 'out_of_map')])
def test_a_goal_the_planner_cannot_take_aborts_with_nav2s_code_and_reason(ros, goal, code, words):
    nav = started(ros)
    result = nav.result(nav.send(*goal))
    assert result.status == GoalStatus.STATUS_ABORTED
    assert result.result.error_code == code and words in result.result.error_msg


def test_a_robot_that_gets_no_closer_aborts_jammed(ros):
    nav = started(ros)
    handle = nav.send(8.0, 5.0)
    ros.planned()
    result = nav.result(handle)     # its odometry keeps saying (2, 5): jam_timeout is 1 s
    assert result.status == GoalStatus.STATUS_ABORTED
    assert result.result.error_code == 105 and 'jammed' in result.result.error_msg


def test_cancel_holds_the_robot_still(ros):
    nav = started(ros, Parameter('jam_timeout', value=60.0))
    handle = nav.send(8.0, 5.0)
    ros.planned()
    count = len(ros.trajectories)
    cancel = handle.cancel_goal_async()
    assert ros.wait_for(cancel.done) and cancel.result().goals_canceling
    assert nav.result(handle).status == GoalStatus.STATUS_CANCELED
    assert ros.wait_for(lambda: len(ros.trajectories) > count)
    assert ros.trajectories[-1].points == []        # the empty trajectory: hold still


def test_bad_goals_are_rejected_and_a_new_goal_replaces_the_old(ros):
    nav = started(ros, Parameter('jam_timeout', value=60.0))
    assert not nav.send(8.0, 5.0, frame='odom').accepted
    first = nav.send(8.0, 5.0)
    second = nav.send(7.0, 7.0)
    replaced = nav.result(first)
    assert replaced.status == GoalStatus.STATUS_ABORTED and 'replaced' in replaced.result.error_msg
    assert ros.wait_for(lambda: any(abs(t.points[-1].transforms[0].translation.y - 7.0) < 0.1
                                    for t in nonempty(ros.trajectories)))
    # A goal on goal_pose replaces the action goal too.
    ros.goal(3.0, 3.0)
    replaced = nav.result(second)
    assert replaced.status == GoalStatus.STATUS_ABORTED and 'goal_pose' in replaced.result.error_msg
