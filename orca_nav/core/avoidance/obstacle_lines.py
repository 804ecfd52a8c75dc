"""Obstacle ORCA lines (RVO2 `Agent::computeNewVelocity`, obstacle part), batched over
(agent, edge) pairs: the already-covered test, collisions with vertices and edges, convex and
concave vertices, legs, legs cut off by neighbouring edges, and the cut-off line.
"""
import numpy as np

from .linear_program import RVO_EPSILON

_COVERED_TEST_CELLS = 1 << 22   # (agent, candidate, earlier line) cells per covered-test block


def _normalize(v):
    """RVO2's normalize in float32 of the columns of v (2, K): v * (1 / sqrt(v . v)), zero
    vectors left as zero."""
    sq = v * v
    length = np.sqrt(sq[0] + sq[1])
    inv = np.float32(1.0) / np.where(length > 0.0, length, np.float32(1.0))
    return v * inv


def _det(ax, ay, bx, by):
    return ax * by - ay * bx


# Degenerate pairs give inf or NaN in branches that are not theirs: no warnings for those.
@np.errstate(divide='ignore', invalid='ignore', over='ignore')
def _obstacle_line(obstacles, vertex, position, velocity, radius, inv_time):
    """ORCA line of each (agent, obstacle edge) pair; vectorised Agent::computeNewVelocity
    obstacle branch, in float32 with RVO2's operation order (near contact its legs are
    ill-conditioned too). position and velocity (2, P) and radius, inv_time (P,) are the pairs'
    agents', float32. Vectors are kept axis-major (2, P), x and y rows: what both components
    undergo is one numpy call, element for element the arithmetic of one component at a time.
    Returns (lines (4, P): point x, y, direction x, y; added (P,) bool)."""
    f32 = np.float32
    zero = f32(0.0)
    points, unit_dir, convex = obstacles.points32_xy, obstacles.unit_dir32_xy, obstacles.convex
    vertex2 = obstacles.next_vertex[vertex]
    p1, p2 = points.take(vertex, axis=1), points.take(vertex2, axis=1)
    r1, r2 = p1 - position, p2 - position
    sq = r1 * r1
    dist_sq1 = sq[0] + sq[1]
    sq = r2 * r2
    dist_sq2 = sq[0] + sq[1]
    radius_sq = radius * radius
    ov = p2 - p1
    away = -r1
    along, sq = away * ov, ov * ov
    s = (along[0] + along[1]) / (sq[0] + sq[1])
    off = away - s * ov
    sq = off * off
    dist_sq_line = sq[0] + sq[1]
    convex1, convex2 = convex[vertex], convex[vertex2]
    u1, u2 = unit_dir.take(vertex, axis=1), unit_dir.take(vertex2, axis=1)
    pu1 = unit_dir.take(obstacles.prev_vertex[vertex], axis=1)

    count = len(vertex)
    lines = np.zeros((4, count), dtype=f32)
    lines[2] = 1.0
    added = np.zeros(count, dtype=bool)

    # Already colliding with the left vertex, the right vertex or the segment.
    hit_left = (s < 0.0) & (dist_sq1 <= radius_sq)
    hit_right = ~hit_left & (s > 1.0) & (dist_sq2 <= radius_sq)
    hit_segment = ~hit_left & ~hit_right & (s >= 0.0) & (s <= 1.0) & (dist_sq_line <= radius_sq)
    rest = ~(hit_left | hit_right | hit_segment)
    if not rest.all():      # rare: most cycles nobody touches an obstacle
        add = np.flatnonzero(hit_left & convex1)
        lines[2:, add] = _normalize(np.stack([-r1[1, add], r1[0, add]]))
        added[add] = True
        add = np.flatnonzero(hit_right & convex2 & (_det(r2[0], r2[1], u2[0], u2[1]) >= 0.0))
        lines[2:, add] = _normalize(np.stack([-r2[1, add], r2[0, add]]))
        added[add] = True
        add = np.flatnonzero(hit_segment)
        lines[2:, add] = -u1[:, add]
        added[add] = True

    oblique_left = rest & (s < 0.0) & (dist_sq_line <= radius_sq)
    oblique_right = rest & ~oblique_left & (s > 1.0) & (dist_sq_line <= radius_sq)
    # Obliquely viewed past a non-convex vertex: ignored.
    rest &= ~(oblique_left & ~convex1) & ~(oblique_right & ~convex2)
    # Usually every pair remains: a slice then selects them without copying.
    sel = slice(None) if rest.all() else np.flatnonzero(rest)
    if not rest.any():
        return lines, added
    # From here on, only the remaining pairs. When viewed obliquely both legs come from one
    # vertex (RVO2 sets obstacle2 = obstacle1, or obstacle1 = obstacle2).
    ol, orr = oblique_left[sel], oblique_right[sel]
    same = ol | orr
    oblique = same.any()

    def pick(cond, a, b):       # a where cond, else b, over the remaining pairs
        return np.where(cond, a[..., sel], b[..., sel]) if oblique else b[..., sel]
    q1, q2 = pick(orr, p2, p1), pick(ol, p1, p2)
    d1, d2 = pick(orr, dist_sq2, dist_sq1), pick(ol, dist_sq1, dist_sq2)
    c1, c2 = pick(orr, convex2, convex1), pick(ol, convex1, convex2)
    q1u, q1pu, q2u = pick(orr, u2, u1), pick(orr, u1, pu1), pick(ol, u1, u2)
    e1 = u1[:, sel]  # the original obstacle1's edge direction
    rad, rsq, it = radius[sel], radius_sq[sel], inv_time[sel]
    v, o = velocity[:, sel], position[:, sel]
    a1, a2 = q1 - o, q2 - o
    leg1 = np.sqrt(np.maximum(d1 - rsq, zero))
    leg2 = np.sqrt(np.maximum(d2 - rsq, zero))
    inv1 = f32(1.0) / d1
    inv2 = f32(1.0) / d2
    # left: (a1x * leg1 - a1y * rad, a1x * rad + a1y * leg1) / d1;
    # right: (a2x * leg2 + a2y * rad, -a2x * rad + a2y * leg2) / d2.
    remaining = len(same)
    by_leg, by_rad = a1 * leg1, a1 * rad
    left = np.empty((2, remaining), dtype=f32)
    np.subtract(by_leg[0], by_rad[1], out=left[0])
    np.add(by_rad[0], by_leg[1], out=left[1])
    left = np.where(c1, left * inv1, -e1)
    by_leg, by_rad = a2 * leg2, a2 * rad
    right = np.empty((2, remaining), dtype=f32)
    np.add(by_leg[0], by_rad[1], out=right[0])
    np.add(-by_rad[0], by_leg[1], out=right[1])
    right = np.where(c2, right * inv2, e1)
    # Legs never point into a neighbouring edge at a convex vertex: use that edge instead
    # ("foreign" leg; projecting onto it adds no constraint).
    back = -q1pu
    left_foreign = c1 & (_det(left[0], left[1], back[0], back[1]) >= 0.0)
    left = np.where(left_foreign, back, left)
    right_foreign = c2 & (_det(right[0], right[1], q2u[0], q2u[1]) <= 0.0)
    right = np.where(right_foreign, q2u, right)

    lc, rc = it * a1, it * a2  # cut-off centres
    cv = rc - lc
    fl, fr = v - lc, v - rc
    along, sq = fl * cv, cv * cv
    t = np.where(same, f32(0.5), (along[0] + along[1]) / (sq[0] + sq[1]))
    along = fl * left
    t_left = along[0] + along[1]
    along = fr * right
    t_right = along[0] + along[1]
    scale = rad * it

    chosen_lines = np.zeros((4, remaining), dtype=f32)
    chosen_lines[2] = 1.0
    point, direction = chosen_lines[:2], chosen_lines[2:]
    ladd = np.zeros(remaining, dtype=bool)
    circle_left = ((t < 0.0) & (t_left < 0.0)) | (same & (t_left < 0.0) & (t_right < 0.0))
    circle_right = ~circle_left & (t > 1.0) & (t_right < 0.0)
    for chosen, centre, f in ((circle_left, lc, fl), (circle_right, rc, fr)):
        if not chosen.any():
            continue
        rows = chosen.nonzero()[0]
        w = _normalize(f.take(rows, axis=1))
        direction[0, rows] = w[1]
        direction[1, rows] = -w[0]
        point[:, rows] = centre.take(rows, axis=1) + scale[rows] * w
        ladd |= chosen

    open_ = ~(circle_left | circle_right)
    inf = f32(np.inf)
    e = v - (lc + t * cv)
    sq = e * e
    dist_cutoff = np.where((t < 0.0) | (t > 1.0) | same, inf, sq[0] + sq[1])
    e = v - (lc + t_left * left)
    sq = e * e
    dist_left = np.where(t_left < 0.0, inf, sq[0] + sq[1])
    e = v - (rc + t_right * right)
    sq = e * e
    dist_right = np.where(t_right < 0.0, inf, sq[0] + sq[1])
    on_cutoff = open_ & (dist_cutoff <= dist_left) & (dist_cutoff <= dist_right)
    on_left = open_ & ~on_cutoff & (dist_left <= dist_right) & ~left_foreign
    on_right = open_ & ~on_cutoff & ~(dist_left <= dist_right) & ~right_foreign
    line = np.where(on_cutoff, -q1u, np.where(on_left, left, -right))
    anchor = np.where(on_right, rc, lc)
    rows = (on_cutoff | on_left | on_right).nonzero()[0]
    line = line.take(rows, axis=1)
    direction[:, rows] = line
    scale = scale[rows]
    point[0, rows] = anchor[0, rows] + scale * -line[1]
    point[1, rows] = anchor[1, rows] + scale * line[0]
    ladd[rows] = True

    lines[:, sel] = chosen_lines
    added[sel] = ladd
    return lines, added


