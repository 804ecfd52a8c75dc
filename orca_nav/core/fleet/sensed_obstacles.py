"""Obstacles the robots' sensors see that the map does not have (a pallet left in an aisle),
as short-lived ORCA obstacles.

Each robot's scans arrive as points in the global frame. A robot keeps the points of its scans
of the last `persistence` seconds, at most `max_points` of them (a scan with more is thinned
evenly; older scans go first when the total would exceed it), so the cost per cycle is bounded
by robots x max_points whatever the sensor. Each cycle the points are turned into ORCA segment
obstacles (RVO2's 2-vertex obstacles): neighbours in a scan closer than `link_distance` are
joined, a lone point becomes a short segment. Points on a fleet robot or a tracked agent
(within its radius plus `clear_margin` of its centre) are dropped, when the scan comes in (so
a robot or a person walking on leaves no trail of old points) and again each cycle: the laser
sees the other robots and the people, and those must stay agents (reciprocal, or avoided with
full responsibility), not turn into walls that the fleet would jam against. The margin is
small (3 cm): ORCA keeps a robot further than that from any obstacle (`safety_margin`), so only
points on robots and people fall inside it. The obstacles are shared: what one robot sees,
every robot avoids.
"""
from __future__ import annotations

from collections import deque
from typing import Deque, List, Tuple

import numpy as np

LONE_POINT_SEGMENT = 0.02   # m: length of the segment a lone point becomes


class SensedObstacles:
    """Recent sensor points per robot (see the module docstring)."""

    def __init__(self, robots: int, persistence: float, max_points: int,
                 link_distance: float = 0.3, clear_margin: float = 0.03):
        self.persistence = persistence
        self.max_points = max_points
        self.link_distance = link_distance
        self.clear_margin = clear_margin
        self._scans: List[Deque[Tuple[float, np.ndarray]]] = [deque() for _ in range(robots)]

    def add_scan(self, robot: int, stamp: float, points: np.ndarray, clear_centres: np.ndarray,
                 clear_radii: np.ndarray) -> None:
        """Robot `robot`'s scan at `stamp`: (M, 2) global points in scan order (non-finite rows,
        e.g. no return, are dropped), minus those on the robots and agents at clear_centres
        (K, 2) with clear_radii (K,)."""
        points = np.asarray(points, dtype=float).reshape(-1, 2)
        points = self._clear(points[np.isfinite(points).all(axis=1)], clear_centres, clear_radii)
        if len(points) > self.max_points:
            keep = np.linspace(0, len(points) - 1, self.max_points).round().astype(int)
            points = points[keep]
        scans = self._scans[robot]
        scans.append((float(stamp), points))
        total = sum(len(p) for _, p in scans)
        while len(scans) > 1 and total > self.max_points:
            total -= len(scans.popleft()[1])

    def point_count(self) -> int:
        return sum(len(p) for scans in self._scans for _, p in scans)

    def segments(self, now: float, clear_centres: np.ndarray,
                 clear_radii: np.ndarray) -> List[np.ndarray]:
        """(2, 2) segments of the points of the last `persistence` s, minus the points within
        clear_radii + clear_margin of clear_centres (K, 2) (robots and tracked agents, now)."""
        out: List[np.ndarray] = []
        for scans in self._scans:
            while scans and now - scans[0][0] > self.persistence:
                scans.popleft()
            for _, points in scans:
                out.extend(_scan_segments(self._clear(points, clear_centres, clear_radii),
                                          self.link_distance))
        return out

    def _clear(self, points: np.ndarray, centres, radii) -> np.ndarray:
        """`points` without those within radii + clear_margin of a (finite) centre."""
        centres = np.asarray(centres, dtype=float).reshape(-1, 2)
        known = np.isfinite(centres).all(axis=1)
        if len(points) == 0 or not known.any():
            return points
        reach = np.asarray(radii, dtype=float)[known] + self.clear_margin
        gap = np.linalg.norm(points[:, None, :] - centres[None, known, :], axis=2)
        return points[(gap > reach[None, :]).all(axis=1)]


def _scan_segments(points: np.ndarray, link_distance: float) -> List[np.ndarray]:
    """Consecutive points closer than link_distance joined; lone points as short segments."""
    if len(points) == 0:
        return []
    step = np.linalg.norm(np.diff(points, axis=0), axis=1)
    linked = (step < link_distance) & (step > 0.0)
    segments = [np.array([points[i], points[i + 1]]) for i in np.flatnonzero(linked)]
    touched = np.zeros(len(points), dtype=bool)
    touched[:-1] |= linked
    touched[1:] |= linked
    for i in np.flatnonzero(~touched):
        segments.append(np.array([points[i], points[i] + (LONE_POINT_SEGMENT, 0.0)]))
    return segments
