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

The 2-D search (`neighbors`) is not shared: it orders by float64 distance, which RVO2 2-D
parity tolerates, while RVO2-3D's lattices tie float32 distances all the time and its tie order
decides which neighbours are kept.
"""
import numpy as np
from scipy.spatial import cKDTree

from .linear_program3d import F32
from .neighbors import without_unused_slots

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
    return without_unused_slots(neighbors, kept)


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
    return (~full_window | (last_sq > bound.astype(np.float64) * (1.0 + _RELATIVE_SLACK))
            | (max_neighbors == 0))


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
    # In distance order: runs of equal distances; `group` is the position where a run starts.
    dist = sorted_d[tied]
    same = np.zeros(dist.shape, dtype=bool)
    same[:, 1:] = (dist[:, 1:] == dist[:, :-1]) & np.isfinite(dist[:, 1:])
    in_run = same.copy()
    in_run[:, :-1] |= same[:, 1:]
    group = np.maximum.accumulate(np.where(same, 0, np.arange(width)[None, :]), axis=1)
    # Visiting keys only inside runs (elsewhere the distance alone orders).
    rows, cols = np.nonzero(in_run)
    tree = AgentTree3d(pos)
    tied_order = order[tied]
    bits, slot = tree.visit_keys(tied[rows], cand[tied[rows], tied_order[rows, cols]])
    levels = bits.shape[1]
    slot_bits = max(int(len(pos) - 1).bit_length(), 1)
    shift = levels + slot_bits
    if shift + int(width).bit_length() <= 63:
        # One int64 per entry: run start, then the path bits, then the slot.
        key = slot.astype(np.int64)
        for level in range(levels):
            key |= bits[:, level].astype(np.int64) << (shift - 1 - level)
        composite = group.astype(np.int64) << shift
        composite[rows, cols] |= key
        permutation = np.argsort(composite, axis=1, kind='stable')
    else:  # a very deep tree (many coincident agents): sort on the columns instead
        flat = rows * width + cols
        columns = [np.zeros(dist.size, dtype=np.int64) for _ in range(levels + 1)]
        columns[0][flat] = slot
        for level in range(levels):
            columns[levels - level][flat] = bits[:, level]
        row_of = np.repeat(np.arange(len(tied)), width)
        permutation = np.lexsort(columns + [group.ravel(), row_of]).reshape(len(tied), width)
        permutation -= (np.arange(len(tied)) * width)[:, None]
    order[tied] = np.take_along_axis(tied_order, permutation, axis=1)
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
            boxes = np.empty((len(segments), 12), dtype=F32)  # per child: lo xyz, hi xyz
            for child, (b, e) in enumerate(((begin, left_end), (left_end, end))):
                sub_coords = pos[order[_ranges(b, e)]]
                starts = _starts(e - b)
                boxes[:, 6 * child:6 * child + 3] = np.minimum.reduceat(sub_coords, starts, axis=0)
                boxes[:, 6 * child + 3:6 * child + 6] = np.maximum.reduceat(sub_coords, starts,
                                                                            axis=0)
            self.node_of.append(node)
            self.side_of.append(side)
            self.child_boxes.append(boxes)
            children = np.concatenate([np.stack([begin, left_end], 1),
                                       np.stack([left_end, end], 1)])
            segments = children[children[:, 1] - children[:, 0] > MAX_LEAF_SIZE]
            segments = segments[np.argsort(segments[:, 0])]
        self.pos = pos
        self.slot = np.empty(count, dtype=np.intp)
        self.slot[order] = np.arange(count)

    def visit_keys(self, query, other):
        """Visiting keys of (query agent, other agent) pairs: (P, levels) path bits, 0 where
        `other` lies in the child the query visits first (the nearer box; the right one on
        equal distances), 1 in the other child, 0 below its leaf; and its slot in the tree's
        agent array (the order within a leaf). Lexicographic order of (bits, slot) is
        RVO2-3D's visiting order."""
        bits = np.zeros((len(query), len(self.node_of)), dtype=bool)
        for level, (node_of, side_of, boxes) in enumerate(zip(self.node_of, self.side_of,
                                                            self.child_boxes)):
            node = node_of[other]
            inside = np.flatnonzero(node >= 0)
            if inside.size == 0:
                break
            p = self.pos[query[inside]]
            box = boxes[node[inside]]   # (P, 12): left lo xyz, left hi xyz, right lo, right hi
            dist_sq = []
            for child in (0, 6):
                total = None
                for k in range(3):
                    # KdTree's six-term sum: of each axis' two terms one is 0, same sum.
                    gap = np.maximum(np.maximum(box[:, child + k] - p[:, k],
                                                p[:, k] - box[:, child + 3 + k]), F32(0.0))
                    total = gap * gap if total is None else total + gap * gap
                dist_sq.append(total)
            first_right = ~(dist_sq[0] < dist_sq[1])
            bits[inside, level] = side_of[other[inside]].astype(bool) != first_right
        return bits, self.slot[other]


def _ranges(begin, end):
    """The concatenation of arange(b, e) over the (begin, end) pairs."""
    sizes = end - begin
    offsets = np.repeat(begin - _starts(sizes), sizes)
    return np.arange(int(sizes.sum())) + offsets


def _starts(sizes):
    return np.r_[0, np.cumsum(sizes)[:-1]].astype(np.intp)
