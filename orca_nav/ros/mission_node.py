"""mission_node: steps every robot through its goal sequence, under `ros2 launch` as in the demo.

Per robot of `robots`, parameter `<robot>.goals` lists the goals as flat x, y, yaw triples. The
first goal is each robot's `<robot>.goal` parameter of orca_node and planner_node (bringup
passes it), so motion starts without waiting for this node. Once a robot's odometry is within
`goal_tolerance` of its current goal (in the global frame: `tf_layout` as orca_node), this node
publishes the next one on `/<robot>/goal_pose` (what RViz's "2D Goal Pose" publishes). The
sequencing is the core's `orca_nav.core.fleet.goal_sequence.GoalSequences`; the demo's recorder
uses the same one, so the demo reports exactly the reach times this node acts on.
"""
from __future__ import annotations

import math
from typing import Dict, List

from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data

from orca_nav.core.fleet.goal_sequence import GoalSequences, Pose
from orca_nav.core.fleet.names import robot_names
from orca_nav.parameters.mission_node import NODE_SPECS, goals_spec
from orca_nav.ros.construction import released_on_failure
from orca_nav.ros.convert import node_now, odom_state_from_cdr, seconds_to_time, yaw_to_quaternion
from orca_nav.ros.node_main import run_node
from orca_nav.ros.params import NamesUndeclaredParameters, declare_parameters
from orca_nav.ros.qos_events import publisher_events, subscription_events
from orca_nav.ros.tf_poses import FleetPoses


def parse_goals(name: str, values) -> List[Pose]:
    """Flat triples -> poses; ValueError naming the parameter when they are not."""
    values = list(values)
    if len(values) % 3:
        raise ValueError(f'{name}: {len(values)} numbers is not a list of x, y, yaw triples')
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f'{name}: {values} has a non-finite number')
    return [tuple(values[k:k + 3]) for k in range(0, len(values), 3)]


class MissionNode(NamesUndeclaredParameters, Node):
    """Publishes each robot's next goal when it reached the current one."""

    @released_on_failure
    def __init__(self, **kwargs):
        super().__init__('mission_node', **kwargs)
        params = declare_parameters(self, NODE_SPECS)
        self.frame = params['global_frame']
        goals: Dict[str, List[Pose]] = {}
        for robot in params['robots']:
            spec = goals_spec(robot)
            goals[robot] = parse_goals(spec.name, declare_parameters(self, [spec])[spec.name])
        self.sequences = GoalSequences(goals, params['goal_tolerance'])
        self._poses = FleetPoses(self, list(goals), params['tf_layout'], self.frame,
                                 params['transform_tolerance'])
        self._goal_pubs = {robot: self.create_publisher(PoseStamped,
                                                        robot_names(robot).goal_topic, 10,
                                                        event_callbacks=publisher_events())
                           for robot in goals}
        for robot in goals:
            self.create_subscription(Odometry, robot_names(robot).odom_topic,
                                     lambda raw, r=robot: self._on_odom(r, raw),
                                     qos_profile_sensor_data, raw=True,
                                     event_callbacks=subscription_events())
        total = sum(len(g) for g in goals.values())
        self.get_logger().info(f'{total} goals for {len(goals)} robots, reached within '
                               f'{params["goal_tolerance"]:g} m')

    def _on_odom(self, robot: str, raw: bytes) -> None:
        try:
            odom = odom_state_from_cdr(raw)
            position, _, _ = self._poses.to_global(robot, odom)
        except ValueError:
            return      # orca_node and planner_node report bad odometry
        sequence = self.sequences[robot]
        reached = sequence.index
        goal = self.sequences.update(robot, odom.stamp_s, position[0], position[1])
        if sequence.index == reached:
            return
        count = len(sequence.goals)
        if goal is None:
            self.get_logger().info(f'{robot}: last goal ({count} of {count}) reached')
            return
        msg = PoseStamped()
        msg.header.frame_id = self.frame
        msg.header.stamp = seconds_to_time(node_now(self))
        msg.pose.position.x, msg.pose.position.y = float(goal[0]), float(goal[1])
        msg.pose.orientation = yaw_to_quaternion(goal[2])
        self._goal_pubs[robot].publish(msg)
        self.get_logger().info(f'{robot}: goal {reached + 1} of {count} reached, next '
                               f'({goal[0]:.2f}, {goal[1]:.2f})')


def main(args=None):
    run_node(MissionNode, 'mission_node', args)


if __name__ == '__main__':
    main()
