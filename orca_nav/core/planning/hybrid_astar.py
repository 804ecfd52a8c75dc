"""Hybrid A* for car-like and differential-drive robots on a 2-D OccupancyGrid.

Search:

* State ``(x, y, yaw)`` of the reference point (rear-axle centre), hashed into cells of
  ``xy_resolution`` metres and ``yaw_bins`` headings. Closed set and best cost per cell live in
  flat arrays over all cells.
* Motion primitives: arcs of length ``step_length`` (default 1.5 cell diagonals, so every one
  leaves its cell, capped at a quarter turn at full steering) at ``2 * steering_samples + 1``
  curvatures from -1/R to +1/R, forward and, when ``allow_reverse``, backward; the ``diff_drive``
  model also turns in place by +-45 and +-90 degrees. The primitives are precomputed as pose
  samples; expanding a node transforms all of them at once and collision-checks every sample of
  every primitive in one batch.
* Cost: arc length (times ``reverse_penalty`` when reversing) plus ``switch_penalty`` per change
  of direction, ``steer_change_penalty`` per unit change of normalised curvature,
  ``non_straight_penalty`` per metre of turning arc and ``turn_in_place_penalty`` per radian of
  in-place rotation.
* Heuristic: ``heuristic_weight`` times the maximum of (a) the Reeds-Shepp distance ignoring
  obstacles (Dubins when reverse is off; Euclidean for ``diff_drive``), read from a table built
  once per turning radius, and (b) an obstacle-aware distance-to-goal field: Dijkstra
  (``scipy.sparse.csgraph``) over a 16-connected graph of ``heuristic_resolution`` blocks, where a
  block is passable if some cell in it has clearance for the footprint's inscribed disc around
  the reference point. The graph is built once per map; the field once per goal (plan time).
  The weight > 1 makes the search greedy (few expansions); smoothing recovers the length.
* Analytic expansion: the ``analytic_candidates`` shortest Reeds-Shepp (Dubins) paths from
  popped nodes to the goal, for every node within ``analytic_distance`` of the goal (in batches
  of ``analytic_batch`` nodes, one vectorised call each) and every ``analytic_interval``
  expansions elsewhere; the cheapest collision-free one ends the search.
* Smoothing: shortcuts between path junctions by Reeds-Shepp (Dubins) paths, kept only when
  cheaper and collision-free; every piece of the result is an arc of curvature 1/R or less, a
  straight line or an in-place turn, so the curvature limit holds by construction.
* If the search is exhausted (``NO_PATH``), it is repeated once on a lattice twice as fine
  (``refine_on_failure``): long primitives can miss tight manoeuvres.
* One-way lanes (optional ``traffic``, `orca_nav.core.traffic_rules`): no motion the search
  accepts (primitive, analytic path, shortcut, the finer retry's) goes against a lane. A pose
  travels along its yaw, plus pi when reversing; an in-place turn travels nowhere. Poses are
  checked at the collision samples, with the heading change between two samples as slack, so
  the rule holds between them too. The distance field's graph is then directed: it has no
  block edge against a lane that holds both blocks' centres half a block inside it (blocks
  on a lane's border keep their edges: a way just outside the lane is not ruled out), and
  Dijkstra runs from the goal over the reversed edges. A goal reachable only against a lane
  is ``NO_PATH`` (a caller may plan again without the lanes).

Collision checks use :class:`orca_nav.core.footprint.FootprintChecker` with the footprint grown by
``collision_margin``; poses are sampled densely enough (from the margin, the footprint's reach
and the curvature) that the footprint between two samples stays inside the grown footprint at
one of them, so the whole continuous path is free, not just its samples. When the start or goal
is closer to an obstacle than the margin, the margin is halved (up to three times) for that plan.

Statuses: start/goal footprint overlapping an occupied cell -> ``START_IN_COLLISION`` /
``GOAL_IN_COLLISION``; footprint sticking out of the map (reference point inside) ->
``OUT_OF_MAP``; search exhausted, or the goal walled off in the distance field -> ``NO_PATH``;
``max_expansions`` spent (the budget: the same result on a loaded machine as on a quiet one) or
``timeout`` (wall clock, only a safety net above it) reached -> ``TIMEOUT``, saying which.
Non-finite input, a reference point outside the map and bad parameters raise ``ValueError``
naming the field. Yaw is accepted in any range and wrapped; +-pi are the same heading.

A planner instance holds per-map precomputation (clearance field, heuristic graph, primitives,
Reeds-Shepp table; see ``precompute_time``) and serves one ``plan()`` call at a time (concurrent
calls wait for each other).

One file: the search, its two heuristics and the analytic expansion share the flat per-cell
arrays; footprints and Reeds-Shepp curves are modules of their own.
"""
from __future__ import annotations

