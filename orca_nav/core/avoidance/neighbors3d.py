"""Agent neighbours in 3-D exactly as RVO2-3D's KdTree picks and orders them.

RVO2-3D keeps, per agent, the `max_neighbors` other agents with the smallest float32 squared
distance strictly below neighbor_dist**2 (float32), in ascending order. Ties keep the agent its
tree query visited first, and once the list is full a later agent at the farthest kept
distance is rejected. Subtrees it prunes hold only agents it would reject anyway, so the result
is: candidates sorted by (float32 distance, visiting order), the first max_neighbors.

Candidates come from a scipy cKDTree query (float64, with a margin that is widened until no
agent outside it can tie). The visiting order matters only among equal float32 distances; for
the agents that have such ties, RVO2-3D's tree is rebuilt (`AgentTree3d`: the same splits and
in-place partition) and each tied candidate gets its visiting key: along its path from the root,
at every node whether it lies in the child the query visits first (the nearer box, the right
one on equal box distances), then its index in the tree's agent array.
"""
import numpy as np
from scipy.spatial import cKDTree

from .linear_program3d import F32

MAX_LEAF_SIZE = 10  # RVO3D_MAX_LEAF_SIZE
_EXTRA_CANDIDATES = 4
_RELATIVE_SLACK = 1e-6  # > the float32 rounding of a squared distance (about 3e-7 relative)
_PARALLEL_QUERY_MIN_AGENTS = 5000


def squared_distance(pos, own, other):
    """RVO2-3D's absSq(position_ - agent->position_) in float32, for index arrays."""
    d = [pos[own, k] - pos[other, k] for k in range(3)]
    return d[0] * d[0] + d[1] * d[1] + d[2] * d[2]


def agent_neighbors_3d(pos, neighbor_dist, max_neighbors):
    """(N, k) neighbour indices in RVO2-3D's order and the prefix mask of the kept ones.

    pos: (N, 3) float32; neighbor_dist (N,) float; max_neighbors (N,) int.
    """
    count = len(pos)
    k = int(min(max_neighbors.max(initial=0), count - 1))
    if k <= 0:
        return np.zeros((count, 0), dtype=np.intp), np.zeros((count, 0), dtype=bool)
    dist32 = neighbor_dist.astype(F32)
    range_sq = dist32 * dist32
    tree = cKDTree(pos.astype(np.float64), balanced_tree=False, compact_nodes=False)
    reach = float(np.sqrt(range_sq.max())) * (1.0 + _RELATIVE_SLACK) + 1e-12
    workers = -1 if count >= _PARALLEL_QUERY_MIN_AGENTS else 1
    width = min(k + 1 + _EXTRA_CANDIDATES, count)
    found = _query(tree, pos, np.arange(count), width, reach, workers)
    cand, d32, valid = _candidates(pos, found, range_sq, max_neighbors)
    # Widen the query where an agent outside the window could still be kept or tie.
    while True:
        short = np.flatnonzero(~_complete(pos, found, d32, valid, range_sq, max_neighbors))
        if short.size == 0 or width >= count:
            break
        width = min(2 * width, count)
        more = _query(tree, pos, short, width, reach, workers)
        found = _pad(found, width, count)
        cand, d32, valid = (_pad(cand, width, 0), _pad(d32, width, np.inf),
                            _pad(valid, width, False))
        found[short] = more
        cand[short], d32[short], valid[short] = _candidates(pos, more, range_sq[short],
                                                            max_neighbors[short], short)
    order = _rvo_order(pos, cand, d32, valid, max_neighbors)
    neighbors = np.take_along_axis(cand, order[:, :k], axis=1)
    kept = np.take_along_axis(valid, order[:, :k], axis=1)
    kept &= np.arange(k)[None, :] < max_neighbors[:, None]
    used = k
    while used > 0 and not kept[:, used - 1].any():
        used -= 1
    return neighbors[:, :used], kept[:, :used]


def _query(tree, pos, rows, width, reach, workers):
    _, found = tree.query(pos[rows].astype(np.float64), k=width, distance_upper_bound=reach,
                          workers=workers)
    return found.reshape(len(rows), width)


def _pad(array, width, fill):
    if array.shape[1] == width:
        return array
    out = np.full((array.shape[0], width), fill, dtype=array.dtype)
    out[:, :array.shape[1]] = array
    return out


