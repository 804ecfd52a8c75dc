"""Robot footprints (oriented rectangle or disc) checked against an OccupancyGrid, many poses at
once.

A pose ``(x, y, yaw)`` is the robot's reference point: for a car the rear-axle centre, for a
diff-drive robot its wheel axis centre. The rectangle runs from ``rear_overhang`` behind the
reference point to ``length - rear_overhang`` ahead of it, and ``width / 2`` to each side.

Occupied cells are squares; points outside the map count as occupied (the grid's convention). A
pose is *free* when the footprint, grown by ``margin`` on every side, overlaps no occupied square.

Most poses are decided from the grid's clearance field (metres between cell centres, cached per
map) without touching the footprint's shape:

1. at the footprint centre: farther than the half-diagonal from every occupied square -> free;
   an occupied cell centre within the half-width -> in collision;
2. a row of discs along the long axis that covers the rectangle: all discs clear -> free; an
   occupied cell centre deep inside the rectangle -> in collision;
3. the rest (poses that graze an obstacle) get the sample test: points on the rectangle's edges
   every resolution / 2 and an interior lattice every resolution, each looked up in the grid.
   The points are grouped in blocks about 5 cells wide; a block whose covering disc is clear
   skips its points, a block holding an occupied cell centre is a hit without them.

The clearance c at a point p bounds the true distance to the nearest occupied square from below
by ``c - |p - centre of p's cell| - resolution / sqrt(2)``; tiers 1-2 only use such bounds, so
they never call a colliding pose free. A disc footprint is decided by the same bounds, and
where they leave it open (a disc grazing an obstacle) by the exact distance to the squares
around it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.validation import finite_at_least_zero


@dataclass(frozen=True)
class Footprint:
    """Oriented rectangle (``length``, ``width``, ``rear_overhang``) or disc (``radius``)."""
    length: Optional[float] = None
    width: Optional[float] = None
    rear_overhang: Optional[float] = None
    radius: Optional[float] = None

    def __post_init__(self):
        rect = (self.length, self.width, self.rear_overhang)
        if self.radius is not None:
            if any(v is not None for v in rect):
                raise ValueError('footprint: give either radius or length/width/rear_overhang, '
                                 'not both')
            finite_at_least_zero('radius', self.radius, positive=True)
            return
        if any(v is None for v in rect):
            raise ValueError(f'footprint: length, width and rear_overhang are all needed, got '
                             f'length={self.length}, width={self.width}, '
                             f'rear_overhang={self.rear_overhang}')
        finite_at_least_zero('footprint_length', self.length, positive=True)
        finite_at_least_zero('footprint_width', self.width, positive=True)
        if not (math.isfinite(self.rear_overhang) and 0.0 <= self.rear_overhang <= self.length):
            raise ValueError(f'rear_overhang must lie in [0, footprint_length={self.length}], '
                             f'got {self.rear_overhang}')

    @property
    def is_rectangle(self) -> bool:
        return self.radius is None

    @property
    def center_offset(self) -> float:
        """Distance from the reference point forward to the footprint centre."""
        return 0.5 * self.length - self.rear_overhang if self.is_rectangle else 0.0

    @property
    def inscribed_radius(self) -> float:
        """Largest disc around the *reference point* inside the footprint."""
        if not self.is_rectangle:
            return self.radius
        return min(0.5 * self.width, self.rear_overhang, self.length - self.rear_overhang)

    @property
    def reach(self) -> float:
        """Farthest footprint point from the reference point (how far a turn sweeps it)."""
        if not self.is_rectangle:
            return self.radius
        return math.hypot(max(self.rear_overhang, self.length - self.rear_overhang),
                          0.5 * self.width)


class FootprintChecker:
    """Vectorised footprint-vs-grid test with the clearance shortcut (see the module docstring)."""

    def __init__(self, grid: OccupancyGrid, footprint: Footprint, margin: float = 0.0):
        if grid.ndim != 2:
            raise ValueError(f'grid must be 2-D, got {grid.ndim}-D')
        self.grid = grid
        self.footprint = footprint
        self.margin = finite_at_least_zero('margin', margin)
        self._res = grid.resolution
        self._origin = np.asarray(grid.origin, dtype=float)
        # Padded copies (a ring of occupied cells, clearance 0) make every lookup in bounds after a
        # clip: points outside the map land on the ring.
        self._pad = 2
        clear = np.pad(grid.clearance(), self._pad)     # cached by the grid: per map, not per plan
        self._ny, self._nx = clear.shape
        self._clear = clear.reshape(-1)
        self._occ = np.pad(grid.occupied, self._pad, constant_values=True).reshape(-1)
        self._cell_half_diag = self._res / math.sqrt(2.0)
        if footprint.is_rectangle:
            hl = 0.5 * footprint.length + self.margin
            hw = 0.5 * footprint.width + self.margin
            self._hl, self._hw = hl, hw
            self._half_diag = math.hypot(hl, hw)
            # Discs along the long axis, each covering a slice of length <= hw: radius <= 1.12 hw.
            n = max(1, math.ceil(hl / (0.5 * hw)))
            self._disc_x = footprint.center_offset + (np.arange(n) + 0.5) * (2.0 * hl / n) - hl
            self._disc_r = math.hypot(hl / n, hw)
            self._disc_inner = np.minimum(hw, hl - np.abs(self._disc_x - footprint.center_offset))
            self._probe_x = np.concatenate(([footprint.center_offset], self._disc_x))
            self._samples = self._rectangle_samples(hl, hw, footprint.center_offset)
            self._make_blocks(hl, hw, footprint.center_offset)
        self.tier_counts = np.zeros(3, dtype=np.int64)   # poses decided by tier 1, 2, 3 (profiling)

    def _rectangle_samples(self, hl, hw, cx):
        edge = 0.5 * self._res
        nx_e, ny_e = math.ceil(2 * hl / edge), math.ceil(2 * hw / edge)
        xs = np.linspace(-hl, hl, nx_e + 1)
        ys = np.linspace(-hw, hw, ny_e + 1)
        boundary = np.concatenate([
            np.column_stack([xs, np.full_like(xs, -hw)]),
            np.column_stack([xs, np.full_like(xs, hw)]),
            np.column_stack([np.full_like(ys, -hl), ys]),
            np.column_stack([np.full_like(ys, hl), ys])])
        ix = np.linspace(-hl, hl, math.ceil(2 * hl / self._res) + 1)[1:-1]
        iy = np.linspace(-hw, hw, math.ceil(2 * hw / self._res) + 1)[1:-1]
        gx, gy = np.meshgrid(ix, iy, indexing='ij')
        pts = np.concatenate([boundary, np.column_stack([gx.ravel(), gy.ravel()])])
        pts[:, 0] += cx
        return pts

    def _make_blocks(self, hl, hw, cx):
        # Tier 3 splits the rectangle into blocks about 5 cells wide, each with its own covering
        # disc; only the samples of blocks whose disc is not clear get looked up.
        size = max(0.5, 5.0 * self._res)
        nl, nw = math.ceil(2 * hl / size), math.ceil(2 * hw / size)
        bl, bw = 2 * hl / nl, 2 * hw / nw
        bi = np.clip(np.floor((self._samples[:, 0] - cx + hl) / bl), 0, nl - 1).astype(np.int64)
        bj = np.clip(np.floor((self._samples[:, 1] + hw) / bw), 0, nw - 1).astype(np.int64)
        block = bi * nw + bj
        order = np.argsort(block, kind='stable')
        counts = np.bincount(block, minlength=nl * nw)
        width = counts.max()
        first = np.concatenate(([0], np.cumsum(counts)[:-1]))
        # (blocks, width) sample indices, short rows padded with their own first sample.
        col = np.minimum(np.arange(width)[None, :], counts[:, None] - 1)
        self._block_samples = order[first[:, None] + col]
        ci, cj = np.divmod(np.arange(nl * nw), nw)
        self._block_centers = np.column_stack([cx - hl + (ci + 0.5) * bl, -hw + (cj + 0.5) * bw])
        self._block_r = 0.5 * math.hypot(bl, bw)
        self._block_inner = 0.5 * min(bl, bw)

    # ------------------------------------------------------------------ field lookups (hot path)
    def _cells(self, px, py):
        """Padded-grid cell coordinates (float) and clipped integer indices of points."""
        fx = (px - self._origin[0]) * (1.0 / self._res) + self._pad
        fy = (py - self._origin[1]) * (1.0 / self._res) + self._pad
        # Truncation is floor for fx >= 0; anything left of the ring is clipped onto it.
        ix = fx.astype(np.int64)
        iy = fy.astype(np.int64)
        # In-place ufuncs: np.clip's Python wrapper costs more than the work on small arrays.
        np.minimum(np.maximum(ix, 0, out=ix), self._nx - 1, out=ix)
        np.minimum(np.maximum(iy, 0, out=iy), self._ny - 1, out=iy)
        return fx, fy, ix, iy

    def _distance_bounds(self, px, py):
        """Lower bound on the distance to the nearest occupied square, and upper bound on the
        distance to the nearest occupied cell centre, for points (any shape). Outside the map the
        lower bound is <= 0 (not free) and the upper bound proves nothing."""
        fx, fy, ix, iy = self._cells(px, py)
        c = self._clear[iy * self._nx + ix]
        off = np.hypot(fx - ix - 0.5, fy - iy - 0.5) * self._res
        return c - off - self._cell_half_diag, c + off

    def _disc_clear(self, x, y, reach):
        """(K,) bool: no occupied square within `reach` of the points (K,): the exact distance
        to every square of the cells around each point."""
        fx, fy, ix, iy = self._cells(x, y)
        offsets = np.arange(-(math.ceil(reach / self._res) + 1),
                            math.ceil(reach / self._res) + 2)
        cx = np.clip(ix[:, None, None] + offsets[None, None, :], 0, self._nx - 1)
        cy = np.clip(iy[:, None, None] + offsets[None, :, None], 0, self._ny - 1)
        dx = np.maximum(np.abs(fx[:, None, None] - cx - 0.5) - 0.5, 0.0)
        dy = np.maximum(np.abs(fy[:, None, None] - cy - 0.5) - 0.5, 0.0)
        near = np.hypot(dx, dy) * self._res <= reach
        return ~(near & self._occ[cy * self._nx + cx]).any(axis=(1, 2))

    def _points_hit(self, x, y, cos, sin, sx, sy):
        _, _, ix, iy = self._cells(x + cos * sx - sin * sy, y + sin * sx + cos * sy)
        return self._occ[iy * self._nx + ix]

    def _samples_free(self, x, y, yaw):
        cos, sin = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
        hit = self._points_hit(x[:, None], y[:, None], cos, sin, self._samples[:, 0],
                               self._samples[:, 1])
        return ~hit.any(axis=1)

    def _blocks_free(self, x, y, yaw):
        """Sample test restricted to the blocks that their covering disc does not clear."""
        cos, sin = np.cos(yaw), np.sin(yaw)
        bx, by = self._block_centers[:, 0], self._block_centers[:, 1]
        lower, upper = self._distance_bounds(x[:, None] + cos[:, None] * bx - sin[:, None] * by,
                                             y[:, None] + sin[:, None] * bx + cos[:, None] * by)
        # An occupied cell centre inside a block is a certain hit; the points are for the rest.
        result = ~np.logical_or.reduce(upper < self._block_inner, axis=1)
        near = lower <= self._block_r
        near &= result[:, None]
        # Blocks nearest to an obstacle first: a hit there spares the pose's other blocks.
        likely = near & (lower <= 0.0)
        for mask in (likely, near & ~likely):
            mask &= result[:, None]
            pose, block = np.nonzero(mask)
            if pose.size == 0:
                continue
            pts = self._samples[self._block_samples[block]]          # (pairs, width, 2)
            hit = np.logical_or.reduce(
                self._points_hit(x[pose, None], y[pose, None], cos[pose, None], sin[pose, None],
                                 pts[:, :, 0], pts[:, :, 1]), axis=1)
            result[pose[hit]] = False
        return result

    def free_xyyaw(self, x, y, yaw) -> np.ndarray:
        """(N,) bool for pose arrays x, y, yaw (N,). No input validation: for the planner's hot
        path."""
        if not self.footprint.is_rectangle:
            reach = self.footprint.radius + self.margin
            lower, upper = self._distance_bounds(x, y)
            result = lower > reach
            # The bounds leave a band of about a cell where a disc grazes an obstacle: a robot
            # standing there legitimately (the controller keeps it clear of the cells
            # themselves) must not be a start in collision, so those poses get the exact
            # distance to the squares around them.
            rest = np.flatnonzero(~result & (upper >= reach))
            if rest.size:
                result[rest] = self._disc_clear(x[rest], y[rest], reach)
            return result
        cos, sin = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
        # Tiers 1 and 2 in one lookup: column 0 is the footprint centre, the rest the disc centres.
        lower, upper = self._distance_bounds(x[:, None] + cos * self._probe_x,
                                             y[:, None] + sin * self._probe_x)
        centre_free = lower[:, 0] > self._half_diag
        result = centre_free | np.logical_and.reduce(lower[:, 1:] > self._disc_r, axis=1)
        hit = (upper[:, 0] < self._hw) | np.logical_or.reduce(upper[:, 1:] < self._disc_inner,
                                                              axis=1)
        rest = np.flatnonzero(~result & ~hit)
        n_centre = np.count_nonzero(centre_free | (upper[:, 0] < self._hw))
        self.tier_counts += (n_centre, x.size - n_centre - rest.size, rest.size)
        if rest.size:
            result[rest] = self._blocks_free(x[rest], y[rest], yaw[rest])
        return result

    def free(self, poses) -> np.ndarray:
        """(N,) bool: the footprint at each pose (N, 3) ``(x, y, yaw)`` is collision-free."""
        arr = np.asarray(poses, dtype=float)
        if arr.ndim == 1:
            arr = arr.reshape(1, -1)
        if arr.ndim != 2 or arr.shape[1] != 3:
            raise ValueError(f'poses must have shape (N, 3) (x, y, yaw), got {np.shape(poses)}')
        if not np.all(np.isfinite(arr)):
            bad = int(np.argwhere(~np.isfinite(arr))[0][0])
            raise ValueError(f'poses[{bad}] is not finite: {arr[bad].tolist()}')
        return self.free_xyyaw(arr[:, 0], arr[:, 1], arr[:, 2])

    def free_by_samples(self, poses) -> np.ndarray:
        """(N,) bool from the sample test alone (no shortcut): a reference for tests and checks."""
        arr = np.asarray(poses, dtype=float).reshape(-1, 3)
        if not self.footprint.is_rectangle:
            return self.free(arr)
        return self._samples_free(arr[:, 0], arr[:, 1], arr[:, 2])
