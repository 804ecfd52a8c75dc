"""Fleet run metrics from recorded trajectories: what `orca-nav demo` writes to report.json.

Inputs are plain arrays (one `RobotTrack` per robot, times in seconds since the run started);
no ROS here. Robot-robot separation is measured on a common time grid: every track is linearly
interpolated at `sample_dt` (odometry of different robots arrives at different instants), and
a robot holds its first/last recorded pose outside its own recording.

Drones are recorded in 3-D (x, y, z): separations are then 3-D centre distances minus both
radii (a ground robot of a mixed fleet counts at z = 0), clearances are measured in the 3-D map,
and each drone's altitude range is reported.

A robot has `reached` its goals when it reached every goal in turn and is still at the last one
(within the goal tolerance, as the recorder judges it) when the record ends; one that reached
them and was pushed away again is `reached then displaced` (its `outcome`), and does not count.
A robot the planner could not plan for is `planning failed`, with the planner's reason
(`planning_failure`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from orca_nav.bringup.fleet_file import DEMO_DEFAULTS
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.sim.fleet_sim import CONTACT_CATEGORIES
from orca_nav.core.sim.scan import box_clearance

# Pairwise distances are computed for this many (time, robot, robot) entries at a time.
_PAIR_CHUNK = 2_000_000


@dataclass
class RobotTrack:
    """One robot's recorded run.

    t: (K,) seconds, increasing; xy: (K, 2) positions, or (K, 3) x, y, z for a drone; goals:
    (G, 2) or (G, 3) likewise, in visiting order;
    goal_times: time each goal was reached (None when not reached); collisions: collision
    events the simulator reported for this robot; planning_failure: why the planner last failed
    to plan for it, if its latest status was a failure.
    """

    name: str
    radius: float
    t: np.ndarray
    xy: np.ndarray
    goals: np.ndarray
    goal_times: List[Optional[float]] = field(default_factory=list)
    collisions: int = 0
    planning_failure: Optional[str] = None

    def __post_init__(self):
        self.t = np.asarray(self.t, dtype=float).reshape(-1)
        xy = np.asarray(self.xy, dtype=float)
        dim = xy.shape[-1] if xy.ndim == 2 and xy.shape[-1] in (2, 3) else 2
        self.xy = xy.reshape(-1, dim)
        self.goals = np.asarray(self.goals, dtype=float).reshape(-1, dim)
        if len(self.t) != len(self.xy):
            raise ValueError(f'{self.name}: t has {len(self.t)} samples but xy {len(self.xy)}')
        if not (np.all(np.isfinite(self.t)) and np.all(np.isfinite(self.xy))):
            raise ValueError(f'{self.name}: recorded t/xy contain non-finite values')
        if len(self.t) > 1 and np.any(np.diff(self.t) < 0):
            raise ValueError(f'{self.name}: t must not decrease')
        if len(self.goal_times) != len(self.goals):
            raise ValueError(f'{self.name}: {len(self.goals)} goals but '
                             f'{len(self.goal_times)} goal_times')


def path_length(xy: np.ndarray) -> float:
    """Length of the polyline through the (K, 2) or (K, 3) points, summed exactly rounded: a
    robot standing at its goal for a few more samples (how many depends on when the recording
    stopped) adds zero-length segments, which must not change the last digit (numpy's pairwise
    sum regroups the terms when their count changes)."""
    xy = np.asarray(xy, dtype=float)
    return math.fsum(np.linalg.norm(np.diff(xy, axis=0), axis=1).tolist()) if len(xy) > 1 else 0.0


def resample(tracks: Sequence[RobotTrack], sample_dt: float) -> Tuple[np.ndarray, np.ndarray]:
    """(T,) common times and (T, N, d) positions of every track interpolated at them: d = 3
    when some track is 3-D (2-D tracks at z = 0), else 2."""
    if not sample_dt > 0:
        raise ValueError(f'sample_dt: must be > 0, got {sample_dt!r}')
    dim = max((tr.xy.shape[1] for tr in tracks), default=2)
    recorded = [tr for tr in tracks if len(tr.t)]
    if not recorded:
        return np.zeros(0), np.zeros((0, len(tracks), dim))
    start = min(tr.t[0] for tr in recorded)
    stop = max(tr.t[-1] for tr in recorded)
    times = start + sample_dt * np.arange(int(math.floor((stop - start) / sample_dt)) + 1)
    positions = np.full((len(times), len(tracks), dim), np.nan)
    for index, tr in enumerate(tracks):
        if len(tr.t):
            positions[:, index, :] = 0.0
            for axis in range(tr.xy.shape[1]):
                positions[:, index, axis] = np.interp(times, tr.t, tr.xy[:, axis])
    return times, positions


def pairwise_minima(positions: np.ndarray, radii: np.ndarray):
    """Per robot, over all times: the smallest surface gap (centre distance minus both radii)
    to any other robot, the centre distance at that moment and the other robot's index.

    positions (T, N, d) may hold NaN for robots without a recording; they are skipped.
    """
    count = positions.shape[1]
    best_gap = np.full(count, np.inf)
    best_centre = np.full(count, np.inf)
    best_other = np.full(count, -1)
    if count < 2 or positions.shape[0] == 0:
        return best_gap, best_centre, best_other
    radius_sum = radii[:, None] + radii[None, :]
    chunk = max(1, _PAIR_CHUNK // (count * count))
    for first in range(0, positions.shape[0], chunk):
        block = positions[first:first + chunk]                        # (C, N, d)
        centre = np.linalg.norm(block[:, :, None, :] - block[:, None, :, :], axis=-1)
        centre[:, np.arange(count), np.arange(count)] = np.inf
        centre = np.where(np.isnan(centre), np.inf, centre)
        gap = centre - radius_sum                                     # (C, N, N)
        flat = gap.transpose(1, 0, 2).reshape(count, -1)              # (N, C*N)
        where = np.argmin(flat, axis=1)
        value = flat[np.arange(count), where]
        better = value < best_gap
        times, others = np.divmod(where, count)
        best_gap[better] = value[better]
        best_other[better] = others[better]
        best_centre[better] = centre[times[better], np.arange(count)[better], others[better]]
    return best_gap, best_centre, best_other


@dataclass
class PersonTrack:
    """One non-cooperative agent's recorded positions (t (K,), xy (K, 2)) and radius."""

    name: str
    radius: float
    t: np.ndarray
    xy: np.ndarray