import heapq
import math
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.planning.footprint import Footprint, FootprintChecker
from orca_nav.core.planning.reeds_shepp import (
    CurvePath,
    DistanceTable,
    dubins_candidates,
    dubins_distance,
    reeds_shepp_candidates,
    reeds_shepp_distance,
    sample_curves,
    wrap_angle,
)
from orca_nav.core.planning.result import PlanClock, PlanResult, PlanStatus
from orca_nav.core.traffic_rules import TrafficRules
from orca_nav.core.validation import finite_at_least_zero

_MODELS = ('car', 'diff_drive')
_SPIN_ANGLES = (math.pi / 4, -math.pi / 4, math.pi / 2, -math.pi / 2)


@dataclass
class HybridParams:
    wheelbase: float
    min_turning_radius: float
    footprint_length: Optional[float] = None
    footprint_width: Optional[float] = None
    rear_overhang: Optional[float] = None
    robot_radius: Optional[float] = None        # disc footprint, used when no rectangle is given
    allow_reverse: bool = True
    model: str = 'car'                          # 'car' | 'diff_drive' (also turns in place)
    xy_resolution: float = 1.0                  # search cell (m)
    yaw_bins: int = 36                          # search heading cells
    steering_samples: int = 2                   # curvatures per side (plus straight)
    step_length: Optional[float] = None         # primitive arc length (m); None: 1.5 cell
                                                # diagonals, at most a quarter turn
    reverse_penalty: float = 1.2                # multiplier on reverse arc length
    switch_penalty: float = 2.0                 # per direction change (m)
    steer_change_penalty: float = 0.3           # per unit change of curvature / max curvature (m)
    non_straight_penalty: float = 0.03          # per metre driven on a curve (m)
    turn_in_place_penalty: float = 1.0          # per radian turned in place (m)
    heuristic_resolution: float = 0.5           # block size of the 2-D distance field (m)
    heuristic_weight: float = 3.0               # > 1: greedier, far fewer expansions; smoothing
                                                # recovers most of the length
    analytic_distance: float = 10.0             # try the analytic path every expansion within this
    analytic_interval: int = 10                 # ... and every this many expansions farther away
    analytic_batch: int = 4                     # near-goal nodes connected per vectorised attempt
    analytic_candidates: int = 3                # shortest curves tried per node (fallbacks)
    collision_margin: float = 0.1               # footprint growth in the search (m), > 0; sets the
                                                # sample spacing, so at least 1/4 grid cell is used
    smoothing: bool = True
    refine_on_failure: bool = True              # search exhausted: retry on a lattice twice as fine
    path_resolution: float = 0.1                # output pose spacing (m)
    timeout: float = 5.0                        # wall-clock cap (s): a safety net
    max_expansions: int = 200000                # search budget: nodes expanded

    def __post_init__(self):
        for name in ('wheelbase', 'min_turning_radius', 'xy_resolution', 'reverse_penalty',
                     'heuristic_resolution', 'heuristic_weight', 'analytic_distance',
                     'collision_margin', 'path_resolution', 'timeout'):
            finite_at_least_zero(name, getattr(self, name), positive=True)
        for name in ('switch_penalty', 'steer_change_penalty', 'non_straight_penalty',
                     'turn_in_place_penalty'):
            finite_at_least_zero(name, getattr(self, name))
        if self.step_length is not None:
            finite_at_least_zero('step_length', self.step_length, positive=True)
        for name in ('yaw_bins', 'steering_samples', 'analytic_interval', 'analytic_batch',
                     'analytic_candidates', 'max_expansions'):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f'{name} must be an integer >= 1, got {value!r}')
        if self.model not in _MODELS:
            raise ValueError(f'model must be one of {_MODELS}, got {self.model!r}')
        if self.reverse_penalty < 1.0:
            raise ValueError('reverse_penalty must be >= 1 (a multiplier), got '
                             f'{self.reverse_penalty}')
        for name in ('allow_reverse', 'smoothing', 'refine_on_failure'):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f'{name} must be a bool, got {getattr(self, name)!r}')
        self.footprint()    # validates the footprint fields

    def footprint(self) -> Footprint:
        rect = (self.footprint_length, self.footprint_width, self.rear_overhang)
        if all(v is None for v in rect):
            if self.robot_radius is None:
                raise ValueError('footprint: give footprint_length/footprint_width/rear_overhang '
                                 'or robot_radius')
            return Footprint(radius=finite_at_least_zero('robot_radius', self.robot_radius,
                                                         positive=True))
        if self.robot_radius is not None:
            raise ValueError('robot_radius must be None when a rectangular footprint is given')
        for name, value in zip(('footprint_length', 'footprint_width', 'rear_overhang'), rect):
            if value is None:
                raise ValueError(f'{name} is missing (the rectangle needs length, width and '
                                 'rear_overhang)')
            finite_at_least_zero(name, value, positive=name != 'rear_overhang')
        return Footprint(float(self.footprint_length), float(self.footprint_width),
                         float(self.rear_overhang))

    @property
    def max_curvature(self) -> float:
        return 1.0 / self.min_turning_radius

    @property
    def max_steering_angle(self) -> float:
        """Steering limit of the bicycle model: atan(wheelbase / min_turning_radius)."""
        return math.atan(self.wheelbase / self.min_turning_radius)


