"""planner_node over real rclpy/DDS: goals -> Path + trajectory, replans, failures, bad input."""
import math
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from rclpy.executors import MultiThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from trajectory_msgs.msg import MultiDOFJointTrajectory  # noqa: E402

from orca_nav.core.grid import OccupancyGrid  # noqa: E402
from orca_nav.ros.convert import (grid_to_msg, latched_qos,  # noqa: E402
                                  state_to_odom, yaw_to_quaternion)
from orca_nav.ros.planner_node import PlannerNode  # noqa: E402
from orca_nav.ros.trajectory_msgs import msg_to_reference  # noqa: E402
from ros_harness import wait_for  # noqa: E402

pytestmark = pytest.mark.ros

RES = 0.1


def room(size=10.0, blocks=()):
    """A walled square room (0..size) with extra occupied boxes (xmin, ymin, xmax, ymax)."""
    n = int(round(size / RES))
    occ = np.zeros((n, n), bool)
    occ[:2, :] = occ[-2:, :] = occ[:, :2] = occ[:, -2:] = True
    centres = (np.arange(n) + 0.5) * RES
    for x0, y0, x1, y1 in blocks:
        occ[np.ix_((centres >= y0) & (centres <= y1), (centres >= x0) & (centres <= x1))] = True
    return OccupancyGrid(occ, RES, (0.0, 0.0))


class Harness:
    """A PlannerNode plus a test node that plays map server, odometry source and goal sender."""

    def __init__(self, robots, extra_params=None):
        self.context = rclpy.Context()
        rclpy.init(args=[], context=self.context)
        params = {'robots': list(robots), 'plan_time_budget': 2.0, 'replan_check_period': 0.1,
                  'min_replan_interval': 0.5}
        for name, fields in robots.items():
            params.update({f'{name}.{k}': v for k, v in fields.items()})
        params.update(extra_params or {})
        self.planner = PlannerNode(context=self.context, parameter_overrides=[
            Parameter(k, value=v) for k, v in params.items()])
        self.node = rclpy.create_node('planner_test_driver', context=self.context)
        self.lock = threading.Lock()
        self.paths = {n: [] for n in robots}
        self.trajectories = {n: [] for n in robots}
        self.diagnostics = []
        self.map_pub = self.node.create_publisher(OccupancyGridMsg, '/map', latched_qos())
        self.odom_pubs = {n: self.node.create_publisher(Odometry, f'/{n}/odom', 10) for n in robots}
        self.goal_pubs = {n: self.node.create_publisher(PoseStamped, f'/{n}/goal_pose', 10)
                          for n in robots}
        for n in robots:
            self.node.create_subscription(Path, f'/{n}/plan', lambda m, n=n: self._add(self.paths[n], m), 10)
            self.node.create_subscription(MultiDOFJointTrajectory, f'/{n}/trajectory',
                                          lambda m, n=n: self._add(self.trajectories[n], m), 10)
        self.node.create_subscription(DiagnosticArray, '/diagnostics',
                                      lambda m: self._add(self.diagnostics, m), 50)
        self.poses = {}
        self.executor = MultiThreadedExecutor(num_threads=3, context=self.context)
        self.executor.add_node(self.planner)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()
        self.node.create_timer(0.05, self._publish_odom)

    def _add(self, bucket, msg):
        with self.lock:
            bucket.append(msg)

    def _publish_odom(self):
        stamp = self.node.get_clock().now().to_msg()
        for name, (x, y, yaw) in list(self.poses.items()):
            self.odom_pubs[name].publish(state_to_odom((x, y, 0.0), yaw, (0.0, 0.0, 0.0), 0.0,
                                                       stamp, 'map', f'{name}/base_link'))

    def set_pose(self, name, x, y, yaw=0.0):
        self.poses[name] = (x, y, yaw)

    def publish_map(self, grid):
        self.map_pub.publish(grid_to_msg(grid, 'map', self.node.get_clock().now().to_msg()))

    def send_goal(self, name, x, y, yaw=0.0, frame='map'):
        msg = PoseStamped()
        msg.header.frame_id = frame
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.pose.position.x, msg.pose.position.y = float(x), float(y)
        msg.pose.orientation = yaw_to_quaternion(yaw)
        self.goal_pubs[name].publish(msg)

    def wait_for(self, predicate, timeout=20.0):
        return wait_for(lambda: self._holds(predicate), timeout, period=0.05)

    def _holds(self, predicate):
        with self.lock:
            return predicate()

    def statuses(self, name):
        return [s for d in self.diagnostics for s in d.status if s.hardware_id == name]

    def close(self):
        self.executor.shutdown(timeout_sec=5.0)
        self.thread.join(timeout=5.0)
        self.planner.destroy_node()
        self.node.destroy_node()
        self.context.try_shutdown()


