"""Fleet configuration: the robots, the map and the node parameters of one orca_nav deployment.

A fleet config is a YAML file (or the equivalent dict)::

    name: two_robots              # optional, defaults to the file stem
    global_frame: map             # frame of odometry, goals and the map (default 'map')
    tf_layout: none               # none | namespaced | prefixed (core/fleet/names.py)
    use_sim_time: true            # nodes on /clock (default: when the embedded simulator runs)
    map: ../maps/corridor.yaml    # map_server YAML, relative to this file; omit for open space
    map_3d: ../maps/forest_3d.yaml   # voxel map YAML for drones (quadrotors); omit for none
    shards: 1                     # orca_node processes the robots are split over (docs/scale.md)
    defaults:                     # applied to every robot, each robot may override
      kinematics: diff_drive
      radius: 0.25
      max_speed: 0.8
    robots:
      - name: robot0
        start: [-4.0, 0.0, 0.0]             # x, y, yaw (yaw may be omitted: 0)
        goal: [4.0, 0.0, 0.0]
      - name: robot1
        kinematics: holonomic
        start: [4.0, 0.0, 3.14159]
        goals: [[-4.0, 0.0], [4.0, 1.0]]    # several goals, visited in turn
      - name: drone0
        kinematics: quadrotor
        start: [0.0, 3.0]
        start_z: 1.5                        # altitude (m); quadrotors only, others are at 0
        goal: [0.0, -3.0]
        goal_z: 2.0                         # goal altitude (m); 0 or omitted: keep flying level
    planner: {enabled: false}     # other keys are planner_node parameters
    orca_node: {time_horizon: 5.0}          # parameters of each node
    fleet_sim_node: {rate: 50.0}
    planner_node: {}
    map_publisher: {}
    demo: {duration: 60.0, goal_tolerance: 0.25}

Robot fields, their defaults and ranges come from the one robot schema
(`orca_nav.core.fleet.robots`), as do the per-robot ROS parameters. A config that passes the
schema is then checked for where its robots are (`placement_problems`): no start or goal outside
the map or with the robot's disc on an occupied cell (the simulator's own contact test), no two
robots overlapping at their starts. Drones (quadrotors) are placed in the 3-D map instead
(`map_3d`): their start (x, y, start_z) and goals (x, y, goal_z, or start_z when goal_z is 0)
must be inside it with the drone's ball clear of occupied voxels; two drones overlap by the
distance of their centres, a drone and a ground robot when their discs overlap and the drone
reaches below `ground_clearance` (1 m; docs/orca3d.md). Every problem found is reported at once,
one line each, starting with the field path (``robots[3].start``) and giving the value and the
reason: `FleetFileError`, a ValueError whose `problems` lists the lines.
"""
from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import yaml

from orca_nav.bringup.maps import load_map, load_map_3d
from orca_nav.core.fleet.names import TF_LAYOUTS
from orca_nav.core.fleet.robots import (
    FIELDS_BY_NAME,
    NUMERIC_FIELDS,
    ROBOT_FIELDS,
    Pose,
    RobotSpec,
    check_robot_name,
    field_problem,
)
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.sim.fleet_sim import GROUND_CLEARANCE, map_overlap
from orca_nav.parameters.nodes import parameter_problems
from orca_nav.parameters.orca_node import MAX_SHARDS

NODE_SECTIONS = ('orca_node', 'fleet_sim_node', 'planner_node', 'map_publisher',
                 'map_3d_publisher')

DEFAULTABLE_FIELDS = tuple(f.name for f in ROBOT_FIELDS)
ROBOT_KEYS = ('name', 'start', 'goal', 'goals', 'start_z', 'goal_z') + DEFAULTABLE_FIELDS
TOP_LEVEL_KEYS = ('name', 'global_frame', 'tf_layout', 'use_sim_time', 'map', 'map_3d', 'shards',
                  'defaults', 'robots', 'planner', 'demo') + NODE_SECTIONS
DEMO_DEFAULTS = {'duration': 60.0, 'goal_tolerance': 0.25}

_PARAM_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z')
_FRAME_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_/]*\Z')


# Problems a FleetFileError's message lists; the rest are counted (a 5,000-robot file with one
# mistake repeated would otherwise print thousands of lines).
SHOWN_PROBLEMS = 20