def person_minima(times: np.ndarray, positions: np.ndarray, radii: np.ndarray,
                  people: Sequence[PersonTrack]):
    """Per robot, over the common times: the smallest surface gap to any person (centre
    distance minus both radii) and that person's index (-1: no person recorded). People are
    interpolated at `times` and hold their first/last position outside their recording."""
    count = positions.shape[1]
    best_gap = np.full(count, np.inf)
    best_person = np.full(count, -1)
    for index, person in enumerate(people):
        if len(person.t) == 0 or len(times) == 0:
            continue
        xy = np.column_stack([np.interp(times, person.t, person.xy[:, 0]),
                              np.interp(times, person.t, person.xy[:, 1])])
        gap = np.linalg.norm(positions - xy[:, None, :], axis=-1) - radii[None, :] - person.radius
        gap = np.where(np.isnan(gap), np.inf, gap).min(axis=0)
        better = gap < best_gap
        best_gap[better] = gap[better]
        best_person[better] = index
    return best_gap, best_person


def obstacle_clearance(grid: OccupancyGrid, xy: np.ndarray, radius: float) -> float:
    """Smallest gap between the robot's disc (ball, on a 3-D grid) and an occupied cell along
    its track (m).

    The grid's clearance runs between cell centres, so half a cell is taken off to measure to
    the occupied cell's near edge (accurate to about one cell).
    """
    if len(xy) == 0:
        return math.inf
    return float(grid.clearance_at(xy).min()) - radius - 0.5 * grid.resolution


def empty_contact_tally() -> Dict[str, Dict[str, int]]:
    """{category: {'moving': 0, 'rest': 0}} for robot_robot, robot_obstacle, robot_person."""
    return {category: {'moving': 0, 'rest': 0} for category in CONTACT_CATEGORIES}


def failed_contacts(contacts: Dict[str, Dict[str, int]]) -> int:
    """The contacts a run must not have: every one while a robot moved, and robot-robot and
    robot-obstacle ones at rest too. A person walking into a robot at rest is what the passive
    guarantee allows (docs/safety.md)."""
    return sum(counts['moving'] + (counts['rest'] if category != 'robot_person' else 0)
               for category, counts in contacts.items())


