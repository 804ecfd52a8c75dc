"""Occupancy grid -> ORCA polygon obstacles (RVO2's conventions).

RVO2 treats an obstacle as a closed chain of directed edges with the solid material on the LEFT
of every edge: an island of occupied cells is a counter-clockwise polygon, and the boundary of a
free region enclosed by occupied cells (a room inside its walls) is traced clockwise, so agents in
the room are on the outer (right) side of each wall edge and are never "inside an obstacle".
Both kinds are returned as plain (M, 2) vertex arrays; `signed_area` tells them apart (> 0 for
islands, < 0 for enclosures).

Pipeline, vectorised over the whole map (no Python loop over cells, edges or vertices):

1. optional inflation (`OccupancyGrid.inflated`), then a one-cell frame around the map that is
   occupied when `border_is_wall` (outside the map is a wall) and free otherwise;
2. crack edges: every unit cell side between an occupied and a free cell, directed so the
   occupied cell is on its left;
3. edges chained into closed loops (successor = the edge leaving the end corner; at a saddle
   corner, where two occupied cells touch diagonally, the left turn is taken so each loop hugs its
   own cells and stays simple), loops labelled with `scipy.sparse.csgraph.connected_components`
   and ordered by pointer jumping (list ranking);
4. collinear corners dropped, then Douglas-Peucker on all loops at once (tolerance <= one cell);
5. the outer rim of the frame (a loop nobody can reach) dropped; vertices mapped to world metres.
"""
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from .obstacles import signed_area

__all__ = ['grid_to_polygons', 'signed_area']


def grid_to_polygons(grid, inflation=0.0, tolerance=None, border_is_wall=True, min_vertices=3):
    """Polygon obstacles bounding the occupied region of a 2-D `OccupancyGrid`.

    grid: orca_nav.core.grid.OccupancyGrid (2-D). inflation: metres added around occupied cells
    before tracing (0 = none). tolerance: Douglas-Peucker tolerance in metres, at most one cell
    (default 0.75 cell, which turns one-cell staircases into straight diagonals while moving no
    edge by more than the tolerance). border_is_wall: the map's outer edge is a wall (as
    `OccupancyGrid.occupied_at` says outside the map is occupied).
    Returns a list of (M, 2) float arrays in world metres, occupied side on the left of each edge.
    """
    if grid.ndim != 2:
        raise ValueError(f'grid: expected a 2-D OccupancyGrid, got ndim={grid.ndim}')
    if not np.isfinite(inflation) or inflation < 0.0:
        raise ValueError(f'inflation: must be finite and >= 0, got {inflation}')
    resolution = float(grid.resolution)
    if tolerance is None:
        tolerance = 0.75 * resolution
    if not np.isfinite(tolerance) or not 0.0 <= tolerance <= resolution:
        raise ValueError(f'tolerance: must be in [0, resolution={resolution}], got {tolerance}')
    if inflation > 0.0:
        grid = grid.inflated(inflation)
    occupied = np.pad(np.asarray(grid.occupied, dtype=bool), 1,
                      constant_values=bool(border_is_wall))

    start, end = _crack_edges(occupied)
    if len(start) == 0:
        return []
    order, loop_starts = _chain_loops(start, end, occupied.shape[1] + 1)
    corners = start[order]  # (E, 2) corner coordinates (cx, cy) in padded cell units, loop by loop
    keep = _drop_collinear(corners, loop_starts)
    corners, loop_starts = _compact(corners, loop_starts, keep)
    keep = _douglas_peucker(corners.astype(float), loop_starts, tolerance / resolution)
    corners, loop_starts = _compact(corners, loop_starts, keep)

    origin = np.asarray(grid.origin, dtype=float)[:2]
    world = origin + (corners - 1.0) * resolution  # -1: undo the frame
    on_rim = np.zeros(len(corners), dtype=bool)
    on_rim[(corners[:, 0] == 0) | (corners[:, 1] == 0)] = True
    loops = np.split(world, loop_starts[1:])
    rim_loops = np.logical_or.reduceat(on_rim, loop_starts)
    return [loop for loop, rim in zip(loops, rim_loops) if not rim and len(loop) >= min_vertices]