class FleetFileError(ValueError):
    """A fleet config with problems: `problems` holds one line per problem (field path, value,
    reason); the message is the first SHOWN_PROBLEMS of those lines, each prefixed with where
    the config came from, and how many more there are."""

    def __init__(self, problems: Sequence[str], where: str = ''):
        self.problems = list(problems)
        lines = [where + problem for problem in self.problems[:SHOWN_PROBLEMS]]
        hidden = len(self.problems) - SHOWN_PROBLEMS
        if hidden > 0:
            lines.append(f'{where}... and {hidden} more problems ({len(self.problems)} in all)')
        super().__init__('\n'.join(lines))


@dataclass(frozen=True)
class RobotConfig(RobotSpec):
    """One robot: its model and limits (RobotSpec), start pose and the goals it visits in turn."""

    start: Pose = (0.0, 0.0, 0.0)
    goals: Tuple[Pose, ...] = ()
    start_z: float = 0.0        # altitudes of a quadrotor (m); goal_z 0: keep flying level
    goal_z: float = 0.0

    def ros_parameters(self) -> Dict[str, Any]:
        """The `<field>: value` parameters of TEAM.md for this robot (goal = the first goal).

        A robot without goals gets no `goal` entry: an empty list has no ROS parameter type.
        """
        params = {'kinematics': self.kinematics, 'start': list(self.start)}
        params.update({name: float(getattr(self, name)) for name in NUMERIC_FIELDS})
        if self.goals:
            params['goal'] = list(self.goals[0])
        if self.flies:
            params.update(start_z=float(self.start_z), goal_z=float(self.goal_z))
        return params


@dataclass(frozen=True)
class DemoSettings:
    """How `orca-nav demo` runs this fleet: time limit (s) and goal position tolerance (m)."""

    duration: float = DEMO_DEFAULTS['duration']
    goal_tolerance: float = DEMO_DEFAULTS['goal_tolerance']


@dataclass(frozen=True)
class FleetConfig:
    """A validated fleet config. Build it with `load_fleet_config`."""

    name: str
    robots: Tuple[RobotConfig, ...]
    global_frame: str = 'map'
    tf_layout: str = 'none'                 # how robots' odometry and TF are named (TF_LAYOUTS)
    map_path: Optional[Path] = None
    map_3d_path: Optional[Path] = None      # voxel map YAML for the drones
    planner_enabled: bool = False
    use_sim_time: Optional[bool] = None     # None: when the embedded simulator runs
    shards: int = 1                         # orca_node processes splitting the robots
    # node name (NODE_SECTIONS) -> flat {parameter name: value}; planner params land in planner_node
    node_parameters: Mapping[str, Mapping[str, Any]] = field(
        default_factory=lambda: MappingProxyType({s: MappingProxyType({}) for s in NODE_SECTIONS}))
    demo: DemoSettings = DemoSettings()
    source: Optional[Path] = field(default=None, compare=False)

    @property
    def robot_names(self) -> Tuple[str, ...]:
        return tuple(r.name for r in self.robots)

    def robot(self, name: str) -> RobotConfig:
        for robot in self.robots:
            if robot.name == name:
                return robot
        raise ValueError(f'robot {name!r} is not in fleet {self.name!r} '
                         f'(robots: {", ".join(self.robot_names)})')

    def to_dict(self, base_dir: Optional[Path] = None) -> Dict[str, Any]:
        """The YAML form of this config (loads back to an equal config from `base_dir`).

        The map path is written relative to `base_dir` when given.
        """
        out: Dict[str, Any] = {'name': self.name, 'global_frame': self.global_frame}
        if self.tf_layout != 'none':
            out['tf_layout'] = self.tf_layout
        if self.use_sim_time is not None:
            out['use_sim_time'] = self.use_sim_time
        if self.map_path is not None:
            out['map'] = str(_relative_to(self.map_path, base_dir) if base_dir else self.map_path)
        if self.map_3d_path is not None:
            out['map_3d'] = str(_relative_to(self.map_3d_path, base_dir) if base_dir
                                else self.map_3d_path)
        if self.shards != 1:
            out['shards'] = self.shards
        # Fields every robot shares go to `defaults`; robots list only what differs.
        shared = {f: getattr(self.robots[0], f) for f in DEFAULTABLE_FIELDS
                  if len({getattr(r, f) for r in self.robots}) == 1}
        out['defaults'] = shared
        robots = []
        for robot in self.robots:
            entry = {'name': robot.name}
            entry.update({f: getattr(robot, f) for f in DEFAULTABLE_FIELDS if f not in shared})
            entry['start'] = [float(v) for v in robot.start]
            if len(robot.goals) == 1:
                entry['goal'] = [float(v) for v in robot.goals[0]]
            elif robot.goals:
                entry['goals'] = [[float(v) for v in g] for g in robot.goals]
            if robot.flies:
                entry.update(start_z=float(robot.start_z), goal_z=float(robot.goal_z))
            robots.append(entry)
        out['robots'] = robots
        planner = dict(self.node_parameters['planner_node'])
        out['planner'] = {'enabled': self.planner_enabled}
        for section in ('orca_node', 'fleet_sim_node', 'map_publisher', 'map_3d_publisher'):
            if self.node_parameters[section]:
                out[section] = dict(self.node_parameters[section])
        if planner:
            out['planner_node'] = planner
        out['demo'] = {'duration': self.demo.duration, 'goal_tolerance': self.demo.goal_tolerance}
        return out


