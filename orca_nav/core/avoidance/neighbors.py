"""Agent neighbours as RVO2's KdTree picks them: the `max_neighbors` nearest other agents with
squared distance strictly below `neighbor_dist**2`, nearest first (scipy cKDTree k-nearest query).
Obstacle neighbours live with the obstacle tree (`obstacles.ObstacleSet.neighbors`).

`agent_neighbors` asks a fresh kd-tree on every call. `AgentNeighborList` gives the same answer
for callers that ask again and again while agents move a little (a simulator, a control loop):
it keeps each agent's nearest candidates and answers from them while nobody outside them can
have come close enough to count (a Verlet list). RVO2 rebuilds its tree on every step.
"""
import numpy as np
from scipy.spatial import cKDTree

_PARALLEL_QUERY_MIN_AGENTS = 5000  # neighbour queries on all cores from this many agents
# Up to this many agents, whether any has a neighbour at all is checked on every pair first
# (a fleet spread over a big map often has none, and then the kd-tree is not needed).
_ALONE_CHECK_MAX_AGENTS = 64
# The list's skin, relative to the reach: wider lasts more steps but holds more candidates.
_SKIN = 0.2
# Candidates kept per agent, relative to k + 1.
_LIST_WIDTH = 2
# Calls that ask afresh after a list served no call beyond its build (agents moving more than
# their candidates allow), before a list is tried again.
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
    return without_unused_slots(neighbors, keep)


def without_unused_slots(neighbors, keep):
    """(neighbors, keep) (N, K) without the trailing slots no agent keeps: they would only carry
    masked sentinel lines or planes through every later stage."""
    # From the last slot on (usually the first one looked at is used): any() along the short
    # rows of all slots at once is slower.
    used = keep.shape[1]
    while used and not keep[:, used - 1].any():
        used -= 1
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

    Built from one kd-tree query: each agent's candidates, its nearest points up to a width
    (twice the slots) within the reach plus a skin, and how far every point left out was then
    (the last candidate's distance, or the skin's edge). At a later call each agent's
    candidates are ranked by their current distances; where every point left out cannot have
    come closer than the agent's last kept neighbour (or its neighbor_dist) -- it came closer by
    at most the agent's own move since plus the largest move of any point (agents and others,
    by index) -- the candidates hold the answer. Otherwise, or when the point count changes, the
    list is built again; a list that serves no call after its build (a crowd packed so densely
    that it cannot hold) gives way to fresh kd-trees for a while.
    Answers equal agent_neighbors' except the order of neighbours at exactly equal distances.
    """

    def __init__(self):
        self._built_at = None    # positions of all points when the list was built
        self._candidates = None  # (count, width) point indices, len(points) = none
        self._left_out = None    # (count,) distance every point not among the candidates had
        self._served = 0         # calls answered by the current list
        self._fresh_calls = 0    # calls left that skip the list (a dense crowd)
        self._buffers = None     # arrays kept for _answer (_work_arrays)

    def neighbors(self, positions, neighbor_dist, max_neighbors, others=None):
        """Same arguments and answer as agent_neighbors."""
        count = len(positions)
        points = _points(positions, others)
        k, reach = _slots_and_reach(points, neighbor_dist, max_neighbors)
        if k <= 0:
            return _none(count)
        if self._fresh_calls == 0:
            fits = (self._built_at is not None and self._built_at.shape == points.shape
                    and len(self._candidates) == count)
            found = self._answer(points, k, neighbor_dist, max_neighbors) if fits else None
            if found is None and (not fits or self._served > 1):
                self._build(points, count, k, reach)
                found = self._answer(points, k, neighbor_dist, max_neighbors)
            if found is not None:
                self._served += 1
                return found
            self._fresh_calls = _DENSE_BACKOFF + 1
            self._built_at = None
        self._fresh_calls -= 1
        return agent_neighbors(positions, neighbor_dist, max_neighbors, others)

    def _build(self, points, count, k, reach):
        width = min(_LIST_WIDTH * (k + 1), len(points) - 1)
        built_reach = reach * (1.0 + _SKIN)
        dist, found = _nearest(points, count, width, built_reach)
        # A full row left out the points beyond its last candidate (none when it holds every
        # other point); a row with room left out only points beyond the reach asked.
        last = dist[:, -1] if width < len(points) - 1 else np.full(count, np.inf)
        self._left_out = np.where(np.isfinite(dist[:, -1]), last, built_reach)
        used = int(np.isfinite(dist).sum(axis=1).max(initial=0))
        self._candidates = np.ascontiguousarray(found[:, :used])
        self._built_at = points.copy()
        self._served = 0

    def _answer(self, points, k, neighbor_dist, max_neighbors):
        """The answer from the candidates, or None where a point left out may belong in it."""
        candidates = self._candidates
        count, width = candidates.shape
        moved = points - self._built_at
        moved *= moved
        # Column by column: a sum along rows of two is slow in numpy (the same sums).
        moved = np.sqrt(moved[:, 0] + moved[:, 1])
        # A point left out came closer to an agent by at most its own move plus the agent's.
        bound = self._left_out - moved[:count] - moved.max(initial=0.0)
        if width == 0:
            return _none(count) if (bound > neighbor_dist).all() else None
        dist_sq, work, xs, ys, row_start = self._work_arrays(len(points), count, width)
        # Squared distances to the candidates; missing candidates (index len(points)) meet the
        # far sentinel at the end of xs and ys, and their distance is inf.
        xs[:-1], ys[:-1] = points[:, 0], points[:, 1]
        # mode='clip' (the indices are in range): with 'raise' take buffers its output.
        xs.take(candidates, out=dist_sq, mode='clip')
        dist_sq -= points[:count, 0, None]
        dist_sq *= dist_sq
        ys.take(candidates, out=work, mode='clip')
        work -= points[:count, 1, None]
        work *= work
        dist_sq += work
        # The rows come nearly sorted from the build, where a stable sort (a merge) is quickest.
        # (A new array: adding in place into the strided first k columns is slower.)
        flat = np.argsort(dist_sq, axis=1, kind='stable')[:, :k] + row_start
        nearest_sq = dist_sq.take(flat)
        last_kept = np.sqrt(nearest_sq[:, k - 1]) if width >= k else np.inf
        if not (bound > np.minimum(neighbor_dist, last_kept)).all():
            return None
        return _kept(np.sqrt(nearest_sq), candidates.take(flat), k, neighbor_dist,
                     max_neighbors)

    def _work_arrays(self, point_count, count, width):
        """Arrays kept across calls (fresh temporaries of this size cost the allocator more than
        the arithmetic): two (count, width) ones, the coordinates of the points with a far
        sentinel after them, and where each row starts in a flat (count, width) array."""
        if self._buffers is None or self._buffers[0].shape != (count, width) \
                or len(self._buffers[2]) != point_count + 1:
            xs, ys = np.full(point_count + 1, np.inf), np.full(point_count + 1, np.inf)
            self._buffers = (np.empty((count, width)), np.empty((count, width)), xs, ys,
                             width * np.arange(count)[:, None])
        return self._buffers
