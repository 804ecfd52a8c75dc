"""A fleet driven over DDS with the calls of nav2_simple_commander's BasicNavigator (Jazzy):
waitUntilNav2Active, getPath, goToPose, followWaypoints, goThroughPoses and cancelTask, one
navigator per robot namespace, on the embedded simulator in lockstep with planner_node and
orca_node, as `ros2 launch` runs them.

Two navigators run the same scenario:

* `rclpy`: plain rclpy clients written here, asking for exactly what BasicNavigator asks for
  (the same action and service names relative to the robot's namespace, the same goal fields,
  the lifecycle GetState of the navigator until it is active). It always runs.
* `nav2_simple_commander`: BasicNavigator itself, where `nav2_simple_commander` imports. It is
  not on PyPI: install it from a navigation2 checkout (docs/nav2.md says how) to run it.
"""
import enum
import math
import time

import pytest

rclpy = pytest.importorskip('rclpy')
nav2_msgs = pytest.importorskip('nav2_msgs.action')
from action_msgs.msg import GoalStatus  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from lifecycle_msgs.srv import GetState  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from trajectory_msgs.msg import MultiDOFJointTrajectory  # noqa: E402

from orca_nav.bringup.fleet_file import load_fleet_config  # noqa: E402
from orca_nav.bringup.graph import describe_graph  # noqa: E402
from orca_nav.bringup.runner import run_graph  # noqa: E402
from orca_nav.ros.convert import latched_qos, yaw_to_quaternion  # noqa: E402

from conftest import REPO  # noqa: E402
from ros_harness import WAIT_S  # noqa: E402

pytestmark = pytest.mark.ros
NavigateToPose, FollowWaypoints = nav2_msgs.NavigateToPose, nav2_msgs.FollowWaypoints
NavigateThroughPoses = nav2_msgs.NavigateThroughPoses
ComputePathToPose = nav2_msgs.ComputePathToPose
TaskResult = enum.Enum('TaskResult', 'UNKNOWN SUCCEEDED CANCELED FAILED')
TOLERANCE = 0.25        # the fleet's goal_tolerance
# What orca_nav answers waitUntilNav2Active with (docs/nav2.md): planner_node's state in the
# robot's namespace; no localizer lifecycle node.
ACTIVE_ARGS = {'navigator': 'planner_node', 'localizer': 'robot_localization'}


def pose(x, y, yaw=0.0):
    msg = PoseStamped()
    msg.header.frame_id = 'map'
    msg.pose.position.x, msg.pose.position.y = float(x), float(y)
    msg.pose.orientation = yaw_to_quaternion(yaw)
    return msg