def load_fleet_config(source: Union[str, os.PathLike, Mapping[str, Any]],
                      base_dir: Union[str, Path, None] = None) -> FleetConfig:
    """Loads and validates a fleet config from a YAML path or a dict.

    A relative `map` path is resolved against the YAML file's folder, or `base_dir` (default: the
    current directory) for a dict. Raises ValueError naming the field path or the file.
    """
    path: Optional[Path] = None
    if not isinstance(source, (str, os.PathLike)):
        raw = source        # a dict, or anything else that _parse rejects with a reason
        folder = Path(base_dir) if base_dir is not None else Path.cwd()
        default_name = 'fleet'
    else:
        path = Path(source)
        raw = _read_yaml(path, 'fleet config: ')
        folder = Path(base_dir) if base_dir is not None else path.parent
        default_name = path.name.split('.')[0]
    where = f'fleet config {path}: ' if path is not None else 'fleet config: '
    problems: List[str] = []
    cfg = _parse(raw, folder, default_name, path, problems)
    if problems:
        raise FleetFileError(problems, where)
    return cfg


def load_fleet_config_or_exit(source: Union[str, os.PathLike, Mapping[str, Any]],
                              program: str, stream=None) -> FleetConfig:
    """`load_fleet_config`, or every problem printed as `program: <line>` and SystemExit(2):
    how `orca-nav demo` and the launch file refuse a fleet file before anything starts."""
    try:
        return load_fleet_config(source)
    except ValueError as err:
        for line in str(err).splitlines():
            print(f'{program}: {line}', file=stream if stream is not None else sys.stderr)
        raise SystemExit(2) from None


def _load_grid(map_path: Optional[Path], problems: List[str]) -> Optional[OccupancyGrid]:
    if map_path is None:
        return None
    try:
        return load_map(map_path)
    except (ValueError, OSError) as err:
        problems.append(f'map: {map_path} cannot be read: {err}')
        return None


def _pose_text(pose: Sequence[float]) -> str:
    return '[' + ', '.join(f'{v:g}' for v in pose) + ']'


def _placements(robots, indices, flying: bool):
    """(field paths, points, radii) of the starts and goals of the robots that fly (or not):
    (x, y, z) for drones, the poses (x, y, yaw) of ground robots."""
    fields, points, radii = [], [], []
    for index, robot in zip(indices, robots):
        if robot.flies != flying:
            continue
        goal_z = robot.goal_z if robot.goal_z != 0.0 else robot.start_z
        fields.append(f'robots[{index}].start')
        points.append(tuple(robot.start[:2]) + (robot.start_z,) if flying else robot.start)
        radii.append(robot.radius)
        key = 'goal' if len(robot.goals) == 1 else 'goals'
        for g, goal in enumerate(robot.goals):
            fields.append(f'robots[{index}].{key}' + (f'[{g}]' if key == 'goals' else ''))
            points.append(tuple(goal[:2]) + (goal_z,) if flying else goal)
            radii.append(robot.radius)
    return fields, points, radii


