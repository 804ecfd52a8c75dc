"""Built-in demo scenarios: generated fleets (circle, crossing, corridor, blocks, drones,
drones_sphere) and fleet files.

`scenario_config(name, robots=None)` returns a FleetConfig. A generated scenario takes a robot
count; any other name is looked up as `config/fleets/<name>.yaml` in the package share folder,
so a new fixed scenario only needs its YAML file there. The shipped files for the generated
scenarios are their default-size output (`python -m orca_nav.bringup.scenarios` rewrites them; a
test checks they agree).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy as np
import yaml

from orca_nav.bringup.fleet_file import FleetConfig, load_fleet_config
from orca_nav.bringup.graph import share_dir

ROBOT_RADIUS = 0.25
MAX_SPEED = 1.0
DIGITS = 3      # positions are rounded so the fleet files read well and round-trip exactly


def fleets_dir() -> Path:
    return share_dir() / 'config' / 'fleets'


def maps_dir() -> Path:
    return share_dir() / 'config' / 'maps'


def _robots(starts: np.ndarray, goals: np.ndarray, **fields) -> List[dict]:
    """Robot entries `robot<i>` from (N, 3) start and goal poses."""
    starts, goals = np.round(starts, DIGITS) + 0.0, np.round(goals, DIGITS) + 0.0   # no -0.0
    return [{'name': f'robot{i}', 'start': [float(v) for v in s], 'goal': [float(v) for v in g],
             **fields} for i, (s, g) in enumerate(zip(starts, goals))]


def _fleet(name: str, robots: List[dict], duration: float, map_file: Optional[str] = None,
           defaults: Optional[dict] = None, map_3d: Optional[str] = None,
           **sections) -> FleetConfig:
    raw = {'name': name, 'defaults': defaults or {'kinematics': 'holonomic',
                                                  'radius': ROBOT_RADIUS,
                                                  'max_speed': MAX_SPEED, 'max_accel': 2.0},
           'robots': robots, 'demo': {'duration': duration, 'goal_tolerance': 0.25}, **sections}
    if map_file is not None:
        raw['map'] = str(maps_dir() / map_file)
    if map_3d is not None:
        raw['map_3d'] = str(maps_dir() / map_3d)
    return load_fleet_config(raw)


def _check_count(name: str, robots: int, minimum: int, maximum: int) -> None:
    if isinstance(robots, bool) or not isinstance(robots, int) or not minimum <= robots <= maximum:
        raise ValueError(f'robots: scenario {name!r} takes {minimum}..{maximum} robots, '
                         f'got {robots!r}')


def circle(robots: int = 16) -> FleetConfig:
    """Robots evenly spaced on a circle, each driving to the antipodal point (RVO2 Circle)."""
    _check_count('circle', robots, 2, 500)
    # Arc spacing of at least 4 radii keeps the start poses well apart as the fleet grows.
    ring = max(4.0, robots * 4.0 * ROBOT_RADIUS / (2.0 * math.pi))
    angle = 2.0 * math.pi * np.arange(robots) / robots
    points = ring * np.column_stack([np.cos(angle), np.sin(angle)])
    heading = angle + math.pi          # facing the centre, and still so at the goal
    starts = np.column_stack([points, np.arctan2(np.sin(heading), np.cos(heading))])
    goals = np.column_stack([-points, starts[:, 2]])
    return _fleet('circle', _robots(starts, goals), duration=30.0 + 2.0 * ring)


def crossing(robots: int = 16) -> FleetConfig:
    """Four groups start west, south, east and north of the centre and cross to the far side."""
    _check_count('crossing', robots, 4, 400)
    spacing, distance, per_row = 1.0, 6.0, 4
    group = np.arange(robots) % 4                  # groups interleave so any count stays balanced
    member = np.arange(robots) // 4
    row, column = member // per_row, member % per_row
    count = np.bincount(group, minlength=4)[group]
    width = np.minimum(count, per_row)
    lateral = (column - (width - 1) / 2.0) * spacing
    along = distance + row * spacing              # later rows queue behind the first
    heading = group * (math.pi / 2.0)             # group 0 drives +x (starts west), 1 +y, ...
    direction = np.column_stack([np.cos(heading), np.sin(heading)])
    normal = np.column_stack([-direction[:, 1], direction[:, 0]])
    start_xy = -direction * along[:, None] + normal * lateral[:, None]
    goal_xy = direction * along[:, None] + normal * lateral[:, None]
    yaw = np.arctan2(direction[:, 1], direction[:, 0])
    starts = np.column_stack([start_xy, yaw])
    goals = np.column_stack([goal_xy, yaw])
    return _fleet('crossing', _robots(starts, goals),
                  duration=40.0 + 2.0 * float(along.max()))


def corridor(robots: int = 8) -> FleetConfig:
    """Two groups swap rooms through the 8 m x 2.5 m corridor of config/maps/corridor.yaml.

    Each group waits in two lanes, columns 1 m apart from the corridor mouth outwards; every
    robot's goal is its mirror image across x = 0 (same lane, other room). The two groups' lanes
    are offset by 0.2 m so the head-on pairs are not exactly symmetric (an exactly symmetric
    head-on pair only slows down under ORCA).
    """
    _check_count('corridor', robots, 2, 32)
    side = np.arange(robots) % 2                     # 0: starts in the left room, 1: right
    member = np.arange(robots) // 2
    column, lane = member // 2, member % 2
    x = (5.5 + column) * np.where(side == 0, -1.0, 1.0)
    y = np.where(lane == 0, -0.5, 0.5) + np.where(side == 0, -0.1, 0.1)
    yaw = np.where(side == 0, 0.0, math.pi)
    starts = np.column_stack([x, y, yaw])
    goals = np.column_stack([-x, y, yaw])
    return _fleet('corridor', _robots(starts, goals), map_file='corridor.yaml',
                  duration=60.0 + 4.0 * robots)


BLOCKS_SCALE = 0.2      # RVO2's Blocks.cc world scaled to metres, as config/maps/blocks.yaml


def blocks(robots: int = 20) -> FleetConfig:
    """RVO2's Blocks example on config/maps/blocks.yaml: four 5 x 5 groups in the corners
    (Blocks.cc positions x 0.2, added in its order, so any first N robots stay balanced) cross
    diagonally between the four blocks. Blocks.cc sends a whole group to one point; here each
    robot's goal is its own start mirrored through the origin, so every goal is reachable.

    The default takes the first 20 of Blocks.cc's 100 agents (five per corner): all 100 in one
    Python process overload a 2-core machine (odometry goes stale); `robots=100` is the full
    layout."""
    _check_count('blocks', robots, 4, 100)
    spots = []
    for i in range(5):
        for j in range(5):
            x, y = 55.0 + 10.0 * i, 55.0 + 10.0 * j
            spots += [(x, y), (-x, y), (x, -y), (-x, -y)]
    xy = BLOCKS_SCALE * np.array(spots[:robots])
    yaw = np.arctan2(-xy[:, 1], -xy[:, 0])
    starts = np.column_stack([xy, yaw])
    goals = np.column_stack([-xy, yaw])
    # RVO2's Blocks agents: radius 2, so 0.4 m at this scale; faster than 2 x 0.2 m/s to keep
    # the demo short.
    fleet = _robots(starts, goals, radius=2.0 * BLOCKS_SCALE, max_speed=1.5)
    return _fleet('blocks', fleet, map_file='blocks.yaml', duration=120.0)


PERSON_RADIUS = 0.25
PERSON_SPEED = 0.5


def _lane_crossing(robots: int) -> List[dict]:
    """Robots crossing the top lane of config/maps/warehouse.yaml both ways: half start in the
    open west end in rows of three and drive to the east end, the others the reverse."""
    side = np.arange(robots) % 2                      # 0: starts west, 1: east
    member = np.arange(robots) // 2
    row, column = member % 3, member // 3
    x = np.where(side == 0, 1.5 + 1.2 * column, 28.5 - 1.2 * column)
    y = 16.9 + 0.9 * row + np.where(side == 0, 0.0, 0.2)
    yaw = np.where(side == 0, 0.0, math.pi)
    return _robots(np.column_stack([x, y, yaw]), np.column_stack([30.0 - x, y, yaw]))


def people(robots: int = 6) -> FleetConfig:
    """Robots sharing the top lane of config/maps/warehouse.yaml (y 16..19.7, 3.7 m wide) with
    10 scripted people who avoid no one and walk through wherever a robot stands (fleet_sim_node's
    pedestrians; orca_node's tracked agents, whom the safety layer meets only at rest,
    docs/safety.md): half the robots start
    in the open west end and cross to the east end, the others the reverse. Two people walk the
    lane's length near its edges, three cross it (one out of the cross-aisle at x 15), two walk
    up and down the open ends, three walk at random in it."""
    _check_count('people', robots, 2, 12)
    lines = [[6.0, 16.5, 24.0, 16.5], [24.0, 19.2, 6.0, 19.2],      # along the lane
             [9.0, 16.4, 9.0, 19.3], [15.0, 12.5, 15.0, 19.3], [21.0, 19.3, 21.0, 16.4],
             [4.4, 10.0, 4.4, 19.2], [25.6, 19.2, 25.6, 10.0]]      # the open ends
    walkers = [[11.0, 18.0], [17.5, 17.2], [13.0, 17.0]]
    pedestrians = {'lines': [float(v) for line in lines for v in line],
                   'walkers': [float(v) for walker in walkers for v in walker],
                   'area': [5.0, 16.0, 25.0, 19.7], 'speed': PERSON_SPEED,
                   'radius': PERSON_RADIUS}
    # 120 s: robots wait wherever a person could reach them moving (bench people: makespans
    # 47-87 s over 32 seeds in the core; one period of DDS latency adds to it).
    return _fleet('people', _lane_crossing(robots), map_file='warehouse.yaml', duration=120.0,
                  fleet_sim_node={'pedestrians': pedestrians},
                  orca_node={'tracked_agent_radius': PERSON_RADIUS + 0.05})


def pallet(robots: int = 4) -> FleetConfig:
    """Robots cross the top lane of config/maps/warehouse.yaml both ways, as in `people`, past a
    pallet (1.2 m x 1 m) left in the middle of the lane that is not on the map: the robots see
    it only with their simulated laser scans (fleet_sim_node `scan.*`, orca_node `scan_topic`)."""
    _check_count('pallet', robots, 2, 12)
    return _fleet('pallet', _lane_crossing(robots), map_file='warehouse.yaml', duration=90.0,
                  fleet_sim_node={'boxes': [14.4, 17.3, 15.6, 18.3],
                                  'scan': {'rate': 10.0, 'beams': 180, 'range': 8.0}},
                  orca_node={'scan_topic': 'scan'})


DRONE = {'kinematics': 'quadrotor', 'radius': 0.3, 'max_speed': 2.0, 'max_accel': 2.0,
         'max_yaw_rate': 2.0}
FOREST_SIZE = 40.0          # config/maps/forest_3d.yaml: x, y 0..40, z 0..5 above its floor
FOREST_CLEARANCE = 0.9      # m from the nearest trunk to a drone's start or goal centre


def _drone_robots(starts: np.ndarray, goals: np.ndarray) -> List[dict]:
    """Drone entries `drone<i>` from (N, 3) start and goal positions (yaw 0: drones face +x)."""
    flat = np.zeros((len(starts), 1))
    robots = _robots(np.hstack([starts[:, :2], flat]), np.hstack([goals[:, :2], flat]))
    for entry, start, goal in zip(robots, np.round(starts, DIGITS), np.round(goals, DIGITS)):
        entry['name'] = entry['name'].replace('robot', 'drone')
        entry['start_z'], entry['goal_z'] = float(start[2]), float(goal[2])
    return robots


def _clear_row(grid, x_ends, y: float, z_ends) -> float:
    """The y nearest to `y` (0.1 m steps) where both ends (x, y, z) of a row are at least
    FOREST_CLEARANCE from the trunks."""
    for offset in np.arange(0.0, 3.0, 0.1):
        for candidate in (y + offset, y - offset):
            ends = np.column_stack([x_ends, [candidate, candidate], z_ends])
            if (grid.clearance_at(ends) >= FOREST_CLEARANCE).all():
                return round(float(candidate), 1)
    raise ValueError(f'no clear row near y = {y} in the forest')


def drones(robots: int = 12) -> FleetConfig:
    """Drones swap sides of the 3-D forest (config/maps/forest_3d.yaml: 120 trunks on 40 x 40 m,
    5 m high), planner on: pairs of rows from y 8 to 32, one drone on the west edge (x 2) and
    one on the east edge (x 38) per row, each flying to the other's place. Every pair flies at
    its own altitudes (the west drone low to high, the east drone high to low, levels 1.0 to
    4.0 m across the rows), so they meet mid-way at the same height and pass in 3-D, and the
    planner climbs and descends through the trunks. Rows are nudged (0.1 m steps) so that no
    start or goal is within FOREST_CLEARANCE of a trunk. Plans keep 0.3 m more than the radius
    from the trunks (room for tracking and avoidance), ORCA 0.15 m more between drones (their
    acceleration limit lags ORCA's velocities); the 6 s budget is wall time, and the
    demo's nodes share one process and 2 cores while all 12 drones plan at once."""
    _check_count('drones', robots, 2, 24)
    if robots % 2:
        raise ValueError(f'robots: scenario \'drones\' swaps pairs: an even count, got {robots}')
    from orca_nav.bringup.maps import load_map_3d
    grid = load_map_3d(maps_dir() / 'forest_3d.yaml')
    rows = robots // 2
    levels = np.linspace(1.0, 4.0, 4)
    starts, goals = [], []
    for k, y in enumerate(np.linspace(8.0, 32.0, rows)):
        low, high = levels[k % 4], levels[(k + 2) % 4]
        y = _clear_row(grid, [2.0, 38.0], float(y), [low, high])
        west, east = np.array([2.0, y, low]), np.array([38.0, y, high])
        starts += [west, east]
        goals += [east, west]
    return _fleet('drones', _drone_robots(np.array(starts), np.array(goals)), duration=120.0,
                  defaults=DRONE, map_3d='forest_3d.yaml',
                  planner={'enabled': True, 'safety_margin': 0.3},
                  orca_node={'safety_margin': 0.15})


SPHERE_CENTRE = (0.0, 0.0, 8.0)     # the middle of config/maps/open_3d.yaml (z 0..16)


def drones_sphere(robots: int = 24) -> FleetConfig:
    """RVO2-3D's Sphere example in open space (config/maps/open_3d.yaml): drones evenly spread
    on a sphere (a Fibonacci lattice) around (0, 0, 8) each fly to the antipodal point, all
    through the centre at once: the symmetric case. The radius keeps neighbours 4 radii
    apart; no planner (nothing to plan around). ORCA keeps 0.2 m more than the radii (the
    drones' acceleration limit lags ORCA's new velocities in the crowd at the centre)."""
    _check_count('drones_sphere', robots, 2, 200)
    index = np.arange(robots) + 0.5
    polar = np.arccos(1.0 - 2.0 * index / robots)
    azimuth = np.pi * (1.0 + 5.0 ** 0.5) * index
    unit = np.column_stack([np.sin(polar) * np.cos(azimuth), np.sin(polar) * np.sin(azimuth),
                            np.cos(polar)])
    # Neighbours on the lattice are about sqrt(4 pi / N) R apart.
    radius = max(6.0, 4.0 * DRONE['radius'] / (4.0 * np.pi / robots) ** 0.5)
    if radius > 7.0:
        raise ValueError(f'robots: {robots} drones need a {radius:.1f} m sphere; open_3d fits 7 m')
    centre = np.array(SPHERE_CENTRE)
    return _fleet('drones_sphere', _drone_robots(centre + radius * unit, centre - radius * unit),
                  duration=60.0 + 4.0 * radius, defaults={**DRONE, 'max_speed': 1.5},
                  map_3d='open_3d.yaml', orca_node={'safety_margin': 0.2})


GENERATORS: Dict[str, Callable[[int], FleetConfig]] = {
    'circle': circle,
    'crossing': crossing,
    'corridor': corridor,
    'blocks': blocks,
    'drones': drones,
    'drones_sphere': drones_sphere,
    'people': people,
    'pallet': pallet,
}


def scenario_names() -> List[str]:
    """Generated scenarios first, then the fleet files shipped in config/fleets/."""
    files = sorted(p.name[:-len('.yaml')] for p in fleets_dir().glob('*.yaml'))
    return list(GENERATORS) + [n for n in files if n not in GENERATORS]


def scenario_config(name: str, robots: Optional[int] = None) -> FleetConfig:
    """The fleet of a built-in scenario; `robots` sets the size of a generated one."""
    if name in GENERATORS:
        return GENERATORS[name]() if robots is None else GENERATORS[name](robots)
    path = fleets_dir() / f'{name}.yaml'
    if not path.is_file():
        raise ValueError(f'scenario {name!r}: unknown (built-in: {", ".join(scenario_names())}; '
                         'or give a fleet config file)')
    if robots is not None:
        raise ValueError(f'robots: scenario {name!r} is the fixed fleet {path}; '
                         'it cannot be resized')
    return load_fleet_config(path)


def write_fleet_config(cfg: FleetConfig, path: Path) -> None:
    """Writes `cfg` as a fleet YAML file (map path relative to the file)."""
    path = Path(path)
    text = yaml.safe_dump(cfg.to_dict(base_dir=path.parent), sort_keys=False,
                          default_flow_style=None, width=100)
    path.write_text(f'# Generated by `python -m orca_nav.bringup.scenarios` from '
                    f'orca_nav.scenarios.{cfg.name}(); edit the generator, not this file.\n'
                    + text)


def main(argv=None) -> None:
    """Rewrites config/fleets/<name>.yaml for every generated scenario at its default size."""
    del argv
    folder = fleets_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for name, generate in GENERATORS.items():
        write_fleet_config(generate(), folder / f'{name}.yaml')
        print(f'wrote {folder / name}.yaml', file=sys.stderr)


if __name__ == '__main__':
    main()