def fleet_report(tracks: Sequence[RobotTrack], grid: Optional[OccupancyGrid] = None,
                 sample_dt: float = 0.05, collision_events: int = 0,
                 meta: Optional[Dict[str, Any]] = None,
                 people: Sequence[PersonTrack] = (), person_contacts: int = 0,
                 boxes: np.ndarray = np.zeros((0, 4)),
                 grid_3d: Optional[OccupancyGrid] = None,
                 contacts: Optional[Dict[str, Dict[str, int]]] = None,
                 goal_tolerance: float = DEMO_DEFAULTS['goal_tolerance']) -> Dict[str, Any]:
    """The report dict: `robots` (name -> metrics) and `fleet` totals; JSON-ready (inf -> None).
    Clearances of 2-D tracks are measured on `grid`, of 3-D tracks (drones) on `grid_3d`.

    collision_events: how many collisions the simulator reported in total (a robot-robot
    collision counts once here and once for each robot involved). people: recorded
    non-cooperative agents (the fleet's separation to them is reported when there are any);
    person_contacts: how many of the collision events were robot-person contacts. boxes:
    (B, 4) unmapped obstacles (x0, y0, x1, y1): the smallest gap of each robot's disc to them
    is reported when there are any. contacts: the contacts by class and whether a robot in it
    was moving ({category: {'moving': n, 'rest': m}}, `empty_contact_tally`). goal_tolerance:
    how near its last goal a robot must be at the end to count as there (m).
    """
    names = [tr.name for tr in tracks]
    if len(set(names)) != len(names):
        raise ValueError(f'tracks: duplicate robot names in {names}')
    radii = np.array([tr.radius for tr in tracks], dtype=float)
    times, positions = resample(tracks, sample_dt)
    gap, centre, other = pairwise_minima(positions, radii)
    person_gap, person = person_minima(times, positions[..., :2], radii, people)
    robots: Dict[str, Any] = {}
    for index, tr in enumerate(tracks):
        track_grid = grid_3d if tr.xy.shape[1] == 3 else grid
        reached_times = [t for t in tr.goal_times if t is not None]
        every_goal = len(reached_times) == len(tr.goals) and len(tr.goals) > 0
        reached = every_goal and _at_last_goal(tr, goal_tolerance)
        robots[tr.name] = {
            'reached': reached,
            'outcome': 'reached' if reached else 'reached then displaced' if every_goal else
                       'planning failed' if tr.planning_failure else 'not reached',
            'planning_failure': tr.planning_failure,
            'goals_reached': len(reached_times),
            'goals_total': int(len(tr.goals)),
            'time_to_goal': _finite_or_none(max(reached_times)) if reached else None,
            'goal_times': [_finite_or_none(t) for t in tr.goal_times],
            'path_length': path_length(tr.xy),
            'final_position': [float(v) for v in tr.xy[-1]] if len(tr.xy) else None,
            'final_goal_distance': _final_goal_distance(tr),
            'min_separation': _finite_or_none(gap[index]),
            'min_center_distance': _finite_or_none(centre[index]),
            'closest_robot': names[other[index]] if other[index] >= 0 else None,
            'min_obstacle_clearance': (_finite_or_none(obstacle_clearance(track_grid, tr.xy,
                                                                          tr.radius))
                                       if track_grid is not None else None),
            'collisions': int(tr.collisions),
        }
        if len(boxes):
            gaps = box_clearance(np.asarray(boxes, dtype=float), tr.xy[:, :2]) - tr.radius
            robots[tr.name]['min_unmapped_clearance'] = _finite_or_none(gaps.min(initial=np.inf))
        if people:
            robots[tr.name]['min_person_separation'] = _finite_or_none(person_gap[index])
            robots[tr.name]['closest_person'] = (people[person[index]].name
                                                 if person[index] >= 0 else None)
        if tr.xy.shape[1] == 3:
            altitudes = tr.xy[:, 2]
            robots[tr.name]['altitude_range'] = ([float(altitudes.min()), float(altitudes.max())]
                                                 if len(tr.xy) else None)
    entries = list(robots.values())
    all_reached = bool(entries) and all(e['reached'] for e in entries)
    clearances = [e['min_obstacle_clearance'] for e in entries
                  if e['min_obstacle_clearance'] is not None]
    fleet = {
        'robots': len(tracks),
        'reached': sum(e['reached'] for e in entries),
        'all_reached': all_reached,
        'makespan': max(e['time_to_goal'] for e in entries) if all_reached else None,
        'collisions': int(collision_events),
        'contacts': contacts or empty_contact_tally(),
        'contacts_while_moving': sum(c['moving'] for c in (contacts or {}).values()),
        'robots_with_collisions': sum(e['collisions'] > 0 for e in entries),
        'min_separation': _finite_or_none(gap.min()) if len(gap) else None,
        'separation': '3-D' if positions.shape[2] == 3 else '2-D',
        'min_obstacle_clearance': min(clearances) if clearances else None,
        'total_path_length': float(sum(e['path_length'] for e in entries)),
        'recorded_time': float(times[-1] - times[0]) if len(times) else 0.0,
    }
    if len(boxes):
        unmapped = [e['min_unmapped_clearance'] for e in entries
                    if e['min_unmapped_clearance'] is not None]
        fleet.update({'unmapped_obstacles': len(boxes),
                      'min_unmapped_clearance': min(unmapped) if unmapped else None})
    if people:
        fleet.update({'people': len(people), 'person_contacts': int(person_contacts),
                      'min_person_separation': (_finite_or_none(person_gap.min())
                                                if len(person_gap) else None)})
    return {**(meta or {}), 'fleet': fleet, 'robots': robots}


