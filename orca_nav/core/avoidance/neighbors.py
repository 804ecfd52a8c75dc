"""Agent neighbours as RVO2's KdTree picks them: the `max_neighbors` nearest other agents with
squared distance strictly below `neighbor_dist**2`, nearest first (scipy cKDTree k-nearest query).
Obstacle neighbours live with the obstacle tree (`obstacles.ObstacleSet.neighbors`).

`agent_neighbors` asks a fresh kd-tree on every call. `AgentNeighborList` gives the same answer
for callers that ask again and again while agents move a little (a simulator, a control loop):
it keeps the candidates within the reach plus a skin and answers from them while no agent has
moved more than half the skin (a Verlet list). RVO2 rebuilds its tree on every step.
"""
import numpy as np
from scipy.spatial import cKDTree

_PARALLEL_QUERY_MIN_AGENTS = 5000  # neighbour queries on all cores from this many agents
# Up to this many agents, whether any has a neighbour at all is checked on every pair first
# (a fleet spread over a big map often has none, and then the kd-tree is not needed).
_ALONE_CHECK_MAX_AGENTS = 64
# The list's skin, relative to the reach: wider lasts more steps but holds more candidates.
_SKIN = 0.2
# Candidates kept per agent, relative to k + 1; a crowd denser than that is asked afresh.
_LIST_WIDTH = 2
# Calls that ask afresh after a crowd was too dense for a list, before it is tried again.
_DENSE_BACKOFF = 16


def _all_alone(positions, reach):
    """No two agents are within `reach` (with a relative margin far above rounding)."""
    offset = positions[:, None, :] - positions[None, :, :]
    dist_sq = offset[:, :, 0] * offset[:, :, 0] + offset[:, :, 1] * offset[:, :, 1]
    np.fill_diagonal(dist_sq, np.inf)
    return bool(dist_sq.min() > (reach * (1.0 + 1e-6)) ** 2)


def _points(positions, others):
    return positions if others is None or not len(others) else np.concatenate([positions, others])


def _slots_and_reach(points, neighbor_dist, max_neighbors):
    """k (neighbour slots, at most one less than the points) and the largest reach."""
    k = int(min(max_neighbors.max(initial=0), len(points) - 1))
    return k, float(neighbor_dist.max()) * (1.0 + 1e-9) + 1e-12


def _none(count):
    return np.zeros((count, 0), dtype=np.intp), np.zeros((count, 0), dtype=bool)


def _nearest(points, count, width, reach):
    """The `width` nearest other points (within `reach`) of each of the first `count` points,
    nearest first: (distances, indices), (count, width); missing ones are inf and len(points)."""
    tree = cKDTree(points, balanced_tree=False, compact_nodes=False)
    # Threads pay off only for large crowds (each query point is independent: same result).
    workers = -1 if count >= _PARALLEL_QUERY_MIN_AGENTS else 1
    dist, found = tree.query(points[:count], k=width + 1, distance_upper_bound=reach,
                             workers=workers)
    own = np.arange(count)
    if (found[:, 0] == own).all():
        return dist[:, 1:], found[:, 1:]
    # Coincident agents may come before the agent itself: drop the agent's own column.
    is_self = found == own[:, None]
    self_col = np.where(is_self.any(axis=1), is_self.argmax(axis=1), width + 1)
    cols = np.arange(width)[None, :]
    cols = cols + (cols >= self_col[:, None])
    return np.take_along_axis(dist, cols, axis=1), np.take_along_axis(found, cols, axis=1)


def _kept(dist, found, k, neighbor_dist, max_neighbors):
    """From each agent's candidates sorted nearest first, the first k and the prefix mask of
    the ones RVO2 keeps, without the slots nobody uses."""
    neighbors, dist = found[:, :k], dist[:, :k]
    # Strictly inside neighbor_dist (missing neighbours have dist = inf), nearest first.
    keep = dist < neighbor_dist[:, None]
    if max_neighbors.min() < k:
        keep &= np.arange(keep.shape[1])[None, :] < max_neighbors[:, None]
    # Slots no agent uses would only carry masked sentinel lines through every later stage
    # (keep is a prefix mask: trailing slots are unused when no agent keeps them).
    used = np.flatnonzero(keep.any(axis=0))
    used = int(used[-1]) + 1 if used.size else 0
    return neighbors[:, :used], keep[:, :used]


