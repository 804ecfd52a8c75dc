"""The RViz configuration of a fleet, generated from its fleet config.

config/orca_nav.rviz is the template (panels, tools, view, and one display of each kind); the
generated config has a display for every robot and enables only displays that will show
something: the map when the fleet has one, the 3-D map (a point cloud of voxel boxes coloured
by height) when it has drones, the markers, each robot's plan when the planner runs (a drone's
in 3-D), each robot's odometry, and TF when the robots publish it (`tf_layout`). In the namespaced
layout every robot has its own tree with the same frame names and RViz reads one tree: it is
given the first robot's (`rviz_remappings`), and the odometry of that robot only.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Dict, List, Tuple

import yaml

from orca_nav.bringup.fleet_file import FleetConfig
from orca_nav.core.fleet.names import robot_names

# Distinct on RViz's dark background, cycled over the robots.
PALETTE = ('255; 85; 0', '0; 170; 255', '85; 255; 0', '255; 0; 255', '255; 255; 0',
           '0; 255; 170', '170; 85; 255', '255; 170; 170')


def _absolute(topic: str) -> str:
    return topic if topic.startswith('/') else '/' + topic


def _template(path: Path) -> Tuple[Dict[str, Any], Dict[str, Dict[str, Any]]]:
    config = yaml.safe_load(path.read_text())
    displays = config['Visualization Manager']['Displays']
    by_class = {}
    for display in displays:
        by_class.setdefault(display['Class'].rpartition('/')[2], display)
    return config, by_class


def _enabled(display: Dict[str, Any], on: bool) -> Dict[str, Any]:
    display['Enabled'] = on
    display['Value'] = on
    return display


def rviz_config(cfg: FleetConfig, template: Path) -> Dict[str, Any]:
    """The RViz config (as the YAML mapping) for `cfg`, from the template file."""
    config, kinds = _template(template)
    names = [robot_names(r, cfg.tf_layout, cfg.global_frame) for r in cfg.robot_names]
    displays: List[Dict[str, Any]] = [copy.deepcopy(kinds['Grid'])]
    displays.append(_enabled(copy.deepcopy(kinds['Map']), cfg.map_path is not None))
    if cfg.map_3d_path is not None:
        displays.append(map_3d_display(cfg))
    displays.append(_enabled(copy.deepcopy(kinds['MarkerArray']), True))
    for i, n in enumerate(names):
        plan = copy.deepcopy(kinds['Path'])
        plan['Name'] = f'Plan {n.robot}'
        plan['Color'] = plan['Pose Color'] = PALETTE[i % len(PALETTE)]
        plan['Topic']['Value'] = _absolute(n.plan_topic)
        displays.append(_enabled(plan, cfg.planner_enabled))
    for i, n in enumerate(names):
        odom = copy.deepcopy(kinds['Odometry'])
        odom['Name'] = f'Odometry {n.robot}'
        odom['Shape']['Color'] = PALETTE[i % len(PALETTE)]
        odom['Topic']['Value'] = _absolute(n.odom_topic)
        # Namespaced trees share frame names: RViz resolves only the first robot's.
        displays.append(_enabled(odom, cfg.tf_layout != 'namespaced' or i == 0))
    if cfg.tf_layout != 'none':
        displays.append({'Class': 'rviz_default_plugins/TF', 'Enabled': True,
                         'Frame Timeout': 15, 'Marker Scale': 1, 'Name': 'TF',
                         'Show Arrows': True, 'Show Axes': True, 'Show Names': True,
                         'Update Interval': 0, 'Value': True})
    manager = config['Visualization Manager']
    manager['Displays'] = displays
    manager['Global Options']['Fixed Frame'] = cfg.global_frame
    for tool in manager['Tools']:
        if tool['Class'] == 'rviz_default_plugins/SetGoal':
            tool['Topic']['Value'] = _absolute(names[0].goal_topic)
    return config


def map_3d_display(cfg: FleetConfig) -> Dict[str, Any]:
    """A PointCloud2 display of the latched 3-D map: each occupied voxel a box of the voxel's
    size, coloured by height so the trees' and walls' shapes read from any angle."""
    from orca_nav.core.voxel_map import load_voxel_map
    from orca_nav.parameters.map_3d_publisher import MAP_3D_TOPIC
    size = float(load_voxel_map(cfg.map_3d_path).resolution)
    return {'Class': 'rviz_default_plugins/PointCloud2', 'Enabled': True, 'Name': 'Map 3-D',
            'Alpha': 0.35, 'Style': 'Boxes', 'Size (m)': size, 'Size (Pixels)': 3,
            'Color Transformer': 'AxisColor', 'Axis': 'Z', 'Autocompute Value Bounds': True,
            'Position Transformer': 'XYZ', 'Decay Time': 0, 'Selectable': False,
            'Use Fixed Frame': True, 'Use rainbow': True, 'Invert Rainbow': False,
            'Topic': {'Depth': 1, 'Durability Policy': 'Transient Local',
                      'History Policy': 'Keep Last', 'Reliability Policy': 'Reliable',
                      'Value': MAP_3D_TOPIC},
            'Value': True}


def rviz_remappings(cfg: FleetConfig) -> List[Tuple[str, str]]:
    """RViz's TF topics: the shared tree, or in the namespaced layout the first robot's."""
    if cfg.tf_layout != 'namespaced':
        return []
    first = robot_names(cfg.robot_names[0], cfg.tf_layout, cfg.global_frame)
    return [('/tf', _absolute(first.tf_topic)), ('/tf_static', _absolute(first.tf_static_topic))]


def write_rviz_config(cfg: FleetConfig, template: Path, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (f'# RViz config of fleet {cfg.name!r}, generated by orca_nav.bringup.rviz from '
              f'{template.name}: do not edit\n')
    path.write_text(header + yaml.safe_dump(rviz_config(cfg, template), sort_keys=False))
    return path
