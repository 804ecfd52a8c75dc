"""Every per-robot topic and frame name, from the robot's name and the fleet's TF layout.

Topics are relative (`robot0/odom`), so they resolve in the namespace of the node that uses
them: `/robot0/odom` for a node at the root, `/site1/robot0/odom` for every node of a fleet
launched under `/site1`. Only what ROS users expect to be global is absolute (`/tf` and
`/tf_static` of the shared tree).

TF layouts (REP-105 frames map -> odom -> base_link):

    none        odometry is already in the global frame; no TF is read
                (odom frame = global frame, base frame `<robot>/base_link`)
    namespaced  each robot's own tree on `<robot>/tf` and `<robot>/tf_static`, with plain frame
                names `map`, `odom`, `base_link` (Nav2's multi-robot bringup)
    prefixed    one shared tree on `/tf` and `/tf_static`, frames `<robot>/odom` and
                `<robot>/base_link` (robot_state_publisher's frame_prefix); `map` is global

A transform buffer that holds every robot's tree (core/transforms.py) keys frames by
`buffer_frame`: namespaced trees get the robot's prefix there, so `robot0`'s `odom` and
`robot1`'s `odom` stay apart; in the prefixed layout frame names are already unique. One tree
for the whole fleet (what RViz reads, `fleet_frame`) is the prefixed layout's: the robots' own
frames prefixed, the global frame shared.

The fleet-wide topics of orca_node and tf_relay (one each per graph) are named here too, for the
nodes and bringup alike (the maps' are their publishers' `topic` defaults, orca_nav.parameters).
"""
from __future__ import annotations

from dataclasses import dataclass

from orca_nav.core.fleet.robots import check_robot_name

TF_LAYOUTS = ('none', 'namespaced', 'prefixed')

MARKERS_TOPIC = 'orca_nav/markers'  # visualization_msgs/MarkerArray, in orca_node's namespace
# A namespaced fleet's trees relayed into one (tf_relay), in the graph's namespace.
FLEET_TF_TOPIC, FLEET_TF_STATIC_TOPIC = 'orca_nav/tf', 'orca_nav/tf_static'


@dataclass(frozen=True)
class RobotNames:
    robot: str
    tf_layout: str
    odom_topic: str             # nav_msgs/Odometry from the robot
    cmd_vel_topic: str          # Twist / TwistStamped to the robot
    goal_topic: str             # geometry_msgs/PoseStamped goal (RViz's "2D Goal Pose")
    trajectory_topic: str       # trajectory_msgs/MultiDOFJointTrajectory, planner -> orca_node
    plan_topic: str             # nav_msgs/Path, for RViz
    tf_topic: str
    tf_static_topic: str
    global_frame: str           # the map frame, as this robot's tree names it
    odom_frame: str             # frame of the robot's odometry pose
    base_frame: str             # the robot's body frame (child of its odometry)

    def topic(self, name: str) -> str:
        """Another per-robot topic (a configured one, such as cmd_vel_in) or action (Nav2's,
        such as navigate_to_pose), named like the rest."""
        return f'{self.robot}/{name}'

    def robot_frame(self, name: str) -> str:
        """One of the robot's own frames (`base_scan`...), as its TF messages name it."""
        return name if self.tf_layout == 'namespaced' else f'{self.robot}/{name}'

    def buffer_frame(self, frame: str) -> str:
        """Where a frame of this robot's TF messages lives in a fleet-wide transform buffer."""
        if self.tf_layout == 'namespaced':
            return f'{self.robot}/{frame}'
        return frame

    def fleet_frame(self, frame: str) -> str:
        """Where a frame of this robot's TF messages lives in one tree of the whole fleet:
        as `buffer_frame`, but the global frame is everyone's."""
        return frame if frame == self.global_frame else self.buffer_frame(frame)


def robot_names(robot: str, tf_layout: str = 'none', global_frame: str = 'map') -> RobotNames:
    """The names of one robot's topics and frames (see the module doc)."""
    check_robot_name(robot)
    if tf_layout not in TF_LAYOUTS:
        raise ValueError(f'tf_layout {tf_layout!r} is not one of {", ".join(TF_LAYOUTS)}')
    if not isinstance(global_frame, str) or not global_frame or global_frame.startswith('/'):
        raise ValueError(f'global_frame {global_frame!r} must be a frame name (not starting '
                         'with "/")')
    if tf_layout == 'namespaced':
        tf_topics = (f'{robot}/tf', f'{robot}/tf_static')
        odom_frame, base_frame = 'odom', 'base_link'
    else:
        tf_topics = ('/tf', '/tf_static')
        odom_frame = global_frame if tf_layout == 'none' else f'{robot}/odom'
        base_frame = f'{robot}/base_link'
    return RobotNames(
        robot=robot, tf_layout=tf_layout,
        odom_topic=f'{robot}/odom', cmd_vel_topic=f'{robot}/cmd_vel',
        goal_topic=f'{robot}/goal_pose', trajectory_topic=f'{robot}/trajectory',
        plan_topic=f'{robot}/plan',
        tf_topic=tf_topics[0], tf_static_topic=tf_topics[1],
        global_frame=global_frame, odom_frame=odom_frame, base_frame=base_frame)
