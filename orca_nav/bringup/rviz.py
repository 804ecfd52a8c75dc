"""The RViz configuration of a fleet, generated from its fleet config.

A fleet's config shows exactly what its graph publishes, one fixed frame (the global frame)
for every robot:

* the map (`/map`) when the fleet has one, the 3-D map (a point cloud of voxel boxes coloured by
  height) when it has drones;
* orca_node's markers (every robot, its goal and velocity, in the global frame), on the topic
  of every orca_node (one per robot namespace in per_robot mode), unless `marker_rate` is 0;
* each robot's plan when the planner runs (a drone's in 3-D);
* each robot's odometry, except in the namespaced TF layout, where odometry is in the robot's
  own `odom` that one tree cannot tell from the other robots' (the markers show the robots);
* TF when the robots publish it: the shared tree of the prefixed layout, or in the namespaced
  layout every robot's tree relayed into one by `tf_relay` under prefixed frames
  (`rviz_remappings` points RViz's /tf there).

The panels, tools and view come from the template (config/orca_nav.rviz, itself the config of
the default fleet, the circle); the goal tool publishes the first robot's goal_pose.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Tuple

import yaml

from orca_nav.bringup.fleet_file import FleetConfig
from orca_nav.core.fleet.names import (
    FLEET_TF_STATIC_TOPIC,
    FLEET_TF_TOPIC,
    MARKERS_TOPIC,
    robot_names,
)
from orca_nav.parameters.map_3d_publisher import MAP_3D_TOPIC
from orca_nav.parameters.map_publisher import MAP_TOPIC

# Distinct on RViz's dark background, cycled over the robots.
PALETTE = ('255; 85; 0', '0; 170; 255', '85; 255; 0', '255; 0; 255', '255; 255; 0',
           '0; 255; 170', '170; 85; 255', '255; 170; 170')


def _absolute(topic: str) -> str:
    return topic if topic.startswith('/') else '/' + topic


def _topic(name: str, latched: bool = False, best_effort: bool = False) -> Dict[str, Any]:
    return {'Depth': 1 if latched else 5,
            'Durability Policy': 'Transient Local' if latched else 'Volatile',
            'History Policy': 'Keep Last',
            'Reliability Policy': 'Best Effort' if best_effort else 'Reliable',
            'Value': _absolute(name)}


def _display(kind: str, name: str, **properties) -> Dict[str, Any]:
    return {'Class': f'rviz_default_plugins/{kind}', 'Enabled': True, 'Name': name,
            **properties, 'Value': True}


def grid_display() -> Dict[str, Any]:
    return _display('Grid', 'Grid', **{
        'Alpha': 0.5, 'Cell Size': 1, 'Color': '160; 160; 164',
        'Line Style': {'Line Width': 0.03, 'Value': 'Lines'}, 'Normal Cell Count': 0,
        'Offset': {'X': 0, 'Y': 0, 'Z': 0}, 'Plane': 'XY', 'Plane Cell Count': 40,
        'Reference Frame': '<Fixed Frame>'})


def map_display() -> Dict[str, Any]:
    """/map, transient local as nav2_map_server's."""
    return _display('Map', 'Map', **{
        'Alpha': 0.7, 'Binary representation': False, 'Binary threshold': 100,
        'Color Scheme': 'map', 'Draw Behind': True, 'Topic': _topic(MAP_TOPIC, latched=True),
        'Use Timestamp': False})


def map_3d_display(resolution: float) -> Dict[str, Any]:
    """A PointCloud2 display of the latched 3-D map: each occupied voxel a box of the voxel's
    size, coloured by height so the trees' and walls' shapes read from any angle."""
    return _display('PointCloud2', 'Map 3-D', **{
        'Alpha': 0.35, 'Style': 'Boxes', 'Size (m)': float(resolution), 'Size (Pixels)': 3,
        'Color Transformer': 'AxisColor', 'Axis': 'Z', 'Autocompute Value Bounds': True,
        'Position Transformer': 'XYZ', 'Decay Time': 0, 'Selectable': False,
        'Use Fixed Frame': True, 'Use rainbow': True, 'Invert Rainbow': False,
        'Topic': _topic(MAP_3D_TOPIC, latched=True)})


def markers_display(name: str, topic: str) -> Dict[str, Any]:
    return _display('MarkerArray', name, Namespaces={}, Topic=_topic(topic))


