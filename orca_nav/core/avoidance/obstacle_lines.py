"""Obstacle ORCA lines (RVO2 `Agent::computeNewVelocity`, obstacle part), batched over
(agent, edge) pairs: the already-covered test, collisions with vertices and edges, convex and
concave vertices, legs, legs cut off by neighbouring edges, and the cut-off line.
"""
import numpy as np

from .linear_program import RVO_EPSILON

_COVERED_TEST_CELLS = 1 << 22   # (agent, candidate, earlier line) cells per covered-test block


def _normalize(x, y):
    """RVO2's normalize in float32: v * (1 / sqrt(v . v)), zero vectors left as zero."""
    length = np.sqrt(x * x + y * y)
    inv = np.float32(1.0) / np.where(length > 0.0, length, np.float32(1.0))
    return x * inv, y * inv


def _det(ax, ay, bx, by):
    return ax * by - ay * bx


# Degenerate pairs give inf or NaN in branches that are not theirs: no warnings for those.
@np.errstate(divide='ignore', invalid='ignore', over='ignore')
def _obstacle_line(obstacles, vertex, pos_x, pos_y, vel_x, vel_y, radius, inv_time):
    """ORCA line of each (agent, obstacle edge) pair; vectorised Agent::computeNewVelocity
    obstacle branch, in float32 with RVO2's operation order (near contact its legs are
    ill-conditioned too). All inputs are float32 arrays of the pairs.
    Returns (px, py, dx, dy, added) float32 / bool."""
    f32 = np.float32
    zero = f32(0.0)
    points, unit_dir, convex = obstacles.points32, obstacles.unit_dir32, obstacles.convex
    vertex2 = obstacles.next_vertex[vertex]
    p1x, p1y = points[vertex, 0], points[vertex, 1]
    p2x, p2y = points[vertex2, 0], points[vertex2, 1]
    r1x, r1y = p1x - pos_x, p1y - pos_y
    r2x, r2y = p2x - pos_x, p2y - pos_y
    dist_sq1 = r1x * r1x + r1y * r1y
    dist_sq2 = r2x * r2x + r2y * r2y
    radius_sq = radius * radius
    ovx, ovy = p2x - p1x, p2y - p1y
    s = (-r1x * ovx + -r1y * ovy) / (ovx * ovx + ovy * ovy)
    lx, ly = -r1x - s * ovx, -r1y - s * ovy
    dist_sq_line = lx * lx + ly * ly
    convex1, convex2 = convex[vertex], convex[vertex2]
    u1x, u1y = unit_dir[vertex, 0], unit_dir[vertex, 1]
    u2x, u2y = unit_dir[vertex2, 0], unit_dir[vertex2, 1]
    prev = obstacles.prev_vertex[vertex]
    pu1x, pu1y = unit_dir[prev, 0], unit_dir[prev, 1]

    count = len(vertex)
    px, py = np.zeros(count, dtype=f32), np.zeros(count, dtype=f32)
    dx, dy = np.ones(count, dtype=f32), np.zeros(count, dtype=f32)
    added = np.zeros(count, dtype=bool)

    # Already colliding with the left vertex, the right vertex or the segment.
    hit_left = (s < 0.0) & (dist_sq1 <= radius_sq)
    hit_right = ~hit_left & (s > 1.0) & (dist_sq2 <= radius_sq)
    hit_segment = ~hit_left & ~hit_right & (s >= 0.0) & (s <= 1.0) & (dist_sq_line <= radius_sq)
    rest = ~(hit_left | hit_right | hit_segment)
    if not rest.all():      # rare: most cycles nobody touches an obstacle
        add = hit_left & convex1
        dx[add], dy[add] = _normalize(-r1y[add], r1x[add])
        added |= add
        add = hit_right & convex2 & (_det(r2x, r2y, u2x, u2y) >= 0.0)
        dx[add], dy[add] = _normalize(-r2y[add], r2x[add])
        added |= add
        dx[hit_segment], dy[hit_segment] = -u1x[hit_segment], -u1y[hit_segment]
        added |= hit_segment

    oblique_left = rest & (s < 0.0) & (dist_sq_line <= radius_sq)
    oblique_right = rest & ~oblique_left & (s > 1.0) & (dist_sq_line <= radius_sq)
    # Obliquely viewed past a non-convex vertex: ignored.
    rest &= ~(oblique_left & ~convex1) & ~(oblique_right & ~convex2)
    # Usually every pair remains: a slice then selects them without copying.
    sel = slice(None) if rest.all() else np.flatnonzero(rest)
    if not rest.any():
        return px, py, dx, dy, added
    # From here on, only the remaining pairs. When viewed obliquely both legs come from one
    # vertex (RVO2 sets obstacle2 = obstacle1, or obstacle1 = obstacle2).
    ol, orr = oblique_left[sel], oblique_right[sel]
    same = ol | orr
    oblique = same.any()

    def pick(cond, a, b):       # a where cond, else b, over the remaining pairs
        return np.where(cond, a[sel], b[sel]) if oblique else b[sel]
    q1x, q1y = pick(orr, p2x, p1x), pick(orr, p2y, p1y)
    q2x, q2y = pick(ol, p1x, p2x), pick(ol, p1y, p2y)
    d1, d2 = pick(orr, dist_sq2, dist_sq1), pick(ol, dist_sq1, dist_sq2)
    c1, c2 = pick(orr, convex2, convex1), pick(ol, convex1, convex2)
    q1ux, q1uy = pick(orr, u2x, u1x), pick(orr, u2y, u1y)
    q1pux, q1puy = pick(orr, u1x, pu1x), pick(orr, u1y, pu1y)
    q2ux, q2uy = pick(ol, u1x, u2x), pick(ol, u1y, u2y)
    e1x, e1y = u1x[sel], u1y[sel]  # the original obstacle1's edge direction
    rad, rsq, it = radius[sel], radius_sq[sel], inv_time[sel]
    vx, vy, ox, oy = vel_x[sel], vel_y[sel], pos_x[sel], pos_y[sel]
    a1x, a1y = q1x - ox, q1y - oy
    a2x, a2y = q2x - ox, q2y - oy
    leg1 = np.sqrt(np.maximum(d1 - rsq, zero))
    leg2 = np.sqrt(np.maximum(d2 - rsq, zero))
    inv1 = f32(1.0) / d1
    inv2 = f32(1.0) / d2
    left_x = np.where(c1, (a1x * leg1 - a1y * rad) * inv1, -e1x)
    left_y = np.where(c1, (a1x * rad + a1y * leg1) * inv1, -e1y)
    right_x = np.where(c2, (a2x * leg2 + a2y * rad) * inv2, e1x)
    right_y = np.where(c2, (-a2x * rad + a2y * leg2) * inv2, e1y)
    # Legs never point into a neighbouring edge at a convex vertex: use that edge instead
    # ("foreign" leg; projecting onto it adds no constraint).
    left_foreign = c1 & (_det(left_x, left_y, -q1pux, -q1puy) >= 0.0)
    left_x = np.where(left_foreign, -q1pux, left_x)
    left_y = np.where(left_foreign, -q1puy, left_y)
    right_foreign = c2 & (_det(right_x, right_y, q2ux, q2uy) <= 0.0)
    right_x = np.where(right_foreign, q2ux, right_x)
    right_y = np.where(right_foreign, q2uy, right_y)

    lcx, lcy = it * a1x, it * a1y  # cut-off centres
    rcx, rcy = it * a2x, it * a2y
    cvx, cvy = rcx - lcx, rcy - lcy
    flx, fly = vx - lcx, vy - lcy
    frx, fry = vx - rcx, vy - rcy
    t = np.where(same, f32(0.5), (flx * cvx + fly * cvy) / (cvx * cvx + cvy * cvy))
    t_left = flx * left_x + fly * left_y
    t_right = frx * right_x + fry * right_y
    scale = rad * it

    remaining = len(same)
    lpx, lpy = np.zeros(remaining, dtype=f32), np.zeros(remaining, dtype=f32)
    ldx, ldy = np.ones(remaining, dtype=f32), np.zeros(remaining, dtype=f32)
    ladd = np.zeros(remaining, dtype=bool)
    circle_left = ((t < 0.0) & (t_left < 0.0)) | (same & (t_left < 0.0) & (t_right < 0.0))
    circle_right = ~circle_left & (t > 1.0) & (t_right < 0.0)
    for chosen, cx, cy, fx, fy in ((circle_left, lcx, lcy, flx, fly),
                                   (circle_right, rcx, rcy, frx, fry)):
        if not chosen.any():
            continue
        wx, wy = _normalize(fx[chosen], fy[chosen])
        ldx[chosen], ldy[chosen] = wy, -wx
        lpx[chosen] = cx[chosen] + scale[chosen] * wx
        lpy[chosen] = cy[chosen] + scale[chosen] * wy
        ladd |= chosen

    open_ = ~(circle_left | circle_right)
    inf = f32(np.inf)
    ex, ey = vx - (lcx + t * cvx), vy - (lcy + t * cvy)
    dist_cutoff = np.where((t < 0.0) | (t > 1.0) | same, inf, ex * ex + ey * ey)
    ex, ey = vx - (lcx + t_left * left_x), vy - (lcy + t_left * left_y)
    dist_left = np.where(t_left < 0.0, inf, ex * ex + ey * ey)
    ex, ey = vx - (rcx + t_right * right_x), vy - (rcy + t_right * right_y)
    dist_right = np.where(t_right < 0.0, inf, ex * ex + ey * ey)
    on_cutoff = open_ & (dist_cutoff <= dist_left) & (dist_cutoff <= dist_right)
    on_left = open_ & ~on_cutoff & (dist_left <= dist_right) & ~left_foreign
    on_right = open_ & ~on_cutoff & ~(dist_left <= dist_right) & ~right_foreign
    line_x = np.where(on_cutoff, -q1ux, np.where(on_left, left_x, -right_x))
    line_y = np.where(on_cutoff, -q1uy, np.where(on_left, left_y, -right_y))
    anchor_x = np.where(on_right, rcx, lcx)
    anchor_y = np.where(on_right, rcy, lcy)
    chosen = on_cutoff | on_left | on_right
    ldx[chosen], ldy[chosen] = line_x[chosen], line_y[chosen]
    lpx[chosen] = anchor_x[chosen] + scale[chosen] * -line_y[chosen]
    lpy[chosen] = anchor_y[chosen] + scale[chosen] * line_x[chosen]
    ladd |= chosen

    px[sel], py[sel], dx[sel], dy[sel] = lpx, lpy, ldx, ldy
    added[sel] = ladd
    return px, py, dx, dy, added


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
    line_x, line_y, line_dx, line_dy, added = _obstacle_line(
        obstacles, vertex, pos[agent, 0], pos[agent, 1], vel[agent, 0], vel[agent, 1],
        rad[agent], inv_time[agent])
    candidates = np.flatnonzero(added)
    if candidates.size == 0:
        empty = np.zeros((count, 0))
        return empty, empty, empty, empty, num_lines
    agent, vertex = agent[candidates], vertex[candidates]
    per_agent = np.bincount(agent, minlength=count)
    rank = np.arange(agent.size) - np.repeat(np.cumsum(per_agent) - per_agent, per_agent)
    width = int(per_agent.max())
    present = np.zeros((count, width), dtype=bool)
    present[agent, rank] = True
    # (point x, y, direction x, y) of each agent's candidates, padded with (0, 0, 1, 0); the
    # edge's two end points relative to the agent, padded with 0. One array each, so that
    # each is filled by one scatter.
    candidate = np.zeros((4, count, width), dtype=f32)
    candidate[2] = 1.0
    candidate[:, agent, rank] = np.array([line_x, line_y, line_dx, line_dy])[:, candidates]
    cand_x, cand_y, cand_dx, cand_dy = candidate
    ends = np.zeros((2, 2, count, width), dtype=f32)     # (end, axis, agent, rank)
    end_points = obstacles.points32[np.array([vertex, obstacles.next_vertex[vertex]])]
    ends[:, :, agent, rank] = (end_points - pos[agent]).transpose(0, 2, 1)
    kept = np.zeros((count, width), dtype=bool)
    eps = f32(RVO_EPSILON)
    block = max(1, _COVERED_TEST_CELLS // (width * width))
    order = np.arange(width)
    lower = order[:, None] > order[None, :]     # [k, j]: j comes before k
    for first in range(0, count, block):
        rows = slice(first, first + block)
        it = inv_time[rows, None, None]
        margin = it * rad[rows, None, None]
        # beyond[a, k, j]: both end points of candidate k are beyond line j by the radius.
        beyond = np.ones((kept[rows].shape[0], width, width), dtype=bool)
        for rx, ry in ends:
            beyond &= _det(it * rx[rows, :, None] - cand_x[rows, None, :],
                           it * ry[rows, :, None] - cand_y[rows, None, :],
                           cand_dx[rows, None, :], cand_dy[rows, None, :]) - margin >= -eps
        beyond &= lower
        # kept[k] = k present and no kept j < k covers it: a triangular system whose unique
        # fixed point this iteration reaches (column k is final after k passes at most).
        kept_rows = present[rows]
        while True:
            # covered[a, k]: some kept j < k covers k (a boolean matrix product: or of ands)
            covered = np.matmul(beyond, kept_rows[:, :, None])[:, :, 0]
            update = present[rows] & ~covered
            if np.array_equal(update, kept_rows):
                break
            kept_rows = update
        kept[rows] = kept_rows
    num_lines = np.count_nonzero(kept, axis=1)
    a, k = np.nonzero(kept)
    slot = np.cumsum(kept, axis=1)[a, k] - 1
    width = int(num_lines.max())     # the kept lines, left-aligned: no all-padding columns
    lines = np.zeros((4, count, width), dtype=f32)
    lines[2] = 1.0
    lines[:, a, slot] = candidate[:, a, k]
    px, py, dx, dy = lines.astype(np.float64)
    # Unit length in float64: the linear programs rely on it.
    norm = np.sqrt(dx * dx + dy * dy)
    return px, py, dx / norm, dy / norm, num_lines

