"""A map prepared for avoidance: `prepare_map` turns an occupancy grid into ORCA's polygons, the
goal guidance fields and the exact obstacle distances of the safety layer.

It is slow on big maps and touches no controller state, so a caller may run it on a worker
thread and hand the result to `FleetController.set_map` on the controller's own thread.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from orca_nav.core.avoidance import prepare_obstacles
from orca_nav.core.avoidance.map_polygons import grid_to_polygons
from orca_nav.core.avoidance.obstacles import ObstacleSet
from orca_nav.core.fleet.guidance import GeodesicGuidance
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.obstacle_distance import ObstacleDistance


@dataclass(frozen=True)
class MapModel:
    """A map prepared for avoidance: the grid, its ORCA obstacles (and how many polygons and
    vertices they have) and its goal guidance (None when no robot steers by goal)."""

    grid: OccupancyGrid
    obstacles: ObstacleSet
    guidance: Optional[GeodesicGuidance]
    polygon_count: int
    vertex_count: int
    distance: ObstacleDistance      # exact distances to the cells, for the safety layer


def prepare_map(grid: OccupancyGrid, inflation: float, guided: bool,
                goals: np.ndarray = np.zeros((0, 2)), radii: np.ndarray = np.zeros(0)) -> MapModel:
    """ORCA polygons of `grid` (occupied cells grown by `inflation`), and with `guided` the
    goal guidance with the distance fields of `goals` (radii (K,)) built now; goals set later get
    theirs on first use. Pure and slow on big maps: run it off the control thread."""
    polygons = grid_to_polygons(grid, inflation=inflation)
    obstacles = prepare_obstacles(polygons)
    guidance = None
    if guided:
        guided_grid = grid.inflated(inflation) if inflation > 0.0 else grid
        # Its visibility checks read the clearance field every cycle: built here, off the
        # control thread (seconds on a 4,000 x 4,000 map).
        guided_grid.clearance()
        guidance = GeodesicGuidance(guided_grid)
        guidance.prepare(goals, radii)
    return MapModel(grid, obstacles, guidance, len(polygons), sum(len(p) for p in polygons),
                    ObstacleDistance(grid))