def plan_display(robot: str, topic: str, color: str) -> Dict[str, Any]:
    return _display('Path', f'Plan {robot}', **{
        'Alpha': 1, 'Buffer Length': 1, 'Color': color, 'Line Style': 'Lines',
        'Line Width': 0.03, 'Offset': {'X': 0, 'Y': 0, 'Z': 0}, 'Pose Color': color,
        'Pose Style': 'None', 'Topic': _topic(topic, latched=True)})


def odometry_display(robot: str, topic: str, color: str) -> Dict[str, Any]:
    return _display('Odometry', f'Odometry {robot}', **{
        'Angle Tolerance': 0.1, 'Covariance': {'Value': False}, 'Keep': 1,
        'Position Tolerance': 0.1,
        'Shape': {'Alpha': 1, 'Color': color, 'Head Length': 0.15, 'Head Radius': 0.1,
                  'Shaft Length': 0.3, 'Shaft Radius': 0.05, 'Value': 'Arrow'},
        # Best effort, as orca_node reads odometry: it matches reliable and best-effort robots.
        'Topic': _topic(topic, best_effort=True)})


def tf_display() -> Dict[str, Any]:
    return _display('TF', 'TF', **{'Frame Timeout': 15, 'Marker Scale': 1,
                                   'Show Arrows': True, 'Show Axes': True, 'Show Names': True,
                                   'Update Interval': 0})


def markers_topics(cfg: FleetConfig, mode: str) -> List[str]:
    """Where the fleet's orca_node(s) publish their markers: none with `marker_rate` 0."""
    if cfg.node_parameters['orca_node'].get('marker_rate', 1.0) == 0:
        return []
    if mode == 'per_robot':
        return [f'/{robot}/{MARKERS_TOPIC}' for robot in cfg.robot_names]
    return [_absolute(MARKERS_TOPIC)]


def displays(cfg: FleetConfig, mode: str = 'centralized') -> List[Dict[str, Any]]:
    """The fleet's displays (see the module docstring)."""
    names = [robot_names(r, cfg.tf_layout, cfg.global_frame) for r in cfg.robot_names]
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(names))]
    shown = [grid_display()]
    if cfg.map_path is not None:
        shown.append(map_display())
    if cfg.map_3d_path is not None:
        from orca_nav.bringup.maps import load_map_3d  # numpy: only when needed
        shown.append(map_3d_display(load_map_3d(cfg.map_3d_path).resolution))
    topics = markers_topics(cfg, mode)
    shown += [markers_display('ORCA markers' if len(topics) == 1 else
                              f'ORCA markers {topic.split("/")[1]}', topic) for topic in topics]
    if cfg.planner_enabled:
        shown += [plan_display(n.robot, n.plan_topic, c) for n, c in zip(names, colors)]
    if cfg.tf_layout != 'namespaced':
        shown += [odometry_display(n.robot, n.odom_topic, c) for n, c in zip(names, colors)]
    if cfg.tf_layout != 'none':
        shown.append(tf_display())
    return shown


def rviz_config(cfg: FleetConfig, template: Path, mode: str = 'centralized') -> Dict[str, Any]:
    """The RViz config (as the YAML mapping) for `cfg` run in `mode`, with the template's
    panels, tools and view."""
    config = yaml.safe_load(template.read_text())
    manager = config['Visualization Manager']
    manager['Displays'] = displays(cfg, mode)
    manager['Global Options']['Fixed Frame'] = cfg.global_frame
    for tool in manager['Tools']:
        if tool['Class'] == 'rviz_default_plugins/SetGoal':
            tool['Topic']['Value'] = _absolute(robot_names(cfg.robot_names[0]).goal_topic)
    return config


def rviz_remappings(cfg: FleetConfig) -> List[Tuple[str, str]]:
    """RViz's TF topics: the shared tree, or in the namespaced layout the fleet's trees as one
    (tf_relay's)."""
    if cfg.tf_layout != 'namespaced':
        return []
    return [('/tf', _absolute(FLEET_TF_TOPIC)), ('/tf_static', _absolute(FLEET_TF_STATIC_TOPIC))]


def write_rviz_config(cfg: FleetConfig, template: Path, path: Path,
                      mode: str = 'centralized') -> Path:
    config = rviz_config(cfg, template, mode)       # before writing: the template may be `path`
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (f'# RViz config of fleet {cfg.name!r} ({len(cfg.robots)} robots, {mode}), written '
              f'by orca_nav.bringup.rviz with the\n# panels, tools and view of {template.name}; '
              'bringup writes one for every fleet it starts with RViz.\n')
    path.write_text(header + yaml.safe_dump(config, sort_keys=False))
    return path
