"""Kinodynamic A* for a double integrator in 2-D or 3-D (holonomic ground robots, quadrotors).

Search (after Fast-Planner's kinodynamic A*, seed 003):

* State ``(p, v)``; a node is expanded by holding each input of an acceleration lattice for
  ``tau`` seconds (exact double-integrator integration). All children of a node are integrated,
  limit-checked, swept for collisions and given their heuristic in one batch of array operations.
  An input that would end above a velocity limit is scaled down to end on it, so the search can
  cruise at full speed in any direction.
* Edge cost ``(|u|^2 + rho) * tau``; heuristic: the OBVP cost
  (:mod:`orca_nav.core.planning.obvp`) with its duration bounded below by distance / speed limit,
  where the distance is the larger of the straight line and an obstacle-aware distance on a coarse
  line-of-sight lattice (`coarse_geodesic.CoarseGeodesic`), times a tie breaker;
  weighted A* (``heuristic_weight``).
* Analytic shot: the minimum-energy cubic to the goal state, tried at every expansion within
  ``shot_distance`` of the goal (if the straight line there is free) and every
  ``shot_interval`` expansions elsewhere (accepted there only if nearly as fast as cruising),
  for durations from the OBVP optimum upwards; the shortest one within the velocity and
  acceleration limits and free of collision is a solution. The search then runs
  ``shot_refinement`` more expansions and returns the cheapest solution found.
* Open list: a binary heap with lazy deletion; closed set and duplicate detection keyed by the
  position cell of size ``search_resolution`` plus (unless ``velocity_resolution`` is 0) the
  velocity cell, so a slow robot starting at rest is not pruned inside its own start cell.
  Children in a position cell already expanded ``max_expansions_per_cell`` times (with other
  velocities) get a large f penalty: dead ends are not flooded with velocity variants, yet the
  search stays complete.
* One-way lanes (optional ``traffic``, `orca_nav.core.traffic_rules`; 2-D only: drones fly
  over them and a 3-D planner ignores them): no child, analytic shot or refinement the search
  accepts travels against a lane; the travel direction is the velocity's (standing: none),
  checked at the collision samples with ``_LANE_SLACK`` of heading to spare. The obstacle-aware
  distance then keeps the lanes too (a directed lattice, `CoarseGeodesic`); the reachability
  proof does not (a lane is no wall), so a goal reachable only against a lane ends ``NO_PATH``
  or ``TIMEOUT`` after a search (a caller may plan again without the lanes).
* Collisions: the robot is a disc/ball of ``robot_radius + safety_margin``; the grid is inflated
  by that radius (clearance measure: see :mod:`orca_nav.core.grid`). Trajectories are sampled
  every ``check_dt`` s and at most 0.9 cell of travel apart; a copy of the inflated map grown by
  one cell clears most samples at once, and the pieces next to samples in that one-cell band
  are re-checked 16 times finer on the inflated map, so the continuous trajectory, not only its
  samples, stays out of the inflated map while robots may still pass close to walls.

Failure statuses: start/goal whose cell is occupied or that has an occupied cell within the
radius -> ``START_IN_COLLISION`` / ``GOAL_IN_COLLISION``; start/goal free of obstacles but
closer than the radius to the map border (the robot would stick out of the map) ->
``OUT_OF_MAP``; open list exhausted, or no free path at all on the coarse optimistic graph ->
``NO_PATH``; the budget spent -> ``TIMEOUT`` (see Budget). Start/goal outside the map,
non-finite values, velocities beyond the limits (clip measured velocities first) and bad
parameters raise ``ValueError`` naming the field.

Budget: ``max_expansions`` nodes expanded, so a query gives the same result on a loaded machine
as on a quiet one; ``max_time`` (wall clock) is only a safety net above it. Either spent ->
``TIMEOUT``, its message saying which.

Memory: the planner keeps two bool copies of the grid (inflated, grown) and two coarse graphs,
so with the grid itself about 3 bytes per cell, plus the search (about 100 bytes per node
created; its arrays grow as nodes are created).
Building the planner (distance transform, graphs) is the expensive part; plan() reuses it, so
keep one planner per map and robot size.

One file: the search, its OBVP heuristic and the analytic shot share the node arrays and the
cost; the polynomial algebra lives in `obvp` and `polynomial`.
"""
from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
from scipy import ndimage