def _crack_edges(occupied):
    """Unit edges between occupied and free cells, occupied on the left: (start, end) (E, 2) int."""
    # Horizontal sides at y = iy + 1 between cell rows iy (below) and iy + 1 (above).
    below, above = occupied[:-1, :], occupied[1:, :]
    iy, ix = np.nonzero(above & ~below)  # occupied above: walk +x
    walk_plus_x = (np.stack([ix, iy + 1], 1), np.stack([ix + 1, iy + 1], 1))
    iy, ix = np.nonzero(below & ~above)  # occupied below: walk -x
    walk_minus_x = (np.stack([ix + 1, iy + 1], 1), np.stack([ix, iy + 1], 1))
    # Vertical sides at x = ix + 1 between cell columns ix (left) and ix + 1 (right).
    left, right = occupied[:, :-1], occupied[:, 1:]
    iy, ix = np.nonzero(left & ~right)  # occupied on the left: walk +y
    walk_plus_y = (np.stack([ix + 1, iy], 1), np.stack([ix + 1, iy + 1], 1))
    iy, ix = np.nonzero(right & ~left)  # occupied on the right: walk -y
    walk_minus_y = (np.stack([ix + 1, iy + 1], 1), np.stack([ix + 1, iy], 1))
    parts = (walk_plus_x, walk_minus_x, walk_plus_y, walk_minus_y)
    return (np.concatenate([p[0] for p in parts]).astype(np.int64),
            np.concatenate([p[1] for p in parts]).astype(np.int64))


def _chain_loops(start, end, corner_stride):
    """Order edges loop by loop. Returns (edge order (E,), loop start offsets into that order)."""
    n = len(start)
    start_id = start[:, 1] * corner_stride + start[:, 0]
    end_id = end[:, 1] * corner_stride + end[:, 0]
    by_start = np.argsort(start_id, kind='stable')
    sorted_start = start_id[by_start]
    first = np.searchsorted(sorted_start, end_id, side='left')
    count = np.searchsorted(sorted_start, end_id, side='right') - first
    successor = by_start[first]
    saddle = np.nonzero(count == 2)[0]
    if len(saddle):
        # Two edges leave a saddle corner: keep the one turning left (hugging the same cells).
        direction = end - start
        candidate = by_start[first[saddle] + 1]
        d_in, d_out = direction[saddle], direction[successor[saddle]]
        turns_left = d_in[:, 0] * d_out[:, 1] - d_in[:, 1] * d_out[:, 0] > 0
        successor[saddle] = np.where(turns_left, successor[saddle], candidate)
    graph = coo_matrix((np.ones(n, dtype=np.int8), (np.arange(n), successor)), shape=(n, n))
    _, loop_label = connected_components(graph, directed=True, connection='weak')
    # Break each loop just before its smallest edge index, then rank the resulting lists.
    root = np.full(loop_label.max() + 1, n, dtype=np.int64)
    np.minimum.at(root, loop_label, np.arange(n))
    is_last = successor == root[loop_label]
    to_tail = np.where(is_last, 0, 1).astype(np.int64)
    jump = np.where(is_last, np.arange(n), successor)
    while True:  # Wyllie list ranking: log2(longest loop) vectorised passes
        jump_twice = jump[jump]
        if np.array_equal(jump_twice, jump):
            break
        to_tail += to_tail[jump]
        jump = jump_twice
    order = np.lexsort((-to_tail, loop_label))
    loop_starts = np.flatnonzero(np.diff(loop_label[order], prepend=-1))
    return order, loop_starts


