"""Distance from points to the occupied cells of a grid (2-D squares, 3-D cubes), never
overestimated: what a safety check may rely on.

`OccupancyGrid.clearance` measures from cell centre to cell centre, which can overstate the
distance from a point to the nearest occupied square by up to a cell diagonal (7 cm on a 5 cm
map): too coarse for a check that must hold to a centimetre. Here the nearest occupied cells
are found by their centres in a cKDTree over the boundary cells only (an occupied cell with a
free neighbour, and the ring just outside the map, which counts as occupied as in
`OccupancyGrid.clearance`), and the exact point-to-square (cube) distance is taken over the k
nearest. A cell further away by centre than the k-th is at least that far minus half its
diagonal, so `lower_bound` = min(exact over the k nearest, k-th centre distance - half a
diagonal): exact wherever the nearest cell is among the k, a lower bound everywhere.
"""
from __future__ import annotations

import numpy as np
from scipy import ndimage
from scipy.spatial import cKDTree

from orca_nav.core.grid import OccupancyGrid

_NEAREST = 6        # cells whose exact distance is taken per point


class ObstacleDistance:
    """Lower bounds of the distance from points to a grid's occupied cells (and its outside)."""

    def __init__(self, grid: OccupancyGrid):
        self.grid = grid
        self.ndim = grid.ndim
        self.half = 0.5 * grid.resolution
        occupied = np.pad(grid.occupied, 1, constant_values=True)
        free = ~occupied
        # Occupied cells next to a free one (face neighbours): the only ones that can be nearest.
        boundary = occupied & ndimage.binary_dilation(free, ndimage.generate_binary_structure(
            grid.ndim, 1))
        cells = np.argwhere(boundary)[:, ::-1] - 1          # (ix, iy[, iz]) of the unpadded grid
        self._centres = grid.origin + (cells + 0.5) * grid.resolution
        self._tree = cKDTree(self._centres) if len(self._centres) else None

    def lower_bound_near(self, points, reach) -> np.ndarray:
        """(K,) `lower_bound` of the points that may be nearer than their `reach` (K,) (its
        reach: the largest of theirs, below which its values are the same), inf at those
        certainly beyond it: lower_bound is never below the true distance to the cells minus
        half a diagonal, and that distance never below the clearance field's value at the
        point's cell minus a diagonal (without a field every point counts as near). The
        grid's cells are read once for both: occupied cells are those of clearance 0."""
        points = np.asarray(points, dtype=float).reshape(-1, self.ndim)
        out = np.full(len(points), np.inf)
        if self.grid.has_clearance:
            field = self.grid.clearance_at(points)
            # float32 field: a relative 1e-6 covers its rounding.
            beyond = (field.astype(float) * (1.0 - 1e-6) - 3.0 * self.half * np.sqrt(self.ndim)
                      - 1e-9 >= reach)
            near = (~beyond).nonzero()[0]
            occupied = field.take(near) == 0.0
        else:
            near = np.arange(len(points))
            occupied = self.grid.occupied_at(points)
        if near.size:
            out[near] = self._lower_bound(points[near], float(reach[near].max()), occupied)
        return out

    def lower_bound(self, points, reach: float = np.inf) -> np.ndarray:
        """(K,) metres from each point (K, ndim) to the nearest occupied cell, never more than
        the truth (0 in an occupied cell or outside the map); points further than `reach` from
        every cell get inf."""
        points = np.asarray(points, dtype=float).reshape(-1, self.ndim)
        if self._tree is None or len(points) == 0:
            return np.full(len(points), np.inf)
        return self._lower_bound(points, reach, self.grid.occupied_at(points))

    def _lower_bound(self, points, reach: float, occupied) -> np.ndarray:
        """`lower_bound` of points (K, ndim) whose cells' occupancy (K,) is known."""
        if self._tree is None:
            return np.full(len(points), np.inf)
        k = min(_NEAREST, len(self._centres))
        upper = reach + self.half * np.sqrt(self.ndim) if np.isfinite(reach) else np.inf
        dist, idx = self._tree.query(points, k=k, distance_upper_bound=upper)
        dist, idx = dist.reshape(len(points), k), idx.reshape(len(points), k)
        found = idx < len(self._centres)
        centres = self._centres[np.where(found, idx, 0)]                   # (K, k, ndim)
        gap = np.maximum(np.abs(points[:, None, :] - centres) - self.half, 0.0)
        exact = np.where(found, np.sqrt(np.sum(gap * gap, axis=2)), np.inf).min(axis=1)
        # Cells beyond the k-th centre (all of them if k were too few to be sure).
        beyond = dist[:, -1] - self.half * np.sqrt(self.ndim)
        bound = np.minimum(exact, np.where(found[:, -1], beyond, np.inf))
        return np.where(occupied, 0.0, bound)