@dataclass
class HybridPath:
    """Planned path: poses every ``path_resolution`` metres with their driving direction."""
    x: np.ndarray
    y: np.ndarray
    yaw: np.ndarray               # wrapped to [-pi, pi)
    direction: np.ndarray         # int8: +1 forward, -1 reverse (in-place turns: +1)
    length: float                 # metres driven by the reference point
    curve: CurvePath              # the exact geometry (arcs, lines, in-place turns)
    direction_switches: int = 0

    def sample(self, step: float):
        """Poses (M, 3) and directions (M,) of the exact path, at most ``step`` apart."""
        poses, direction = self.curve.sample(step)
        poses[:, 2] = wrap_angle(poses[:, 2])
        return poses, direction


@dataclass
class _Primitives:
    offsets: np.ndarray           # (M, 3) sample poses of all primitives relative to the node
    owner: np.ndarray             # (M,) primitive of each sample
    end: np.ndarray               # (K,) index of each primitive's end pose in offsets
    curvature: np.ndarray         # (K,)
    length: np.ndarray            # (K,) signed arc length (0 for in-place turns)
    spin: np.ndarray              # (K,) in-place yaw change
    direction: np.ndarray         # (K,) +1 / -1 (in-place: 0, keeps the parent's)
    cost: np.ndarray              # (K,) cost without the parent-dependent penalties
    travel: np.ndarray            # (M,) travel direction of each sample relative to its yaw:
                                  # 0 forward, pi reversing, NaN turning in place


@dataclass
class _Search:
    """Node storage of one plan() call: parallel lists indexed by node id (appends are cheap)."""
    x: list = field(default_factory=list)
    y: list = field(default_factory=list)
    yaw: list = field(default_factory=list)
    g: list = field(default_factory=list)
    parent: list = field(default_factory=list)
    prim: list = field(default_factory=list)
    direction: list = field(default_factory=list)
    curvature: list = field(default_factory=list)