class RclpyNavigator:
    """BasicNavigator's calls with plain rclpy clients spun by the running graph. Every
    client is made before its node joins the graph (whose executor spins on another thread)."""

    def __init__(self, graph, namespace):
        self.graph, self.namespace = graph, namespace
        node = rclpy.create_node('rclpy_navigator', namespace=namespace, context=graph.context)
        self.clients = {action: ActionClient(node, action, name) for action, name in (
            (NavigateToPose, 'navigate_to_pose'), (FollowWaypoints, 'follow_waypoints'),
            (NavigateThroughPoses, 'navigate_through_poses'),
            (ComputePathToPose, 'compute_path_to_pose'))}
        graph.add_node(node)
        self.goal_handle = self.result_future = self.feedback = self.status = None

    def _done(self, future, timeout=WAIT_S):
        assert self.graph.wait_for(future.done, timeout=timeout)
        return future.result()

    def waitUntilNav2Active(self, navigator='bt_navigator', localizer='amcl'):
        # As BasicNavigator: the localizer's lifecycle state unless it is robot_localization
        # (amcl's initial pose exchange is left out: orca_nav has no amcl), then the navigator's,
        # each until it says 'active'.
        names = ([] if localizer == 'robot_localization' else [localizer]) + [navigator]
        for name in names:
            node = rclpy.create_node(f'state_of_{name.strip("/").replace("/", "_")}',
                                     namespace=self.namespace, context=self.graph.context)
            client = node.create_client(GetState, f'{name}/get_state')
            self.graph.add_node(node)
            assert self.graph.wait_for(client.service_is_ready, timeout=WAIT_S), name
            deadline = time.monotonic() + WAIT_S
            while self._done(client.call_async(GetState.Request())).current_state.label != \
                    'active':
                assert time.monotonic() < deadline, f'{name} never became active'

    def _send(self, action, goal):
        client = self.clients[action]
        assert self.graph.wait_for(client.server_is_ready, timeout=WAIT_S)
        self.goal_handle = self._done(client.send_goal_async(goal, self._on_feedback))
        if not self.goal_handle.accepted:
            return False
        self.result_future = self.goal_handle.get_result_async()
        return True

    def _on_feedback(self, msg):
        self.feedback = msg.feedback

    def goToPose(self, pose, behavior_tree=''):
        return self._send(NavigateToPose, NavigateToPose.Goal(pose=pose,
                                                              behavior_tree=behavior_tree))

    def followWaypoints(self, poses):
        return self._send(FollowWaypoints, FollowWaypoints.Goal(poses=poses))

    def goThroughPoses(self, poses, behavior_tree=''):
        return self._send(NavigateThroughPoses, NavigateThroughPoses.Goal(
            poses=poses, behavior_tree=behavior_tree))

    def getPath(self, start, goal, planner_id='', use_start=False):
        if not self._send(ComputePathToPose, ComputePathToPose.Goal(
                start=start, goal=goal, planner_id=planner_id, use_start=use_start)):
            return None
        answer = self._done(self.result_future)
        self.status = answer.status
        return answer.result.path if self.status == GoalStatus.STATUS_SUCCEEDED else None

    def cancelTask(self):
        if self.result_future:
            self._done(self.goal_handle.cancel_goal_async())

    def isTaskComplete(self):
        if not self.result_future:
            return True
        if not self.graph.wait_for(self.result_future.done, timeout=0.1):
            return False
        self.status = self.result_future.result().status
        return True

    def getFeedback(self):
        return self.feedback

    def getResult(self):
        return {GoalStatus.STATUS_SUCCEEDED: TaskResult.SUCCEEDED,
                GoalStatus.STATUS_ABORTED: TaskResult.FAILED,
                GoalStatus.STATUS_CANCELED: TaskResult.CANCELED}.get(self.status,
                                                                     TaskResult.UNKNOWN)

    def destroy_node(self):
        # The graph destroys the node, but an action client holds its node: one left alive
        # keeps the node in the DDS graph of every later test.
        for client in self.clients.values():
            client.destroy()


@pytest.fixture
def default_context():
    """BasicNavigator is a node of rclpy's default context and spins itself."""
    rclpy.init()
    yield
    rclpy.try_shutdown()


def basic_navigators(graph, namespaces, default_context):
    module = pytest.importorskip('nav2_simple_commander.robot_navigator',
                                 reason='nav2_simple_commander is not installed (not on PyPI)')
    return [module.BasicNavigator(namespace=ns) for ns in namespaces]


NAVIGATORS = {'rclpy': lambda graph, namespaces, _: [RclpyNavigator(graph, ns)
                                                      for ns in namespaces],
              'nav2_simple_commander': basic_navigators}


def fleet():
    return load_fleet_config({
        'name': 'commanded', 'map': str(REPO / 'config' / 'maps' / 'open_40x40.yaml'),
        'defaults': {'kinematics': 'holonomic', 'radius': 0.25, 'max_speed': 1.0,
                     'max_accel': 1.0},
        'robots': [{'name': 'robot0', 'start': [0.0, 0.0, 0.0]},
                   {'name': 'robot1', 'start': [0.0, 3.0, 0.0]}],
        'planner': {'enabled': True},
        'orca_node': {'goal_tolerance': TOLERANCE},
        'planner_node': {'goal_tolerance': TOLERANCE},
        'demo': {'goal_tolerance': TOLERANCE}})