def format_table(report: Dict[str, Any]) -> str:
    """The report as a fixed-width text table, one row per robot and a totals line."""
    def num(value, digits=2):
        return '-' if value is None else f'{value:.{digits}f}'

    header = f'{"robot":<12} {"reached":>9} {"time_s":>8} {"path_m":>8} ' \
             f'{"min_sep_m":>9} {"min_obst_m":>10} {"collisions":>10}  outcome'
    lines = [header, '-' * len(header)]
    for name, e in report['robots'].items():
        outcome = e['outcome']
        if outcome == 'reached then displaced':
            outcome += f' ({num(e["final_goal_distance"])} m off at the end)'
        elif outcome == 'planning failed':
            outcome += f': {e["planning_failure"]}'
        lines.append(f'{name:<12} {e["goals_reached"]:>4}/{e["goals_total"]:<4} '
                     f'{num(e["time_to_goal"], 1):>8} {num(e["path_length"]):>8} '
                     f'{num(e["min_separation"]):>9} {num(e["min_obstacle_clearance"]):>10} '
                     f'{e["collisions"]:>10}  {outcome}')
    f = report['fleet']
    lines.append('-' * len(header))
    lines.append('contacts (moving / at rest): ' + ', '.join(
        f'{category.replace("_", "-")} {counts["moving"]} / {counts["rest"]}'
        for category, counts in f['contacts'].items()))
    failed = sum(e['outcome'] == 'planning failed' for e in report['robots'].values())
    lines.append(f'fleet: {f["reached"]}/{f["robots"]} robots at their goals'
                 + (f' ({failed} could not be planned for)' if failed else '')
                 + f', makespan {num(f["makespan"], 1)} s, collisions {f["collisions"]}, '
                 f'min separation {num(f["min_separation"])} m')
    if 'unmapped_obstacles' in f:
        lines.append(f'unmapped obstacles: {f["unmapped_obstacles"]}, min clearance to them '
                     f'{num(f["min_unmapped_clearance"])} m')
    if 'people' in f:
        lines.append(f'people: {f["people"]}, robot-person contacts {f["person_contacts"]}, '
                     f'min separation to a person {num(f["min_person_separation"])} m')
    return '\n'.join(lines)


def _at_last_goal(track: RobotTrack, tolerance: float) -> bool:
    """The last recorded position is at the last goal as the recorder judges a goal reached:
    within `tolerance` horizontally, and (a drone) within `tolerance` of its altitude."""
    if len(track.xy) == 0 or len(track.goals) == 0:
        return False
    offset = np.abs(track.xy[-1] - track.goals[-1])
    return bool(np.hypot(*offset[:2]) <= tolerance and np.all(offset[2:] <= tolerance))


def _final_goal_distance(track: RobotTrack) -> Optional[float]:
    """Distance from the last recorded position to the goal the robot was heading for last
    (its final goal once every goal is reached)."""
    if len(track.xy) == 0 or len(track.goals) == 0:
        return None
    pending = [i for i, t in enumerate(track.goal_times) if t is None]
    goal = track.goals[pending[0] if pending else -1]
    return float(np.linalg.norm(track.xy[-1] - goal))


def _finite_or_none(value) -> Optional[float]:
    return float(value) if value is not None and math.isfinite(value) else None