def obstacle_lines(obstacles, positions, velocities, radius, max_speed, time_horizon_obst):
    """Obstacle ORCA lines as (N, Lo) float64 arrays (built in float32, as RVO2 does) and
    the per-agent line count."""
    f32 = np.float32
    count = len(positions)
    reach = (time_horizon_obst.astype(f32) * max_speed.astype(f32) + radius.astype(f32))
    agent, vertex = obstacles.neighbors(positions, reach * reach)
    num_lines = np.zeros(count, dtype=np.intp)
    if agent.size == 0:
        empty = np.zeros((count, 0))
        return empty, empty, empty, empty, num_lines
    pos = positions.astype(f32)
    vel = velocities.astype(f32)
    rad = radius.astype(f32)
    inv_time = f32(1.0) / time_horizon_obst.astype(f32)
    # A line depends only on its agent and edge, so every candidate line is computed in one
    # batch (element-wise float32: the same values as one rank at a time). Whether it is kept
    # depends on the lines kept before it (RVO2's already-covered test): the test of every
    # candidate against every earlier one is computed at once, per agent, and the recurrence
    # over neighbour rank is solved by a few whole-array passes. A pair that adds no line is
    # never kept and covers nothing: only the others take part, in their order.
    lines, added = _obstacle_line(obstacles, vertex, pos.T.take(agent, axis=1),
                                  vel.T.take(agent, axis=1), rad[agent], inv_time[agent])
    candidates = added.nonzero()[0]
    if candidates.size == 0:
        empty = np.zeros((count, 0))
        return empty, empty, empty, empty, num_lines
    agent, vertex = agent[candidates], vertex[candidates]
    per_agent = np.bincount(agent, minlength=count)
    rank = np.arange(agent.size) - np.repeat(np.cumsum(per_agent) - per_agent, per_agent)
    width = int(per_agent.max())
    # Rank-major (rank, agent) arrays, so that the covered test's broadcasts run along the
    # agents (a last axis of a few ranks costs numpy several times the arithmetic).
    present = np.zeros((width, count), dtype=bool)
    present[rank, agent] = True
    # (point x, y, direction x, y) of each agent's candidates, padded with (0, 0, 1, 0); the
    # edge's two end points relative to the agent, padded with 0. One array each, so that
    # each is filled by one scatter.
    candidate = np.zeros((4, width, count), dtype=f32)
    candidate[2] = 1.0
    candidate[:, rank, agent] = lines[:, candidates]
    cand_x, cand_y, cand_dx, cand_dy = candidate
    ends = np.zeros((2, 2, width, count), dtype=f32)     # (end, axis, rank, agent)
    end_points = obstacles.points32[np.array([vertex, obstacles.next_vertex[vertex]])]
    ends[:, :, rank, agent] = (end_points - pos[agent]).transpose(0, 2, 1)
    kept = np.zeros((width, count), dtype=bool)
    eps = f32(RVO_EPSILON)
    block = max(1, _COVERED_TEST_CELLS // (width * width))
    order = np.arange(width)
    lower = (order[:, None] > order[None, :])[:, :, None]     # [k, j]: j comes before k
    for first in range(0, count, block):
        cols = slice(first, first + block)
        it = inv_time[cols]
        margin = it * rad[cols]
        # beyond[k, j, a]: both end points of candidate k are beyond line j by the radius.
        beyond = np.ones((width, width, kept[:, cols].shape[1]), dtype=bool)
        for rx, ry in ends:
            beyond &= _det(it * rx[:, None, cols] - cand_x[None, :, cols],
                           it * ry[:, None, cols] - cand_y[None, :, cols],
                           cand_dx[None, :, cols], cand_dy[None, :, cols]) - margin >= -eps
        beyond &= lower
        # kept[k] = k present and no kept j < k covers it: a triangular system whose unique
        # fixed point this iteration reaches (column k is final after k passes at most).
        kept_cols = present[:, cols]
        while True:
            # covered[k, a]: some kept j < k covers k (an or of ands over j)
            covered = (beyond & kept_cols[None]).any(axis=1)
            update = present[:, cols] & ~covered
            if np.array_equal(update, kept_cols):
                break
            kept_cols = update
        kept[:, cols] = kept_cols
    kept_before = np.cumsum(kept, axis=0)      # its last row: the lines kept per agent
    num_lines = kept_before[-1]
    k, a = np.nonzero(kept)
    slot = kept_before[k, a] - 1
    width = int(num_lines.max())     # the kept lines, left-aligned: no all-padding columns
    lines = np.zeros((4, count, width), dtype=f32)
    lines[2] = 1.0
    lines[:, a, slot] = candidate[:, k, a]
    px, py, dx, dy = lines.astype(np.float64)
    # Unit length in float64: the linear programs rely on it.
    norm = np.sqrt(dx * dx + dy * dy)
    return px, py, dx / norm, dy / norm, num_lines