def _drop_collinear(corners, loop_starts):
    """Mask of corners where the walking direction changes (staircase corners survive)."""
    prev, nxt = _cyclic_neighbours(len(corners), loop_starts)
    d_in = corners - corners[prev]
    d_out = corners[nxt] - corners
    return d_in[:, 0] * d_out[:, 1] - d_in[:, 1] * d_out[:, 0] != 0


def _cyclic_neighbours(n, loop_starts):
    """Indices of the previous and next vertex of each vertex within its own closed loop."""
    loop_ends = np.append(loop_starts[1:], n)
    prev = np.arange(n) - 1
    nxt = np.arange(n) + 1
    prev[loop_starts] = loop_ends - 1
    nxt[loop_ends - 1] = loop_starts
    return prev, nxt


def _compact(corners, loop_starts, keep):
    """Apply a vertex mask, dropping loops that lose all their vertices."""
    loop_id = np.repeat(np.arange(len(loop_starts)), np.diff(np.append(loop_starts, len(corners))))
    kept_loop = loop_id[keep]
    new_starts = np.flatnonzero(np.diff(kept_loop, prepend=-1))
    return corners[keep], new_starts


def _douglas_peucker(points, loop_starts, tolerance):
    """Douglas-Peucker on many closed loops at once; returns the keep mask over `points`.

    Each loop is closed by a copy of its first vertex and anchored at that vertex and at its
    extreme vertices along x, y, x+y and x-y (so even a one-cell square keeps its four corners);
    then every pass splits every still-too-coarse span at its farthest vertex.
    """
    n = len(points)
    loop_len = np.diff(np.append(loop_starts, n))
    loop_id = np.repeat(np.arange(len(loop_starts)), loop_len)
    # Closed copy: loop k occupies [loop_starts[k] + k, loop_starts[k] + k + loop_len[k]] inclusive.
    ext_start = loop_starts + np.arange(len(loop_starts))
    ext_index = np.arange(n) + loop_id
    ext = np.empty((n + len(loop_starts), 2))
    ext[ext_index] = points
    ext[ext_start + loop_len] = points[loop_starts]
    keep = np.zeros(len(ext), dtype=bool)
    keep[ext_start] = True
    keep[ext_start + loop_len] = True
    x, y = points[:, 0], points[:, 1]
    for extent in (x, y, x + y, x - y):
        keep[ext_index[_group_argmax(extent, loop_starts)]] = True
        keep[ext_index[_group_argmax(-extent, loop_starts)]] = True

    # Points of spans that are not yet within tolerance; finished spans drop out of later passes.
    active = np.flatnonzero(~keep)
    while len(active):
        kept = np.flatnonzero(keep)
        span = np.searchsorted(kept, active)  # span between kept[span - 1] and kept[span]
        a, b = ext[kept[span - 1]], ext[kept[span]]
        ab, ap = b - a, ext[active] - a
        ab_len = np.hypot(ab[:, 0], ab[:, 1])
        cross = np.abs(ab[:, 0] * ap[:, 1] - ab[:, 1] * ap[:, 0])
        dist = np.where(ab_len > 0, cross / np.where(ab_len > 0, ab_len, 1.0),
                        np.hypot(ap[:, 0], ap[:, 1]))
        group_starts = np.flatnonzero(np.diff(span, prepend=-1))
        best = _group_argmax(dist, group_starts)
        coarse = dist[best] > tolerance
        keep[active[best[coarse]]] = True
        group_id = np.repeat(np.arange(len(group_starts)),
                             np.diff(np.append(group_starts, len(span))))
        still = coarse[group_id]
        still[best] = False
        active = active[still]
    return keep[ext_index]


def _group_argmax(values, group_starts):
    """Index (into values) of the first maximum of each contiguous group."""
    group_max = np.maximum.reduceat(values, group_starts)
    group_id = np.repeat(np.arange(len(group_starts)),
                         np.diff(np.append(group_starts, len(values))))
    is_max = values == group_max[group_id]
    hit = np.flatnonzero(is_max)
    first = np.unique(group_id[hit], return_index=True)[1]
    return hit[first]