@pytest.fixture
def harness_factory():
    made = []

    def make(robots, extra_params=None):
        h = Harness(robots, extra_params)
        made.append(h)
        return h
    yield make
    for h in made:
        h.close()


HOLONOMIC = {'kinematics': 'holonomic', 'radius': 0.25, 'max_speed': 1.0, 'max_accel': 1.0}


def nonempty(msgs):
    return [m for m in msgs if m.points or getattr(m, 'poses', None)]


@pytest.mark.parametrize('kinematics', ['holonomic', 'diff_drive', 'car'])
def test_goal_gives_path_and_trajectory_from_robot_pose_to_goal(harness_factory, kinematics):
    robot = {**HOLONOMIC, 'kinematics': kinematics, 'min_turning_radius': 1.0}
    h = harness_factory({'robot0': robot, 'robot1': robot})
    h.publish_map(room(blocks=[(4.5, 0.0, 5.5, 6.0)]))
    h.set_pose('robot0', 2.0, 2.0, 0.3)
    h.set_pose('robot1', 2.0, 8.0, 0.0)
    time.sleep(0.3)
    h.send_goal('robot0', 8.0, 2.0, 1.0)
    assert h.wait_for(lambda: h.paths['robot0'] and h.trajectories['robot0'])
    path, traj = h.paths['robot0'][-1], h.trajectories['robot0'][-1]
    assert path.header.frame_id == 'map' and traj.header.frame_id == 'map'
    first, last = path.poses[0].pose.position, path.poses[-1].pose.position
    assert math.hypot(first.x - 2.0, first.y - 2.0) < 0.05
    assert math.hypot(last.x - 8.0, last.y - 2.0) < 0.1
    # The wall from y = 0 to 6 at x 4.5..5.5 is in the way: the path goes around it.
    assert max(p.pose.position.y for p in path.poses) > 6.0
    stamps = [p.header.stamp.sec + 1e-9 * p.header.stamp.nanosec for p in path.poses]
    assert np.all(np.diff(stamps) > 0)
    ref, start, frame = msg_to_reference(traj)
    np.testing.assert_allclose(ref.positions[0], [2.0, 2.0], atol=0.05)
    np.testing.assert_allclose(ref.positions[-1], [8.0, 2.0], atol=0.1)
    if kinematics != 'holonomic':   # hybrid A* reaches the goal heading too
        assert abs(math.remainder(ref.yaw[-1] - 1.0, 2 * math.pi)) < 0.06
        assert abs(math.remainder(ref.yaw[0] - 0.3, 2 * math.pi)) < 0.06
    assert np.linalg.norm(ref.velocities, axis=1).max() <= 1.0 + 1e-6
    point = traj.points[len(traj.points) // 2]
    assert point.velocities and point.accelerations and point.time_from_start.sec >= 0
    assert not h.trajectories['robot1']          # nothing for the robot without a goal
    # The status is periodic (status_period): wait for the first one after the plan.
    assert h.wait_for(lambda: any(s.level == DiagnosticStatus.OK and 'following' in s.message
                                  for s in h.statuses('robot0')))


def test_map_change_blocking_the_trajectory_triggers_replan(harness_factory):
    h = harness_factory({'robot0': HOLONOMIC})
    h.publish_map(room())
    h.set_pose('robot0', 2.0, 5.0)
    time.sleep(0.3)
    h.send_goal('robot0', 8.0, 5.0)
    assert h.wait_for(lambda: nonempty(h.trajectories['robot0']))
    ref, _, _ = msg_to_reference(nonempty(h.trajectories['robot0'])[-1])
    assert np.abs(ref.positions[:, 1] - 5.0).max() < 0.5     # straight across the empty room
    count = len(h.trajectories['robot0'])
    # A wall appears across the straight line; the rest of the room stays open.
    h.publish_map(room(blocks=[(4.8, 3.5, 5.2, 6.5)]))
    assert h.wait_for(lambda: len(nonempty(h.trajectories['robot0'][count:])) >= 1)
    replanned, _, _ = msg_to_reference(nonempty(h.trajectories['robot0'][count:])[-1])
    assert np.abs(replanned.positions[:, 1] - 5.0).max() > 1.5
    blocked = room(blocks=[(4.8, 3.5, 5.2, 6.5)])
    assert np.all(blocked.points_free(replanned.positions, 0.25))
    # A map change that does not touch the trajectory does not replan.
    count = len(h.trajectories['robot0'])
    h.publish_map(room(blocks=[(4.8, 3.5, 5.2, 6.5), (0.5, 9.0, 1.0, 9.5)]))
    time.sleep(1.0)
    assert len(h.trajectories['robot0']) == count


def test_goal_in_obstacle_gives_diagnostic_and_empty_trajectory(harness_factory):
    h = harness_factory({'robot0': HOLONOMIC})
    h.publish_map(room(blocks=[(6.0, 4.0, 7.0, 6.0)]))
    h.set_pose('robot0', 2.0, 5.0)
    time.sleep(0.3)
    h.send_goal('robot0', 6.5, 5.0)
    assert h.wait_for(lambda: any(s.level == DiagnosticStatus.ERROR for s in h.statuses('robot0')))
    error = [s for s in h.statuses('robot0') if s.level == DiagnosticStatus.ERROR][-1]
    assert 'goal_in_collision' in error.message
    assert h.trajectories['robot0'] and not h.trajectories['robot0'][-1].points
    assert not nonempty(h.trajectories['robot0'])
    assert h.paths['robot0'] and not h.paths['robot0'][-1].poses


@pytest.mark.parametrize('frame, x, field', [('odom', 5.0, 'header.frame_id'),
                                             ('map', float('nan'), 'pose.position.x')])
def test_bad_goal_rejected_with_warning_naming_robot_and_field(harness_factory, frame, x, field):
    h = harness_factory({'robot0': HOLONOMIC})
    h.publish_map(room())
    h.set_pose('robot0', 2.0, 5.0)
    time.sleep(0.3)
    h.send_goal('robot0', x, 5.0, frame=frame)
    assert h.wait_for(lambda: any(s.level == DiagnosticStatus.WARN and 'rejected' in s.message
                                  for s in h.statuses('robot0')))
    warn = [s for s in h.statuses('robot0') if 'rejected' in s.message][-1]
    assert 'robot0' in warn.message and field in warn.message
    time.sleep(0.5)
    assert not h.trajectories['robot0']


def test_no_map_holds_still_then_plans_when_map_arrives(harness_factory):
    h = harness_factory({'robot0': HOLONOMIC})
    h.set_pose('robot0', 2.0, 5.0)
    time.sleep(0.3)
    h.send_goal('robot0', 8.0, 5.0)
    assert h.wait_for(lambda: any('no map yet' in s.message for s in h.statuses('robot0')))
    assert h.trajectories['robot0'] and not h.trajectories['robot0'][-1].points
    h.publish_map(room())
    assert h.wait_for(lambda: nonempty(h.trajectories['robot0']))


def test_map_without_free_cell_holds_still(harness_factory):
    h = harness_factory({'robot0': HOLONOMIC})
    h.publish_map(OccupancyGrid(np.ones((50, 50), bool), RES, (0.0, 0.0)))
    h.set_pose('robot0', 2.0, 2.0)
    time.sleep(0.3)
    h.send_goal('robot0', 3.0, 3.0)
    assert h.wait_for(lambda: any('no free cell' in s.message for s in h.statuses('robot0')))
    assert not nonempty(h.trajectories['robot0'])


def test_newest_goal_replaces_the_running_plan(harness_factory):
    h = harness_factory({'robot0': HOLONOMIC})
    h.publish_map(room(blocks=[(4.5, 0.0, 5.5, 7.0)]))
    h.set_pose('robot0', 2.0, 2.0)
    time.sleep(0.3)
    h.send_goal('robot0', 8.0, 2.0)
    h.send_goal('robot0', 2.0, 8.0)
    assert h.wait_for(lambda: any(np.allclose(msg_to_reference(m)[0].positions[-1], [2, 8], atol=0.1)
                                  for m in nonempty(h.trajectories['robot0'])))
    time.sleep(1.0)
    trajs = nonempty(h.trajectories['robot0'])
    ends = [msg_to_reference(m)[0].positions[-1] for m in trajs]
    newest = max(i for i, e in enumerate(ends) if np.allclose(e, [2, 8], atol=0.1))
    assert newest == len(ends) - 1     # nothing for the replaced goal after the newest plan


def test_deviation_triggers_replan_from_current_pose(harness_factory):
    h = harness_factory({'robot0': HOLONOMIC}, {'replan_deviation': 0.5})
    h.publish_map(room())
    h.set_pose('robot0', 2.0, 5.0)
    time.sleep(0.3)
    h.send_goal('robot0', 8.0, 5.0)
    assert h.wait_for(lambda: nonempty(h.trajectories['robot0']))
    count = len(h.trajectories['robot0'])
    h.set_pose('robot0', 2.0, 7.0)      # pushed 2 m off the straight trajectory
    assert h.wait_for(lambda: nonempty(h.trajectories['robot0'][count:]))
    ref, _, _ = msg_to_reference(nonempty(h.trajectories['robot0'][count:])[0])
    np.testing.assert_allclose(ref.positions[0], [2.0, 7.0], atol=0.05)


def test_bad_parameter_rejected_with_reason(harness_factory):
    h = harness_factory({'robot0': HOLONOMIC})
    result = h.planner.set_parameters([Parameter('replan_deviation', value=-1.0)])[0]
    assert not result.successful and 'replan_deviation' in result.reason
    result = h.planner.set_parameters([Parameter('robot0.max_speed', value=float('nan'))])[0]
    assert not result.successful and 'robot0.max_speed' in result.reason
    with pytest.raises(ValueError, match='plan_time_budget'):
        h.planner.__class__(context=h.context, parameter_overrides=[
            Parameter('plan_time_budget', value=0.0)])


def test_start_inside_the_safety_margin_still_plans(harness_factory):
    """A robot pushed within safety_margin of a wall is not in collision: it gets a plan."""
    h = harness_factory({'robot0': HOLONOMIC}, {'safety_margin': 0.1})
    h.publish_map(room())
    h.set_pose('robot0', 0.48, 5.0)       # 0.33 m from the wall's cell centres: r 0.25 + 0.1 > 0.33
    time.sleep(0.3)
    h.send_goal('robot0', 5.0, 5.0)
    assert h.wait_for(lambda: nonempty(h.trajectories['robot0']))
    ref, _, _ = msg_to_reference(nonempty(h.trajectories['robot0'])[-1])
    np.testing.assert_allclose(ref.positions[0], [0.48, 5.0], atol=0.05)