from orca_nav.core.coarse_geodesic import CoarseGeodesic
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.planning.obvp import cubic_coefficients, obvp_min_cost
from orca_nav.core.planning.polynomial import PolynomialTrajectory
from orca_nav.core.planning.result import PlanClock, PlanResult, PlanStats, PlanStatus
from orca_nav.core.traffic_rules import TrafficRules
from orca_nav.core.validation import finite_array, finite_at_least_zero

# Tolerance on limits (numerical round-off of exact integration).
_LIMIT_EPS = 1e-6
# Heading (rad) closer to a lane's direction than the rule's 120 degrees that already counts as
# against it: the velocity turns a little between two collision samples.
_LANE_SLACK = 0.05
# Slower than this (m/s) a sample travels nowhere (no heading to hold against a lane).
_STANDING_SPEED = 1e-6
# Durations tried for the analytic shot, as multiples of the OBVP-optimal one.
_SHOT_TIME_FACTORS = np.array([1.0, 1.1, 1.25, 1.4, 1.6, 1.8, 2.0, 2.5, 3.0, 4.0])


class _NodeArrays:
    """The search's per-node arrays (see `plan`), doubled in length when full."""

    def __init__(self, ndim: int, capacity: int):
        self.arrays = (np.empty((capacity, ndim)), np.empty((capacity, ndim)), np.empty(capacity),
                       np.empty(capacity, dtype=np.int64), np.zeros((capacity, ndim)),
                       np.empty(capacity, dtype=np.int64), np.empty(capacity))

    def grow(self, needed: int):
        capacity = max(needed, 2 * len(self.arrays[0]))
        grown = []
        for array in self.arrays:
            bigger = np.zeros((capacity,) + array.shape[1:], dtype=array.dtype)
            bigger[:len(array)] = array
            grown.append(bigger)
        self.arrays = tuple(grown)
        return self.arrays


@dataclass(frozen=True)
class KinodynamicParams:
    """Limits, robot size and search settings. ``None`` fields are derived from the limits."""

    max_vel: float                       # per-axis |v_i| limit, m/s
    max_acc: float                       # per-axis |a_i| limit, m/s^2 (lattice half-range)
    robot_radius: float = 0.0            # disc (2-D) / ball (3-D) radius, m
    max_speed: Optional[float] = None    # optional Euclidean |v| limit, m/s
    max_acc_norm: Optional[float] = None  # optional Euclidean |a| limit, m/s^2
    # input hold time, s (None: max(0.5 v/a, 0.5 m / v) in [0.1, 2])
    tau: Optional[float] = None
    acc_resolution: float = 0.5          # lattice step as a fraction of max_acc (levels -1..1)
    rho: float = 10.0                    # time weight in the cost (|u|^2 + rho) * tau
    heuristic_weight: float = 5.0        # weighted A*: f = g + w * h
    tie_breaker: float = 1.0 + 1e-3
    search_resolution: Optional[float] = None    # closed-set cell, m (None: max(map res, v*tau/2))
    velocity_resolution: Optional[float] = None  # closed-set velocity cell, m/s (0: position only)
    max_expansions_per_cell: int = 4     # expansions per position cell before a penalty
    shot_distance: Optional[float] = None        # m (None: v^2/a + 2*v*tau)
    geodesic_heuristic: bool = True      # bound the OBVP time by an obstacle-aware distance
    # its block size, m (None: max(search res, 4 cells))
    heuristic_resolution: Optional[float] = None
    shot_interval: int = 10              # expansions between shots far from the goal
    far_shot_slack: float = 1.15         # far shots must take <= slack * (cruise-time bound)
    shot_refinement: int = 15            # expansions after the first shot, keeping the cheapest
    check_dt: float = 0.02               # collision/limit check period along the trajectory, s
    safety_margin: float = 0.0           # added to robot_radius for the collision check, m
    max_expansions: int = 20_000         # search budget: nodes expanded (machine-independent)
    max_time: float = 2.0                # wall-time cap of plan(), s: a safety net

    def __post_init__(self):
        positive = ('max_vel', 'max_acc', 'acc_resolution', 'rho', 'check_dt', 'max_time',
                    'far_shot_slack')
        optional_positive = ('tau', 'max_speed', 'max_acc_norm', 'search_resolution',
                             'shot_distance', 'heuristic_resolution')
        for name in positive + optional_positive + ('robot_radius', 'safety_margin',
                                                    'heuristic_weight', 'tie_breaker',
                                                    'velocity_resolution'):
            value = getattr(self, name)
            if value is None and name in optional_positive + ('velocity_resolution',):
                continue
            finite_at_least_zero(name, value, positive=name in positive + optional_positive)
        if self.acc_resolution > 1.0:
            raise ValueError('acc_resolution must be <= 1 (a fraction of max_acc), got '
                             f'{self.acc_resolution}')
        if self.heuristic_weight <= 0:
            raise ValueError(f'heuristic_weight must be > 0, got {self.heuristic_weight}')
        if self.tie_breaker < 1.0:
            raise ValueError(f'tie_breaker must be >= 1, got {self.tie_breaker}')
        for name in ('shot_interval', 'max_expansions', 'shot_refinement',
                     'max_expansions_per_cell'):
            value = getattr(self, name)
            minimum = 0 if name == 'shot_refinement' else 1
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) \
                    or value < minimum:
                raise ValueError(f'{name} must be an integer >= {minimum}, got {value!r}')


