"""orca_node in a Nav2-style cmd_vel chain, over real DDS: a stand-in for controller_server +
velocity_smoother publishes each robot's /<robot>/cmd_vel_smoothed (driving straight at its
goal, blind to the others); orca_node filters it into /<robot>/cmd_vel for the simulator, in
lockstep on simulated time. Two robots meet head-on; a third, far away, is never constrained."""
import json
import math
import threading
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
from geometry_msgs.msg import Twist  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from orca_nav.bringup.fleet_file import load_fleet_config  # noqa: E402
from orca_nav.bringup.graph import describe_graph  # noqa: E402
from orca_nav.bringup.runner import run_graph  # noqa: E402
from orca_nav.ros.convert import quaternion_to_yaw  # noqa: E402

pytestmark = pytest.mark.ros
RADIUS = 0.3
GOALS = {'r0': (4.0, 0.0), 'r1': (-4.0, 0.05), 'r2': (4.0, 20.0)}


def nav2_fleet():
    return load_fleet_config({
        'name': 'nav2_chain',
        'defaults': {'kinematics': 'holonomic', 'radius': RADIUS, 'max_speed': 1.0,
                     'max_accel': 4.0},
        'robots': [{'name': 'r0', 'start': [-4.0, 0.0, 0.0]},
                   {'name': 'r1', 'start': [4.0, 0.05, math.pi]},
                   {'name': 'r2', 'start': [-4.0, 20.0, 0.0]}],
        'orca_node': {'cmd_vel_in': 'cmd_vel_smoothed'}})


class Nav2StandIn:
    """Per robot: odometry in, a body twist straight at the goal out (as a controller that knows
    no other robot would send), every input and every filtered output recorded."""

    def __init__(self, graph):
        self.node = graph.add_node(rclpy.create_node(
            'nav2_stand_in', context=graph.context,
            parameter_overrides=[Parameter('use_sim_time', value=True)]))
        self.lock = threading.Lock()
        self.poses = {name: [] for name in GOALS}
        self.inputs = {name: set() for name in GOALS}
        self.outputs = {name: [] for name in GOALS}
        self.collisions = []
        self.node.create_subscription(String, '/fleet_sim/collisions',
                                      lambda msg: self.collisions.append(json.loads(msg.data)), 100)
        for name in GOALS:
            pub = self.node.create_publisher(Twist, f'/{name}/cmd_vel_smoothed', 10)
            self.node.create_subscription(Odometry, f'/{name}/odom',
                                          lambda msg, n=name, p=pub: self._on_odom(n, p, msg),
                                          qos_profile_sensor_data)
            self.node.create_subscription(Twist, f'/{name}/cmd_vel',
                                          lambda msg, n=name: self._on_cmd(n, msg), 50)

    def _on_odom(self, name, pub, msg):
        p = msg.pose.pose.position
        yaw = quaternion_to_yaw(msg.pose.pose.orientation)
        goal = np.array(GOALS[name]) - (p.x, p.y)
        distance = float(np.hypot(*goal))
        world = goal / max(distance, 1e-9) * min(distance, 1.0)
        c, s = math.cos(yaw), math.sin(yaw)
        cmd = Twist()
        cmd.linear.x = float(c * world[0] + s * world[1])
        cmd.linear.y = float(-s * world[0] + c * world[1])
        cmd.angular.z = 0.1 if distance > 0.5 else 0.0      # it must come back unchanged too
        with self.lock:
            self.poses[name].append((p.x, p.y))
            self.inputs[name].add((cmd.linear.x, cmd.linear.y, cmd.angular.z))
        pub.publish(cmd)

    def _on_cmd(self, name, msg):
        with self.lock:
            self.outputs[name].append((msg.linear.x, msg.linear.y, msg.angular.z))

    def arrived(self):
        with self.lock:
            return all(self.poses[n] and np.hypot(*(np.array(self.poses[n][-1]) - GOALS[n])) < 0.3
                       for n in GOALS)


def test_a_nav2_chain_gets_collision_free_commands_and_its_own_twists_when_unconstrained():
    specs = describe_graph(nav2_fleet(), sim_overrides={'lockstep': True, 'real_time_factor': 0.0},
                           observers=1)
    with run_graph(specs) as graph:
        nav2 = Nav2StandIn(graph)
        assert graph.wait_for(nav2.arrived, timeout=120.0), nav2.poses
        assert graph.error is None
        with nav2.lock:
            poses = {n: np.array(p) for n, p in nav2.poses.items()}
            outputs = {n: list(o) for n, o in nav2.outputs.items()}
            inputs = {n: set(i) for n, i in nav2.inputs.items()}
    assert nav2.collisions == []
    steps = min(len(poses['r0']), len(poses['r1']))
    gap = np.hypot(*(poses['r0'][:steps] - poses['r1'][:steps]).T).min()
    assert gap >= 2 * RADIUS, gap
    # The far robot: every command is one of its inputs, bit for bit (or the zero it gets the
    # moment it is engaged, before its first input).
    moving = [o for o in outputs['r2'] if o != (0.0, 0.0, 0.0)]
    assert len(moving) > 50 and set(moving) <= inputs['r2']
    # The two that met were diverted: some of their commands are not their inputs.
    assert any(o not in inputs['r0'] for o in outputs['r0'] if o != (0.0, 0.0, 0.0))


def test_the_nav2_fleet_file_puts_orca_node_between_smoother_and_monitor():
    cfg = load_fleet_config(Path(__file__).resolve().parents[1] / 'config' / 'nav2' /
                            'nav2_fleet.yaml')
    specs = describe_graph(cfg, use_sim=False)
    assert [s.executable for s in specs] == ['orca_node']
    with run_graph(specs) as graph:
        probe = graph.add_node(rclpy.create_node('probe', context=graph.context))
        for robot in cfg.robot_names:
            assert graph.wait_for(
                lambda: probe.count_subscribers(f'/{robot}/cmd_vel_smoothed') == 1
                and probe.count_publishers(f'/{robot}/cmd_vel_orca') == 1, timeout=30.0)
            assert probe.count_publishers(f'/{robot}/cmd_vel') == 0