def _candidates(pos, found, range_sq, max_neighbors, rows=None):
    """Candidate indices (missing -> 0), their float32 squared distances and whether RVO2-3D
    could keep them (another agent, strictly within range)."""
    count = len(pos)
    own = np.arange(count) if rows is None else rows
    present = found < count
    cand = np.where(present, found, 0)
    d32 = squared_distance(pos, own[:, None], cand)
    valid = present & (cand != own[:, None]) & (d32 < range_sq[:, None])
    return cand, np.where(valid, d32, np.inf).astype(F32), valid


def _complete(pos, found, d32, valid, range_sq, max_neighbors):
    """True where no agent beyond the queried window can be kept or tie with a kept one."""
    count = len(pos)
    full_window = found[:, -1] < count
    sorted_d = np.sort(d32, axis=1)
    m = np.minimum(max_neighbors, valid.sum(axis=1))
    list_full = (m == max_neighbors) & (m > 0)
    bound = np.where(list_full, sorted_d[np.arange(count), np.maximum(m - 1, 0)], range_sq)
    last = found[:, -1]
    far = np.where(full_window, last, 0)
    own = np.arange(count)
    diff = pos[far].astype(np.float64) - pos[own].astype(np.float64)
    last_sq = (diff * diff).sum(axis=1)
    return ~full_window | (last_sq > bound.astype(np.float64) * (1.0 + _RELATIVE_SLACK)) | (max_neighbors == 0)


def _rvo_order(pos, cand, d32, valid, max_neighbors):
    """Per agent, the candidate columns in RVO2-3D's order: by float32 distance, ties by the
    visiting order of RVO2-3D's tree query."""
    order = np.argsort(d32, axis=1, kind='stable')
    sorted_d = np.take_along_axis(d32, order, axis=1)
    depth = min(int(max_neighbors.max()) + 1, sorted_d.shape[1])
    head = sorted_d[:, :depth]
    tied = np.flatnonzero((np.isfinite(head[:, 1:]) & (head[:, 1:] == head[:, :-1])).any(axis=1))
    if tied.size == 0:
        return order
    width = cand.shape[1]
    # Visiting keys only where a distance occurs twice in an agent's row (elsewhere they
    # cannot change the order).
    candidate_d = d32[tied]
    by_distance = np.argsort(candidate_d, axis=1, kind='stable')
    tied_d = np.take_along_axis(candidate_d, by_distance, axis=1)
    repeated = np.zeros(tied_d.shape, dtype=bool)
    repeated[:, 1:] = tied_d[:, 1:] == tied_d[:, :-1]
    repeated[:, :-1] |= repeated[:, 1:]
    repeated &= np.isfinite(tied_d)
    needs_key = np.zeros(tied_d.shape, dtype=bool)
    np.put_along_axis(needs_key, by_distance, repeated, axis=1)
    rows_k, cols_k = np.nonzero(needs_key)
    tree = AgentTree3d(pos)
    key_part = tree.visit_keys(tied[rows_k], cand[tied][rows_k, cols_k])
    keys = np.zeros((len(tied) * width, key_part.shape[1]), dtype=np.int64)
    keys[rows_k * width + cols_k] = key_part
    # One sort for all tied agents: agent row first, then distance, then visiting order.
    rows = np.repeat(np.arange(len(tied)), width)
    columns = [keys[:, c] for c in range(keys.shape[1] - 1, -1, -1)]
    flat = np.lexsort(columns + [d32[tied].ravel(), rows])
    order[tied] = flat.reshape(len(tied), width) - (np.arange(len(tied)) * width)[:, None]
    return order