def placement_problems_3d(robots: Sequence[RobotConfig], grid: Optional[OccupancyGrid],
                          indices: Sequence[int]) -> List[str]:
    """The drones' starts and goals against the 3-D map: outside it, or the drone's ball on an
    occupied voxel (the simulator's contact test)."""
    fields, points, radii = _placements(robots, indices, flying=True)
    if grid is None or not points:
        return []
    lower, upper = grid.extent
    bounds = (f'the 3-D map spans x {lower[0]:g}..{upper[0]:g}, y {lower[1]:g}..{upper[1]:g}, '
              f'z {lower[2]:g}..{upper[2]:g}')
    xyz, radius = np.array(points, dtype=float), np.array(radii, dtype=float)
    problems = []
    for name, point, r, inside, touches in zip(fields, points, radius, grid.in_bounds(xyz),
                                               map_overlap(grid, xyz, radius)):
        if not inside:
            problems.append(f'{name}: (x, y, z) {_pose_text(point)} is outside the 3-D map '
                            f'({bounds})')
        elif touches:
            problems.append(f'{name}: (x, y, z) {_pose_text(point)} is inside an obstacle of '
                            f'the 3-D map: the drone\'s ball (radius {r:g} m) overlaps an '
                            'occupied voxel or the map border')
    return problems


# Rows of the pairwise overlap test computed at once (a large fleet needs no N x N matrix).
_OVERLAP_BLOCK = 2_000_000


@dataclass(frozen=True)
class _Places:
    """One place per robot (its start, or where it ends): field path, pose, position (x, y, z),
    radius, whether the robot flies."""

    fields: List[str]
    poses: List[Sequence[float]]
    xyz: np.ndarray         # (N, 3)
    radius: np.ndarray      # (N,)
    flies: np.ndarray       # (N,) bool


def _places(robots: Sequence[RobotConfig], indices: Sequence[int], end: bool) -> _Places:
    """The robots' starts, or (`end`) where each ends: its last goal (a drone's at goal_z, or
    start_z for goal_z 0), or its start when it has no goal."""
    fields, poses, xyz = [], [], []
    for index, robot in zip(indices, robots):
        if end and robot.goals:
            key = 'goal' if len(robot.goals) == 1 else f'goals[{len(robot.goals) - 1}]'
            pose, z = robot.goals[-1], robot.goal_z or robot.start_z
        else:
            key, pose, z = 'start', robot.start, robot.start_z
        fields.append(f'robots[{index}].{key}')
        poses.append(pose)
        xyz.append((pose[0], pose[1], z if robot.flies else 0.0))
    return _Places(fields, poses, np.array(xyz, dtype=float).reshape(-1, 3),
                   np.array([r.radius for r in robots], dtype=float),
                   np.array([r.flies for r in robots], dtype=bool))


