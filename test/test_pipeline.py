"""The whole pipeline over real DDS: map_publisher, fleet_sim, orca_node (tracking), planner_node,
on simulated time in lockstep (the simulator owns /clock and waits for every cmd_vel)."""
import json
import math
import threading

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import PoseStamped, Twist  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402

from orca_nav.bringup.fleet_file import load_fleet_config  # noqa: E402
from orca_nav.bringup.graph import describe_graph  # noqa: E402
from orca_nav.bringup.runner import run_graph  # noqa: E402
from orca_nav.bringup.scenarios import maps_dir, scenario_config  # noqa: E402
from orca_nav.ros.convert import latched_qos, stamp_to_seconds, yaw_to_quaternion  # noqa: E402

pytestmark = pytest.mark.ros
LOCKSTEP = {'lockstep': True, 'real_time_factor': 0.0}


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
        self.graph = graph
        self.node = graph.add_node(rclpy.create_node('pipeline_probe', context=graph.context,
                                                     parameter_overrides=[
                                                         rclpy.parameter.Parameter(
                                                             'use_sim_time', value=True)]))
        self.lock = threading.RLock()     # wait_for predicates call the accessors under it
        self.odom, self.cmd, self.plans, self.diag = [], [], [], []
        self.node.create_subscription(Odometry, '/robot0/odom', self._add(self.odom),
                                      qos_profile_sensor_data)
        self.node.create_subscription(Twist, '/robot0/cmd_vel', self._add(self.cmd), 50)
        self.node.create_subscription(Path, '/robot0/plan', self._add(self.plans), latched_qos())
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._add(self.diag), 50)
        self.goal_pub = self.node.create_publisher(PoseStamped, '/robot0/goal_pose', 10)

    def _add(self, bucket):
        def callback(msg):
            with self.lock:
                bucket.append(msg)
        return callback

    def wait_for(self, predicate, timeout=60.0):
        def holds():
            with self.lock:
                return predicate()
        return self.graph.wait_for(holds, timeout)

    def send_goal(self, x, y, yaw=0.0):
        msg = PoseStamped()
        msg.header.frame_id = 'map'
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.pose.position.x, msg.pose.position.y = float(x), float(y)
        msg.pose.orientation = yaw_to_quaternion(yaw)
        self.goal_pub.publish(msg)

    def position(self):
        with self.lock:
            p = self.odom[-1].pose.pose.position
        return np.array([p.x, p.y])

    def sim_time(self):
        with self.lock:
            return stamp_to_seconds(self.odom[-1].header.stamp)

    def planner_statuses(self):
        return [s for d in self.diag for s in d.status
                if s.name.startswith('planner_node') and s.hardware_id == 'robot0']


def start(cfg):
    """The graph in lockstep with the probe as one more odometry listener, started."""
    graph = run_graph(describe_graph(cfg, sim_overrides=LOCKSTEP, observers=1))
    running = graph.__enter__()
    probe = Probe(running)
    assert probe.wait_for(lambda: probe.odom), 'no odometry from fleet_sim'
    # Simulated time stands at 0 until the robot has a plan to follow (orca_node commands it
    # only then, and the simulator waits for its first command): the goal starts the clock.
    assert probe.wait_for(lambda: probe.goal_pub.get_subscription_count() >= 2)
    return graph, probe


def test_goal_is_planned_tracked_and_reached():
    graph, probe = start(one_robot_fleet())
    try:
        probe.send_goal(10.0, 4.6, 0.0)
        assert probe.wait_for(lambda: probe.plans and probe.plans[-1].poses)
        plan = probe.plans[-1]
        first, last = plan.poses[0].pose.position, plan.poses[-1].pose.position
        assert math.hypot(first.x - 2.0, first.y - 5.0) < 0.1
        assert math.hypot(last.x - 10.0, last.y - 4.6) < 0.1
        assert probe.wait_for(lambda: np.linalg.norm(probe.position() - [10.0, 4.6]) < 0.3)
        # No motion before the plan: odometry up to the plan's start stamp is the start pose.
        planned_at = stamp_to_seconds(plan.header.stamp)
        with probe.lock:
            before = [o.pose.pose.position for o in probe.odom
                      if stamp_to_seconds(o.header.stamp) <= planned_at]
        assert before and all(math.hypot(p.x - 2.0, p.y - 5.0) < 1e-6 for p in before)
    finally:
        graph.__exit__(None, None, None)


def test_goal_in_obstacle_gives_diagnostic_and_no_motion():
    graph, probe = start(one_robot_fleet())
    try:
        before = probe.position()
        probe.send_goal(10.0, 3.5)       # inside the shelf row y 3..4
        assert probe.wait_for(lambda: any(s.level == DiagnosticStatus.ERROR
                                          for s in probe.planner_statuses()))
        error = [s for s in probe.planner_statuses() if s.level == DiagnosticStatus.ERROR][-1]
        assert 'goal_in_collision' in error.message
        count = len(probe.cmd)
        later = probe.sim_time() + 2.0
        assert probe.wait_for(lambda: probe.sim_time() >= later)     # 2 s of simulated time
        with probe.lock:
            commands = probe.cmd[count:]
            plans = list(probe.plans)
        assert commands and all(m.linear.x == 0.0 and m.angular.z == 0.0 for m in commands)
        assert not plans or not plans[-1].poses
        np.testing.assert_allclose(probe.position(), before, atol=1e-3)
    finally:
        graph.__exit__(None, None, None)


@pytest.mark.slow
def test_warehouse_demo_reaches_every_goal_without_collision(tmp_path):
    from orca_nav.bringup.demo import run_demo
    cfg = scenario_config('warehouse')
    report = run_demo(cfg, tmp_path)
    fleet = report['fleet']
    assert fleet['all_reached'], json.dumps(report['robots'], indent=1)
    assert fleet['collisions'] == 0
    assert fleet['min_separation'] > 0.0
    assert all(len(r.goals) == 3 for r in cfg.robots)
    assert (tmp_path / 'trajectories.png').stat().st_size > 10_000
    assert json.loads((tmp_path / 'report.json').read_text())['fleet']['all_reached']
