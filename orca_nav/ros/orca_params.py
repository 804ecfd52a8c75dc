"""What orca_node's parameters (declared in `orca_nav.parameters.orca_node`) become in the core:
`ControllerParams`, one `RobotSpec` per robot, the robots a node commands."""
from __future__ import annotations

from typing import Any, Dict, List

from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.deadlock import DeadlockParams
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.fleet.safety import SafetyParams
from orca_nav.parameters.orca_node import SAFETY_SPECS
from orca_nav.ros.params import robot_spec


def safety_params(s: Dict[str, Any]) -> SafetyParams:
    """The `safety.*` parameters `s` as the safety layer's."""
    return SafetyParams(**{spec.name: s[spec.name] for spec in SAFETY_SPECS})


def robot_specs(robots: List[str], fields: Dict[str, Dict[str, Any]]) -> List[RobotSpec]:
    """The robots' `<robot>.<field>` parameters as core RobotSpecs."""
    return [robot_spec(r, fields[r]) for r in robots]


def controller_params(c: Dict[str, Any], d: Dict[str, Any],
                      s: Dict[str, Any]) -> ControllerParams:
    """The node parameters `c`, `deadlock.*` parameters `d` and `safety.*` parameters `s` as
    the controller's (filter mode knows no goals, so it has no deadlock breaker)."""
    deadlock = None if not d['enabled'] else DeadlockParams(
        stall_time=d['stall_time'], min_progress=d['min_progress'],
        recovery_time=d['recovery_time'], yield_factor=d['yield_factor'],
        give_way_speed=d['give_way_speed'],
        detour_angle=d['detour_angle'],
        detour_spread=min(d['detour_spread'], d['detour_angle']))
    return ControllerParams(
        control_rate=c['control_rate'], neighbor_dist=c['neighbor_dist'],
        max_neighbors=c['max_neighbors'], time_horizon=c['time_horizon'],
        time_horizon_obst=c['time_horizon_obst'], odom_timeout=c['odom_timeout'],
        safety_margin=c['safety_margin'], command_latency=c['command_latency'],
        goal_tolerance=c['goal_tolerance'], map_inflation=c['map_inflation'],
        trajectories_only=c['trajectories_only'], require_map=c['require_map'],
        filter_mode=bool(c['cmd_vel_in']), source_timeout=c['source_timeout'],
        deadlock=None if c['cmd_vel_in'] else deadlock, uncertainty_gain=c['uncertainty_gain'],
        max_uncertainty_margin=c['max_uncertainty_margin'],
        max_extrapolation=c['max_extrapolation'], sensor_persistence=c['sensor_persistence'],
        sensor_max_points=c['sensor_max_points'], ground_clearance=c['ground_clearance'],
        require_map_3d=c['require_map_3d'], safety=safety_params(s),
        acceleration_aware=c['acceleration_aware'])


def shard_block(count: int, shard_index: int, shard_count: int) -> range:
    """The rows of `count` robots that shard `shard_index` of `shard_count` commands: contiguous
    blocks in list order, the first `count % shard_count` one robot larger."""
    base, larger = divmod(count, shard_count)
    start = shard_index * base + min(shard_index, larger)
    return range(start, start + base + (shard_index < larger))


def commanded_robots(c: Dict[str, Any]) -> List[str]:
    """The robots this node commands: all of `robots`, `robot_name` in per_robot mode, its
    block (`shard_block`) in shard mode."""
    robots = list(c['robots'])
    if c['mode'] == 'shard':
        index, count = c['shard_index'], c['shard_count']
        if count > len(robots):
            raise ValueError(f'shard_count: {count} shards for {len(robots)} robots (a shard '
                             'would command none)')
        if index >= count:
            raise ValueError(f'shard_index: {index} is not below shard_count {count}')
        return [robots[i] for i in shard_block(len(robots), index, count)]
    if c['mode'] != 'per_robot':
        return robots
    if not c['robot_name']:
        raise ValueError('robot_name: required in per_robot mode (which robot to command)')
    if c['robot_name'] not in c['robots']:
        raise ValueError(f"robot_name: {c['robot_name']!r} is not in robots {list(c['robots'])}")
    return [c['robot_name']]
