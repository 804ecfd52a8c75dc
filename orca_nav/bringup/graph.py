"""Fleet config -> the node graph that runs it.

`describe_graph` is the single source of the graph: `launch/multi_robot.launch.py` turns each
NodeSpec into a `launch_ros.actions.Node`, and `orca_nav.ros.runner.run_graph` starts the same
specs in one process. This module does not import rclpy or launch, so the launch file (and the
tests) can use it anywhere.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from orca_nav.bringup.fleet_file import FleetConfig
from orca_nav.bringup.maps import load_map_3d
from orca_nav.bringup.rviz import rviz_remappings, write_rviz_config
from orca_nav.parameters.map_3d_publisher import MAP_3D_TOPIC
from orca_nav.parameters.orca_node import MODES

PACKAGE = 'orca_nav'

# Node names the graph uses (topics that carry a node name, like /fleet_sim/collisions, follow).
MAP_PUBLISHER = 'map_publisher'
MAP_3D_PUBLISHER = 'map_3d_publisher'
FLEET_SIM = 'fleet_sim'
ORCA = 'orca_node'
PLANNER = 'planner_node'
MISSION = 'mission_node'
RECORDER = 'recorder'
TF_RELAY = 'tf_relay'

# Fast DDS's default shared-memory port holds 512 messages: a node reading every robot's
# odometry takes a burst of one per robot each period, beside its other topics. Larger fleets
# run with config/dds/fastdds_large_fleet.xml (see `dds_environment`).
LARGE_FLEET_ROBOTS = 400
DDS_PROFILE_VARIABLES = ('FASTRTPS_DEFAULT_PROFILES_FILE',    # Fast DDS 2 (Humble, Jazzy)
                         'FASTDDS_DEFAULT_PROFILES_FILE')     # Fast DDS 3


@dataclass(frozen=True)
class NodeSpec:
    """One node of the graph, in the terms of `launch_ros.actions.Node`.

    `namespace` '' means the root namespace. `parameters` holds ROS parameter dicts with flat
    names (`robot0.radius`), later dicts overriding earlier ones. `env`: environment variables
    the node's process gets on top of the launching one's (launch_ros's `additional_env`).
    """

    executable: str
    name: str
    namespace: str = ''
    parameters: List[Dict[str, Any]] = field(default_factory=list)
    remappings: List[Tuple[str, str]] = field(default_factory=list)
    arguments: List[str] = field(default_factory=list)
    package: str = PACKAGE
    env: Dict[str, str] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return '/' + '/'.join(p for p in (self.namespace.strip('/'), self.name) if p)


def shard_name(index: int) -> str:
    """The node name of orca_node shard `index` of a sharded fleet."""
    return f'{ORCA}_shard{index}'


def share_dir() -> Path:
    """The package's share folder (config/, launch/): the colcon install, else this checkout."""
    checkout = Path(__file__).resolve().parents[2]
    try:
        from ament_index_python.packages import get_package_share_directory
    except ImportError:
        return checkout
    try:
        return Path(get_package_share_directory(PACKAGE))
    except (LookupError, OSError):      # not installed, or no AMENT_PREFIX_PATH at all
        return checkout


def dds_environment(robot_count: int, environ: Mapping[str, str] = os.environ) -> Dict[str, str]:
    """The DDS profile a fleet's nodes need: for more than LARGE_FLEET_ROBOTS robots,
    config/dds/fastdds_large_fleet.xml (bursts of one message per robot fit Fast DDS's queues),
    unless `environ` already names a profile (the user's own wins); else nothing."""
    if robot_count <= LARGE_FLEET_ROBOTS or any(environ.get(v) for v in DDS_PROFILE_VARIABLES):
        return {}
    profile = str(share_dir() / 'config' / 'dds' / 'fastdds_large_fleet.xml')
    return dict.fromkeys(DDS_PROFILE_VARIABLES, profile)


def fleet_parameters(cfg: FleetConfig) -> Dict[str, Any]:
    """`robots`, `global_frame` and every `<robot>.<field>`, for a fleet-serving node."""
    params: Dict[str, Any] = {'robots': list(cfg.robot_names), 'global_frame': cfg.global_frame}
    for robot in cfg.robots:
        params.update({f'{robot.name}.{key}': value
                       for key, value in robot.ros_parameters().items()})
    return params


def has_mission(cfg: FleetConfig) -> bool:
    """Some robot has goals after its first: mission_node steps them."""
    return any(len(robot.goals) > 1 for robot in cfg.robots)


def mission_parameters(cfg: FleetConfig, clock: Dict[str, Any]) -> Dict[str, Any]:
    """mission_node's parameters: every robot with goals and its goals as flat triples."""
    robots = [robot for robot in cfg.robots if robot.goals]
    params: Dict[str, Any] = {'robots': [r.name for r in robots], 'global_frame': cfg.global_frame,
                              'goal_tolerance': cfg.demo.goal_tolerance,
                              'tf_layout': cfg.tf_layout, **clock}
    for robot in robots:
        params[f'{robot.name}.goals'] = [float(v) for goal in robot.goals for v in goal]
    return params


def recorded_topics(cfg: FleetConfig, use_sim: bool, sim_time: bool) -> List[str]:
    """What the recorder records of a run (what the graph publishes of these): /clock on
    simulated time; per robot odometry, cmd_vel, and with the planner its plan and trajectory;
    TF in a TF layout; the markers; the maps; with the simulator its contact reports and the
    people (when it walks any)."""
    from orca_nav.core.fleet.names import robot_names
    topics = ['/clock'] if sim_time else []
    for name in cfg.robot_names:
        names = robot_names(name, cfg.tf_layout, cfg.global_frame)
        topics += [names.odom_topic, names.cmd_vel_topic]
        if cfg.planner_enabled:
            topics += [names.plan_topic, names.trajectory_topic]
        if cfg.tf_layout != 'none':
            topics += [names.tf_topic, names.tf_static_topic]
    topics.append('/orca_nav/markers')
    if cfg.map_path is not None:
        topics.append('/map')
    if cfg.map_3d_path is not None:
        topics.append(MAP_3D_TOPIC)
    if use_sim:
        topics.append(f'/{FLEET_SIM}/collisions')
        sim = cfg.node_parameters['fleet_sim_node']
        if sim.get('pedestrians.lines') or sim.get('pedestrians.walkers'):
            topics.append('/' + sim.get('pedestrians.topic', 'tracked_agents').lstrip('/'))
    absolute = ['/' + topic.lstrip('/') for topic in topics]
    return list(dict.fromkeys(absolute))      # the prefixed layout's shared /tf once


def uses_sim_time(cfg: FleetConfig, use_sim: bool, use_sim_time: Optional[bool] = None) -> bool:
    """Whether the nodes run on /clock: as asked, else as the fleet file says, else exactly when
    the embedded simulator runs (it is then the clock source)."""
    if use_sim_time is not None:
        return use_sim_time
    return use_sim if cfg.use_sim_time is None else cfg.use_sim_time


def describe_graph(cfg: FleetConfig, use_sim: bool = True, mode: str = 'centralized',
                   rviz: bool = False, use_sim_time: Optional[bool] = None,
                   sim_overrides: Optional[Dict[str, Any]] = None,
                   observers: int = 0, record: Optional[str] = None,
                   environ: Mapping[str, str] = os.environ) -> List[NodeSpec]:
    """The nodes that run `cfg`: map publisher (with a map), simulator (use_sim), ORCA
    (one node, `cfg.shards` nodes `orca_node_shard<k>` when the fleet is sharded, or one per
    robot namespace in 'per_robot' mode, sharding's limit, whatever `cfg.shards` says), planner
    (when enabled), the mission (when a robot has several goals), the recorder (record: the
    folder of the bag it writes, `recorded_topics`), RViz (with tf_relay for a namespaced TF
    layout, whose trees one RViz can only read as one).

    use_sim_time: see `uses_sim_time`; with the embedded simulator on simulated time, the
    simulator publishes /clock and every other node follows it. sim_overrides: simulator
    parameters that win over the fleet file's (the demo's real-time factor, lockstep).
    observers: nodes outside this graph that listen to every robot's odometry (the demo's
    mission); a simulator in lockstep starts the clock only once all of them listen.
    environ: the launching environment; every node of a large fleet gets the DDS profile it
    needs unless this names one (`dds_environment`).
    """
    if mode not in MODES:
        raise ValueError(f'mode: {mode!r} is not one of {", ".join(MODES)}')
    sim_time = uses_sim_time(cfg, use_sim, use_sim_time)
    clock = {'use_sim_time': sim_time}
    fleet = fleet_parameters(cfg)
    sections = cfg.node_parameters
    # With a planner every goal gets a trajectory: robots wait for it instead of heading
    # straight at the goal meanwhile; with a map nobody moves before it is known (a fleet
    # file may still say otherwise).
    # Every node that reads odometry takes poses from TF in the fleet's layout.
    layout = {'tf_layout': cfg.tf_layout}
    # Drones wait for the 3-D map as everyone waits for /map; the nodes rebuild its voxels with
    # the map's resolution.
    map_3d = {} if cfg.map_3d_path is None else {
        'map_3d_resolution': load_map_3d(cfg.map_3d_path).resolution}
    orca = {**fleet, **clock, **layout, 'trajectories_only': cfg.planner_enabled,
            'require_map': cfg.map_path is not None, **map_3d,
            'require_map_3d': cfg.map_3d_path is not None, **sections['orca_node']}
    specs: List[NodeSpec] = []
    if cfg.map_path is not None:
        specs.append(NodeSpec(MAP_PUBLISHER, MAP_PUBLISHER, parameters=[{
            'yaml_filename': str(cfg.map_path), 'frame_id': cfg.global_frame, **clock,
            **sections['map_publisher']}]))
    if cfg.map_3d_path is not None:
        specs.append(NodeSpec(MAP_3D_PUBLISHER, MAP_3D_PUBLISHER, parameters=[{
            'yaml_filename': str(cfg.map_3d_path), 'frame_id': cfg.global_frame, **clock,
            **sections['map_3d_publisher']}]))
    if use_sim:
        sim = {**fleet, 'publish_clock': sim_time, **layout, **map_3d,
               **sections['fleet_sim_node'],
               **(sim_overrides or {})}
        if sim.get('lockstep'):
            if not sim['publish_clock']:
                raise ValueError('fleet_sim_node.lockstep: needs simulated time (use_sim_time)')
            # One exchange per control cycle, each cycle triggered by the exchange's odometry.
            sim['odom_rate'] = float(orca.get('control_rate', 20.0))
            orca['cycle_trigger'] = 'odometry'
            odometry_readers = (cfg.shards if mode == 'centralized' else len(cfg.robots)) + \
                int(cfg.planner_enabled) + int(has_mission(cfg)) + int(record is not None) + \
                observers
            sim.setdefault('lockstep_subscribers', odometry_readers)
        specs.append(NodeSpec('fleet_sim_node', FLEET_SIM, parameters=[sim]))
    if mode == 'centralized' and cfg.shards == 1:
        specs.append(NodeSpec('orca_node', ORCA, parameters=[orca]))
    elif mode == 'centralized':
        # Each shard commands a block of the robots and, like a per-robot node, sees the others
        # as reciprocal agents. Distinct names in the root namespace: the shards serve the
        # fleet's topics (/<robot>/cmd_vel, /orca_nav/markers), none of their own.
        specs.extend(NodeSpec('orca_node', shard_name(k), parameters=[{
            **orca, 'mode': 'shard', 'shard_index': k, 'shard_count': cfg.shards}])
            for k in range(cfg.shards))
    else:
        # Every per-robot node knows the whole fleet (the others are reciprocal agents seen
        # through their odometry) and commands only its own robot.
        specs.extend(NodeSpec('orca_node', ORCA, namespace=name, parameters=[{
            **orca, 'mode': 'per_robot', 'robot_name': name}])
            for name in cfg.robot_names)
    if cfg.planner_enabled:
        specs.append(NodeSpec('planner_node', PLANNER,
                              parameters=[{**fleet, **clock, **layout, **map_3d,
                                           **sections['planner_node']}]))
    if has_mission(cfg):
        specs.append(NodeSpec(MISSION, MISSION, parameters=[mission_parameters(cfg, clock)]))
    if record is not None:
        specs.append(NodeSpec('recorder_node', RECORDER, parameters=[{
            'output': str(record), 'topics': recorded_topics(cfg, use_sim, sim_time), **clock}]))
    if rviz:
        if cfg.tf_layout == 'namespaced':
            specs.append(NodeSpec('tf_relay', TF_RELAY, parameters=[{
                'robots': list(cfg.robot_names), 'global_frame': cfg.global_frame, **clock}]))
        # Generated for this fleet: what its graph publishes (orca_nav.bringup.rviz).
        config = write_rviz_config(cfg, share_dir() / 'config' / 'orca_nav.rviz',
                                   Path(tempfile.gettempdir()) / 'orca_nav' / f'{cfg.name}.rviz',
                                   mode)
        specs.append(NodeSpec('rviz2', 'rviz2', package='rviz2', parameters=[clock],
                              remappings=rviz_remappings(cfg), arguments=['-d', str(config)]))
    dds = dds_environment(len(cfg.robots), environ)
    return [replace(spec, env={**spec.env, **dds}) for spec in specs] if dds else specs
