"""Starts an orca_nav fleet: `ros2 launch orca_nav multi_robot.launch.py fleet_config:=<file>`.

Arguments: fleet_config (fleet YAML; default the 16-robot circle), use_sim (embedded fleet
simulator, default true; false when Gazebo or real robots publish odometry), use_sim_time
(nodes on /clock; default: the fleet file's `use_sim_time`, else true exactly with the embedded
simulator, which then publishes /clock; Gazebo users set it true), rviz (default false), mode
(centralized | per_robot ORCA nodes), record (a folder: the recorder node writes the run there
as a rosbag2 bag with MCAP storage; default empty: no recording).

The node graph comes from `orca_nav.bringup.describe_graph`, the same description the
in-process runner of `orca-nav demo` starts; this file only turns each NodeSpec into a
launch_ros Node (test/test_launch_file.py checks that the two agree).
"""
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription
from orca_nav.bringup.fleet_file import load_fleet_config_or_exit
from orca_nav.bringup.graph import MODES, describe_graph, share_dir

TRUE_WORDS = ('true', '1', 'yes', 'on')


def _optional_bool(text):
    """'' -> None (the fleet file decides), else the truth of the word."""
    return None if text == '' else text.lower() in TRUE_WORDS


def _nodes(context):
    # A fleet file with problems stops the launch before any node starts: one line per problem
    # on stderr and exit status 2 (SystemExit leaves the launch service's event loop).
    cfg = load_fleet_config_or_exit(LaunchConfiguration('fleet_config').perform(context),
                                    'multi_robot.launch.py')
    specs = describe_graph(
        cfg,
        use_sim=LaunchConfiguration('use_sim').perform(context).lower() in TRUE_WORDS,
        mode=LaunchConfiguration('mode').perform(context),
        rviz=LaunchConfiguration('rviz').perform(context).lower() in TRUE_WORDS,
        use_sim_time=_optional_bool(LaunchConfiguration('use_sim_time').perform(context)),
        record=LaunchConfiguration('record').perform(context) or None)
    return [Node(package=spec.package, executable=spec.executable, name=spec.name,
                 namespace=spec.namespace or None, parameters=list(spec.parameters),
                 remappings=list(spec.remappings), arguments=list(spec.arguments),
                 additional_env=dict(spec.env) or None, output='screen')
            for spec in specs]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument(
            'fleet_config', default_value=str(share_dir() / 'config' / 'fleets' / 'circle.yaml'),
            description='Fleet config YAML: robots, map, node parameters'),
        DeclareLaunchArgument('use_sim', default_value='true',
                              description='Start the embedded fleet simulator (fleet_sim_node)'),
        DeclareLaunchArgument('use_sim_time', default_value='',
                              description='Nodes on /clock (empty: the fleet file decides, else '
                                          'true with the embedded simulator)'),
        DeclareLaunchArgument('rviz', default_value='false', description='Start RViz'),
        DeclareLaunchArgument('mode', default_value='centralized', choices=list(MODES),
                              description='One ORCA node for the fleet, or one per robot'),
        DeclareLaunchArgument('record', default_value='',
                              description='Record the run into this folder (rosbag2, MCAP); '
                                          'empty: no recording'),
        OpaqueFunction(function=_nodes),
    ])
