"""Obstacles the robots' sensors see that the map does not have (a pallet left in an aisle),
as short-lived ORCA obstacles.

Each robot's scans arrive as points in the global frame, in scan order. A robot keeps its scans
of the last `persistence` seconds, at most `max_points` points in all (a scan with more is
thinned evenly; older scans go first when the total would exceed it), so the input is bounded
by robots x max_points whatever the sensor. When a scan comes in:

- points on a fleet robot or a tracked agent (within its radius plus `clear_margin` of its
  centre at the scan's time) are dropped: the laser sees the other robots and the people, and
  those must stay agents (reciprocal, or avoided with full responsibility), not turn into walls
  the fleet would jam against or trails behind whoever walks on. The margin is small (3 cm):
  ORCA keeps a robot further than that from any obstacle (`safety_margin`), so only points on
  robots and people fall inside it;
- neighbours closer than `link_distance` form runs, and each run is simplified to the fewest
  vertices that stay within `tolerance` of every point (Douglas-Peucker): a wall seen as 100
  points becomes one edge, so what ORCA gets scales with the shapes seen, not the beams;
- a lone point becomes a short segment.

The edges become RVO2 segment obstacles (2-vertex obstacles, `obstacles`). They are shared:
what one robot sees, every robot avoids. `version` changes whenever the set of edges does; the
obstacles are rebuilt only then.
"""
from __future__ import annotations

from collections import deque
from typing import Deque, List, Optional, Tuple

import numpy as np

from orca_nav.core.avoidance.obstacles import ObstacleSet, dist_sq_point_segment, prepare_obstacles

LONE_POINT_SEGMENT = 0.02   # m: length of the segment a lone point becomes


class SensedObstacles:
    """Recent sensor scans per robot as edges (see the module docstring)."""

    def __init__(self, robots: int, persistence: float, max_points: int,
                 link_distance: float = 0.3, clear_margin: float = 0.03,
                 tolerance: float = 0.03):
        self.persistence = persistence
        self.max_points = max_points
        self.link_distance = link_distance
        self.clear_margin = clear_margin
        self.tolerance = tolerance
        self.version = 0
        # Per robot: (stamp, points kept, edges (E, 2, 2)) of each scan, oldest first.
        self._scans: List[Deque[Tuple[float, int, np.ndarray]]] = [deque() for _ in range(robots)]
        # The robots with scans kept: a fleet without scans (or with few sensing robots) does
        # not walk every robot's empty queue on every cycle.
        self._holding: set = set()
        self._obstacles: Tuple[int, Optional[ObstacleSet]] = (0, None)     # (version, built)

    def add_scan(self, robot: int, stamp: float, points: np.ndarray, clear_centres: np.ndarray,
                 clear_radii: np.ndarray) -> None:
        """Robot `robot`'s scan at `stamp`: (M, 2) global points in scan order (non-finite rows,
        e.g. no return, are dropped), minus those on the robots and agents at clear_centres
        (K, 2) with clear_radii (K,)."""
        points = np.asarray(points, dtype=float).reshape(-1, 2)
        points = points[np.isfinite(points).all(axis=1)]
        if len(points) > self.max_points:
            keep = np.linspace(0, len(points) - 1, self.max_points).round().astype(int)
            points = points[keep]
        points = self._clear(points, clear_centres, clear_radii)
        scans = self._scans[robot]
        scans.append((float(stamp), len(points), self._edges(points)))
        self._holding.add(robot)
        total = sum(count for _, count, _ in scans)
        while len(scans) > 1 and total > self.max_points:
            total -= scans.popleft()[1]
        self.version += 1

    def point_count(self) -> int:
        return sum(count for robot in self._holding for _, count, _ in self._scans[robot])

    def edges(self, now: float) -> np.ndarray:
        """(E, 2, 2) edges of the scans of the last `persistence` s (older ones are forgotten)."""
        out = []
        for robot in sorted(self._holding):     # robot order: the same obstacles every time
            scans = self._scans[robot]
            while scans and now - scans[0][0] > self.persistence:
                scans.popleft()
                self.version += 1
            if not scans:
                self._holding.discard(robot)
            out.extend(edges for _, _, edges in scans)
        return np.concatenate(out) if out else np.zeros((0, 2, 2))

    def obstacles(self, now: float) -> Optional[ObstacleSet]:
        """The edges of the last `persistence` s as ORCA obstacles (None: none), rebuilt only
        when they changed."""
        edges = self.edges(now)
        if self.version != self._obstacles[0]:
            # Rebuilt often: no RVO2 tree (its build is quadratic), the kd-tree over edges.
            built = prepare_obstacles(list(edges), rvo2_tree_max_vertices=0) if len(edges) else None
            self._obstacles = (self.version, built)
        return self._obstacles[1]

    def distance(self, points, now: float) -> np.ndarray:
        """(K,) distance from each point to the nearest edge of the last `persistence` s
        (inf when there is none)."""
        points = np.asarray(points, dtype=float).reshape(-1, 2)
        edges = self.edges(now)
        if not len(edges):
            return np.full(len(points), np.inf)
        a, b = edges[:, 0], edges[:, 1]
        # (K, 1) points against (E,) edges: (K, E) squared distances.
        dist_sq = dist_sq_point_segment(a[:, 0], a[:, 1], b[:, 0], b[:, 1], points[:, :1],
                                        points[:, 1:], np.sum((b - a) ** 2, axis=1))
        return np.sqrt(dist_sq.min(axis=1))

    def _clear(self, points: np.ndarray, centres, radii) -> np.ndarray:
        """`points` without those within radii + clear_margin of a (finite) centre."""
        centres = np.asarray(centres, dtype=float).reshape(-1, 2)
        known = np.isfinite(centres).all(axis=1)
        if len(points) == 0 or not known.any():
            return points
        reach = np.asarray(radii, dtype=float)[known] + self.clear_margin
        gap = np.linalg.norm(points[:, None, :] - centres[None, known, :], axis=2)
        return points[(gap > reach[None, :]).all(axis=1)]

    def _edges(self, points: np.ndarray) -> np.ndarray:
        """Runs of linked points simplified to edges; lone points as short segments."""
        if len(points) == 0:
            return np.zeros((0, 2, 2))
        step = np.linalg.norm(np.diff(points, axis=0), axis=1)
        linked = (step < self.link_distance) & (step > 0.0)
        run = np.concatenate([[0], np.cumsum(~linked)])          # run id of every point
        vertices = np.flatnonzero(_simplified(points, run, self.tolerance))
        same_run = run[vertices[:-1]] == run[vertices[1:]]
        edges = np.stack([points[vertices[:-1][same_run]], points[vertices[1:][same_run]]],
                         axis=1)
        lone = np.flatnonzero(np.bincount(run) == 1)
        lone_points = points[np.isin(run, lone)]
        lone_edges = np.stack([lone_points, lone_points + (LONE_POINT_SEGMENT, 0.0)], axis=1)
        return np.concatenate([edges, lone_edges])


