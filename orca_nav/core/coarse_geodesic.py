"""An obstacle-aware distance to a goal over a grid, on a coarse graph: search heuristics
(kinodynamic A*) and goal guidance (`fleet.guidance`)."""
from __future__ import annotations

import itertools
import math
from typing import Tuple

import numpy as np
from scipy import ndimage

from orca_nav.core.grid import OccupancyGrid


class CoarseGeodesic:
    """Obstacle-aware distance to a goal on a coarse graph over a grid (a search heuristic).

    The grid is cut into blocks of ``factor`` cells per axis, one graph node per block, and
    nodes are joined to their 8 (2-D) / 26 (3-D) neighbours by edges as long as the distance
    between block centres. :meth:`from_goal` runs one Dijkstra (``scipy.sparse.csgraph``) from
    the goal; :meth:`lookup` gives points the distance of their block minus half a block
    diagonal (a point may sit anywhere in its block; clipped at 0), ``inf`` where the graph has
    no path. It estimates, and does not bound, the free-space path length.

    * ``optimistic=True``: a block is free if *any* of its cells is free and free neighbours
      are always joined. Distances leak through walls thinner than a block, but ``inf`` is a
      proof: no free path exists through the grid's free cells.
    * ``optimistic=False`` (lattice): a node is free if the cell at its block centre is free,
      and an edge exists only if the straight segment between the centres is free. Distances
      go around obstacles as the robot must, but passages narrower than about a block may be
      missed (``inf`` proves nothing). Blocks whose own node is blocked take their best
      neighbour's distance plus one step.

    ``traffic`` (2-D, lattice only): the graph is directed, without the edges against a one-way
    lane that holds both blocks' centres half a block inside it (`TrafficRules.against_between`),
    and :meth:`from_goal` measures the distance *to* the goal keeping the lanes.
    """

    def __init__(self, grid: OccupancyGrid, factor: int, optimistic: bool = True,
                 traffic=None):
        factor = int(factor)
        if factor < 1:
            raise ValueError(f'factor must be >= 1, got {factor}')
        # Local import: only this heuristic needs sparse graphs (and csgraph is slow to import).
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components, dijkstra
        self._dijkstra = dijkstra

        self.grid = grid
        self.factor = factor
        self.optimistic = bool(optimistic)
        self.cell_size = grid.resolution * factor
        lanes = traffic if traffic is not None and traffic.lanes else None
        if lanes is not None and (optimistic or grid.ndim != 2):
            raise ValueError('traffic: one-way lanes need a 2-D lattice (optimistic=False)')
        self._directed = lanes is not None
        block_shape = tuple(-(-n // factor) for n in grid.shape)
        if self.optimistic:
            pad = [(0, (-n) % factor) for n in grid.shape]
            occ = np.pad(grid.occupied, pad, constant_values=True)
            blocks = occ.reshape(sum(((n // factor, factor) for n in occ.shape), ()))
            free = ~blocks.all(axis=tuple(range(1, 2 * grid.ndim, 2)))
        else:
            free = ~grid.occupied_at(self._centres(np.arange(np.prod(block_shape)), block_shape))
            free = free.reshape(block_shape)
        self.free = free
        self._size_xyz = np.array(free.shape[::-1], dtype=np.int64)
        self._strides = np.cumprod(np.concatenate(([1], self._size_xyz[:-1]))).astype(np.int64)
        ids = np.arange(free.size).reshape(free.shape)
        src, dst, weight = [], [], []
        for offset in itertools.product((-1, 0, 1), repeat=grid.ndim):
            if offset <= (0,) * grid.ndim:
                continue  # each undirected edge once: only lexicographically positive offsets
            a = tuple(slice(max(-o, 0), n - max(o, 0)) for o, n in zip(offset, free.shape))
            b = tuple(slice(max(o, 0), n - max(-o, 0)) for o, n in zip(offset, free.shape))
            both = free[a] & free[b]
            pair_a, pair_b = ids[a][both], ids[b][both]
            if not self.optimistic and pair_a.size:
                visible = grid.segment_free(self._centres(pair_a, block_shape),
                                            self._centres(pair_b, block_shape))
                pair_a, pair_b = pair_a[visible], pair_b[visible]
            length = self.cell_size * math.sqrt(sum(o * o for o in offset))
            if self._directed:
                # Both ways but against a lane, stored reversed (to -> from): Dijkstra from the
                # goal then gives each block's distance to the goal.
                pair_a, pair_b, _ = lanes.reversed_edges(
                    pair_a, pair_b, self._centres(pair_a, block_shape),
                    self._centres(pair_b, block_shape), 0.5 * self.cell_size)
            src.append(pair_a)
            dst.append(pair_b)
            weight.append(np.full(pair_a.size, length))
        src, dst, weight = (np.concatenate(x) for x in (src, dst, weight))
        self._graph = coo_matrix((weight, (src, dst)), shape=(free.size, free.size)).tocsr()
        _, labels = connected_components(self._graph, directed=False)
        self._labels = np.where(free.reshape(-1), labels, -1)

    def _centres(self, flat_ids: np.ndarray, block_shape) -> np.ndarray:
        """World centres (K, ndim) of blocks given by flat index into the [..., by, bx] array."""
        idx = np.stack(np.unravel_index(flat_ids, block_shape)[::-1], axis=1)
        return self.grid.origin + (idx + 0.5) * self.cell_size

    def _block_index(self, points) -> Tuple[np.ndarray, np.ndarray]:
        pts = self.grid._points(points)
        cells = np.floor((pts - self.grid.origin) / self.cell_size).astype(np.int64)
        unsigned = cells.view(np.uint64)
        inside = unsigned[:, 0] < self._size_xyz[0]
        for axis in range(1, cells.shape[1]):
            inside &= unsigned[:, axis] < self._size_xyz[axis]
        return np.where(inside, cells @ self._strides, 0), inside

    def from_goal(self, goal) -> np.ndarray:
        """Graph distance (m) from every block to the goal (flat, ``inf`` if unreachable)."""
        goal = self.grid._points(goal)
        index, inside = self._block_index(goal)
        if not inside[0]:
            raise ValueError(f'goal {goal[0].tolist()} is outside the map')
        if self.optimistic:
            return self._dijkstra(self._graph, directed=False, indices=int(index[0]))
        # Lattice: start from the free nodes of the goal's and neighbouring blocks that see it.
        cell = np.array(np.unravel_index(int(index[0]), self.free.shape))
        near = np.stack(np.meshgrid(*[np.arange(c - 1, c + 2) for c in cell], indexing='ij'), -1)
        near = near.reshape(-1, self.grid.ndim)
        near = near[np.all((near >= 0) & (near < self.free.shape), axis=1)]
        near_ids = np.ravel_multi_index(tuple(near.T), self.free.shape)
        near_ids = near_ids[self.free.reshape(-1)[near_ids]]
        if near_ids.size:
            centres = self._centres(near_ids, self.free.shape)
            goals = np.repeat(goal, near_ids.size, axis=0)
            near_ids = near_ids[self.grid.segment_free(goals, centres)]
        if near_ids.size == 0:
            return np.full(self.free.size, np.inf)
        field = self._dijkstra(self._graph, directed=self._directed, indices=near_ids,
                               min_only=True)
        # Blocks without a reachable node of their own borrow the best neighbour's distance.
        grid_field = field.reshape(self.free.shape)
        borrowed = ndimage.minimum_filter(grid_field, size=3, mode='constant', cval=np.inf)
        step = self.cell_size * math.sqrt(self.grid.ndim)
        return np.where(np.isfinite(grid_field), grid_field, borrowed + step).reshape(-1)

    def connected(self, a, b) -> bool:
        """Whether points ``a`` and ``b`` lie in free blocks joined by the graph (connected
        components are computed with the graph, so this costs no search). With ``optimistic=True``,
        False proves that no free path joins them."""
        index, inside = self._block_index(np.stack([np.ravel(a), np.ravel(b)]))
        if not inside.all():
            return False
        la, lb = self._labels[index]
        return bool(la >= 0 and la == lb)

    def lookup(self, field: np.ndarray, points) -> np.ndarray:
        """``(K,)`` distance-to-goal estimate for points (``inf``: unreachable or outside)."""
        index, inside = self._block_index(points)
        slack = 0.5 * self.cell_size * math.sqrt(self.grid.ndim)
        return np.where(inside, np.maximum(field[index] - slack, 0.0), np.inf)