class HybridAStar:
    """Hybrid A* planner over one map; reuse the instance for many queries on that map."""

    def __init__(self, grid: OccupancyGrid, params: HybridParams,
                 traffic: Optional[TrafficRules] = None):
        if not isinstance(grid, OccupancyGrid):
            raise ValueError(f'grid must be an OccupancyGrid, got {type(grid).__name__}')
        if grid.ndim != 2:
            raise ValueError(f'grid must be 2-D, got {grid.ndim}-D')
        if not isinstance(params, HybridParams):
            raise ValueError(f'params must be HybridParams, got {type(params).__name__}')
        if traffic is not None and not isinstance(traffic, TrafficRules):
            raise ValueError(f'traffic must be TrafficRules or None, got {type(traffic).__name__}')
        t0 = time.perf_counter()
        self.grid = grid
        self.params = params
        # The lanes every accepted motion keeps; None (no rules, or no lanes): nothing checked.
        self._lanes = traffic if traffic is not None and traffic.lanes else None
        self.footprint = params.footprint()
        self._by_margin = {}
        self._lock = threading.Lock()
        self.exact_checker = FootprintChecker(grid, self.footprint, 0.0)
        p = params
        # Default: 1.5 cell diagonals (leaves the xy cell), but at most a quarter turn at full
        # steering (a small turning radius then still changes the heading cell).
        self._step = p.step_length if p.step_length is not None else \
            min(1.5 * p.xy_resolution * math.sqrt(2.0), 0.5 * math.pi * p.min_turning_radius)
        self._use_margin(max(p.collision_margin, 0.25 * grid.resolution))
        lo, hi = grid.extent
        self._lo = np.asarray(lo, dtype=float)
        self._hi = np.asarray(hi, dtype=float)
        self._nx = int(math.ceil((self._hi[0] - self._lo[0]) / p.xy_resolution))
        self._ny = int(math.ceil((self._hi[1] - self._lo[1]) / p.xy_resolution))
        self._bin = 2.0 * math.pi / p.yaw_bins
        if p.model == 'diff_drive':
            self._curve_table = None
        else:
            self._curve_table = DistanceTable('reeds_shepp' if p.allow_reverse else 'dubins',
                                              p.min_turning_radius)
        self._build_heuristic_graph()
        self._fine = None
        if p.refine_on_failure:
            fine = replace(p, xy_resolution=0.5 * p.xy_resolution, yaw_bins=2 * p.yaw_bins,
                           step_length=None if p.step_length is None else 0.5 * p.step_length,
                           refine_on_failure=False)
            self._fine = HybridAStar(grid, fine, traffic)
        self.precompute_time = time.perf_counter() - t0   # per map and params, not per plan

    # ------------------------------------------------------------------ setup
    def _use_margin(self, margin):
        """Switch the checker, sample spacing and primitives to footprint margin ``margin``
        (cached)."""
        if margin not in self._by_margin:
            kmax = self.params.max_curvature
            self.checker = FootprintChecker(self.grid, self.footprint, margin)
            # Sample spacing so that no footprint point moves more than 2 * margin between samples.
            self._ds = 2.0 * margin / (1.0 + self.footprint.reach * kmax)
            self._dspin = 2.0 * margin / self.footprint.reach
            self._primitives = self._make_primitives()
            self._by_margin[margin] = (self.checker, self._ds, self._dspin, self._primitives)
        self.checker, self._ds, self._dspin, self._primitives = self._by_margin[margin]

    def _margin_for(self, start, goal):
        """The configured margin, halved (up to 3 times) until start and goal are free with it:
        a start or goal closer to an obstacle than the margin must still be usable."""
        # A tiny margin would need very dense samples: at least a quarter cell is used.
        margin = max(self.params.collision_margin, 0.25 * self.grid.resolution)
        poses = np.array([start, goal])
        for _ in range(3):
            self._use_margin(margin)
            if self.checker.free(poses).all():
                break
            margin *= 0.5
        return margin

    def _make_primitives(self) -> _Primitives:
        p = self.params
        kmax = p.max_curvature
        n = p.steering_samples
        curvatures = kmax * np.arange(-n, n + 1) / n
        directions = [1.0, -1.0] if p.allow_reverse else [1.0]
        reach = self.footprint.reach
        margin = self._ds * (1.0 + reach * kmax) / 2.0
        offsets, curv, length, spin, direc = [], [], [], [], []
        for d in directions:
            for k in curvatures:
                # Straighter arcs sweep the footprint less: they can be sampled more sparsely.
                count = max(2, int(math.ceil(self._step * (1.0 + reach * abs(k)) / (2.0 * margin))))
                s = d * self._step * np.arange(1, count + 1) / count
                offsets.append(_arc_offsets(s, k))
                curv.append(k)
                length.append(d * self._step)
                spin.append(0.0)
                direc.append(d)
        if p.model == 'diff_drive':
            for angle in _SPIN_ANGLES:
                m = int(math.ceil(abs(angle) / self._dspin))
                yaw = angle * np.arange(1, m + 1) / m
                offsets.append(np.column_stack([np.zeros_like(yaw), np.zeros_like(yaw), yaw]))
                curv.append(0.0)
                length.append(0.0)
                spin.append(angle)
                direc.append(0.0)
        counts = [o.shape[0] for o in offsets]
        curv, length, spin, direc = map(np.array, (curv, length, spin, direc))
        owner = np.repeat(np.arange(len(counts)), counts)
        travel = np.select([direc < 0.0, direc == 0.0], [math.pi, np.nan], 0.0)[owner]
        return _Primitives(np.vstack(offsets), owner, np.cumsum(counts) - 1, curv, length, spin,
                           direc, self._segment_costs(length, curv, spin), travel)

    def _build_heuristic_graph(self):
        """Passable blocks and their 16-connected graph, for the per-goal distance field."""
        p = self.params
        res = self.grid.resolution
        block = max(1, int(round(p.heuristic_resolution / res)))
        self._hblock = block * res
        clear = self.grid.clearance()
        ny, nx = clear.shape
        by, bx = -(-ny // block), -(-nx // block)
        padded = np.zeros((by * block, bx * block), dtype=np.float32)
        padded[:ny, :nx] = clear
        best = padded.reshape(by, block, bx, block).max(axis=(1, 3))
        # A valid pose's reference point is at least the inscribed radius from occupied squares;
        # its cell's centre-to-centre clearance is then at least that minus one cell.
        passable = best >= self.footprint.inscribed_radius - res
        self._hpassable = passable
        self._hshape = (by, bx)
        idx = np.arange(by * bx).reshape(by, bx)
        rows, cols, weights = [], [], []
        moves = [(0, 1), (1, 0), (1, 1), (1, -1), (1, 2), (2, 1), (1, -2), (2, -1)]
        for dy, dx in moves:
            a = passable[max(0, -dy):by - max(0, dy), max(0, -dx):bx - max(0, dx)]
            ys, xs = np.nonzero(a)
            ys, xs = ys + max(0, -dy), xs + max(0, -dx)
            ok = passable[ys + dy, xs + dx]
            if abs(dx) + abs(dy) == 3:
                # Knight moves must not jump over a blocked block: both cells they cross are free.
                sx, sy = (np.sign(dx), 0) if abs(dx) == 2 else (0, np.sign(dy))
                ok &= passable[ys + sy, xs + sx] & passable[ys + dy - sy, xs + dx - sx]
            elif abs(dx) + abs(dy) == 2:
                ok &= passable[ys + dy, xs] | passable[ys, xs + dx]
            ys, xs = ys[ok], xs[ok]
            rows.append(idx[ys, xs])
            cols.append(idx[ys + dy, xs + dx])
            weights.append(np.full(ys.size, math.hypot(dx, dy) * self._hblock))
        rows, cols, weights = map(np.concatenate, (rows, cols, weights))
        self._hdirected = self._lanes is not None
        if self._hdirected:
            # Each edge both ways, except against a lane holding both blocks; stored
            # reversed (to -> from), so Dijkstra from the goal gives the distance to the goal.
            centre = np.column_stack([(np.arange(by * bx) % bx + 0.5) * self._hblock,
                                      (np.arange(by * bx) // bx + 0.5) * self._hblock]) + self._lo
            rows, cols, edge = self._lanes.reversed_edges(rows, cols, centre[rows], centre[cols],
                                                          0.5 * self._hblock)
            weights = weights[edge]
        self._hgraph = sparse.csr_matrix((weights, (rows, cols)), shape=(by * bx, by * bx))

    def _distance_field(self, goal) -> np.ndarray:
        by, bx = self._hshape
        gx = int((goal[0] - self._lo[0]) // self._hblock)
        gy = int((goal[1] - self._lo[1]) // self._hblock)
        dist = csgraph.dijkstra(self._hgraph, directed=self._hdirected, indices=gy * bx + gx)
        # Block centres are up to half a block diagonal from the points they stand for.
        return np.maximum(dist - self._hblock * math.sqrt(0.5), 0.0)

    # ------------------------------------------------------------------ helpers
    def _field_at(self, field_flat, x, y):
        by, bx = self._hshape
        ix = np.clip(((x - self._lo[0]) // self._hblock).astype(np.int64), 0, bx - 1)
        iy = np.clip(((y - self._lo[1]) // self._hblock).astype(np.int64), 0, by - 1)
        return field_flat[iy * bx + ix]

    def _heuristic(self, field_flat, x, y, yaw, goal):
        h = self._field_at(field_flat, x, y)
        if self._curve_table is not None:
            h = np.maximum(h, self._curve_table(np.column_stack([x, y, yaw]), goal))
        else:
            h = np.maximum(h, np.hypot(x - goal[0], y - goal[1]))
        return self.params.heuristic_weight * h

    def _cells(self, x, y, yaw):
        ix = ((x - self._lo[0]) // self.params.xy_resolution).astype(np.int64)
        iy = ((y - self._lo[1]) // self.params.xy_resolution).astype(np.int64)
        iyaw = ((yaw % (2.0 * math.pi)) // self._bin).astype(np.int64) % self.params.yaw_bins
        return (iyaw * self._ny + iy) * self._nx + ix

    def _connect(self, starts, goal, count=1):
        """The ``count`` shortest obstacle-blind curves from each pose to ``goal`` (Reeds-Shepp, or
        Dubins without reverse): a list per start."""
        fn = reeds_shepp_candidates if self.params.allow_reverse else dubins_candidates
        return fn(starts, goal, self.params.min_turning_radius, count)

    def _segment_costs(self, lengths, curvatures, spins):
        """Cost of each segment, without direction-switch penalties."""
        p = self.params
        cost = np.abs(lengths) * np.where(lengths < 0, p.reverse_penalty, 1.0)
        cost += p.non_straight_penalty * np.abs(lengths) * (curvatures != 0)
        return cost + p.turn_in_place_penalty * np.abs(spins)

    def _curve_cost(self, curve: CurvePath) -> float:
        segs = self._segment_costs(curve.lengths, curve.curvatures, curve.spins)
        return float(segs.sum()) + self.params.switch_penalty * curve.direction_switches

    def _curves_allowed(self, curves):
        """(len(curves),) bool: every footprint sample along each curve is free, and none goes
        against a lane (the curves are Reeds-Shepp / Dubins: no in-place turns)."""
        poses, direction, owner = sample_curves(curves, min(self._ds, self._dspin))
        ok = self._groups_free(poses[:, 0], poses[:, 1], poses[:, 2], owner, len(curves))
        if self._lanes is not None and ok.any():
            travel = poses[:, 2] + np.where(direction < 0.0, math.pi, 0.0)
            ok &= ~self._groups_against(poses[:, 0], poses[:, 1], travel, owner, len(curves), ok)
        return ok

    def _groups_against(self, x, y, travel, owner, n_groups, candidates):
        """(n_groups,) bool: a pose of the group ``owner`` travels (direction ``travel``, NaN:
        turning in place) against a lane; only the groups where ``candidates`` is set are
        looked at. The slack is the most the heading turns between two samples."""
        look = np.flatnonzero(candidates[owner])
        slack = self.params.max_curvature * self._ds
        bad = self._lanes.against(x[look], y[look], travel[look], slack)
        return np.bincount(owner[look[bad]], minlength=n_groups) > 0

    def _groups_free(self, x, y, yaw, owner, n_groups, strides=(16, 4, 1)):
        """(n_groups,) bool: every pose of the group ``owner`` is free. Poses are checked coarse to
        fine (every 16th, then every 4th, then the rest), so groups that collide somewhere rarely
        get most of their poses checked."""
        bad = np.zeros(n_groups, dtype=bool)
        index = np.arange(x.size)
        checked = np.zeros(x.size, dtype=bool)
        for stride in strides:
            idx = np.flatnonzero((index % stride == 0) & ~checked & ~bad[owner])
            if idx.size == 0:
                continue
            checked[idx] = True
            free = self.checker.free_xyyaw(x[idx], y[idx], yaw[idx])
            bad[owner[idx[~free]]] = True
        return ~bad

    def _endpoint_status(self, pose):
        """'out_of_map', 'collision' or None for a start/goal pose (footprint without margin)."""
        fp = self.footprint
        if fp.is_rectangle:
            c, s = math.cos(pose[2]), math.sin(pose[2])
            lx = np.array([-fp.rear_overhang, fp.length - fp.rear_overhang])[[0, 0, 1, 1]]
            ly = 0.5 * fp.width * np.array([-1.0, 1.0, -1.0, 1.0])
            corners = np.column_stack([pose[0] + c * lx - s * ly, pose[1] + s * lx + c * ly])
            outside = np.any((corners < self._lo) | (corners > self._hi))
        else:
            outside = np.any((pose[:2] - fp.radius < self._lo) | (pose[:2] + fp.radius > self._hi))
        if outside:
            return 'out_of_map'
        if not self.exact_checker.free_xyyaw(pose[0:1], pose[1:2], pose[2:3])[0]:
            return 'collision'
        return None

    def _pose(self, name, value):
        arr = np.asarray(value, dtype=float).reshape(-1) if np.ndim(value) else None
        if arr is None or arr.size != 3:
            raise ValueError(f'{name} must be (x, y, yaw), got {value!r}')
        if not np.all(np.isfinite(arr)):
            raise ValueError(f'{name} must be finite, got {arr.tolist()}')
        if not self.grid.in_bounds(arr[:2])[0]:
            raise ValueError(f'{name} {arr[:2].tolist()} is outside the map '
                             f'[{self._lo.tolist()}, {self._hi.tolist()})')
        arr[2] = float(wrap_angle(arr[2]))
        return arr

    # ------------------------------------------------------------------ planning
    def plan(self, start, goal) -> PlanResult:
        """Plan from ``start`` to ``goal``, both ``(x, y, yaw)`` of the reference point.
        Calls from several threads are served one after the other."""
        with self._lock:    # the margin-dependent checker and primitives are switched per plan
            return self._plan(start, goal)

    def _plan(self, start, goal) -> PlanResult:
        clock = PlanClock()
        t_begin, stats, finish = clock.start, clock.stats, clock.finish
        p = self.params
        start = self._pose('start', start)
        goal = self._pose('goal', goal)

        for name, pose, in_collision in (('start', start, PlanStatus.START_IN_COLLISION),
                                         ('goal', goal, PlanStatus.GOAL_IN_COLLISION)):
            kind = self._endpoint_status(pose)
            if kind == 'out_of_map':
                return finish(PlanStatus.OUT_OF_MAP,
                              f'{name} footprint at {pose.tolist()} sticks out of the map')
            if kind == 'collision':
                return finish(in_collision,
                              f'{name} footprint at {pose.tolist()} overlaps an occupied cell')

        field_flat = self._distance_field(goal)
        h_start = self._heuristic(field_flat, start[0:1], start[1:2], start[2:3], goal)[0]
        if not math.isfinite(h_start):
            return finish(PlanStatus.NO_PATH, 'the goal is not reachable from the start in the '
                                              '2-D distance field (walled off' +
                          (', or only against a one-way lane)' if self._lanes else ')'))

        planner = self
        margin = self._margin_for(start, goal)
        self._use_margin(margin)
        if self._fine is not None:
            self._fine._use_margin(margin)
        nodes, end_node, tail = self._search(start, goal, field_flat, stats, t_begin)
        if end_node is None and tail[0] is PlanStatus.NO_PATH and self._fine is not None:
            # The coarse lattice's long primitives can miss tight manoeuvres: search again finer.
            planner = self._fine
            coarse_expansions = stats.expanded_nodes
            nodes, end_node, tail = planner._search(start, goal, field_flat, stats, t_begin)
            stats.expanded_nodes += coarse_expansions
        if end_node is None:
            status, message = tail
            return finish(status, message)
        curve = planner._assemble(start, nodes, end_node, tail)
        if p.smoothing:
            curve = self._shortcut(curve)
        return finish(PlanStatus.SUCCESS, f'path of {curve.length:.2f} m, '
                                          f'{curve.direction_switches} direction switches',
                      path=self._output(curve))

    def _search(self, start, goal, field_flat, stats, t_begin):
        """A* over (x, y, yaw) cells. Returns (nodes, end node, analytic tail) or (nodes, None,
        (status, msg))."""
        p = self.params
        prims = self._primitives
        n_cells = self._nx * self._ny * p.yaw_bins
        best_g = np.full(n_cells, np.inf)
        closed = np.zeros(n_cells, dtype=bool)
        nodes = _Search()
        nodes.x.append(start[0])
        nodes.y.append(start[1])
        nodes.yaw.append(start[2])
        nodes.g.append(0.0)
        nodes.parent.append(-1)
        nodes.prim.append(-1)
        nodes.direction.append(0.0)
        nodes.curvature.append(0.0)
        start_cell = int(self._cells(start[0:1], start[1:2], start[2:3])[0])
        best_g[start_cell] = 0.0
        open_heap = [(0.0, 0, start_cell)]
        kmax = p.max_curvature
        ox, oy, oyaw = prims.offsets[:, 0], prims.offsets[:, 1], prims.offsets[:, 2]
        n_prims = prims.end.size
        countdown = 0
        expansions = 0
        pending = []
        while open_heap:
            _f, node, cell = heapq.heappop(open_heap)
            if closed[cell] or nodes.g[node] > best_g[cell]:
                continue
            closed[cell] = True
            expansions += 1
            x, y, yaw = nodes.x[node], nodes.y[node], nodes.yaw[node]
            # Analytic expansion: every popped node near the goal (in batches of analytic_batch
            # nodes, one vectorised call each), every analytic_interval expansions elsewhere.
            near = math.hypot(x - goal[0], y - goal[1]) < p.analytic_distance
            countdown -= 1
            if near or countdown <= 0:
                pending.append(node)
            if len(pending) >= (p.analytic_batch if near else 1):
                countdown = p.analytic_interval
                found = self._try_analytic(nodes, pending, goal, stats)
                pending = []
                if found is not None:
                    stats.expanded_nodes = expansions
                    return (nodes,) + found
            elapsed = time.perf_counter() - t_begin
            if expansions >= p.max_expansions or elapsed > p.timeout:
                stats.expanded_nodes = expansions
                return nodes, None, (PlanStatus.TIMEOUT, (
                    f'expansion budget {p.max_expansions} spent after {elapsed:.2f} s'
                    if expansions >= p.max_expansions else
                    f'wall-time cap {p.timeout:g} s reached after {expansions} expansions'))
            # All primitives and all their samples at once.
            c, s = math.cos(yaw), math.sin(yaw)
            px = x + c * ox - s * oy
            py = y + s * ox + c * oy
            pyaw = yaw + oyaw
            ok = self._groups_free(px, py, pyaw, prims.owner, n_prims)
            if self._lanes is not None and ok.any():
                ok &= ~self._groups_against(px, py, pyaw + prims.travel, prims.owner, n_prims, ok)
            if not ok.any():
                continue
            end = prims.end[ok]
            ex, ey, eyaw = px[end], py[end], wrap_angle(pyaw[end])
            cells = self._cells(ex, ey, eyaw)
            parent_dir = nodes.direction[node]
            direction = prims.direction[ok]
            kept_dir = np.where(direction == 0.0, parent_dir, direction)
            g = nodes.g[node] + prims.cost[ok]
            g += p.switch_penalty * ((direction != 0.0) & (parent_dir != 0.0)
                                     & (direction != parent_dir))
            g += p.steer_change_penalty * np.abs(prims.curvature[ok] - nodes.curvature[node]) / kmax
            better = ~closed[cells] & (g < best_g[cells]) & (cells != cell)
            if not better.any():
                continue
            ex, ey, eyaw, cells, g = ex[better], ey[better], eyaw[better], cells[better], g[better]
            h = self._heuristic(field_flat, ex, ey, eyaw, goal)
            reach = np.isfinite(h)
            if not reach.any():
                continue
            prim_idx = np.flatnonzero(ok)[better][reach]
            ex, ey, eyaw, cells, g, h = (a[reach] for a in (ex, ey, eyaw, cells, g, h))
            # Two children can land in the same cell: keep the cheaper (the order of minimum.at).
            np.minimum.at(best_g, cells, g)
            first = len(nodes.x)
            nodes.x.extend(ex.tolist())
            nodes.y.extend(ey.tolist())
            nodes.yaw.extend(eyaw.tolist())
            nodes.g.extend(g.tolist())
            nodes.parent.extend([node] * g.size)
            nodes.prim.extend(prim_idx.tolist())
            nodes.direction.extend(kept_dir[better][reach].tolist())
            nodes.curvature.extend(prims.curvature[prim_idx].tolist())
            for item in zip((g + h).tolist(), range(first, first + g.size), cells.tolist()):
                heapq.heappush(open_heap, item)
        stats.expanded_nodes = expansions
        found = self._try_analytic(nodes, pending, goal, stats) if pending else None
        if found is not None:
            return (nodes,) + found
        return nodes, None, (PlanStatus.NO_PATH,
                             f'no path: search space exhausted after {expansions} expansions')

    def _try_analytic(self, nodes: _Search, ids, goal, stats):
        """Cheapest collision-free analytic connection from the nodes ``ids``: (node, curve) or
        None."""
        stats.analytic_attempts += len(ids)
        starts = np.array([[nodes.x[i], nodes.y[i], nodes.yaw[i]] for i in ids])
        owners, curves = [], []
        for i, options in zip(ids, self._connect(starts, goal, self.params.analytic_candidates)):
            owners += [i] * len(options)
            curves += options
        free = self._curves_allowed(curves)
        if not free.any():
            return None
        total = [nodes.g[i] + self._curve_cost(c) if ok else math.inf
                 for i, c, ok in zip(owners, curves, free)]
        best = int(np.argmin(total))
        stats.analytic_success = True
        return owners[best], curves[best]

    # ------------------------------------------------------------------ path assembly
    def _assemble(self, start, nodes: _Search, end_node: int, tail: CurvePath) -> CurvePath:
        """The searched primitives from the start to ``end_node``, then the analytic tail."""
        chain = []
        node = end_node
        while nodes.parent[node] >= 0:
            chain.append(nodes.prim[node])
            node = nodes.parent[node]
        prims = self._primitives
        idx = np.array(chain[::-1], dtype=np.int64)
        return _join(start, [CurvePath(start, prims.length[idx], prims.curvature[idx],
                                       prims.spin[idx]), tail])

    def _shortcut(self, curve: CurvePath) -> CurvePath:
        """Greedy shortcutting: from each junction, jump to the farthest later junction whose
        Reeds-Shepp (Dubins) connection is cheaper than the path it replaces and collision-free.
        Segments are first split into pieces of at most 0.75 primitive lengths so that shortcuts can
        start and end inside long ones."""
        curve = _split(curve, 0.75 * self._step)
        waypoints = curve.segment_starts()
        n = len(curve.lengths)
        if n < 2:
            return curve
        seg_cost = self._segment_costs(curve.lengths, curve.curvatures, curve.spins)
        moving = curve.lengths != 0.0
        sign = np.sign(curve.lengths)
        # Switch penalty charged to the segment where the direction changes.
        last = np.maximum.accumulate(np.where(moving, np.arange(n), -1))
        prev_moving = np.concatenate(([-1], last[:-1]))
        prev_sign = np.where(prev_moving >= 0, sign[np.maximum(prev_moving, 0)], 0.0)
        switch = moving & (prev_sign != 0) & (sign != prev_sign)
        cum = np.concatenate(([0.0], np.cumsum(seg_cost + self.params.switch_penalty * switch)))
        pieces = []
        i = 0
        batch = 8
        distance = reeds_shepp_distance if self.params.allow_reverse else dubins_distance
        radius = self.params.min_turning_radius
        while i < n:
            js = np.arange(n, i + 1, -1)                    # farthest first
            jump = None
            if js.size:
                # A curve costs at least its length: only those can beat the path they replace.
                shortcut = distance(waypoints[i], waypoints[js], radius)
                hopeful = js[shortcut < cum[js] - cum[i] - 1e-6]
                for b in range(0, hopeful.size, batch):
                    ends = hopeful[b:b + batch]
                    options = [c[0] for c in self._connect(waypoints[i], waypoints[ends])]
                    better = [k for k, c in enumerate(options)
                              if self._curve_cost(c) < cum[ends[k]] - cum[i] - 1e-6]
                    free = (self._curves_allowed([options[k] for k in better]) if better
                            else np.zeros(0, bool))
                    if free.any():
                        k = better[int(np.argmax(free))]
                        jump = (options[k], int(ends[k]))
                        break
            if jump is None:
                pieces.append(CurvePath(waypoints[i], curve.lengths[i:i + 1],
                                        curve.curvatures[i:i + 1], curve.spins[i:i + 1]))
                i += 1
            else:
                pieces.append(jump[0])
                i = jump[1]
        return _join(curve.start, pieces)

    def _output(self, curve: CurvePath) -> HybridPath:
        poses, direction = curve.sample(self.params.path_resolution)
        return HybridPath(poses[:, 0], poses[:, 1], wrap_angle(poses[:, 2]),
                          direction.astype(np.int8), curve.length, curve,
                          curve.direction_switches)


def _split(curve: CurvePath, max_length: float) -> CurvePath:
    """The same path with every arc cut into equal pieces no longer than ``max_length``."""
    parts = np.maximum(1, np.ceil(np.abs(curve.lengths) / max_length - 1e-9)).astype(np.int64)
    return CurvePath(curve.start, np.repeat(curve.lengths / parts, parts),
                     np.repeat(curve.curvatures, parts), np.repeat(curve.spins, parts), curve.word)


def _join(start, pieces) -> CurvePath:
    """One CurvePath from consecutive pieces (each starting where the previous one ends)."""
    return CurvePath(np.asarray(start, dtype=float),
                     np.concatenate([c.lengths for c in pieces]),
                     np.concatenate([c.curvatures for c in pieces]),
                     np.concatenate([c.spins for c in pieces]),
                     ''.join(c.word for c in pieces))


def _arc_offsets(s, kappa):
    """(len(s), 3) poses after signed arc lengths ``s`` at curvature ``kappa`` from the origin."""
    half = 0.5 * kappa * s
    chord = s * np.sinc(half / math.pi)
    return np.column_stack([chord * np.cos(half), chord * np.sin(half), kappa * s])
