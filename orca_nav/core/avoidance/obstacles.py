"""Static polygon obstacles with RVO2 2.0.3 conventions, prepared once for ORCA.

A polygon is an (M, 2) array of vertices in counter-clockwise order (the inside is solid);
a 2-vertex polygon is a segment (an obstacle line usable from both sides). Clockwise polygons
are rejected by default; with `allow_enclosures=True` (the default of `prepare_obstacles`)
they are accepted as RVO2 treats them: an enclosure, solid outside (walls around a room or
the map border, as `map_polygons` emits them). Every vertex
starts a directed edge to the next vertex; RVO2 calls that vertex record an "obstacle".

`ObstacleSet(polygons)` validates the polygons and reproduces what RVO2's
`RVOSimulator::addObstacle` + `processObstacles` build:

- per vertex: the point, the unit direction of its outgoing edge, whether it is convex
  (`leftOf(prev, this, next) >= 0`; both ends of a segment are convex), and the
  previous/next vertex;
- the obstacle kd-tree (`KdTree::buildObstacleTreeRecursive`): each node's edge is chosen to
  balance the edges left and right of its supporting line, and an edge that straddles that
  line is cut in two at the crossing. The cut adds a vertex (convex, with the unit direction of
  the edge it cuts), so ORCA later sees the shorter edges, as RVO2 does.

`ObstacleSet.neighbors(positions, range_sq)` gives, for every agent, the edges RVO2's
`computeObstacleNeighbors` would return: the agent strictly on the outer (right) side of the
edge and squared distance to the segment strictly below `range_sq`, ordered by distance with
ties broken in the order RVO2's tree traversal inserts them.

The tree is built once (Python loop over tree nodes, numpy inside a node); queries are
vectorised over agents. RVO2's tree costs O(V^2) per level to build, so above
`RVO2_TREE_MAX_VERTICES` vertices (a noisy SLAM map: tens of thousands of one-cell specks) it
is not built: the edges stay whole (no splits) and neighbours come from a kd-tree over points
sampled along the edges (asked with a margin, and its answer kept while the agents stay within
that margin: they move little per cycle), with the same exact side and distance tests, ordered
by distance then edge index. Nothing is dropped or moved: every edge within range of an agent is
still its neighbour, only RVO2's tie order and its tree-induced edge cuts are not reproduced. Keep
the ObstacleSet and pass it to `solver.compute_velocities` when the obstacles do not change
between calls.

One file, as in RVO2: the polygon checks, RVO2's obstacle kd-tree and the edge kd-tree prefilter
are one preparation whose conventions (vertex order, convexity, `next`/`previous`) every part
relies on; split, each part would restate them.
"""
import itertools
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

RVO_EPSILON = 1e-5  # RVO2's RVO_EPSILON, used by the tree split classification
# Up to this many vertices the obstacles get RVO2's own tree (its build costs O(V^2) per level:
# ~0.3 s at 800 vertices, minutes at 80,000); beyond it, a kd-tree over the edges.
RVO2_TREE_MAX_VERTICES = 1024
# Above this many agent-edge pairs, prefilter with a kd-tree. Its candidates serve the following
# calls too (below): even at a few hundred pairs that costs no more than testing all of them,
# and from a thousand on much less (100 robots, 132 edges: 0.7 -> 0.3 ms a call).
_BRUTE_FORCE_PAIRS = 1_000
_PACKED_DIGITS = 39          # traversal digits that fit one int64 as a base-3 number
_ROW_CHUNK = 512
# The kd-tree prefilter looks this much further (relative to the reach) than asked and keeps its
# answer while no agent has moved out of that margin: agents move little per control cycle.
_CANDIDATE_SKIN = 0.25


def prepare_obstacles(polygons, allow_enclosures=True,
                      rvo2_tree_max_vertices=RVO2_TREE_MAX_VERTICES):
    """Validate polygons and build RVO2's obstacle structure once (an ObstacleSet).

    Counter-clockwise polygons are solid inside; clockwise ones are accepted here as RVO2
    enclosures (solid outside, e.g. room walls from `map_polygons`) unless
    allow_enclosures=False. A plain list passed as `obstacles` must be counter-clockwise.
    Above `rvo2_tree_max_vertices` vertices RVO2's tree is not built (see the module docstring).
    """
    return ObstacleSet(polygons, allow_enclosures=allow_enclosures,
                       rvo2_tree_max_vertices=rvo2_tree_max_vertices)


