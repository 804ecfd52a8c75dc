"""RVO2-3D's linearProgram1/2/3/4, batched over agents, in float32 with RVO2-3D's operation order.

Vectors are float32 arrays with the component first: (3, K) per agent, (3, K, P) per plane.
Planes are given per agent: point and normal (3, K, P) (agent, then plane index), plus a (K, P)
`valid` mask for padding. The permitted side of a plane is dot(normal, v - point) >= 0.

Every agent runs RVO2-3D's incremental algorithm, with exactly its arithmetic: the loops are
event-driven rather than over the plane index. Between two planes that change the result,
RVO2-3D only tests planes (`dot(normal, point - result) > 0`) against an unchanged result, so
all those tests are made at once on the (K, P) arrays, and each round every agent jumps to its
own next violated plane (gathered per agent). The number of rounds is the largest number of
violated planes an agent meets, not the number of planes, and each agent's sequence of float32
operations is the one RVO2-3D performs, so results agree bit for bit.

NaN planes (RVO2-3D produces them for coincident agents with equal velocities) compare false
everywhere, as in RVO2-3D: they are never violated and never bound a line.

`num_hard` (linearProgram4 only) extends RVO2-3D for static obstacles: planes below it stay
hard in the fallback, as RVO2 (2-D) keeps obstacle lines; with num_hard = 0 it is RVO2-3D's.
"""
import numpy as np

F32 = np.float32
RVO3D_EPSILON = F32(1e-5)
_HALF = F32(0.5)
_ONE = F32(1.0)


def dot(a, b):
    """RVO2-3D's Vector3 dot product, x + y + z in that order, over the leading axis."""
    product = a * b
    return product[0] + product[1] + product[2]


# linearProgram2 with up to this many planes solves all its line programs at once
_DENSE_MAX_PLANES = 16
_NEXT = [1, 2, 0]
_PREV = [2, 0, 1]


def cross(a, b):
    return a[_NEXT] * b[_PREV] - a[_PREV] * b[_NEXT]


def normalize(v):
    """RVO2-3D's normalize: v / abs(v), the division by a reciprocal."""
    return v * (_ONE / np.sqrt(dot(v, v)))


def _pick(v, column):
    """Per-agent plane `column[k]` of a (3, K, P) array: (3, K)."""
    return v[:, np.arange(len(column)), column]


def _first(hits):
    """(has_any, index of the first True) per row of a (K, P) bool array."""
    return hits.any(axis=1), hits.argmax(axis=1)


class Planes:
    """A batch of per-agent planes: point and normal (3, K, P) (views into one (6, K, P) array,
    so taking agents is one gather) and the valid mask (K, P)."""

    __slots__ = ('data', 'point', 'normal', 'valid')

    def __init__(self, data, valid):
        self.data, self.valid = data, valid
        self.point, self.normal = data[:3], data[3:]

    @classmethod
    def of(cls, point, normal, valid):
        return cls(np.concatenate([point, normal]).astype(F32, copy=False), valid)

    def rows(self, rows):
        return Planes(self.data[:, rows], self.valid[rows])

    def first(self, width):
        """The planes before index `width` (views)."""
        return Planes(self.data[:, :, :width], self.valid[:, :width])

    @property
    def count(self):
        return self.valid.shape[1]

    def violation(self, result):
        """dot(normal, point - result) for every plane, (K, P); result (3, K)."""
        return dot(self.normal, self.point - result[:, :, None])


def linear_program1(planes, bound, line_point, line_dir, radius, opt, direction_opt):
    """linearProgram1: the best point on a line (per agent, (3, K)) within the speed sphere and
    planes j < bound. Returns (ok, result)."""
    width = min(int(bound.max(initial=0)), planes.count)
    mask = planes.valid[:, :width] & (np.arange(width)[None, :] < bound[:, None])
    return _on_line(planes.point[:, :, :width], planes.normal[:, :, :width], mask, line_point,
                    line_dir, radius, opt, direction_opt)