def agent_neighbors(positions, neighbor_dist, max_neighbors, others=None):
    """(N, k) neighbour indices, nearest first, and a prefix mask of the ones RVO2 keeps
    (indices outside the mask are meaningless: cKDTree's "missing" index, or too far).

    others: optional (M, 2) positions of agents that are neighbours but get no velocity here
    (non-cooperative agents); they are indices N..N+M-1 and compete for the k slots by distance."""
    count = len(positions)
    points = _points(positions, others)
    k, reach = _slots_and_reach(points, neighbor_dist, max_neighbors)
    if k <= 0 or (len(points) <= _ALONE_CHECK_MAX_AGENTS and _all_alone(points, reach)):
        return _none(count)
    dist, found = _nearest(points, count, k, reach)
    return _kept(dist, found, k, neighbor_dist, max_neighbors)


class AgentNeighborList:
    """agent_neighbors for repeated calls, from a Verlet list.

    Built from one kd-tree query: each agent's candidates, every point within the reach plus
    a skin (up to a width). While every point (agents and others, by index) stays within half
    the skin of where it was, every pair now within the reach was within reach plus skin then,
    so the candidates hold all neighbours; their current distances pick them. Otherwise, or
    when the point count changes, the list is built again. A crowd with more candidates than
    the width is asked afresh for a while (the list would cost more than the tree).
    Answers equal agent_neighbors' except the order of neighbours at exactly equal distances.
    """

    def __init__(self):
        self._built_at = None    # positions of all points when the list was built
        self._built_reach = 0.0
        self._candidates = None  # (count, width) point indices, len(points) = none
        self._fresh_calls = 0    # calls left that skip the list (a dense crowd)

    def neighbors(self, positions, neighbor_dist, max_neighbors, others=None):
        """Same arguments and answer as agent_neighbors."""
        count = len(positions)
        points = _points(positions, others)
        k, reach = _slots_and_reach(points, neighbor_dist, max_neighbors)
        if k <= 0:
            return _none(count)
        if self._fresh_calls > 0:
            self._fresh_calls -= 1
            return agent_neighbors(positions, neighbor_dist, max_neighbors, others)
        if not self._holds(points, count, reach):
            if not self._build(points, count, k, reach):
                self._fresh_calls = _DENSE_BACKOFF
                return agent_neighbors(positions, neighbor_dist, max_neighbors, others)
        return self._answer(points, count, k, neighbor_dist, max_neighbors)

    def _holds(self, points, count, reach):
        if self._built_at is None or self._built_at.shape != points.shape \
                or self._candidates.shape[0] != count:
            return False
        moved = points - self._built_at
        drift = np.sqrt((moved * moved).sum(axis=1)).max(initial=0.0)
        return reach + 2.0 * drift <= self._built_reach

    def _build(self, points, count, k, reach):
        """The list for these points; False (and no list) where a crowd is too dense for it."""
        self._built_at = None
        width = min(_LIST_WIDTH * (k + 1), len(points) - 1)
        built_reach = reach * (1.0 + _SKIN)
        dist, found = _nearest(points, count, width, built_reach)
        if width < len(points) - 1 and np.isfinite(dist[:, -1]).any():
            return False    # some agent has more candidates than the list holds
        used = int(np.isfinite(dist).sum(axis=1).max(initial=0))
        self._candidates = np.ascontiguousarray(found[:, :used])
        self._built_at = points.copy()
        self._built_reach = built_reach
        return True

    def _answer(self, points, count, k, neighbor_dist, max_neighbors):
        candidates = self._candidates
        if candidates.shape[1] == 0:
            return _none(count)
        # A far sentinel for missing candidates: its distance is inf.
        xs = np.append(points[:, 0], np.inf)
        ys = np.append(points[:, 1], np.inf)
        dx = xs.take(candidates) - points[:count, 0, None]
        dy = ys.take(candidates) - points[:count, 1, None]
        dist = np.sqrt(dx * dx + dy * dy)
        order = np.argsort(dist, axis=1, kind='stable')
        return _kept(np.take_along_axis(dist, order, axis=1),
                     np.take_along_axis(candidates, order, axis=1), k, neighbor_dist,
                     max_neighbors)
