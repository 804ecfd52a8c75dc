"""How far a robot still has to go over the map: the bench's measure of progress.

A straight-line distance to the goal does not shrink while a robot goes round a wall, out of a
room through its door, or the long way round a one-way aisle, so a loop that measures progress
by it calls such a robot stuck, and ends a run while it is still on its way. Over the map's
free cells (one graph node per cell, edges between neighbouring cells that see each other,
against no one-way lane: `coarse_geodesic.CoarseGeodesic` as a lattice of blocks of one cell)
the distance shrinks along every way a robot may drive.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from orca_nav.core.coarse_geodesic import CoarseGeodesic
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.traffic_rules import TrafficRules


class DistanceOverMap:
    """Distance (m) from points to goals through the free cells of a 2-D map, keeping its
    one-way lanes; ``inf`` where no way leads to the goal. One Dijkstra per goal, cached."""

    def __init__(self, grid: OccupancyGrid, traffic: Optional[TrafficRules] = None):
        self._graph = CoarseGeodesic(grid, 1, optimistic=False, traffic=traffic)
        self._fields: Dict[Tuple[float, float], np.ndarray] = {}

    def __call__(self, point, goal) -> float:
        key = (float(goal[0]), float(goal[1]))
        field = self._fields.get(key)
        if field is None:
            field = self._fields[key] = self._graph.from_goal(np.array(key))
        return float(self._graph.lookup(field, np.asarray(point, dtype=float)[None, :2])[0])