def _on_line(point, normal, mask, line_point, line_dir, radius, opt, direction_opt):
    """linearProgram1 for lines of any batch shape B ((3, *B)) bounded by the planes (3, *B, W)
    where `mask` (*B, W) is set (broadcasting). The loop over the bounding planes becomes a
    reduction: tLeft only grows and tRight only shrinks, so failing early or at the end is the
    same, and the max/min are exact. Returns (ok, result)."""
    dot_product = dot(line_point, line_dir)
    discriminant = dot_product * dot_product + radius * radius - dot(line_point, line_point)
    fail = discriminant < 0.0
    root = np.sqrt(discriminant)
    t_left = -dot_product - root
    t_right = -dot_product + root
    if mask.shape[-1]:
        numerator = dot(point - line_point[..., None], normal)
        denominator = dot(line_dir[..., None], normal)
        parallel = denominator * denominator <= RVO3D_EPSILON
        fail |= (mask & parallel & (numerator > 0.0)).any(axis=-1)
        t = numerator / denominator
        # std::max(tLeft, t) / std::min(tRight, t) keep tLeft / tRight when t is NaN: fmax/fmin.
        bounding = mask & ~parallel
        t_left = np.fmax(t_left, np.fmax.reduce(
            np.where(bounding & (denominator >= 0.0), t, -np.inf), axis=-1).astype(F32))
        t_right = np.fmin(t_right, np.fmin.reduce(
            np.where(bounding & ~(denominator >= 0.0), t, np.inf), axis=-1).astype(F32))
        fail |= t_left > t_right
    if direction_opt:
        t = np.where(dot(opt, line_dir) > 0.0, t_right, t_left)
    else:
        t = dot(line_dir, opt - line_point)
        t = np.where(t < t_left, t_left, np.where(t > t_right, t_right, t))
    return ~fail, line_point + t * line_dir


def _line_of(point_j, normal_j, point_no, normal_no):
    """linearProgram2's line where plane j meets plane planeNo (any batch shape): direction,
    point, and whether the planes are (almost) parallel."""
    cross_product = cross(normal_j, normal_no)
    parallel = dot(cross_product, cross_product) <= RVO3D_EPSILON
    line_dir = normalize(cross_product)
    line_normal = cross(line_dir, normal_no)
    line_point = point_no + (dot(point_j - point_no, normal_j)
                             / dot(line_normal, normal_j)) * line_normal
    return line_dir, line_point, parallel


def linear_program2(planes, plane_no, radius, opt, direction_opt):
    """linearProgram2: the best point on plane `plane_no` (per agent) within the speed sphere
    and planes j < plane_no. Returns (ok, result)."""
    point = _pick(planes.point, plane_no)
    normal = _pick(planes.normal, plane_no)
    plane_dist = dot(point, normal)
    plane_dist_sq = plane_dist * plane_dist
    radius_sq = radius * radius
    ok = ~(plane_dist_sq > radius_sq)
    plane_radius_sq = radius_sq - plane_dist_sq
    center = plane_dist * normal
    if direction_opt:
        projected = opt - dot(opt, normal) * normal
        length_sq = dot(projected, projected)
        on_rim = center + np.sqrt(plane_radius_sq / length_sq) * projected
        result = np.where(length_sq <= RVO3D_EPSILON, center, on_rim)
    else:
        result = opt + dot(point - opt, normal) * normal
        outside = dot(result, result) > radius_sq
        if outside.any():
            offset = result - center
            on_rim = center + np.sqrt(plane_radius_sq / dot(offset, offset)) * offset
            result = np.where(outside, on_rim, result)
    # Planes j < plane_no, in order: each one the result violates moves it (linearProgram1).
    planes = planes.first(int(plane_no.max(initial=0)))
    if planes.count <= _DENSE_MAX_PLANES:
        return _walk_dense(planes, plane_no, point, normal, radius, opt, direction_opt, ok, result)
    start = np.zeros(len(plane_no), dtype=np.intp)
    open_ = np.flatnonzero(ok)
    index = np.arange(planes.count)[None, :]
    while open_.size and planes.count:
        sub_planes = planes.rows(open_)
        hits = ((sub_planes.violation(result[:, open_]) > 0.0) & sub_planes.valid
                & (index >= start[open_, None]) & (index < plane_no[open_, None]))
        has, j = _first(hits)
        open_, j = open_[has], j[has]
        if open_.size == 0:
            break
        sub_planes = sub_planes.rows(has)
        normal_j = _pick(sub_planes.normal, j)
        point_j = _pick(sub_planes.point, j)
        line_dir, line_point, parallel = _line_of(point_j, normal_j, point[:, open_],
                                                  normal[:, open_])
        moved, new = linear_program1(sub_planes, j, line_point, line_dir, radius[open_],
                                     opt[:, open_], direction_opt)
        moved &= ~parallel
        ok[open_[~moved]] = False
        result[:, open_[moved]] = new[:, moved]
        start[open_] = j + 1
        open_ = open_[moved]
    return ok, result