def _first_overlaps(places: _Places,
                    movers: Optional[np.ndarray] = None) -> List[Tuple[int, int, int, float]]:
    """(j, i, how many, distance) for every robot j whose disc at its place meets the disc of a
    robot i < j at its place (i the first such robot, distance what says so); with `movers`
    (N,) bool, only pairs with at least one mover count. Discs meet by the layer rule of
    docs/orca3d.md: two drones by the distance of their centres, a drone and a ground robot when
    their discs overlap and the drone reaches below GROUND_CLEARANCE, two ground robots when their
    discs overlap."""
    count = len(places.radius)
    xyz, radius, flies = places.xyz, places.radius, places.flies
    low = xyz[:, 2] - radius < GROUND_CLEARANCE
    found = []
    rows = max(1, _OVERLAP_BLOCK // max(count, 1))
    for first in range(0, count, rows):
        # Candidates first: the discs of any two robots that meet overlap in the plane.
        block = np.arange(first, min(first + rows, count))
        dx = xyz[block, None, 0] - xyz[None, :, 0]
        dy = xyz[block, None, 1] - xyz[None, :, 1]
        near = dx * dx + dy * dy < (radius[block, None] + radius[None, :]) ** 2
        near &= np.arange(count)[None, :] < block[:, None]               # i < j
        if movers is not None:
            near &= movers[block, None] | movers[None, :]
        j, i = np.nonzero(near)
        j = block[j]
        flat = np.hypot(*(xyz[j, :2] - xyz[i, :2]).T)
        both, one = flies[j] & flies[i], flies[j] ^ flies[i]
        drone_low = np.where(flies[j], low[j], low[i])
        centres = np.hypot(flat, xyz[j, 2] - xyz[i, 2])
        meet = np.where(both, centres < radius[j] + radius[i], ~one | drone_low)
        distance = np.where(both, centres, flat)
        j, i, distance = j[meet], i[meet], distance[meet]
        robots, firsts, counts = np.unique(j, return_index=True, return_counts=True)
        found += [(int(r), int(i[k]), int(c), float(distance[k]))
                  for r, k, c in zip(robots, firsts, counts)]
    return found


def _overlap_problems(robots: Sequence[RobotConfig], indices: Sequence[int]) -> List[str]:
    """Two robots overlapping at their starts, or where they end (their last goals, or the start
    of a robot without goals): one line per robot, naming the first one it overlaps."""
    problems = []
    starts = _places(robots, indices, end=False)
    for j, i, count, apart in _first_overlaps(starts):
        more = f'; and {count - 1} more robots' if count > 1 else ''
        problems.append(
            f'{starts.fields[j]}: {_pose_text(starts.poses[j])} overlaps robots[{indices[i]}] '
            f'({robots[i].name} at {_pose_text(starts.poses[i])}): centres {apart:.3g} m apart, '
            f'radii {starts.radius[i]:g} + {starts.radius[j]:g} m{more}')
    ends = _places(robots, indices, end=True)
    has_goal = np.array([bool(r.goals) for r in robots], dtype=bool)
    # Two robots without goals stay at their starts: the check above covers them.
    for j, i, count, apart in _first_overlaps(ends, movers=has_goal):
        more = f'; and {count - 1} more robots' if count > 1 else ''
        if not has_goal[j]:       # name the goal that lands on a robot standing still
            i, j, more = j, i, ''
        other = 'the goal' if has_goal[i] else 'the start, where it stays (it has no goal),'
        problems.append(
            f'{ends.fields[j]}: {_pose_text(ends.poses[j])} overlaps {other} of '
            f'robots[{indices[i]}] ({robots[i].name} at {_pose_text(ends.poses[i])}): centres '
            f'{apart:.3g} m apart, radii {ends.radius[i]:g} + {ends.radius[j]:g} m: '
            f'{robots[j].name} and {robots[i].name} cannot both end there{more}')
    return problems


def placement_problems(robots: Sequence[RobotConfig], grid: Optional[OccupancyGrid] = None,
                       indices: Optional[Sequence[int]] = None,
                       grid_3d: Optional[OccupancyGrid] = None) -> List[str]:
    """Where the robots are cannot work: a ground robot's start or goal outside the map or with
    its disc on an occupied cell (the simulator's contact test, `map_overlap`), a drone's outside
    the 3-D map or with its ball on an occupied voxel (`placement_problems_3d`), or two robots
    that overlap at their starts or where they end (`_overlap_problems`). One line per problem:
    field path (`robots[<index>]`, the index from `indices`, default the position in `robots`),
    value, reason."""
    problems: List[str] = []
    indices = list(range(len(robots))) if indices is None else list(indices)
    problems += placement_problems_3d(robots, grid_3d, indices)
    if grid is not None and grid.ndim == 2:
        lower, upper = grid.extent
        bounds = (f'the map spans x {lower[0]:g}..{upper[0]:g}, y {lower[1]:g}..{upper[1]:g}')
        fields, poses, radii = _placements(robots, indices, flying=False)
        if poses:
            xy = np.array(poses, dtype=float)[:, :2]
            radius = np.array(radii, dtype=float)
            inside = grid.in_bounds(xy)
            touching = map_overlap(grid, xy, radius)
            for name, pose, r, is_inside, touches in zip(fields, poses, radius, inside, touching):
                if not is_inside:
                    problems.append(f'{name}: {_pose_text(pose)} is outside the map ({bounds})')
                elif touches:
                    problems.append(f'{name}: {_pose_text(pose)} is inside an obstacle: the '
                                    f'robot\'s disc (radius {r:g} m) overlaps an occupied cell '
                                    'or the map border')
    return problems + _overlap_problems(robots, indices)


def _parse(raw, folder: Path, default_name: str, path: Optional[Path],
           problems: List[str]) -> Optional[FleetConfig]:
    """The config, or None with `problems` extended: the robots are checked one by one (every
    robot's first problem is listed), the rest stops at the first problem."""
    if raw is None:
        problems.append('empty config (expected a mapping with a `robots` list)')
        return None
    if not isinstance(raw, Mapping):
        problems.append(f'expected a mapping at the top level, got {type(raw).__name__}')
        return None
    try:
        defaults = _parse_defaults(raw.get('defaults', {}))
    except ValueError as err:
        problems.append(str(err))
        return None
    parsed = _parse_robots(raw.get('robots'), defaults, problems)
    robots = tuple(parsed.values())
    try:
        map_path = _parse_map(raw.get('map'), folder)
    except ValueError as err:
        problems.append(str(err))
        map_path = None
    map_3d_path, grid_3d = _parse_map_3d(raw.get('map_3d'), folder, problems)
    # Where the robots are is checked for every robot that parsed, whatever else failed.
    problems += placement_problems(robots, _load_grid(map_path, problems), indices=list(parsed),
                                   grid_3d=grid_3d)
    try:
        cfg = _parse_rest(raw, default_name, path, robots, map_path, map_3d_path)
    except FleetFileError as err:
        problems += err.problems
        return None
    except ValueError as err:
        problems.append(str(err))
        return None
    return cfg if not problems else None


def _parse_rest(raw: Mapping, default_name: str, path: Optional[Path],
                robots: Tuple[RobotConfig, ...], map_path: Optional[Path],
                map_3d_path: Optional[Path] = None) -> FleetConfig:
    _reject_unknown(raw, TOP_LEVEL_KEYS, '')
    name = _string(raw.get('name', default_name), 'name')
    global_frame = _string(raw.get('global_frame', 'map'), 'global_frame')
    if not _FRAME_NAME.match(global_frame):
        raise ValueError(f'global_frame: {global_frame!r} is not a valid frame id')
    tf_layout = raw.get('tf_layout', 'none')
    if tf_layout not in TF_LAYOUTS:
        raise ValueError(f'tf_layout: {tf_layout!r} is not one of {", ".join(TF_LAYOUTS)}')
    use_sim_time = raw.get('use_sim_time')
    if use_sim_time is not None and not isinstance(use_sim_time, bool):
        raise ValueError(f'use_sim_time: expected true or false, got {use_sim_time!r}')
    shards = _shards(raw.get('shards', 1), len(robots))
    planner_raw = raw.get('planner', {}) or {}
    if not isinstance(planner_raw, Mapping):
        raise ValueError(f'planner: expected a mapping, got {planner_raw!r}')
    enabled = planner_raw.get('enabled', False)
    if not isinstance(enabled, bool):
        raise ValueError(f'planner.enabled: expected true or false, got {enabled!r}')
    planner_params = {k: v for k, v in planner_raw.items() if k != 'enabled'}

    reserved = {'robots', 'global_frame', 'tf_layout', 'use_sim_time', 'mode', 'robot_name',
                'shard_index', 'shard_count'} | {
        f'{r.name}.{f}' for r in robots for f in ROBOT_KEYS + ('goal',)}
    sections = {}
    for section in NODE_SECTIONS:
        sections[section] = _node_parameters(raw.get(section, {}), section, reserved)
    planner_flat = _node_parameters(planner_params, 'planner', reserved)
    clash = sorted(set(planner_flat) & set(sections['planner_node']))
    if clash:
        raise ValueError(f'planner.{clash[0]}: also given in planner_node; give it once')
    # Checked as the nodes will check them, so a bad value is refused before any node starts.
    problems = parameter_problems('planner_node', planner_flat, 'planner.') + [
        problem for section in NODE_SECTIONS
        for problem in parameter_problems(section, sections[section], f'{section}.')]
    if problems:
        raise FleetFileError(problems)
    sections['planner_node'] = {**planner_flat, **sections['planner_node']}

    demo_raw = raw.get('demo', {}) or {}
    if not isinstance(demo_raw, Mapping):
        raise ValueError(f'demo: expected a mapping, got {demo_raw!r}')
    _reject_unknown(demo_raw, tuple(DEMO_DEFAULTS), 'demo.')
    demo = DemoSettings(**{key: _number(demo_raw.get(key, default), f'demo.{key}', low=1e-6)
                           for key, default in DEMO_DEFAULTS.items()})
    return FleetConfig(
        name=name, robots=robots, global_frame=global_frame, tf_layout=tf_layout,
        map_path=map_path, map_3d_path=map_3d_path,
        planner_enabled=enabled, use_sim_time=use_sim_time, shards=shards,
        node_parameters=MappingProxyType({k: MappingProxyType(v) for k, v in sections.items()}),
        demo=demo, source=path)


def _read_yaml(path: Path, prefix: str):
    if not path.is_file():
        raise ValueError(f'{prefix}file {path} not found')
    try:
        # libyaml's loader where PyYAML has it: a 5,000-robot file loads in 0.1 s, not 10 s.
        return yaml.load(path.read_text(), Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))
    except yaml.YAMLError as err:
        raise ValueError(f'{prefix}{path} is not valid YAML: {err}') from err