def planar_scan(points, min_z: float, max_z: float, bins: int = 360) -> np.ndarray:
    """A 3-D point cloud in a robot's base frame as the scan a planar laser would give: the
    points whose z is within [min_z, max_z] (not the floor, not what passes overhead), projected
    on the ground, the nearest in each of `bins` bearings around the robot, in bearing order.
    (K, 2), K <= bins: the scan-ordered input `SensedObstacles.add_scan` links into runs."""
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    band = points[np.isfinite(points).all(axis=1) & (points[:, 2] >= min_z)
                  & (points[:, 2] <= max_z), :2]
    if len(band) == 0:
        return np.zeros((0, 2))
    bearing = np.floor((np.arctan2(band[:, 1], band[:, 0]) + np.pi) / (2.0 * np.pi) * bins)
    bearing = np.minimum(bearing.astype(int), bins - 1)
    order = np.lexsort((np.hypot(band[:, 0], band[:, 1]), bearing))   # by bearing, nearest first
    first = np.concatenate([[True], np.diff(bearing[order]) != 0])
    return band[order[first]]


def _simplified(points: np.ndarray, run: np.ndarray, tolerance: float) -> np.ndarray:
    """(M,) bool: the Douglas-Peucker vertices of every run of the polyline `points` (runs by
    id, ascending), all runs and all splits of one level at once."""
    count = len(points)
    keep = np.zeros(count, dtype=bool)
    keep[0] = keep[-1] = True
    boundary = np.flatnonzero(np.diff(run)) if count > 1 else np.zeros(0, dtype=int)
    keep[boundary] = keep[boundary + 1] = True       # each run's first and last point
    every = np.arange(count)
    while True:
        kept = np.flatnonzero(keep)
        segment = np.searchsorted(kept, every, side='right') - 1
        first = kept[segment]
        last = kept[np.minimum(segment + 1, len(kept) - 1)]
        chord = points[last] - points[first]
        rel = points - points[first]
        length = np.hypot(chord[:, 0], chord[:, 1])
        cross = np.abs(chord[:, 0] * rel[:, 1] - chord[:, 1] * rel[:, 0])
        distance = np.where(length > 0.0, cross / np.where(length > 0.0, length, 1.0),
                            np.hypot(rel[:, 0], rel[:, 1]))
        distance[keep] = 0.0
        worst = np.maximum.reduceat(distance, kept)          # per segment [kept[k], kept[k+1])
        split = (distance > tolerance) & (distance == worst[segment])
        if not split.any():
            return keep
        # One new vertex per segment: its first point at the largest distance.
        chosen, where = np.unique(segment[split], return_index=True)
        keep[np.flatnonzero(split)[where]] = True
