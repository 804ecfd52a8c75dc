"""Agent neighbours as RVO2's KdTree picks them: the `max_neighbors` nearest other agents with
squared distance strictly below `neighbor_dist**2`, nearest first (scipy cKDTree k-nearest query).
Obstacle neighbours live with the obstacle tree (`obstacles.ObstacleSet.neighbors`).
"""
import numpy as np
from scipy.spatial import cKDTree

_PARALLEL_QUERY_MIN_AGENTS = 5000  # neighbour queries on all cores from this many agents
# Up to this many agents, whether any has a neighbour at all is checked on every pair first
# (a fleet spread over a big map often has none, and then the kd-tree is not needed).
_ALONE_CHECK_MAX_AGENTS = 64


def _all_alone(positions, reach):
    """No two agents are within `reach` (with a relative margin far above rounding)."""
    offset = positions[:, None, :] - positions[None, :, :]
    dist_sq = offset[:, :, 0] * offset[:, :, 0] + offset[:, :, 1] * offset[:, :, 1]
    np.fill_diagonal(dist_sq, np.inf)
    return bool(dist_sq.min() > (reach * (1.0 + 1e-6)) ** 2)


def agent_neighbors(positions, neighbor_dist, max_neighbors, others=None):
    """(N, k) neighbour indices, nearest first, and a prefix mask of the ones RVO2 keeps
    (indices outside the mask are meaningless: cKDTree's "missing" index, or too far).

    others: optional (M, 2) positions of agents that are neighbours but get no velocity here
    (non-cooperative agents); they are indices N..N+M-1 and compete for the k slots by distance."""
    count = len(positions)
    points = positions if others is None or not len(others) else np.concatenate([positions, others])
    k = int(min(max_neighbors.max(initial=0), len(points) - 1))
    reach = float(neighbor_dist.max()) * (1.0 + 1e-9) + 1e-12
    if k <= 0 or (len(points) <= _ALONE_CHECK_MAX_AGENTS and _all_alone(points, reach)):
        return np.zeros((count, 0), dtype=np.intp), np.zeros((count, 0), dtype=bool)
    tree = cKDTree(points, balanced_tree=False, compact_nodes=False)
    # Threads pay off only for large crowds (each query point is independent: same result).
    workers = -1 if count >= _PARALLEL_QUERY_MIN_AGENTS else 1
    dist, found = tree.query(positions, k=k + 1, distance_upper_bound=reach, workers=workers)
    own = np.arange(count)
    if (found[:, 0] == own).all():
        neighbors, dist = found[:, 1:], dist[:, 1:]
    else:
        # Coincident agents may come before the agent itself: drop the agent's own column.
        is_self = found == own[:, None]
        self_col = np.where(is_self.any(axis=1), is_self.argmax(axis=1), k + 1)
        cols = np.arange(k)[None, :]
        cols = cols + (cols >= self_col[:, None])
        neighbors = np.take_along_axis(found, cols, axis=1)
        dist = np.take_along_axis(dist, cols, axis=1)
    # Strictly inside neighbor_dist (missing neighbours have dist = inf), nearest first.
    keep = dist < neighbor_dist[:, None]
    if max_neighbors.min() < k:
        keep &= np.arange(k)[None, :] < max_neighbors[:, None]
    # Slots no agent uses would only carry masked sentinel lines through every later stage
    # (keep is a prefix mask: trailing slots are unused when no agent keeps them).
    used = np.flatnonzero(keep.any(axis=0))
    used = int(used[-1]) + 1 if used.size else 0
    return neighbors[:, :used], keep[:, :used]

