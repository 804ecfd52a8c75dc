"""The whole pipeline over real DDS: map_publisher, fleet_sim, orca_node (tracking), planner_node."""
import json
import math
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import PoseStamped, Twist  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402

from orca_nav.bringup.graph import describe_graph  # noqa: E402
from orca_nav.bringup.fleet_file import load_fleet_config  # noqa: E402
from orca_nav.ros.convert import yaw_to_quaternion  # noqa: E402
from orca_nav.bringup.runner import run_graph  # noqa: E402
from orca_nav.bringup.scenarios import maps_dir, scenario_config  # noqa: E402
from ros_harness import wait_for  # noqa: E402

pytestmark = pytest.mark.ros


def one_robot_fleet(kinematics='diff_drive', start=(2.0, 5.0, 0.0)):
    return load_fleet_config({
        'name': 'pipeline_probe', 'map': str(maps_dir() / 'warehouse.yaml'),
        'defaults': {'kinematics': kinematics, 'radius': 0.3, 'max_speed': 1.0, 'max_accel': 1.0},
        'robots': [{'name': 'robot0', 'start': list(start)}],
        'planner': {'enabled': True, 'plan_time_budget': 3.0},
        'orca_node': {'trajectories_only': True}})


class Probe:
    """Records robot0's odometry, cmd_vel, plans and planner diagnostics; sends goals."""

    def __init__(self, graph):
        self.node = graph.add_node(rclpy.create_node('pipeline_probe', context=graph.context))
        self.lock = threading.RLock()     # predicates of wait_for read under the lock too
        self.odom, self.cmd, self.plans, self.diag = [], [], [], []
        self.node.create_subscription(Odometry, '/robot0/odom', self._add(self.odom), 50)
        self.node.create_subscription(Twist, '/robot0/cmd_vel', self._add(self.cmd), 50)
        self.node.create_subscription(Path, '/robot0/plan', self._add(self.plans), 10)
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._add(self.diag), 50)
        self.goal_pub = self.node.create_publisher(PoseStamped, '/robot0/goal_pose', 10)

    def _add(self, bucket):
        def callback(msg):
            with self.lock:
                bucket.append((time.monotonic(), msg))
        return callback

    def wait_for(self, predicate, timeout):
        return wait_for(lambda: self._holds(predicate), timeout, period=0.05)

    def _holds(self, predicate):
        with self.lock:
            return predicate()

    def send_goal(self, x, y, yaw=0.0):
        msg = PoseStamped()
        msg.header.frame_id = 'map'
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.pose.position.x, msg.pose.position.y = float(x), float(y)
        msg.pose.orientation = yaw_to_quaternion(yaw)
        self.goal_pub.publish(msg)

    def position(self):
        with self.lock:
            p = self.odom[-1][1].pose.pose.position
        return np.array([p.x, p.y])

    def planner_statuses(self):
        return [s for _, d in self.diag for s in d.status
                if s.name.startswith('planner_node') and s.hardware_id == 'robot0']


def start(graph):
    probe = Probe(graph)
    assert probe.wait_for(lambda: probe.odom, 20.0), 'no odometry from fleet_sim'
    assert probe.wait_for(lambda: probe.goal_pub.get_subscription_count() >= 2, 20.0)
    time.sleep(1.0)     # /map latched into planner_node and orca_node
    return probe


def test_goal_is_planned_tracked_and_reached(tmp_path):
    with run_graph(describe_graph(one_robot_fleet())) as graph:
        probe = start(graph)
        sent = time.monotonic()
        probe.send_goal(10.0, 4.6, 0.0)
        assert probe.wait_for(lambda: probe.plans, 15.0)
        plan = probe.plans[-1][1]
        first, last = plan.poses[0].pose.position, plan.poses[-1].pose.position
        assert math.hypot(first.x - 2.0, first.y - 5.0) < 0.1
        assert math.hypot(last.x - 10.0, last.y - 4.6) < 0.1
        assert probe.wait_for(lambda: np.linalg.norm(probe.position() - [10.0, 4.6]) < 0.3, 40.0)
        moving = [t for t, m in probe.cmd if t > sent and abs(m.linear.x) + abs(m.angular.z) > 0]
        assert moving and moving[0] >= probe.plans[0][0] - 0.05    # no motion before the plan


def test_goal_in_obstacle_gives_diagnostic_and_no_motion():
    with run_graph(describe_graph(one_robot_fleet())) as graph:
        probe = start(graph)
        before = probe.position()
        sent = time.monotonic()
        probe.send_goal(10.0, 3.5)       # inside the shelf row y 3..4
        assert probe.wait_for(lambda: any(s.level == DiagnosticStatus.ERROR
                                          for s in probe.planner_statuses()), 15.0)
        error = [s for s in probe.planner_statuses() if s.level == DiagnosticStatus.ERROR][-1]
        assert 'goal_in_collision' in error.message
        time.sleep(2.0)
        with probe.lock:
            commands = [m for t, m in probe.cmd if t > sent]
            plans = [m for t, m in probe.plans if t > sent]
        assert commands and all(m.linear.x == 0.0 and m.angular.z == 0.0 for m in commands)
        assert all(not m.poses for m in plans)
        np.testing.assert_allclose(probe.position(), before, atol=1e-3)


@pytest.mark.slow
def test_warehouse_demo_reaches_every_goal_without_collision(tmp_path):
    from orca_nav.bringup.cli import run_demo
    cfg = scenario_config('warehouse')
    report = run_demo(cfg, tmp_path)
    fleet = report['fleet']
    assert fleet['all_reached'], json.dumps(report['robots'], indent=1)
    assert fleet['collisions'] == 0
    assert fleet['min_separation'] > 0.0
    assert all(len(r.goals) == 3 for r in cfg.robots)
    assert (tmp_path / 'trajectories.png').stat().st_size > 10_000
    assert json.loads((tmp_path / 'report.json').read_text())['fleet']['all_reached']