def signed_area(polygon):
    """Signed area of an (M, 2) vertex array: > 0 counter-clockwise, < 0 clockwise."""
    p = np.asarray(polygon, dtype=float)
    q = np.roll(p, -1, axis=0)
    return 0.5 * float(np.sum(p[:, 0] * q[:, 1] - q[:, 0] * p[:, 1]))


def validate_polygons(polygons, argument='obstacles', allow_enclosures=False):
    """Check a list of polygons and return them as float64 (M, 2) arrays.

    Raises ValueError naming `argument[k]` (and the vertex index) for: not (M, 2), fewer than
    2 vertices, non-finite values, repeated consecutive vertices (zero-length edge), zero
    area, and clockwise winding for 3+ vertices unless `allow_enclosures` (RVO2 then treats
    the polygon as an enclosure: solid outside). The value checks run on all polygons at once
    (maps give tens of thousands); the first polygon with a problem is named.
    """
    if isinstance(polygons, np.ndarray) and polygons.ndim == 2:
        raise ValueError(f'{argument} must be a list of (M, 2) vertex arrays, not one array')
    checked = []
    for k, polygon in enumerate(polygons):
        name = f'{argument}[{k}]'
        try:
            vertices = np.asarray(polygon, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise ValueError(f'{name}: not a numeric vertex array ({error})') from None
        if vertices.ndim != 2 or vertices.shape[1] != 2:
            raise ValueError(f'{name}: expected shape (M, 2), got {vertices.shape}')
        if len(vertices) < 2:
            raise ValueError(f'{name}: needs at least 2 vertices, got {len(vertices)}')
        checked.append(vertices)
    if not checked:
        return checked
    vertices, first, following, _ = _concatenated(checked)
    owner = np.repeat(np.arange(len(checked)), np.diff(np.append(first, len(vertices))))
    not_finite = ~np.isfinite(vertices).all(axis=1)
    with np.errstate(invalid='ignore'):
        zero_edge = (vertices[following] - vertices == 0.0).all(axis=1)
        cross = vertices[:, 0] * vertices[following, 1] - vertices[following, 0] * vertices[:, 1]
    area = 0.5 * np.add.reduceat(cross, first)
    bad = np.zeros(len(checked), dtype=bool)
    bad[owner[not_finite | zero_edge]] = True
    sizes = np.diff(np.append(first, len(vertices)))
    bad |= (sizes >= 3) & ((area == 0.0) | ((area < 0.0) & (not allow_enclosures)))
    if bad.any():
        k = int(np.argmax(bad))
        name = f'{argument}[{k}]'
        own = slice(first[k], first[k] + sizes[k])
        if not_finite[own].any():
            v = int(np.argmax(not_finite[own]))
            raise ValueError(f'{name}: vertex {v} is not finite: {checked[k][v].tolist()}')
        if zero_edge[own].any():
            v = int(np.argmax(zero_edge[own]))
            raise ValueError(f'{name}: vertex {v} repeats the next vertex (zero-length edge)')
        raise ValueError(
            f'{name}: vertices must be counter-clockwise (signed area '
            f'{signed_area(checked[k]):.6g}); reverse the vertex order (clockwise polygons '
            'are enclosures only where allow_enclosures=True)')
    return checked


def _concatenated(polygons):
    """All vertices (V, 2), each polygon's first index, and each vertex's next and previous
    vertex within its own polygon."""
    sizes = np.array([len(p) for p in polygons], dtype=np.intp)
    first = np.cumsum(sizes) - sizes
    vertices = np.concatenate(polygons) if polygons else np.zeros((0, 2))
    index = np.arange(len(vertices), dtype=np.intp)
    following = index + 1
    preceding = index - 1
    last = first + sizes - 1
    following[last] = first
    preceding[first] = last
    return vertices, first, following, preceding


def _left_of(ax, ay, bx, by, cx, cy):
    """RVO2 leftOf(a, b, c) = det(a - c, b - a): > 0 when c is left of the line a -> b."""
    return (ax - cx) * (by - ay) - (ay - cy) * (bx - ax)


@dataclass
class _TreeNode:
    edge: int
    parent: int
    side: int  # 0: left child of parent, 1: right child, -1: root


class ObstacleSet:
    """Validated, RVO2-processed obstacles: vertex records, split edges and the obstacle tree.

    Attributes (V = vertices after splitting): `points` (V, 2), `unit_dir` (V, 2),
    `convex` (V,), `next_vertex` (V,), `prev_vertex` (V,). Vertex v starts edge
    points[v] -> points[next_vertex[v]].
    """

    def __init__(self, polygons=(), argument='obstacles', allow_enclosures=False,
                 rvo2_tree_max_vertices=RVO2_TREE_MAX_VERTICES):
        self.polygons = validate_polygons(polygons, argument, allow_enclosures)
        vertices, first, following, preceding = _concatenated(self.polygons)
        direction = vertices[following] - vertices
        direction /= np.sqrt((direction ** 2).sum(axis=1))[:, None]
        sizes = np.diff(np.append(first, len(vertices)))
        is_convex = _left_of(vertices[preceding, 0], vertices[preceding, 1], vertices[:, 0],
                             vertices[:, 1], vertices[following, 0],
                             vertices[following, 1]) >= 0.0
        is_convex[np.repeat(sizes == 2, sizes)] = True      # both ends of a segment
        # RVO2's tree (edge splits, traversal order) for parity; a big map (tens of thousands
        # of edges: a noisy SLAM map) keeps its edges whole and is searched with a kd-tree.
        self.rvo2_tree = 0 < len(vertices) <= rvo2_tree_max_vertices
        self._nodes = []
        self._polygon_next = following.tolist()  # before any split
        if self.rvo2_tree:
            # Python lists while the tree is built: splitting appends one vertex at a time.
            self._points = list(map(tuple, vertices))
            self._unit_dir = list(map(tuple, direction))
            self._convex = is_convex.tolist()
            self._next = following.tolist()
            self._prev = preceding.tolist()
            self._origin = list(range(len(vertices)))  # the polygon vertex each one comes from
            self._build_tree()
        else:
            self._points, self._unit_dir, self._convex = vertices, direction, is_convex
            self._next, self._prev = following, preceding
            self._origin = np.arange(len(vertices))
        self.points = np.array(self._points, dtype=np.float64).reshape(-1, 2)
        self.unit_dir = np.array(self._unit_dir, dtype=np.float64).reshape(-1, 2)
        self.convex = np.array(self._convex, dtype=bool)
        self.next_vertex = np.array(self._next, dtype=np.intp)
        self.prev_vertex = np.array(self._prev, dtype=np.intp)
        self._prepare_queries()

    def __len__(self):
        return len(self.points)

    # ---- RVO2 obstacle tree (one-time) -----------------------------------------------
    def _split_counts(self, edges):
        """Left/right edge counts for every candidate splitting edge (RVO2's balance measure)."""
        start = np.array([self._points[e] for e in edges])
        end = np.array([self._points[self._next[e]] for e in edges])
        ax, ay, bx, by = start[:, 0], start[:, 1], end[:, 0], end[:, 1]
        left_count = np.empty(len(edges), dtype=np.int64)
        right_count = np.empty(len(edges), dtype=np.int64)
        for start in range(0, len(edges), _ROW_CHUNK):
            rows = slice(start, start + _ROW_CHUNK)
            j1 = _left_of(ax[rows, None], ay[rows, None], bx[rows, None], by[rows, None],
                          ax[None, :], ay[None, :])
            j2 = _left_of(ax[rows, None], ay[rows, None], bx[rows, None], by[rows, None],
                          bx[None, :], by[None, :])
            is_left = (j1 >= -RVO_EPSILON) & (j2 >= -RVO_EPSILON)
            is_right = ~is_left & (j1 <= RVO_EPSILON) & (j2 <= RVO_EPSILON)
            straddles = ~is_left & ~is_right
            own = np.arange(rows.start, rows.start + j1.shape[0])
            own_col = (own[:, None] == np.arange(len(edges))[None, :])
            left_count[rows] = ((is_left | straddles) & ~own_col).sum(axis=1)
            right_count[rows] = ((is_right | straddles) & ~own_col).sum(axis=1)
        return left_count, right_count

    def _build_tree(self):
        # RVO2 stops counting a candidate early once it cannot beat the best so far; the
        # candidate kept is the first one minimising (max(left, right), min(left, right)).
        stack = [(list(range(len(self._points))), -1, -1)]
        while stack:
            edges, parent, side = stack.pop()
            left_count, right_count = self._split_counts(np.array(edges))
            larger = np.maximum(left_count, right_count)
            smaller = np.minimum(left_count, right_count)
            best = int(np.lexsort((smaller, larger))[0])
            split = edges[best]
            node_index = len(self._nodes)
            self._nodes.append(_TreeNode(split, parent, side))
            ax, ay = self._points[split]
            bx, by = self._points[self._next[split]]
            left_edges, right_edges = [], []
            for edge in edges:
                if edge == split:
                    continue
                p1 = self._points[edge]
                end = self._next[edge]
                p2 = self._points[end]
                j1 = _left_of(ax, ay, bx, by, p1[0], p1[1])
                j2 = _left_of(ax, ay, bx, by, p2[0], p2[1])
                if j1 >= -RVO_EPSILON and j2 >= -RVO_EPSILON:
                    left_edges.append(edge)
                elif j1 <= RVO_EPSILON and j2 <= RVO_EPSILON:
                    right_edges.append(edge)
                else:
                    new = self._split_edge(edge, (ax, ay), (bx, by))
                    if j1 > 0.0:
                        left_edges.append(edge)
                        right_edges.append(new)
                    else:
                        right_edges.append(edge)
                        left_edges.append(new)
            # Depth-first, left subtree first, like RVO2's recursion.
            if right_edges:
                stack.append((right_edges, node_index, 1))
            if left_edges:
                stack.append((left_edges, node_index, 0))

    def _split_edge(self, edge, line_a, line_b):
        """Cut `edge` where it crosses the line a -> b; return the new vertex (RVO2 semantics)."""
        end = self._next[edge]
        (p1x, p1y), (p2x, p2y) = self._points[edge], self._points[end]
        ux, uy = line_b[0] - line_a[0], line_b[1] - line_a[1]
        # t = det(b - a, p1 - a) / det(b - a, p1 - p2)
        t = ((ux * (p1y - line_a[1]) - uy * (p1x - line_a[0]))
             / (ux * (p1y - p2y) - uy * (p1x - p2x)))
        new = len(self._points)
        self._points.append((p1x + t * (p2x - p1x), p1y + t * (p2y - p1y)))
        self._unit_dir.append(self._unit_dir[edge])
        self._origin.append(self._origin[edge])
        self._convex.append(True)
        self._prev.append(edge)
        self._next.append(end)
        self._next[edge] = new
        self._prev[end] = new
        return new

    def _prepare_queries(self):
        count = len(self.points)
        # float32 copies for the ORCA lines, which follow RVO2's float32 arithmetic:
        # unit directions as RVO2's normalize computes them, v * (1 / |v|).
        # A split vertex keeps the direction of the polygon edge it was cut from.
        self.points32 = self.points.astype(np.float32)
        origin = np.array(self._origin, dtype=np.intp)
        edge32 = (self.points32[np.array(self._polygon_next, dtype=np.intp)[origin]]
                  - self.points32[origin]) if count else np.zeros((0, 2), np.float32)
        length = np.sqrt(edge32[:, 0] * edge32[:, 0] + edge32[:, 1] * edge32[:, 1])
        self.unit_dir32 = edge32 * (np.float32(1.0) / length)[:, None]
        # The same, axis-major (2, V): the ORCA lines gather x and y of many vertices at once.
        self.points32_xy = np.ascontiguousarray(self.points32.T)
        self.unit_dir32_xy = np.ascontiguousarray(self.unit_dir32.T)
        # Each edge's (start x, y, end x, y, squared length) in float32, for `neighbors`.
        start32, end32 = self.points32_xy, self.points32_xy[:, self.next_vertex]
        vector32 = end32 - start32
        self._edges32 = (*start32, *end32, vector32[0] * vector32[0] + vector32[1] * vector32[1])
        self.edge_end = self.points[self.next_vertex] if count else np.zeros((0, 2))
        vector = self.edge_end - self.points
        self.edge_length_sq = (vector ** 2).sum(axis=1)
        # Ancestor chain of each edge's tree node, for RVO2's traversal order on distance ties.
        node_of_edge = np.empty(count, dtype=np.intp)
        for index, node in enumerate(self._nodes):
            node_of_edge[node.edge] = index
        chains = []
        for edge in range(count if self._nodes else 0):
            chain = []
            index = node_of_edge[edge]
            while self._nodes[index].parent >= 0:
                node = self._nodes[index]
                chain.append((self._nodes[node.parent].edge, node.side))
                index = node.parent
            chains.append(chain[::-1])
        depth = max((len(c) for c in chains), default=0)
        self._ancestor_edge = np.zeros((count, depth), dtype=np.intp)
        self._ancestor_side = np.full((count, depth), -1, dtype=np.int8)
        self._depth = np.array([len(c) for c in chains] if chains else np.zeros(count),
                               dtype=np.intp)
        for edge, chain in enumerate(chains):
            for level, (ancestor, side) in enumerate(chain):
                self._ancestor_edge[edge, level] = ancestor
                self._ancestor_side[edge, level] = side
        # Sample points along the edges (spacing <= _sample_spacing) for the kd-tree prefilter.
        self._sample_tree = None
        self._candidates = None     # the last prefilter answer, see _candidate_pairs
        self._all_pairs = (0, None, None)   # (agents, agent, edge): every pair, kept per count
        if count:
            lengths = np.sqrt(self.edge_length_sq)
            self._sample_spacing = max(float(np.median(lengths)), 1e-6)
            pieces = np.maximum(1, np.ceil(lengths / self._sample_spacing).astype(np.intp))
            self._sample_edge = np.repeat(np.arange(count), pieces)
            offsets = (np.arange(len(self._sample_edge))
                       - np.repeat(np.cumsum(pieces) - pieces, pieces))
            fraction = (offsets + 0.5) / np.repeat(pieces, pieces)
            self._sample_points = (self.points[self._sample_edge]
                                   + fraction[:, None] * vector[self._sample_edge])
            self._sample_half = 0.5 * float(np.max(lengths / pieces))
            if not self.rvo2_tree:      # every query of a big map goes through it
                self._sample_tree = cKDTree(self._sample_points)

    # ---- per-step query -------------------------------------------------------------
    def neighbors(self, positions, range_sq):
        """Obstacle neighbours of each agent, as RVO2's computeObstacleNeighbors finds them.

        positions (N, 2), range_sq (N,). Returns (agent, vertex) int arrays of equal length,
        sorted by agent, then by distance, then by RVO2's tree-insertion order.
        """
        count = len(self.points)
        n_agents = len(positions)
        if count == 0 or n_agents == 0:
            empty = np.zeros(0, dtype=np.intp)
            return empty, empty
        # float32 like RVO2, so near-ties order and the range cut-off agree with it.
        pos32 = positions.astype(np.float32)
        range32 = np.asarray(range_sq, dtype=np.float32)
        if self.rvo2_tree and n_agents * count <= _BRUTE_FORCE_PAIRS:
            if self._all_pairs[0] != n_agents:
                agent = np.repeat(np.arange(n_agents), count)
                edge = np.tile(np.arange(count), n_agents)
                agent.flags.writeable = edge.flags.writeable = False
                self._all_pairs = (n_agents, agent, edge)
            agent, edge = self._all_pairs[1:]
            # Every pair, agent-major: the edges' row against the agents' column (N, V), the
            # same arithmetic per pair as gathered pairs, without the gathers.
            ax, ay, bx, by, length_sq = self._edges32
            px, py, pair_range = pos32[:, :1], pos32[:, 1:], range32[:, None]
        else:
            agent, edge = self._candidate_pairs(positions, range_sq)
            px, py, pair_range = pos32[:, 0].take(agent), pos32[:, 1].take(agent), \
                range32.take(agent)
            ax, ay, bx, by, length_sq = (value.take(edge) for value in self._edges32)
        outside = _left_of(ax, ay, bx, by, px, py) < 0.0
        dist_sq = dist_sq_point_segment(ax, ay, bx, by, px, py, length_sq)
        keep = (outside & (dist_sq < pair_range)).reshape(-1)
        agent, edge, dist_sq = agent[keep], edge[keep], dist_sq.reshape(-1)[keep]
        if agent.size == 0:
            return agent, edge
        if self._ancestor_edge.shape[1]:
            order_keys = self._traversal_keys(pos32.take(agent, axis=0), edge)
            digits = order_keys.shape[1]
            if digits <= _PACKED_DIGITS:
                # The digits (0-2, most significant first) as one base-3 number: the same order.
                packed = order_keys.astype(np.int64) @ 3 ** np.arange(digits - 1, -1, -1,
                                                                      dtype=np.int64)
                order = np.lexsort((packed, dist_sq, agent))
            else:
                order = np.lexsort(tuple(order_keys[:, ::-1].T) + (dist_sq, agent))
        else:    # no tree: ties stay in edge order (the pairs come sorted by agent, edge)
            order = np.lexsort((dist_sq, agent))
        return agent[order], edge[order]

    def _candidate_pairs(self, positions, range_sq):
        """(agent, edge) pairs with a sample point of the edge within reach of the agent: a
        superset of the neighbours (samples are at most _sample_half from every edge point),
        sorted by agent then edge.

        The kd-tree is asked with a reach larger by _CANDIDATE_SKIN, and the answer serves the
        next calls as long as every agent (row) stays within that margin of where it was: a
        sample within the reach of its new position is within the larger reach of the old one
        (a Verlet list). The exact side and distance tests in `neighbors` do the rest."""
        reach = np.sqrt(range_sq) + self._sample_half + 1e-9
        cached = self._candidates    # one read: a tuple replaced whole, never changed
        if cached is not None and len(cached[0]) == len(positions):
            built_at, built_reach, agent, edge = cached
            moved = positions - built_at
            if (np.sqrt(moved[:, 0] * moved[:, 0] + moved[:, 1] * moved[:, 1]) + reach
                    <= built_reach).all():
                return agent, edge
        if self._sample_tree is None:
            self._sample_tree = cKDTree(self._sample_points)
        built_reach = reach * (1.0 + _CANDIDATE_SKIN)
        found = self._sample_tree.query_ball_point(positions, built_reach)
        counts = np.fromiter(map(len, found), dtype=np.intp, count=len(found))
        samples = np.fromiter(itertools.chain.from_iterable(found), dtype=np.intp,
                              count=int(counts.sum()))
        agents = np.repeat(np.arange(len(positions), dtype=np.int64), counts)
        key = agents * len(self.points) + self._sample_edge[samples]
        key.sort()
        first = np.ones(len(key), dtype=bool)     # drop an edge's other samples
        first[1:] = key[1:] != key[:-1]
        key = key[first]
        agent = (key // len(self.points)).astype(np.intp)
        edge = (key % len(self.points)).astype(np.intp)
        self._candidates = (positions.copy(), built_reach, agent, edge)
        return agent, edge

    def _traversal_keys(self, agent_positions, edge):
        """Digits giving RVO2's in-order traversal position of each edge for its agent.

        At each ancestor the query first visits the child on the agent's side (digit 0),
        then the node itself (digit 1), then the other child (digit 2).
        """
        depth = self._ancestor_edge.shape[1]
        digits = np.zeros((len(edge), depth + 1), dtype=np.int8)
        if depth:
            # Rows gathered by take, coordinates from the axis-major copy: numpy's row indexing
            # of these narrow tables costs several times the rest of the arithmetic.
            ancestors = self._ancestor_edge.take(edge, axis=0)
            sides = self._ancestor_side.take(edge, axis=0)
            ends = self.next_vertex.take(ancestors)
            x, y = self.points32_xy
            ax, ay = x.take(ancestors), y.take(ancestors)
            bx, by = x.take(ends), y.take(ends)
            near_side = np.where(_left_of(ax, ay, bx, by, agent_positions[:, :1],
                                          agent_positions[:, 1:]) >= 0.0, 0, 1)
            digits[:, :depth] = np.where(sides < 0, 0, np.where(sides == near_side, 0, 2))
        digits[np.arange(len(edge)), self._depth[edge]] = 1
        return digits


def dist_sq_point_segment(ax, ay, bx, by, cx, cy, length_sq):
    """RVO2 distSqPointLineSegment(a, b, c), vectorised (same operation order)."""
    r = ((cx - ax) * (bx - ax) + (cy - ay) * (by - ay)) / length_sq
    # Exact endpoints outside [0, 1], so a shared vertex gives bit-equal distances to both
    # of its edges (RVO2 then orders the tie by tree traversal).
    qx = np.where(r < 0.0, ax, np.where(r > 1.0, bx, ax + r * (bx - ax)))
    qy = np.where(r < 0.0, ay, np.where(r > 1.0, by, ay + r * (by - ay)))
    dx = cx - qx
    dy = cy - qy
    return dx * dx + dy * dy


def as_obstacle_set(obstacles, argument='obstacles'):
    """Accept an ObstacleSet, None or a list of polygons; return an ObstacleSet."""
    if isinstance(obstacles, ObstacleSet):
        return obstacles
    if obstacles is None:
        return ObstacleSet(())
    return ObstacleSet(obstacles, argument)