def _vector(name: str, value, ndim: int) -> np.ndarray:
    arr = np.asarray(value, dtype=float).reshape(-1)
    if arr.size != ndim:
        raise ValueError(f'{name} must have {ndim} values (the map is {ndim}-D), got {arr.size}')
    return finite_array(name, arr)


class KinodynamicAStar:
    """Kinodynamic A* planner on an :class:`OccupancyGrid` (the grid decides 2-D or 3-D)."""

    def __init__(self, grid: OccupancyGrid, params: KinodynamicParams,
                 traffic: Optional[TrafficRules] = None):
        if not isinstance(grid, OccupancyGrid):
            raise ValueError(f'grid must be an OccupancyGrid, got {type(grid).__name__}')
        if not isinstance(params, KinodynamicParams):
            raise ValueError(f'params must be KinodynamicParams, got {type(params).__name__}')
        if traffic is not None and not isinstance(traffic, TrafficRules):
            raise ValueError(f'traffic must be TrafficRules or None, got {type(traffic).__name__}')
        self.grid = grid
        self.params = params
        # The lanes every accepted motion keeps (2-D); None: nothing checked.
        self._lanes = traffic if traffic is not None and traffic.lanes and grid.ndim == 2 \
            else None
        ndim = grid.ndim
        self.ndim = ndim
        p = params
        self._radius = p.robot_radius + p.safety_margin
        # Inflated occupancy: one bool per cell, looked up for every swept sample.
        self.inflated_grid = grid.inflated(self._radius) if self._radius > 0 else grid
        # Swept checks first read a copy grown by one cell: samples are < one cell apart, so
        # the trajectory between samples outside it cannot touch an inflated cell.
        grown = ndimage.binary_dilation(self.inflated_grid.occupied,
                                        structure=np.ones((3,) * ndim, dtype=bool))
        self._sweep_grid = OccupancyGrid(grown, grid.resolution, grid.origin)

        # Acceleration lattice (levels k * step, |k * step| <= 1), filtered by the norm limit.
        n_levels = int(math.floor(1.0 / p.acc_resolution + 1e-9))
        levels = np.arange(-n_levels, n_levels + 1) * p.acc_resolution * p.max_acc
        inputs = np.array(list(itertools.product(levels, repeat=ndim)), dtype=float)
        if p.max_acc_norm is not None:
            inputs = inputs[np.linalg.norm(inputs, axis=1) <= p.max_acc_norm + _LIMIT_EPS]
        self._inputs = inputs

        # Speed bound used to turn the spatial check step into a time step.
        speed_bound = p.max_vel * math.sqrt(ndim)
        if p.max_speed is not None:
            speed_bound = min(speed_bound, p.max_speed)
        self._speed_bound = speed_bound
        self._check_dt = min(p.check_dt, 0.9 * grid.resolution / speed_bound)
        # Hold time: long enough that a step covers >= 0.5 m (slow robots would otherwise need
        # hundreds of steps per route), short enough to change speed in several steps.
        if p.tau is not None:
            tau = p.tau
        else:
            tau = min(max(0.5 * p.max_vel / p.max_acc, 0.5 / p.max_vel, 0.1), 2.0)
        self.tau = tau
        self._velocity_steps = inputs * tau
        self._step_sq = np.einsum('ij,ij->i', self._velocity_steps, self._velocity_steps)
        n_checks = max(1, int(math.ceil(tau / self._check_dt)))
        self._check_times = np.linspace(tau / n_checks, tau, n_checks)

        self._search_res = (p.search_resolution if p.search_resolution is not None
                            else max(grid.resolution, 0.5 * p.max_vel * tau))
        vel_res = p.velocity_resolution
        if vel_res is None:
            vel_res = p.acc_resolution * p.max_acc * tau
        self._vel_res = vel_res
        lower, upper = grid.extent
        self._key_origin = lower
        pos_cells = np.ceil((upper - lower) / self._search_res).astype(np.int64) + 1
        vel_cells = (2 * int(math.ceil(p.max_vel / vel_res)) + 3) if vel_res > 0 else 1
        self._key_strides = np.concatenate([
            np.cumprod(np.concatenate(([1], pos_cells[:-1]))) * vel_cells ** ndim,
            vel_cells ** np.arange(ndim)]).astype(np.int64)
        self._vel_offset = vel_cells // 2
        self._vel_key_span = vel_cells ** ndim     # key // span = the position cell's part
        self._shot_distance = (p.shot_distance if p.shot_distance is not None
                               else p.max_vel ** 2 / p.max_acc + 2.0 * p.max_vel * tau)
        self._geodesic = self._reachability = None
        if p.geodesic_heuristic:
            block = (p.heuristic_resolution if p.heuristic_resolution is not None
                     else max(self._search_res, 4 * grid.resolution))
            factor = max(1, round(block / grid.resolution))
            self._geodesic = CoarseGeodesic(self.inflated_grid, factor, optimistic=False,
                                            traffic=self._lanes)
            self._reachability = CoarseGeodesic(self.inflated_grid, factor, optimistic=True)

    # ------------------------------------------------------------------ helpers
    def _keys(self, pos: np.ndarray, vel: np.ndarray) -> np.ndarray:
        cells = np.floor((pos - self._key_origin) / self._search_res)
        if self._vel_res > 0:
            vcells = np.rint(vel / self._vel_res) + self._vel_offset
        else:
            vcells = np.zeros_like(vel)
        return np.concatenate([cells, vcells], axis=1).astype(np.int64) @ self._key_strides

    def _t_lower(self, dp: np.ndarray) -> np.ndarray:
        """Time lower bound to cover ``dp`` under the speed limits."""
        t = np.abs(dp).max(axis=1) / self.params.max_vel
        if self.params.max_speed is not None:
            t = np.maximum(t, np.linalg.norm(dp, axis=1) / self.params.max_speed)
        return t

    def _speed_change_time(self, v_from: np.ndarray, v_to: np.ndarray) -> float:
        """Time the acceleration limit needs to go from one velocity to the other."""
        return float(np.abs(v_to - v_from).max() / self.params.max_acc)

    def _heuristic(self, pos, vel, goal_pos, goal_vel, goal_field):
        """Tie-broken OBVP cost and its optimal time to the goal."""
        dp = goal_pos - pos
        t_lower = self._t_lower(dp)
        if goal_field is not None:
            # Obstacle-aware: the robot cannot cover the detour faster than at top speed.
            # (Where the lattice has no path, e.g. past a narrow gap, keep the straight bound.)
            detour = self._geodesic.lookup(goal_field, pos)
            t_lower = np.maximum(t_lower,
                                 np.where(np.isfinite(detour), detour, 0.0) / self._speed_bound)
        cost, best_t = obvp_min_cost(dp, vel, goal_vel, self.params.rho, t_lower)
        return cost * self.params.tie_breaker, best_t

    def _within_limits(self, vel: np.ndarray, acc: Optional[np.ndarray] = None) -> np.ndarray:
        """Rows of (..., ndim) velocities (and accelerations) within the limits, reduced over
        every axis but the first."""
        p = self.params
        ok = np.abs(vel) <= p.max_vel + _LIMIT_EPS
        ok = ok.reshape(ok.shape[0], -1).all(axis=1)
        if p.max_speed is not None:
            speed = np.linalg.norm(vel, axis=-1) <= p.max_speed + _LIMIT_EPS
            ok &= speed.reshape(speed.shape[0], -1).all(axis=1)
        if acc is not None:
            ok &= (np.abs(acc) <= p.max_acc + _LIMIT_EPS).reshape(acc.shape[0], -1).all(axis=1)
            if p.max_acc_norm is not None:
                norm = np.linalg.norm(acc, axis=-1) <= p.max_acc_norm + _LIMIT_EPS
                ok &= norm.reshape(norm.shape[0], -1).all(axis=1)
        return ok

    def _saturate(self, v0: np.ndarray) -> np.ndarray:
        """The lattice inputs, each scaled down if it would end above a velocity limit so that
        it ends on the limit instead: the search can cruise at full speed in any direction, not
        only at the speeds the lattice happens to hit. Velocity is linear in time, so the end
        point bounds it."""
        p = self.params
        du = self._velocity_steps                             # inputs * tau, (M, d)
        v1 = v0 + du
        scale = np.ones(len(du))
        over = (np.abs(v1) > p.max_vel) & (du != 0.0)
        if over.any():
            with np.errstate(divide='ignore', invalid='ignore'):
                axis_scale = (np.sign(du) * p.max_vel - v0) / du
            scale = np.minimum(scale, np.where(over, axis_scale, 1.0).min(axis=1))
        if p.max_speed is not None:
            over = (np.einsum('ij,ij->i', v1, v1) > p.max_speed ** 2) & (self._step_sq > 0.0)
            if over.any():
                # Largest s in [0, 1] with |v0 + s du| = max_speed.
                a = self._step_sq[over]
                b = 2.0 * du[over] @ v0
                c = min(float(v0 @ v0) - p.max_speed ** 2, 0.0)
                root = (-b + np.sqrt(b * b - 4.0 * a * c)) / (2.0 * a)
                scale[over] = np.minimum(scale[over], root)
        return self._inputs * np.clip(scale, 0.0, 1.0)[:, None]

    def _against_lanes(self, pos: np.ndarray, vel: np.ndarray) -> np.ndarray:
        """(m,) bool: some sample of (m, n, 2) positions with their velocities travels against
        a lane."""
        heading = np.where(np.hypot(vel[..., 0], vel[..., 1]) > _STANDING_SPEED,
                           np.arctan2(vel[..., 1], vel[..., 0]), np.nan)
        return self._lanes.against(pos[..., 0], pos[..., 1], heading, _LANE_SLACK).any(axis=1)

    def _swept_free(self, origins: np.ndarray, samples: np.ndarray) -> np.ndarray:
        """``(m,)`` bool: polylines ``origins[j] -> samples[j, 0] -> ... -> samples[j, -1]``
        ((m, d) and (m, n, d); consecutive points < 0.9 cell apart) stay out of the inflated map.

        A sample outside the grown map has no inflated cell within one cell, so the polyline
        around it is free. A sample in the inflated map is a collision. Only samples in between
        (the one-cell band around inflated cells) need more: the two pieces of polyline next to
        each of them are re-checked on the inflated map every 1/16 of a piece, so robots can
        still move along walls and reach goals close to them.
        """
        m, n, d = samples.shape
        flat = samples.reshape(-1, d)
        grown = self._sweep_grid.occupied_at(flat).reshape(m, n)
        if not grown.any():
            return np.ones(m, dtype=bool)
        hit = self.inflated_grid.occupied_at(flat).reshape(m, n)
        free = ~hit.any(axis=1)
        band_j, band_k = np.nonzero(grown & ~hit & free[:, None])
        if band_j.size:
            chain = np.concatenate([origins[:, None, :], samples], axis=1)     # (m, n + 1, d)
            before = chain[band_j, band_k]
            here = chain[band_j, band_k + 1]
            after = chain[band_j, np.minimum(band_k + 2, n)]
            frac = np.linspace(0.0, 1.0, 17)[None, :, None]
            fine = np.concatenate([before[:, None] + (here - before)[:, None] * frac,
                                   here[:, None] + (after - here)[:, None] * frac], axis=1)
            fine_hit = self.inflated_grid.occupied_at(fine.reshape(-1, d)).reshape(band_j.size, -1)
            free[band_j[fine_hit.any(axis=1)]] = False
        return free

    def _endpoint_status(self, point: np.ndarray):
        """None if the robot fits at ``point``; else the failure kind ('collision' /
        'out_of_map')."""
        if not self.inflated_grid.occupied_at(point)[0]:
            return None
        if self.grid.occupied_at(point)[0]:
            return 'collision'
        # Free cell: blocked by an obstacle within the radius, or by the map border?
        res = self.grid.resolution
        reach = int(math.ceil(self._radius / res)) + 1
        cell = self.grid.world_to_cell(point)[0]
        lo = np.maximum(cell - reach, 0)
        hi = np.minimum(cell + reach + 1, self.grid.size_cells)
        window = self.grid.occupied[tuple(slice(a, b) for a, b in zip(lo[::-1], hi[::-1]))]
        occ_cells = np.argwhere(window)[:, ::-1] + lo
        # Same rounding slack as the float32 clearance field the inflation came from.
        slack = 1e-6 * max(self._radius, res)
        if occ_cells.size and \
                np.min(np.linalg.norm(occ_cells - cell, axis=1)) * res <= self._radius + slack:
            return 'collision'
        if self.grid.border_distance_at(point)[0] <= self._radius + slack:
            return 'out_of_map'
        return 'collision'

    def _try_shot(self, pos, vel, goal_pos, goal_vel, t_opt):
        """Shortest collision-free cubic within the limits among durations ``t_opt * factors``;
        returns (duration, coefficients (4, ndim)) or None."""
        durations = max(t_opt, 1e-3) * _SHOT_TIME_FACTORS
        coef = cubic_coefficients(pos, vel, goal_pos, goal_vel, durations)   # (m, 4, d)
        c1, c2, c3 = coef[:, 1], coef[:, 2], coef[:, 3]
        acc_ends = np.stack([2 * c2, 2 * c2 + 6 * c3 * durations[:, None]], axis=1)
        # Velocity per axis is quadratic: its extreme is at an end or at the vertex.
        with np.errstate(divide='ignore', invalid='ignore'):
            t_vertex = np.where(np.abs(c3) > 1e-12, -c2 / (3 * c3), 0.0)
        t_vertex = np.clip(t_vertex, 0.0, durations[:, None])
        v_vertex = c1 + 2 * c2 * t_vertex + 3 * c3 * t_vertex ** 2
        ok = self._within_limits(v_vertex[:, None, :], acc_ends)
        if not ok.any():
            return None
        # Shortest first; the slower ones are only swept if the faster ones collide.
        for duration, c in zip(durations[ok], coef[ok]):
            n = int(math.ceil(duration / self._check_dt)) + 1
            t = np.linspace(0.0, duration, n)[:, None]
            vel_s = c[1] + t * (2 * c[2] + t * 3 * c[3])
            if not self._within_limits(vel_s[None])[0]:
                continue
            pos_s = c[0] + t * (c[1] + t * (c[2] + t * c[3]))
            # Most failing shots hit something within a few coarse samples: test those first.
            if self.inflated_grid.occupied_at(pos_s[::8]).any():
                continue
            if not self._swept_free(pos_s[:1], pos_s[None])[0]:
                continue
            if self._lanes is not None and self._against_lanes(pos_s[None], vel_s[None])[0]:
                continue
            return float(duration), c
        return None

    # ------------------------------------------------------------------ planning
    def plan(self, start_pos, start_vel, goal_pos, goal_vel) -> PlanResult:
        """Plan from ``(start_pos, start_vel)`` to ``(goal_pos, goal_vel)``; see the module doc."""
        clock = PlanClock()
        t_begin, stats, finish = clock.start, clock.stats, clock.finish
        p = self.params
        d = self.ndim
        start_pos = _vector('start_pos', start_pos, d)
        start_vel = _vector('start_vel', start_vel, d)
        goal_pos = _vector('goal_pos', goal_pos, d)
        goal_vel = _vector('goal_vel', goal_vel, d)
        for name, point in (('start_pos', start_pos), ('goal_pos', goal_pos)):
            if not self.grid.in_bounds(point)[0]:
                lo, hi = self.grid.extent
                raise ValueError(f'{name} {point.tolist()} is outside the map '
                                 f'[{lo.tolist()}, {hi.tolist()})')
        for name, vel in (('start_vel', start_vel), ('goal_vel', goal_vel)):
            if not self._within_limits(vel[None])[0]:
                raise ValueError(f'{name} {vel.tolist()} exceeds the velocity limits '
                                 f'(max_vel {p.max_vel}, max_speed {p.max_speed})')

        for name, point, in_collision in (('start', start_pos, PlanStatus.START_IN_COLLISION),
                                          ('goal', goal_pos, PlanStatus.GOAL_IN_COLLISION)):
            kind = self._endpoint_status(point)
            if kind == 'collision':
                return finish(in_collision, f'{name} {point.tolist()} is within {self._radius} m '
                                            f'of an occupied cell')
            if kind == 'out_of_map':
                return finish(PlanStatus.OUT_OF_MAP,
                              f'{name} {point.tolist()} is closer than the robot radius '
                              f'{self._radius} m to the map border')

        # Per node: position, velocity, cost, parent, input from the parent, closed-set key and
        # the OBVP-optimal time to the goal (the shot duration seed); grown as nodes are created.
        nodes = _NodeArrays(d, 64 * len(self._inputs))
        pos, vel, g, parent, inp, keys, t_goal = nodes.arrays
        pos[0], vel[0], g[0], parent[0] = start_pos, start_vel, 0.0, -1
        keys[0] = self._keys(start_pos[None], start_vel[None])[0]
        goal_field = None
        if self._geodesic is not None:
            if not self._reachability.connected(start_pos, goal_pos):
                return finish(PlanStatus.NO_PATH, 'no free path joins start and goal in the '
                                                  f'{self._radius} m-inflated map')
            goal_field = self._geodesic.from_goal(goal_pos)
        h0, t0 = self._heuristic(start_pos[None], start_vel[None], goal_pos, goal_vel, goal_field)
        t_goal[0] = t0[0]
        n_nodes = 1
        open_heap = [(p.heuristic_weight * h0[0], 0)]
        best = {int(keys[0]): (0.0, 0)}          # key -> (g, node) of the current open entry
        closed = set()
        expansions_in_cell = {}                  # position cell -> expansions (any velocity)
        cell_cap = p.max_expansions_per_cell
        crowd_penalty = 10.0 * p.heuristic_weight * max(float(h0[0]), 1.0)
        tau = self.tau
        ts = self._check_times[None, :, None]       # (1, n, 1)

        found = None        # best (total cost, node, shot) so far
        refine_left = p.shot_refinement
        stop_reason = None
        while open_heap:
            if stats.expanded_nodes >= p.max_expansions:
                stop_reason = (f'expansion budget {p.max_expansions} spent after '
                               f'{time.perf_counter() - t_begin:.2f} s')
                break
            if time.perf_counter() - t_begin > p.max_time:
                stop_reason = (f'wall-time cap {p.max_time:g} s reached after '
                               f'{stats.expanded_nodes} expansions')
                break
            _, node = heapq.heappop(open_heap)
            key = int(keys[node])
            if key in closed or best[key][1] != node:
                continue                             # stale heap entry
            if found is not None:
                if refine_left == 0:
                    break
                refine_left -= 1
            closed.add(key)
            cell = key // self._vel_key_span
            expansions_in_cell[cell] = expansions_in_cell.get(cell, 0) + 1
            stats.expanded_nodes += 1
            p0, v0 = pos[node], vel[node]

            near = float(np.linalg.norm(goal_pos - p0)) <= self._shot_distance
            if near or stats.expanded_nodes % p.shot_interval == 1:
                shot = self._shot(p0, v0, goal_pos, goal_vel, float(t_goal[node]), near, stats)
                if shot is not None and (found is None or g[node] + shot[2] < found[0]):
                    found = (g[node] + shot[2], node, shot)
                    if p.shot_refinement == 0:
                        break

            # All children at once: exact double-integrator integration over tau.
            inputs = self._saturate(v0)
            v1 = v0 + inputs * tau
            p1 = p0 + v0 * tau + 0.5 * inputs * tau ** 2
            ok = self._within_limits(v1)
            child_keys = self._keys(p1, v1)
            keys_list = child_keys.tolist()
            ok &= np.fromiter((k not in closed for k in keys_list), bool, len(keys_list))
            crowded = np.fromiter((expansions_in_cell.get(k // self._vel_key_span, 0) >= cell_cap
                                   for k in keys_list), bool, len(keys_list))
            idx = np.flatnonzero(ok)
            if idx.size == 0:
                continue
            swept = p0 + v0 * ts + 0.5 * inputs[idx, None, :] * ts ** 2   # (m, n, d)
            free = self._swept_free(np.broadcast_to(p0, (idx.size, d)), swept)
            if self._lanes is not None:
                free &= ~self._against_lanes(swept, v0 + inputs[idx, None, :] * ts)
            idx = idx[free]
            if idx.size == 0:
                continue
            g_new = g[node] + (np.einsum('ij,ij->i', inputs[idx], inputs[idx]) + p.rho) * tau
            # Duplicate detection against the open entries (pure dict/heap bookkeeping).
            accepted = []
            for i, (k, gj) in enumerate(zip(child_keys[idx].tolist(), g_new.tolist())):
                entry = best.get(k)
                if entry is None or gj < entry[0]:
                    best[k] = (gj, n_nodes + len(accepted))
                    accepted.append(i)
            if not accepted:
                continue
            if n_nodes + len(accepted) > len(g):
                pos, vel, g, parent, inp, keys, t_goal = nodes.grow(n_nodes + len(accepted))
            new = slice(n_nodes, n_nodes + len(accepted))
            chosen = idx[accepted]
            h_new, t_new = self._heuristic(p1[chosen], v1[chosen], goal_pos, goal_vel, goal_field)
            # Children in cells already expanded max_expansions_per_cell times wait behind
            # everything else: dead ends are not flooded with velocity variants, and the search
            # still ends up complete.
            f_new = g_new[accepted] + p.heuristic_weight * h_new + crowd_penalty * crowded[chosen]
            pos[new], vel[new], g[new] = p1[chosen], v1[chosen], g_new[accepted]
            parent[new], inp[new], keys[new] = node, inputs[chosen], child_keys[chosen]
            t_goal[new] = t_new
            for fj, nj in zip(f_new.tolist(), range(n_nodes, n_nodes + len(accepted))):
                heapq.heappush(open_heap, (fj, nj))
            n_nodes += len(accepted)

        if found is not None:
            stats.analytic_success = True
            trajectory = self._trajectory(found[1], parent, pos, vel, inp, found[2][:2])
            return finish(PlanStatus.SUCCESS, f'trajectory of {trajectory.duration:.2f} s after '
                                              f'{stats.expanded_nodes} expansions',
                          trajectory=trajectory)
        if stop_reason is not None:
            return finish(PlanStatus.TIMEOUT, stop_reason)
        return finish(PlanStatus.NO_PATH, f'no trajectory: search space exhausted after '
                                          f'{stats.expanded_nodes} expansions')

    def _shot(self, p0, v0, goal_pos, goal_vel, t_opt: float, near: bool, stats: PlanStats):
        """Analytic shot from a popped node: (duration, coefficients, cost) or None."""
        # A shot is a gentle curve: skip it (cheaply) when the straight line is blocked.
        line = p0 + np.linspace(0.0, 1.0, 16)[:, None] * (goal_pos - p0)
        if self.inflated_grid.occupied_at(line).any():
            return None
        stats.analytic_attempts += 1
        shot = self._try_shot(p0, v0, goal_pos, goal_vel, t_opt)
        if shot is None:
            return None
        duration, coef = shot
        if not near:
            # Far from the goal a cubic is slow (rest to rest it needs 1.5x the cruise time):
            # take it only if it is nearly as fast as cruising there.
            t_cruise = (self._t_lower((goal_pos - p0)[None])[0]
                        + self._speed_change_time(v0, goal_vel))
            if duration > self.params.far_shot_slack * t_cruise:
                return None
        # Cost (integral of |a|^2 + rho) * T of the cubic; a(t) = 2 c2 + 6 c3 t.
        c2, c3 = coef[2], coef[3]
        energy = float(np.sum(4 * c2 * c2 * duration + 12 * c2 * c3 * duration ** 2
                              + 12 * c3 * c3 * duration ** 3))
        return duration, coef, energy + self.params.rho * duration

    def _trajectory(self, node, parent, pos, vel, inp, shot) -> PolynomialTrajectory:
        chain = []
        while parent[node] >= 0:
            chain.append(node)
            node = parent[node]
        segments = []
        for child in reversed(chain):
            src = parent[child]
            coef = np.stack([pos[src], vel[src], 0.5 * inp[child]])
            segments.append((self.tau, coef))
        segments.append(shot)
        return PolynomialTrajectory.from_segments(segments)