def _walk_dense(planes, plane_no, point, normal, radius, opt, direction_opt, ok, result):
    """linearProgram2's loop for few planes. The line program on plane j (bounded by planes
    before j) does not depend on the current result, so it is solved for every j at once; then
    the walk only decides which of those results RVO2-3D ends on: at plane j, if the current
    result violates it, it becomes the result on j (or the program fails)."""
    count, width = planes.valid.shape
    normal_j, point_j = planes.normal, planes.point
    line_dir, line_point, parallel = _line_of(point_j, normal_j, point[:, :, None],
                                              normal[:, :, None])
    index = np.arange(width)
    bounds = planes.valid[:, None, :] & (index[None, None, :] < index[None, :, None])
    moved, on_lines = _on_line(point_j[:, :, None, :], normal_j[:, :, None, :], bounds,
                               line_point, line_dir, radius[:, None], opt[:, :, None],
                               direction_opt)
    moved &= ~parallel
    # Option 0 is the start, option j + 1 the result on plane j; violated[k, j, m]: plane j
    # by option m.
    options = np.concatenate([result[:, :, None], on_lines], axis=2)
    violated = dot(normal_j[:, :, :, None], point_j[:, :, :, None] - options[:, :, None, :]) > 0.0
    active = planes.valid & (index[None, :] < plane_no[:, None])
    rows = np.arange(count)
    state = np.zeros(count, dtype=np.intp)
    for j in range(width):
        hit = ok & active[:, j] & violated[rows, j, state]
        ok &= ~(hit & ~moved[:, j])
        state[hit & moved[:, j]] = j + 1
    return ok, options[:, rows, state]


def linear_program3(planes, radius, opt, direction_opt):
    """linearProgram3: the point within the speed sphere and all planes closest to opt (or, with
    direction_opt, furthest along the unit vector opt). Returns (result, fail): fail is the
    plane index where it failed (result then satisfies the planes before it), -1 otherwise."""
    count = len(radius)
    if direction_opt:
        result = opt * radius
    else:
        outside = dot(opt, opt) > radius * radius
        result = np.where(outside, normalize(opt) * radius, opt) if outside.any() else opt.copy()
    fail = np.full(count, -1, dtype=np.intp)
    start = np.zeros(count, dtype=np.intp)
    open_ = np.arange(count)
    index = np.arange(planes.count)[None, :]
    while open_.size and planes.count:
        sub_planes = planes.rows(open_)
        hits = ((sub_planes.violation(result[:, open_]) > 0.0) & sub_planes.valid
                & (index >= start[open_, None]))
        has, i = _first(hits)
        open_, i = open_[has], i[has]
        if open_.size == 0:
            break
        ok, new = linear_program2(sub_planes.rows(has), i, radius[open_], opt[:, open_],
                                  direction_opt)
        result[:, open_[ok]] = new[:, ok]
        fail[open_[~ok]] = i[~ok]
        start[open_] = i + 1
        open_ = open_[ok]
    return result, fail


def linear_program4(planes, begin, radius, result, num_hard):
    """linearProgram4 from plane `begin` (per agent): the velocity that minimises the largest
    violation of the soft planes (planes below `num_hard` stay hard). Returns the result."""
    count = len(radius)
    result = np.array(result, dtype=F32)
    distance = np.zeros(count, dtype=F32)
    start = np.asarray(begin, dtype=np.intp).copy()
    open_ = np.arange(count)
    width = planes.count
    index = np.arange(width)[None, :]
    while open_.size:
        sub_planes = planes.rows(open_)
        hits = ((sub_planes.violation(result[:, open_]) > distance[open_, None])
                & sub_planes.valid & (index >= start[open_, None]))
        has, i = _first(hits)
        open_, i = open_[has], i[has]
        if open_.size == 0:
            break
        sub_planes = sub_planes.rows(has)
        normal_i = _pick(sub_planes.normal, i)
        point_i = _pick(sub_planes.point, i)
        projected = _projected_planes(sub_planes, i, normal_i, point_i, num_hard[open_])
        new, inner_fail = linear_program3(projected, radius[open_], normal_i, True)
        kept = inner_fail < 0
        result[:, open_[kept]] = new[:, kept]
        distance[open_] = dot(normal_i, point_i - result[:, open_])
        start[open_] = i + 1
    return result


def _projected_planes(planes, i, normal_i, point_i, num_hard):
    """linearProgram4's projPlanes for plane i (per agent): for soft planes j < i the plane of
    equal violation of i and j (skipped when j points the same way as i), hard planes as they
    are. Skipped planes are masked out of `valid`, which keeps the order of the others."""
    ni = normal_i[:, :, None]
    pi = point_i[:, :, None]
    nj, pj = planes.normal, planes.point
    cross_product = cross(nj, ni)
    parallel = dot(cross_product, cross_product) <= RVO3D_EPSILON
    same_direction = parallel & (dot(ni, nj) > 0.0)
    midpoint = _HALF * (pi + pj)
    line_normal = cross(cross_product, ni)
    on_line = pi + (dot(pj - pi, nj) / dot(line_normal, nj)) * line_normal
    point = np.where(parallel, midpoint, on_line)
    normal = normalize(nj - ni)
    index = np.arange(planes.count)[None, :]
    hard = index < num_hard[:, None]
    soft = planes.valid & (index < i[:, None]) & ~same_direction & ~hard
    point = np.where(hard, pj, point)
    normal = np.where(hard, nj, normal)
    return Planes.of(point, normal, soft | (hard & planes.valid))