def _reject_unknown(mapping: Mapping, allowed, prefix: str) -> None:
    for key in mapping:
        if key not in allowed:
            raise ValueError(f'{prefix}{key}: unknown key (allowed: {", ".join(allowed)})')


def _string(value, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f'{where}: expected a non-empty string, got {value!r}')
    return value


def _number(value, where: str, low: Optional[float] = None, high: Optional[float] = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f'{where}: expected a number, got {value!r}')
    if not math.isfinite(value):
        raise ValueError(f'{where}: {value!r} is not finite')
    if low is not None and value < low:
        raise ValueError(f'{where}: {value!r} is below the minimum {low}')
    if high is not None and value > high:
        raise ValueError(f'{where}: {value!r} is above the maximum {high}')
    return float(value)


def _shards(value, robot_count: int) -> int:
    """`shards`: how many orca_node processes split the robots, each commanding at least one."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f'shards: expected an integer, got {value!r}')
    if value < 1:
        raise ValueError(f'shards: {value} is below the minimum 1')
    if value > MAX_SHARDS:
        raise ValueError(f'shards: {value} is above the maximum {MAX_SHARDS}')
    if robot_count and value > robot_count:
        raise ValueError(f'shards: {value} shards for {robot_count} robots (each shard commands '
                         'at least one robot)')
    return value


def _pose(value, where: str) -> Pose:
    if not isinstance(value, (list, tuple)) or len(value) not in (2, 3):
        raise ValueError(f'{where}: expected [x, y] or [x, y, yaw], got {value!r}')
    numbers = [_number(v, f'{where}[{i}]') for i, v in enumerate(value)]
    return (numbers[0], numbers[1], numbers[2] if len(numbers) == 3 else 0.0)


def _robot_field(key: str, value, where: str):
    problem = field_problem(key, value)
    if problem is not None:
        raise ValueError(f'{where}: {problem}')
    return value if FIELDS_BY_NAME[key].choices is not None else float(value)


def _parse_defaults(raw) -> Dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError(f'defaults: expected a mapping, got {raw!r}')
    _reject_unknown(raw, DEFAULTABLE_FIELDS, 'defaults.')
    return {key: _robot_field(key, value, f'defaults.{key}') for key, value in raw.items()}


def _parse_robots(raw, defaults: Mapping[str, Any],
                  problems: List[str]) -> Dict[int, RobotConfig]:
    """{index in the list: robot} of the robots that pass the schema; the first problem of each
    other one goes to `problems`."""
    if raw is None:
        problems.append('robots: missing (a list with at least one robot is required)')
        return {}
    if not isinstance(raw, list) or not raw:
        problems.append(f'robots: expected a non-empty list, got {raw!r}')
        return {}
    robots, seen = {}, {}
    for index, entry in enumerate(raw):
        try:
            robots[index] = _parse_robot(index, entry, defaults, seen)
        except ValueError as err:
            problems.append(str(err))
    return robots


def _parse_robot(index: int, entry, defaults: Mapping[str, Any],
                 seen: Dict[str, int]) -> RobotConfig:
    where = f'robots[{index}]'
    if not isinstance(entry, Mapping):
        raise ValueError(f'{where}: expected a mapping, got {entry!r}')
    _reject_unknown(entry, ROBOT_KEYS, where + '.')
    name = entry.get('name')
    try:
        check_robot_name(name)
    except ValueError as err:
        raise ValueError(f'{where}.name: {err}') from None
    if name in seen:
        raise ValueError(f'{where}.name: duplicate robot name {name!r} '
                         f'(also robots[{seen[name]}])')
    seen[name] = index
    values = {f.name: f.default for f in ROBOT_FIELDS}
    values.update(defaults)
    for key in DEFAULTABLE_FIELDS:
        if key in entry:
            values[key] = _robot_field(key, entry[key], f'{where}.{key}')
    if 'start' not in entry:
        raise ValueError(f'{where}.start: missing (give [x, y, yaw])')
    start = _pose(entry['start'], f'{where}.start')
    if 'goal' in entry and 'goals' in entry:
        raise ValueError(f'{where}.goals: give either goal or goals, not both')
    if 'goals' in entry:
        goals_raw = entry['goals']
        if not isinstance(goals_raw, list):
            raise ValueError(f'{where}.goals: expected a list of poses, got {goals_raw!r}')
        goals = tuple(_pose(g, f'{where}.goals[{i}]') for i, g in enumerate(goals_raw))
    elif entry.get('goal') is not None:
        goals = (_pose(entry['goal'], f'{where}.goal'),)
    else:
        goals = ()
    robot = RobotConfig(name=name, start=start, goals=goals, **values)
    altitudes = {}
    for key in ('start_z', 'goal_z'):
        if key in entry:
            altitudes[key] = _number(entry[key], f'{where}.{key}', low=-1e4, high=1e4)
            if altitudes[key] != 0.0 and not robot.flies:
                raise ValueError(f'{where}.{key}: {altitudes[key]:g} m, but only quadrotors fly '
                                 f'(a {robot.kinematics} robot is at z = 0)')
    return replace(robot, **altitudes)


def _parse_map(raw, folder: Path) -> Optional[Path]:
    if raw is None:
        return None
    path = Path(_string(raw, 'map'))
    if not path.is_absolute():
        path = (folder / path).resolve()
    meta = _read_yaml(path, 'map: ')
    image = meta.get('image') if isinstance(meta, Mapping) else None
    if not isinstance(image, str):
        raise ValueError(f'map: {path} has no `image` entry (not a map_server YAML)')
    image_path = Path(image) if Path(image).is_absolute() else path.parent / image
    if not image_path.is_file():
        raise ValueError(f'map: image {image_path} (named in {path}) not found')
    return path


def _parse_map_3d(raw, folder: Path, problems: List[str]):
    """(path, grid) of the `map_3d` voxel map, (None, None) without one or with a problem."""
    if raw is None:
        return None, None
    try:
        path = Path(_string(raw, 'map_3d'))
    except ValueError as err:
        problems.append(str(err))
        return None, None
    path = path if path.is_absolute() else (folder / path).resolve()
    try:
        return path, load_map_3d(path)
    except ValueError as err:
        problems.append(f'map_3d: {err}')
        return None, None


def _node_parameters(raw, section: str, reserved) -> Dict[str, Any]:
    """Flattens a node's parameter mapping to `a.b: value` and checks every value is a ROS type."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError(f'{section}: expected a mapping of parameters, got {raw!r}')
    flat: Dict[str, Any] = {}
    for key, value in raw.items():
        where = f'{section}.{key}'
        if not isinstance(key, str) or not _PARAM_NAME.match(key):
            raise ValueError(f'{where}: not a valid parameter name')
        if isinstance(value, Mapping):
            for sub_key, sub_value in _node_parameters(value, where, ()).items():
                flat[f'{key}.{sub_key}'] = sub_value
            continue
        if key in reserved:
            raise ValueError(f'{where}: set by the fleet config itself (robots, global_frame, '
                             'use_sim_time, per-robot fields) or its launch (mode, robot_name, '
                             'shards); remove it here')
        flat[key] = _parameter_value(value, where)
    return flat


def _parameter_value(value, where: str):
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return value if isinstance(value, int) else _number(value, where)
    if isinstance(value, list):
        if not value:
            raise ValueError(f'{where}: an empty list has no ROS parameter type; omit it')
        kinds = {bool if isinstance(v, bool) else str if isinstance(v, str)
                 else float if isinstance(v, (int, float)) else None for v in value}
        if None in kinds or len(kinds) != 1:
            raise ValueError(f'{where}: a list parameter must hold only numbers, only strings or '
                             f'only booleans, got {value!r}')
        if kinds == {float}:
            # ROS arrays are typed: mixed int/float lists become double arrays.
            numbers = [_number(v, f'{where}[{i}]') for i, v in enumerate(value)]
            return numbers if any(isinstance(v, float) for v in value) else [int(v) for v in value]
        return list(value)
    raise ValueError(f'{where}: {value!r} is not a ROS parameter value '
                     '(bool, int, float, string or a list of one of these)')


def _relative_to(path: Path, base_dir: Path) -> Path:
    return Path(os.path.relpath(Path(path).resolve(), Path(base_dir).resolve()))
