"""Goal sequences: the core's GoalSequences, mission_node over DDS, and a multi-goal fleet run
by the graph alone (as `ros2 launch` runs it, no demo code)."""
import math

import numpy as np
import pytest

from orca_nav.core.fleet.goal_sequence import GoalSequences


def test_goal_sequences_step_on_reaching_within_tolerance():
    seq = GoalSequences({'a': [(1.0, 0.0, 0.0), (2.0, 0.0, 1.0)], 'b': []}, tolerance=0.2)
    assert seq.done('b') and not seq.all_done()
    assert seq.update('a', 1.0, 0.5, 0.0) is None and seq['a'].index == 0
    assert seq.update('a', 2.0, 0.85, 0.0) == (2.0, 0.0, 1.0)
    assert seq['a'].reach_times == [2.0, None]
    assert seq.update('a', 3.0, 2.0, 0.1) is None and seq.done('a') and seq.all_done()
    assert seq['a'].reach_times == [2.0, 3.0]
    with pytest.raises(ValueError, match='goal_tolerance'):
        GoalSequences({}, tolerance=0.0)


rclpy = pytest.importorskip('rclpy')
from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402

from orca_nav.bringup.fleet_file import load_fleet_config  # noqa: E402
from orca_nav.bringup.graph import describe_graph  # noqa: E402
from orca_nav.bringup.runner import run_graph  # noqa: E402
from orca_nav.ros.convert import quaternion_to_yaw, seconds_to_time, state_to_odom  # noqa: E402
from orca_nav.ros.mission_node import MissionNode  # noqa: E402

from ros_harness import harness_fixture  # noqa: E402

ros = harness_fixture()


def test_mission_node_publishes_the_next_goal_when_one_is_reached(ros):
    ros.add(MissionNode(context=ros.context, parameter_overrides=[
        Parameter('robots', value=['r0']), Parameter('goal_tolerance', value=0.3),
        Parameter('r0.goals', value=[1.0, 0.0, 0.0, 5.0, 5.0, 1.5])]))
    goals = ros.collect(PoseStamped, '/r0/goal_pose')
    odom = ros.publisher(Odometry, '/r0/odom', qos_profile_sensor_data)
    for k, x in enumerate([0.0, 0.5, 0.8]):     # the last is within 0.3 of the first goal
        msg = state_to_odom((x, 0.0), 0.0, (0.0, 0.0), 0.0, seconds_to_time(k + 1.0), 'map',
                            'r0/base_link')
        odom.publish(msg)
    assert ros.wait_for(lambda: goals, resend=lambda: odom.publish(msg))
    goal = goals[0]
    assert goal.header.frame_id == 'map'
    assert (goal.pose.position.x, goal.pose.position.y) == (5.0, 5.0)
    assert quaternion_to_yaw(goal.pose.orientation) == pytest.approx(1.5)
    assert len(goals) == 1


def test_mission_node_refuses_goals_that_are_not_triples(ros):
    with pytest.raises(ValueError, match=r'r0\.goals: 4 numbers'):
        MissionNode(context=ros.context, parameter_overrides=[
            Parameter('robots', value=['r0']), Parameter('r0.goals', value=[1.0, 0.0, 0.0, 5.0])])


def test_a_fleet_with_goal_sequences_runs_them_under_the_graph_alone():
    cfg = load_fleet_config({
        'name': 'two_legs',
        'defaults': {'kinematics': 'holonomic', 'radius': 0.25, 'max_speed': 1.0,
                     'max_accel': 2.0},
        'robots': [{'name': 'r0', 'start': [0.0, 0.0, 0.0],
                    'goals': [[2.0, 0.0, 0.0], [2.0, 2.0, 0.0], [0.0, 2.0, 0.0]]}],
        'demo': {'goal_tolerance': 0.2}})
    specs = describe_graph(cfg, sim_overrides={'lockstep': True, 'real_time_factor': 0.0},
                           observers=1)
    assert 'mission_node' in [s.executable for s in specs]
    with run_graph(specs) as graph:
        probe = graph.add_node(rclpy.create_node('probe', context=graph.context))
        positions = []
        probe.create_subscription(Odometry, '/r0/odom', lambda m: positions.append(
            (m.pose.pose.position.x, m.pose.pose.position.y)), qos_profile_sensor_data)

        def at_last_goal():
            return positions and math.hypot(positions[-1][0], positions[-1][1] - 2.0) < 0.2
        assert graph.wait_for(at_last_goal, timeout=120.0), positions[-1:]
    path = np.array(positions)
    # It went by the second goal (2, 2) on the way.
    assert np.min(np.hypot(path[:, 0] - 2.0, path[:, 1] - 2.0)) < 0.2