def under_way(feedback):
    """navigate_to_pose's feedback says the robot is more than 1 m into its 15 m."""
    return isinstance(feedback, NavigateToPose.Feedback) and feedback.distance_remaining < 14.0


def complete(*navigators, timeout=120.0):
    """Polls isTaskComplete as BasicNavigator's users do, until every navigator's task ended."""
    deadline = time.monotonic() + timeout
    pending = list(navigators)
    while pending:
        assert time.monotonic() < deadline, 'a task did not complete'
        pending = [nav for nav in pending if not nav.isTaskComplete()]


@pytest.mark.parametrize('kind', list(NAVIGATORS))
def test_a_fleet_follows_basic_navigators_calls(kind, request):
    context = request.getfixturevalue('default_context') if kind != 'rclpy' else None
    with run_graph(describe_graph(fleet(), sim_overrides={'lockstep': True})) as graph:
        positions = {}
        probe = rclpy.create_node('odometry_probe', context=graph.context)   # joins once subscribed
        for robot in ('robot0', 'robot1'):
            probe.create_subscription(Odometry, f'/{robot}/odom', lambda m, r=robot: positions.
                                      __setitem__(r, (m.pose.pose.position.x,
                                                      m.pose.pose.position.y)),
                                      qos_profile_sensor_data)
        trajectories = []
        probe.create_subscription(MultiDOFJointTrajectory, '/robot0/trajectory',
                                  trajectories.append, latched_qos())
        graph.add_node(probe)

        def at(robot, x, y):
            return math.dist(positions[robot], (x, y)) <= TOLERANCE + 0.05
        assert graph.wait_for(lambda: len(positions) == 2, timeout=WAIT_S)   # odometry flows

        nav0, nav1 = NAVIGATORS[kind](graph, ['robot0', 'robot1'], context)
        try:
            for nav in (nav0, nav1):
                nav.waitUntilNav2Active(**ACTIVE_ARGS)

            path = nav0.getPath(pose(0.0, 0.0), pose(3.0, 0.0))
            assert path is not None and path.header.frame_id == 'map'
            end = path.poses[-1].pose.position
            assert math.dist((end.x, end.y), (3.0, 0.0)) < 0.1
            assert at('robot0', 0.0, 0.0)                   # only planned, not driven

            assert nav0.goToPose(pose(3.0, 0.0)) and nav1.goToPose(pose(3.0, 3.0))
            complete(nav0, nav1)
            assert nav0.getResult().name == nav1.getResult().name == 'SUCCEEDED'
            assert at('robot0', 3.0, 0.0) and at('robot1', 3.0, 3.0)

            assert nav0.followWaypoints([pose(4.0, -1.0), pose(5.0, 0.0)])
            assert nav1.goThroughPoses([pose(4.0, 4.0), pose(5.0, 3.0)])
            complete(nav0, nav1)
            assert nav0.getResult().name == nav1.getResult().name == 'SUCCEEDED'
            assert list(nav0.result_future.result().result.missed_waypoints) == []
            assert at('robot0', 5.0, 0.0) and at('robot1', 5.0, 3.0)

            assert nav0.goToPose(pose(15.0, 0.0))
            deadline = time.monotonic() + WAIT_S
            while not under_way(nav0.getFeedback()):      # (the last task's feedback stays)
                assert not nav0.isTaskComplete() and time.monotonic() < deadline
            nav0.cancelTask()
            complete(nav0)
            assert nav0.getResult().name == 'CANCELED'
            assert graph.wait_for(lambda: trajectories and not trajectories[-1].points,
                                  timeout=WAIT_S)       # planner_node holds it still
            assert not at('robot0', 15.0, 0.0)
        finally:
            for nav in (nav0, nav1):
                nav.destroy_node()