class AgentTree3d:
    """RVO2-3D's agent kd-tree (KdTree::buildAgentTree): leaves of at most 10 agents, each node
    split at the midpoint of its bounding box along its widest axis (x, then y, then z on
    ties, strict comparisons), agents partitioned in place by RVO2-3D's two-pointer swap.
    Built level by level over all nodes of a level at once."""

    def __init__(self, pos):
        count = len(pos)
        order = np.arange(count)
        # Per level: for each agent (by id) the node index at that level (-1: already in a
        # leaf) and its side (0 left, 1 right); per node the two child boxes.
        self.node_of, self.side_of, self.child_boxes = [], [], []
        segments = np.array([[0, count]]) if count > MAX_LEAF_SIZE else np.zeros((0, 2), int)
        while len(segments):
            begin, end = segments[:, 0], segments[:, 1]
            seg_id = np.repeat(np.arange(len(segments)), end - begin)
            positions = _ranges(begin, end)
            coords = pos[order[positions]]
            lo = np.minimum.reduceat(coords, _starts(end - begin), axis=0)
            hi = np.maximum.reduceat(coords, _starts(end - begin), axis=0)
            extent = hi - lo
            axis = np.where((extent[:, 0] > extent[:, 1]) & (extent[:, 0] > extent[:, 2]), 0,
                            np.where(extent[:, 1] > extent[:, 2], 1, 2))
            rows = np.arange(len(segments))
            split = F32(0.5) * (hi[rows, axis] + lo[rows, axis])
            value = coords[np.arange(len(positions)), axis[seg_id]]
            less = value < split[seg_id]
            n_less = np.bincount(seg_id, weights=less, minlength=len(segments)).astype(int)
            boundary = begin + n_less
            wrong_left = ~less & (positions < boundary[seg_id])
            wrong_right = less & (positions >= boundary[seg_id])
            wl = positions[wrong_left]
            wr_pos, wr_seg = positions[wrong_right], seg_id[wrong_right]
            wr = wr_pos[np.lexsort((-wr_pos, wr_seg))]
            order[wl], order[wr] = order[wr], order[wl].copy()
            left_end = np.where(n_less == 0, begin + 1, boundary)
            node = np.full(count, -1)
            side = np.zeros(count, dtype=np.int8)
            node[order[positions]] = seg_id
            side[order[positions]] = positions >= left_end[seg_id]
            boxes = np.empty((len(segments), 2, 2, 3), dtype=F32)  # [node, child, lo/hi, xyz]
            for child, (b, e) in enumerate(((begin, left_end), (left_end, end))):
                sub_coords = pos[order[_ranges(b, e)]]
                boxes[:, child, 0] = np.minimum.reduceat(sub_coords, _starts(e - b), axis=0)
                boxes[:, child, 1] = np.maximum.reduceat(sub_coords, _starts(e - b), axis=0)
            self.node_of.append(node)
            self.side_of.append(side)
            self.child_boxes.append(boxes)
            children = np.concatenate([np.stack([begin, left_end], 1), np.stack([left_end, end], 1)])
            segments = children[children[:, 1] - children[:, 0] > MAX_LEAF_SIZE]
            segments = segments[np.argsort(segments[:, 0])]
        self.pos = pos
        self.slot = np.empty(count, dtype=np.intp)
        self.slot[order] = np.arange(count)

    def visit_keys(self, query, other):
        """(P, levels + 1) keys for (query agent, other agent) pairs: per level 0 if `other`
        is in the child the query visits first, 1 if in the other one (0 below its leaf), then
        its index in the tree's agent array. Lexicographic order = RVO2-3D's visiting order."""
        keys = np.zeros((len(query), len(self.node_of) + 1), dtype=np.int64)
        p = self.pos[query]
        for level, (node_of, side_of, boxes) in enumerate(zip(self.node_of, self.side_of,
                                                            self.child_boxes)):
            node = node_of[other]
            inside = node >= 0
            box = boxes[np.where(inside, node, 0)]
            near_left = _box_dist_sq(p, box[:, 0]) < _box_dist_sq(p, box[:, 1])
            first = np.where(near_left, 0, 1)
            keys[:, level] = np.where(inside, side_of[other] != first, 0)
        keys[:, -1] = self.slot[other]
        return keys


def _ranges(begin, end):
    """The concatenation of arange(b, e) over the (begin, end) pairs."""
    sizes = end - begin
    offsets = np.repeat(begin - _starts(sizes), sizes)
    return np.arange(int(sizes.sum())) + offsets


def _starts(sizes):
    return np.r_[0, np.cumsum(sizes)[:-1]].astype(np.intp)


def _box_dist_sq(p, box):
    """KdTree::queryAgentTreeRecursive's float32 squared distance from p to a child box
    (box[:, 0] min corner, box[:, 1] max corner), six terms summed in RVO2-3D's order."""
    zero = F32(0.0)
    total = None
    for k in range(3):
        below = np.maximum(zero, box[:, 0, k] - p[:, k])
        above = np.maximum(zero, p[:, k] - box[:, 1, k])
        for term in (below * below, above * above):
            total = term if total is None else total + term
    return total
