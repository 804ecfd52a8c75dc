"""Who goes first where planned paths share space: path coordination with a priority order.

Every ground robot that follows a plan has a path (its reference's positions). Two paths
*conflict* where the robots' discs, grown by ``clearance``, would overlap: robot j's path point
b conflicts with robot i's path point a when ``|p_j(b) - p_i(a)| < r_i + r_j + clearance``. For
each ordered pair the coordinator keeps, per point of j's path, the farthest point of i's path
it conflicts with (``_Conflict.last``): an action dependency graph in the sense of Hönig et al.
(2019, "Persistent and robust execution of MAPF schedules in warehouses"), kept per path point.
With one-robot zones (`TrafficRules`, `set_traffic_rules`: doors, narrow passages, Open-RMF's
mutex groups) two paths that enter the same zone also conflict there whatever the distance:
each point of j's path in the zone, and the last one before each entry, conflicts with i's
path up to i's last point in it. A robot is in a zone when its centre is.

Turns are for where local avoidance cannot pass two robots: with the map known (`set_map`), a
pair of points conflicts only where either lies where the map's free width (`free_width`) is
less than both robots' diameters plus ``clearance`` (an aisle, a door, a gap between pillars).
In a room or a wide aisle ORCA passes them without anyone waiting, as it does among robots
without plans; on the dense warehouse, waiting for every crossing there held robots at gates
most of the time, and the fleet reached fewer goals than with no turns at all.

Who goes first is a total order of the robots, rebuilt at every `update`:

* the base rank is the age of the robot's goal (first come, first served; ties by the order the
  robots were named in). A new goal ranks last, so it changes nobody else's waits: coordination
  is incremental, one plan per new goal;
* a robot that already stands in another's way (its current place conflicts with the other's
  path ahead of the other) goes before it, whatever their ranks: it cannot wait where it is
  without blocking the other for good. Where that makes a cycle (each robot left stands in the
  way of another), the oldest goal left goes first, whether in the cycle or behind it.

A robot then waits (its *gate*, an arc length on its path) ``stop_buffer`` short of the first
point of its path, at or ahead of where it is, that conflicts with a point not yet passed by a
robot before it in the order (where it is, when that is closer), unless it clears every such
point well before that robot can get there (`_clears_first`: both plans' timing, with slack).
So it follows a robot ahead on the same aisle at a distance, waits before a crossing until the
other has crossed (or crosses first, far ahead of it), goes first into a stretch both travel
the same way when it gets in well before the other (it then leads, the other follows), and
waits before a one-robot lane or zone until the other has come out (stop_buffer short of its
last point before the zone: outside it). A robot counts as standing in another's way only
within the two radii and half the clearance of the other's path (one that braked a little late
for its turn waits where it stopped) a reach ahead of the other (beside or behind it, it is
not in the way), or just past the other's front where it waits for the other (diagonally ahead,
it boxes in the robot it waits for), or in a zone the other's path enters ahead of it from
outside.

Why it does not deadlock, on the paths: a waiting robot stands before its first conflict with
every unpassed robot before it, so it is on no narrow stretch of path, and in no zone, of a
robot before it (on a wide stretch ORCA passes them; a robot in a zone that a robot before it
enters would stand in its way, so go before it); the first robot of the order waits for nobody
and its path is free of waiting robots (and of parked ones: the supervisor plans around robots
standing without a plan, and sends one standing in the only way off it); when it has passed,
the next one is first. The only exception is two
robots each standing in the other's way ahead (``locked``): one has to back out (`waiting_spot`:
off the others' paths, outside every zone), the later one unless the earlier one's place is much
nearer; the fleet supervisor plans that.
Why no robot starves: ranks only rise (every older goal ends, new goals rank last), so every
robot becomes first, and the first one is delayed only by robots that stood in its way when it
was planned, each of which moves off its path (and out of its zones). A robot that cannot get
on (stuck: the supervisor's ladder) breaks that: the supervisor puts it last (`set_rank`), so
the others do not wait behind it.

Crossing first rests on timing, the rest on events: a robot that crossed first (through a zone:
out of it a reach past its last point in it) and lags stands in the other's way, on its path or
in its zone, and so goes first by the rule above. What it does not do: schedule (robots
wait for events, not for clock times, so late and early robots alike keep the order), plan
around the others (the planner plans each robot on the map; the supervisor replans around
standing robots), or guarantee anything between the samples of a path: ORCA and the safety
layer stay the last layers for what planning did not foresee. Drones (3-D plans) are not
coordinated here. Zones hold robot centres, at the path points' spacing: a path that only cuts
a zone's corner between two points does not enter it; a path that leaves a zone and comes back
holds it from its first entry to its last exit; a robot parked in a zone (done, no plan) is
planned around, not waited for.

numpy and scipy only; time is passed in.

One file: the order, the gates it cuts into references and the waiting spots they end at are
one mechanism, read together.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from scipy import ndimage
from scipy.spatial import cKDTree

from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.planning.reference import Reference
from orca_nav.core.traffic_rules import TrafficRules

__all__ = ['CoordinationParams', 'Coordinator', 'Gate', 'arc_lengths', 'free_width',
           'stop_before', 'remaining', 'waiting_spot', 'with_discs']

_SAME_WAY = 0.5             # cosine: paths within 60 degrees of each other go the same way
_WIDTH_REACH = 0.25         # m: the widest clearance this near a point gives its free width


@dataclass(frozen=True)
class CoordinationParams:
    """How close paths may come before their robots take turns (m)."""

    clearance: float = 0.4      # free space kept between two robots' discs on their paths
    spacing: float = 0.2        # arc length between the path points compared
    stop_buffer: float = 0.2    # a waiting robot stops this much before its first conflict
    # A robot goes before one ranked earlier where it clears their shared stretch first with
    # room to spare: its own time there (its plan's timing) x pass_slack + pass_margin s is
    # less than the other's time to it at its plan's speed. inf: never (pure order).
    pass_slack: float = 1.5
    pass_margin: float = 2.0
    # Paths take turns only where the map is too narrow for the two robots to pass each other
    # (`free_width` < both diameters + clearance); elsewhere ORCA passes them. False: anywhere.
    narrow_only: bool = True
    # A robot that gets into a stretch shared going the same way ahead of the other leads it
    # through (it has to clear the stretch's start first, not its end). False: its end.
    lead_same_way: bool = True

    def __post_init__(self):
        for name in ('clearance', 'spacing', 'stop_buffer'):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0.0):
                raise ValueError(f'{name} must be finite and >= 0, got {value}')
        for name in ('pass_slack', 'pass_margin'):
            if not getattr(self, name) >= 0.0:      # inf: never pass
                raise ValueError(f'{name} must be >= 0, got {getattr(self, name)}')
        if self.spacing <= 0.0:
            raise ValueError(f'spacing must be > 0, got {self.spacing}')


@dataclass(frozen=True)
class Gate:
    """A robot's turn: ``stop_s`` (arc length along its path) it must not pass yet (None: go),
    the robot it waits for, and the robot it is locked with (each on the other's path)."""

    stop_s: Optional[float] = None
    waits_for: Optional[str] = None
    locked_with: Optional[str] = None


def arc_lengths(positions: np.ndarray) -> np.ndarray:
    """(K,) cumulative arc length of a polyline (K, d)."""
    steps = np.linalg.norm(np.diff(positions, axis=0), axis=1)
    return np.concatenate([[0.0], np.cumsum(steps)])


@dataclass
class _Path:
    radius: float
    rank: Tuple[float, int]             # (goal time, robot order): smaller goes first
    times: np.ndarray                   # (K,) reference times of the whole reference
    arc: np.ndarray                     # (K,) their arc lengths
    points: np.ndarray                  # (M, 2) path points compared, every `spacing`
    s: np.ndarray                       # (M,) their arc lengths
    tree: cKDTree = field(repr=False, default=None)
    progress: float = 0.0               # arc length reached
    position: Optional[np.ndarray] = None   # where the robot is (None: at its progress point)
    generation: int = 0
    zones: Optional['_ZonePath'] = None     # its points against the one-robot zones (if any)
    width: Optional[np.ndarray] = None      # (M,) the map's free width at the points (m)
    heading: Optional[np.ndarray] = None    # (M, 2) unit direction of travel at the points


@dataclass(frozen=True)
class _ZonePath:
    """A path's points against the one-robot zones, from its `set_path` on.

    ``entering`` (M, Z): point b lies in zone z or is the last point before an entry into it
    (where a robot waiting for the zone stops short of: so its gate lies outside the zone);
    ``span`` (Z, 2): the arc lengths of the first and the last point in the zone (inf / -inf:
    the path does not enter it); ``lower``, ``upper`` (2,): the bounding box of the zones it
    enters (so paths sharing a zone are near each other, however far apart they pass)."""

    entering: np.ndarray
    span: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    @classmethod
    def of(cls, rules: TrafficRules, points: np.ndarray, s: np.ndarray) -> '_ZonePath':
        inside = rules.in_zones(points)
        entering = inside.copy()
        entering[:-1] |= inside[1:]
        span = np.column_stack([np.where(inside, s[:, None], np.inf).min(axis=0),
                                np.where(inside, s[:, None], -np.inf).max(axis=0)])
        entered = [np.asarray(zone.polygon) for zone, hit in zip(rules.zones, inside.any(axis=0))
                   if hit]
        if not entered:
            return cls(entering, span, np.full(2, np.inf), np.full(2, -np.inf))
        vertices = np.vstack(entered)
        return cls(entering, span, vertices.min(axis=0), vertices.max(axis=0))


@dataclass
class _Conflict:
    """Robot j's path against robot i's: per point b of j's path, the nearest and the farthest
    arc length of a conflicting point of i's path (inf / -inf: none); the farthest of them all
    and j's last conflicting point (-inf / -1: none), which tell at a glance when either robot
    has passed every conflict."""

    first: np.ndarray
    last: np.ndarray
    generations: Tuple[int, int]
    last_max: float = -np.inf
    last_point: int = -1
    head_on: Optional[np.ndarray] = None    # (M,) j's point meets i's path coming towards it
    same_way: Optional[np.ndarray] = None   # (M,) j's point meets i's path only going its way


class Coordinator:
    """Turns on shared path space for a fleet's ground robots (see the module docstring)."""

    def __init__(self, params: CoordinationParams = CoordinationParams(),
                 rules: Optional[TrafficRules] = None):
        self.params = params
        self._paths: Dict[str, _Path] = {}
        self._conflicts: Dict[Tuple[str, str], Optional[_Conflict]] = {}
        self._generation = 0
        self._rules: Optional[TrafficRules] = None     # with one zone at least, or None
        self.order: List[str] = []      # the last update's order, first goes first
        self._waiting: set = set()      # the last update's (robot, the robot it waits for)
        self._boxing: set = set()       # (stander, mover) in the way as a boxing waiter
        self._width: Optional[Tuple[OccupancyGrid, np.ndarray]] = None     # (map, free_width)
        self.set_traffic_rules(rules)

    def set_map(self, grid: OccupancyGrid) -> None:
        """The 2-D map the paths are planned on: where it is wide, paths set from now on do
        not take turns (``narrow_only``)."""
        self._width = (grid, free_width(grid)) if self.params.narrow_only else None

    def set_traffic_rules(self, rules: Optional[TrafficRules]) -> None:
        """One robot at a time in each of `rules`' zones from now on (its lanes are the
        planners'); None or no zones: paths conflict by distance alone."""
        self._rules = rules if rules is not None and rules.zones else None
        for path in self._paths.values():
            path.zones = None if self._rules is None else \
                _ZonePath.of(self._rules, path.points, path.s)
        self._conflicts.clear()

    # ------------------------------------------------------------------ paths
    def set_path(self, name: str, reference: Reference, radius: float,
                 rank: Tuple[float, int]) -> None:
        """Robot `name` follows `reference` (2-D) from its start; `rank` (goal time, robot
        order) orders it against the others."""
        arc = arc_lengths(reference.positions[:, :2])
        wanted = np.arange(0.0, arc[-1], self.params.spacing)
        picks = np.unique(np.append(np.searchsorted(arc, wanted), len(arc) - 1))
        points = reference.positions[picks, :2]
        self._generation += 1
        zones = None if self._rules is None else _ZonePath.of(self._rules, points, arc[picks])
        # Outside the map (no plan goes there) counts as narrow, as without a map.
        width = None if self._width is None else self._width[0].values_at(self._width[1],
                                                                         points, 0.0)
        step = np.diff(points, axis=0)
        step = np.vstack([step, step[-1:]]) if len(step) else np.zeros((1, 2))
        heading = step / np.maximum(np.linalg.norm(step, axis=1, keepdims=True), 1e-9)
        self._paths[name] = _Path(float(radius), rank, reference.times.copy(), arc, points,
                                  arc[picks], cKDTree(points), generation=self._generation,
                                  zones=zones, width=width, heading=heading)

    def set_rank(self, name: str, rank: Tuple[float, int]) -> None:
        """Robot `name` takes its turns by `rank` from now on (a stuck robot goes last)."""
        self._paths[name].rank = rank

    def drop(self, name: str) -> None:
        """Robot `name` follows no path (done, holding, or not planned)."""
        self._paths.pop(name, None)

    def has_path(self, name: str) -> bool:
        return name in self._paths

    def set_progress(self, name: str, time_on_reference: float,
                     position: Optional[np.ndarray] = None) -> None:
        """How far robot `name` is along its reference (the reference time of its progress
        point, as the supervisor follows it), and where it is (x, y)."""
        path = self._paths[name]
        path.progress = float(np.interp(time_on_reference, path.times, path.arc))
        path.position = None if position is None else np.asarray(position, dtype=float)[:2]

    def progress(self, name: str) -> float:
        return self._paths[name].progress

    def remaining_points(self, name: str) -> np.ndarray:
        """(M, 2) the points of the robot's path it has not passed yet."""
        path = self._paths[name]
        return path.points[path.s >= path.progress - self.params.spacing]

    # ------------------------------------------------------------------ turns
    def _reach(self, i: _Path, j: _Path) -> float:
        return i.radius + j.radius + self.params.clearance

    def _conflict(self, waiter: str, leader: str) -> Optional[_Conflict]:
        """The conflict table of `waiter`'s path against `leader`'s (None: they never meet)."""
        j, i = self._paths[waiter], self._paths[leader]
        key = (waiter, leader)
        held = self._conflicts.get(key)
        if held is not None and held.generations == (j.generation, i.generation):
            return held
        pairs = i.tree.sparse_distance_matrix(j.tree, self._reach(i, j), output_type='ndarray')
        if len(pairs) and i.width is not None and j.width is not None:
            # Where either point has room for both robots side by side, ORCA passes them.
            room = 2.0 * (i.radius + j.radius) + self.params.clearance
            pairs = pairs[np.minimum(i.width[pairs['i']], j.width[pairs['j']]) < room]
        head_on, not_along = np.zeros(len(j.s), dtype=bool), np.zeros(len(j.s), dtype=bool)
        if len(pairs):
            cosine = (i.heading[pairs['i']] * j.heading[pairs['j']]).sum(axis=1)
            head_on[pairs['j'][cosine < -_SAME_WAY]] = True
            not_along[pairs['j'][cosine <= _SAME_WAY]] = True
        first, last = np.full(len(j.s), np.inf), np.full(len(j.s), -np.inf)
        if len(pairs):
            np.minimum.at(first, pairs['j'], i.s[pairs['i']])
            np.maximum.at(last, pairs['j'], i.s[pairs['i']])
        met = len(pairs) > 0
        if j.zones is not None:
            # A zone both paths enter: j's points in it (and the one before each entry)
            # conflict with i's whole stretch in it, whatever the distance.
            shared = np.flatnonzero(np.isfinite(j.zones.span[:, 0]) &
                                    np.isfinite(i.zones.span[:, 0]))
            if len(shared):
                marks = j.zones.entering[:, shared]
                not_along |= marks.any(axis=1)     # a zone holds one robot, whichever way
                np.minimum(first, np.where(marks, i.zones.span[shared, 0], np.inf).min(axis=1),
                           out=first)
                np.maximum(last, np.where(marks, i.zones.span[shared, 1], -np.inf).max(axis=1),
                           out=last)
                met = True
        conflict = _Conflict(first, last, (j.generation, i.generation))
        conflict.head_on, conflict.same_way = head_on, ~not_along
        if met:
            conflict.last_max = float(last.max())
            conflict.last_point = int(np.flatnonzero(np.isfinite(last))[-1])
        self._conflicts[key] = conflict
        return conflict

    def _near(self) -> List[Tuple[str, str]]:
        """Pairs of robots whose paths' bounding boxes come within reach of each other (a box
        grown over the zones the path enters)."""
        names = list(self._paths)
        if len(names) < 2:
            return []
        lower = np.array([self._paths[n].points.min(axis=0) for n in names])
        upper = np.array([self._paths[n].points.max(axis=0) for n in names])
        reach = np.array([self._paths[n].radius for n in names]) + self.params.clearance
        lower -= reach[:, None]
        upper += reach[:, None]
        if self._rules is not None:
            lower = np.minimum(lower, [self._paths[n].zones.lower for n in names])
            upper = np.maximum(upper, [self._paths[n].zones.upper for n in names])
        apart = (lower[:, None, :] > upper[None, :, :]).any(axis=2)
        overlap = ~(apart | apart.T)
        a, b = np.nonzero(np.triu(overlap, 1))
        return [(names[x], names[y]) for x, y in zip(a, b)]

    def _here(self, name: str) -> np.ndarray:
        j = self._paths[name]
        if j.position is not None:
            return j.position
        return j.points[min(int(np.searchsorted(j.s, j.progress)), len(j.s) - 1)]

    def _in_way(self, pairs: Sequence[Tuple[str, str]]) -> set:
        """The (stander, mover) of `pairs`, both ways, where the stander stands on the mover's
        path: closer to its remaining path than the two radii and half the clearance (a robot
        that stopped a little late for its turn is not in the way yet), at a point of it a
        whole reach beyond the mover's progress (beside or behind the mover, it is not in the
        way). A stander that waits for the mover (`_boxing`) counts as soon as its nearest point
        of that path lies past the mover's front: diagonally ahead, it boxes in the robot it
        waits for. One kd-tree query per mover for all the robots near its path."""
        standers: Dict[str, List[str]] = {}
        for a, b in pairs:
            standers.setdefault(b, []).append(a)
            standers.setdefault(a, []).append(b)
        here = {name: self._here(name) for name in standers}
        found, boxing = set(), set()
        for mover, others in standers.items():
            i = self._paths[mover]
            radii = np.array([self._paths[name].radius for name in others])
            places = np.array([here[name] for name in others])
            near = i.tree.query_ball_point(places, i.radius + radii + 0.5 * self.params.clearance)
            counts = np.array([len(points) for points in near])
            if not counts.any():
                continue
            points = np.concatenate(near).astype(int)
            owners = np.repeat(np.arange(len(others)), counts)
            # Only the points not passed yet: a path that comes back counts where it comes back.
            kept = i.s[points] >= i.progress
            points, owners = points[kept], owners[kept]
            if not len(points):
                continue
            gaps = np.linalg.norm(i.points[points] - places[owners], axis=1)
            order = np.lexsort((gaps, owners))      # per stander, its nearest point first
            hit, first = np.unique(owners[order], return_index=True)
            farthest = np.maximum.reduceat(i.s[points[order]], first)
            reach = i.radius + radii[hit] + self.params.clearance
            ahead = farthest > i.progress + reach
            front = i.s[points[order[first]]] > i.progress + i.radius
            found.update((others[k], mover) for k in hit[ahead])
            boxing.update((others[k], mover) for k in hit[front & ~ahead])
        # Once counted, a boxing stander stays in the way while it stands there (it no longer
        # waits for the mover, which now waits for it).
        self._boxing = boxing & (self._boxing | self._waiting)
        found |= self._boxing
        if self._rules is not None:
            found |= self._in_zone_way(standers, here)
        return found

    def _in_zone_way(self, standers: Mapping[str, List[str]],
                     here: Mapping[str, np.ndarray]) -> set:
        """The (stander, mover) where the stander is in a zone the mover's path enters ahead
        of it (the mover being outside it): the zone's robot has to come out first."""
        names = list(here)
        inside = self._rules.in_zones(np.array([here[n] for n in names]))
        row = {n: k for k, n in enumerate(names)}
        found = set()
        for k in np.flatnonzero(inside.any(axis=1)):     # the few robots in a zone
            stander, movers = names[k], standers[names[k]]
            last = np.array([self._paths[m].zones.span[:, 1] for m in movers])
            progress = np.array([self._paths[m].progress for m in movers])
            enters = (last >= progress[:, None]) & ~inside[[row[m] for m in movers]] & inside[k]
            found.update((stander, movers[x]) for x in np.flatnonzero(enters.any(axis=1)))
        return found

    def update(self) -> Dict[str, Gate]:
        """Every coordinated robot's gate (after `set_progress` for each)."""
        names = sorted(self._paths, key=lambda n: self._paths[n].rank)
        pairs = self._near()
        in_way = self._in_way(pairs)
        before: Dict[str, set] = {n: set() for n in names}     # x: robots that go before x
        locked: Dict[str, str] = {}
        for a, b in pairs:
            a_blocks, b_blocks = (a, b) in in_way, (b, a) in in_way
            if a_blocks and b_blocks:
                early, late = sorted((a, b), key=lambda n: self._paths[n].rank)
                locked[late] = early
            elif a_blocks:
                before[b].add(a)
            elif b_blocks:
                before[a].add(b)
        self.order = _order(names, before, {n: self._paths[n].rank for n in names})
        position = {n: k for k, n in enumerate(self.order)}
        gates: Dict[str, Gate] = {}
        partners: Dict[str, List[str]] = {n: [] for n in names}
        for a, b in pairs:
            first, second = (a, b) if position[a] < position[b] else (b, a)
            partners[second].append(first)
        for name in names:
            gates[name] = self._gate(name, partners[name], locked.get(name))
        self._waiting = {(name, gate.waits_for) for name, gate in gates.items()
                         if gate.waits_for is not None}
        return gates

    def _gate(self, name: str, leaders: Sequence[str], locked_with: Optional[str]) -> Gate:
        """Where `name` must stop for the robots before it that have not passed yet."""
        j = self._paths[name]
        spacing = self.params.spacing
        ahead = j.s >= j.progress - spacing
        kept = []           # (leader, its conflict): conflicts not all passed yet
        for leader in leaders:
            i = self._paths[leader]
            conflict = self._conflict(name, leader)
            if conflict.last_max < i.progress - spacing or \
                    conflict.last_point < 0 or not ahead[conflict.last_point]:
                continue    # one of them has passed every conflict (or they never meet)
            kept.append((leader, conflict, i.progress - spacing))
        candidates = []     # (first pending point, leader, its conflict, pending points)
        if kept:
            # All leaders' pending points at once (a few numpy calls, not a few per leader).
            pending = (np.array([c.last for _, c, _ in kept]) >=
                       np.array([passed for _, _, passed in kept])[:, None]) & ahead
            rows = np.flatnonzero(pending.any(axis=1))
            firsts = j.s[pending[rows].argmax(axis=1)]
            candidates = [(first, kept[r][0], kept[r][1], pending[r])
                          for first, r in zip(firsts, rows)]
        # The nearest first: only the nearest one j does not clear first sets the gate (a tie
        # goes to the leader listed first).
        stop, waits_for = np.inf, None
        for first, leader, conflict, pending in sorted(candidates, key=lambda c: c[0]):
            if not self._clears_first(j, self._paths[leader], conflict, pending):
                stop, waits_for = first, leader
                break
        if waits_for is None:
            return Gate(locked_with=locked_with)
        # Near the other's path already (not in its way, or it would go first): wait here.
        return Gate(max(stop - self.params.stop_buffer, j.progress), waits_for, locked_with)

    def _clears_first(self, j: _Path, i: _Path, conflict: _Conflict,
                      pending: np.ndarray) -> bool:
        """Robot j is through every stretch it shares with i's path ahead (and a reach past it)
        well before i, at its plan's speed, gets within reach of it. Plan timing is the fastest
        a robot drives a stretch; j's is stretched by pass_slack + pass_margin for starting from
        rest and being slowed. Should j lag all the same, it stands in i's way and goes first."""
        p = self.params
        if not (np.isfinite(p.pass_slack) and np.isfinite(p.pass_margin)):
            return False
        b = np.flatnonzero(pending)
        reach = self._reach(i, j)
        i_meets = max(float(conflict.first[b].min()) - reach, i.progress)
        j_clears = float(j.s[b[-1]]) + reach
        if j_clears >= j.arc[-1]:
            return False        # j's goal is on i's path: it would park in i's way
        if p.lead_same_way and conflict.same_way[b].any() and not conflict.head_on[b].any():
            # j runs along i's path, never towards it (merging, following, turning off): in
            # ahead of i, it leads i, so it has to get in well before i, not through.
            j_clears = float(j.s[b[0]]) + reach
        i_time = np.interp(i_meets, i.arc, i.times) - np.interp(i.progress, i.arc, i.times)
        j_time = np.interp(j_clears, j.arc, j.times) - np.interp(j.progress, j.arc, j.times)
        return j_time * p.pass_slack + p.pass_margin < i_time


def _order(names: Sequence[str], before: Mapping[str, set],
           rank: Mapping[str, Tuple[float, int]]) -> List[str]:
    """A total order honouring `before` (x after every robot in before[x]), earliest rank
    first among the free choices; when every robot left waits for another (a cycle, and the
    robots behind it), the earliest rank left goes first."""
    waiting = {n: set(before[n]) for n in names}
    after: Dict[str, List[str]] = {n: [] for n in names}
    for n, earlier in waiting.items():
        for e in earlier:
            after[e].append(n)
    ready = [(rank[n], n) for n in names if not waiting[n]]
    heapq.heapify(ready)
    out: List[str] = []
    placed = set()
    while len(out) < len(names):
        if not ready:       # a cycle: the earliest rank left goes first
            n = min((x for x in names if x not in placed), key=rank.__getitem__)
            waiting[n] = set()
            heapq.heappush(ready, (rank[n], n))
        _, n = heapq.heappop(ready)
        if n in placed:
            continue
        placed.add(n)
        out.append(n)
        for m in after[n]:
            waiting[m].discard(n)
            if not waiting[m] and m not in placed:
                heapq.heappush(ready, (rank[m], m))
    return out


# ---------------------------------------------------------------------- references
def remaining(reference: Reference, progress_time: float) -> Tuple[Reference, float]:
    """The part of `reference` from the sample at `progress_time` on, and the time it starts at
    on the original's clock (a tracker told of a new reference looks for the robot in its first
    driving-direction segment, so a car past a cusp gets only what is ahead of it)."""
    k = max(min(reference.sample_at(progress_time), len(reference) - 2), 0)
    return _slice(reference, k, len(reference)), float(reference.times[k])


def stop_before(reference: Reference, progress_time: float, stop_s: float,
                decel: float) -> Tuple[Reference, float]:
    """The part of `reference` from `progress_time` to arc length `stop_s` (from its start),
    braking at `decel` to stand there; and the time it starts at on the original's clock. Its
    timing is the original's up to where braking begins."""
    arc = arc_lengths(reference.positions)
    k0 = reference.sample_at(progress_time)
    k1 = int(np.searchsorted(arc, stop_s, side='right')) - 1
    if k1 <= k0:        # at (or past) the stop already: stand where the progress point is
        return _standing(reference, k0), float(reference.times[k0])
    piece = _slice(reference, k0, k1 + 1)
    s = arc[k0:k1 + 1] - arc[k0]
    speed = np.linalg.norm(piece.velocities, axis=1)
    cap = np.sqrt(2.0 * decel * np.maximum(s[-1] - s, 0.0))
    slowed = np.minimum(speed, cap)
    scale = np.divide(slowed, speed, out=np.zeros_like(speed), where=speed > 0.0)
    times = piece.times.copy()
    ds = np.diff(s)
    mean = 0.5 * (slowed[:-1] + slowed[1:])
    original = np.diff(piece.times)
    braking = (slowed[:-1] < speed[:-1] - 1e-9) | (slowed[1:] < speed[1:] - 1e-9)
    step = np.where(braking & (ds > 1e-9),
                    np.divide(ds, mean, out=np.full_like(ds, np.inf), where=mean > 0.0),
                    original)
    # The last step ends at rest: mean speed is half the entry speed (finite unless both 0).
    step = np.where(np.isfinite(step), step,
                    np.maximum(original, np.sqrt(2.0 * ds / max(decel, 1e-6))))
    times[1:] = np.cumsum(np.maximum(step, 1e-3))
    velocities = piece.velocities * scale[:, None]
    accelerations = (np.gradient(velocities, times, axis=0) if len(times) > 1
                     else np.zeros_like(velocities))
    return Reference(times, piece.positions, velocities, accelerations, piece.yaw,
                     piece.yaw_rate, piece.direction), float(reference.times[k0])


def _slice(reference: Reference, a: int, b: int) -> Reference:
    if b - a < 2:
        return _standing(reference, a)
    return Reference(reference.times[a:b], reference.positions[a:b], reference.velocities[a:b],
                     reference.accelerations[a:b], reference.yaw[a:b], reference.yaw_rate[a:b],
                     reference.direction[a:b])


def _standing(reference: Reference, k: int) -> Reference:
    """Stand at sample k (1 s of it; a tracker holds the end of a reference)."""
    position = np.repeat(reference.positions[k:k + 1], 2, axis=0)
    zeros = np.zeros_like(position)
    return Reference(np.array([0.0, 1.0]), position, zeros, zeros,
                     np.repeat(reference.yaw[k], 2), np.zeros(2),
                     np.repeat(reference.direction[k], 2))


# ---------------------------------------------------------------------- room
def with_discs(grid: OccupancyGrid, centres: np.ndarray, radii: np.ndarray) -> OccupancyGrid:
    """A copy of 2-D `grid` with the discs (centres (K, 2), radii (K,)) occupied: robots
    standing where a plan must not go."""
    occupied = grid.occupied.copy()
    if len(centres):
        # Grow every centre's cell by its disc's radius (the largest of them: conservative).
        occupied |= _distance_from(grid, centres) <= float(np.max(radii))
    return OccupancyGrid(occupied, grid.resolution, grid.origin)


def _distance_from(grid: OccupancyGrid, points: np.ndarray) -> np.ndarray:
    """Per cell of 2-D `grid`, the distance (m) to the nearest cell holding one of `points`
    (K, 2; those off the grid are left out)."""
    mark = np.zeros(grid.occupied.shape, dtype=bool)
    cells = grid.world_to_cell(np.asarray(points, dtype=float))       # (K, 2) as x, y
    inside = (cells >= 0).all(axis=1) & (cells < np.array(mark.shape[::-1])).all(axis=1)
    mark[cells[inside, 1], cells[inside, 0]] = True
    return ndimage.distance_transform_edt(~mark) * grid.resolution


def waiting_spot(grid: OccupancyGrid, start: np.ndarray, radius: float,
                 keep_out: np.ndarray, keep_out_radius: float,
                 max_distance: float = 15.0,
                 rules: Optional[TrafficRules] = None,
                 robots: Optional[np.ndarray] = None) -> Optional[np.ndarray]:
    """The free place nearest to `start` (by a flood over the free cells, so never through a
    wall, nor through the discs `robots` (K, 3: x, y, how near a centre the flood may come):
    the robots standing around, which a robot cannot pass in a one-lane aisle) where a disc of
    `radius` is clear of the map and at least `keep_out_radius` from every point of `keep_out`
    (K, 2), outside every one-robot zone of `rules` (a robot waiting in one would hold it):
    where a robot can wait off the others' way. None within `max_distance`."""
    free = grid.clearance() > radius
    reach = np.ones(free.shape, dtype=bool)
    if len(keep_out):
        reach = _distance_from(grid, keep_out) >= keep_out_radius
    target = free & reach
    cell = grid.world_to_cell(np.asarray(start, dtype=float)[None, :2])[0]
    if not (0 <= cell[0] < free.shape[1] and 0 <= cell[1] < free.shape[0]):
        return None
    front = np.zeros(free.shape, dtype=bool)
    front[cell[1], cell[0]] = True
    # The robot may stand a little inside the clearance it needs (pushed by others): the flood
    # starts from wherever it is and spreads through cells with room for half of it.
    passable = grid.clearance() > 0.5 * radius
    if robots is not None and len(robots):
        # A place beyond a robot is not near: the way there goes through it (in an aisle, the
        # robot it makes way for, or the ones waiting behind it).
        passable &= ~_in_discs(grid, np.asarray(robots, dtype=float))
    passable[cell[1], cell[0]] = True
    zoned = rules is not None and bool(rules.zones)
    for _ in range(int(max_distance / grid.resolution)):
        hit = front & target
        if hit.any():
            rows, cols = np.nonzero(hit)
            centres = grid.cell_centers(np.column_stack([cols, rows]))
            if zoned:       # only the cells the flood reaches are tested, once each
                in_zone = rules.in_zones(centres).any(axis=1)
                target[rows[in_zone], cols[in_zone]] = False
                centres = centres[~in_zone]
            if len(centres):
                nearest = np.argmin(np.linalg.norm(centres - start[:2], axis=1))
                return centres[nearest]
        grown = ndimage.binary_dilation(front) & passable
        if (grown == front).all():
            return None
        front = grown
    return None


def _in_discs(grid: OccupancyGrid, discs: np.ndarray) -> np.ndarray:
    """The 2-D grid's cells whose centres lie within one of `discs` (K, 3: x, y, radius)."""
    inside = np.zeros(grid.occupied.shape, dtype=bool)
    rows, cols = inside.shape
    for x, y, r in discs:
        (c0, r0), (c1, r1) = grid.world_to_cell(np.array([[x - r, y - r], [x + r, y + r]]))
        c0, r0, c1, r1 = max(c0, 0), max(r0, 0), min(c1 + 1, cols), min(r1 + 1, rows)
        if c0 >= c1 or r0 >= r1:
            continue
        cy, cx = np.ogrid[r0:r1, c0:c1]
        centres_x = grid.origin[0] + (cx + 0.5) * grid.resolution
        centres_y = grid.origin[1] + (cy + 0.5) * grid.resolution
        inside[r0:r1, c0:c1] |= (centres_x - x) ** 2 + (centres_y - y) ** 2 < r * r
    return inside


def free_width(grid: OccupancyGrid) -> np.ndarray:
    """Per cell of `grid`, the free width there (m): twice the largest clearance within
    _WIDTH_REACH (a corridor's width at any point of it a path runs along, not only on its
    centre line; a room's, large)."""
    cells = int(np.ceil(_WIDTH_REACH / grid.resolution))
    yy, xx = np.mgrid[-cells:cells + 1, -cells:cells + 1]
    disc = np.hypot(xx, yy) * grid.resolution <= _WIDTH_REACH
    return 2.0 * ndimage.maximum_filter(grid.clearance(), footprint=disc)
