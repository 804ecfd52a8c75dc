"""RVO2's linearProgram1/2/3, batched over agents.

Lines are given as component arrays of shape (K, L): point (px, py), unit direction (dx, dy),
with a `valid` mask (valid lines of an agent form a prefix). The feasible side of a line is
the left of its direction: det(direction, point - v) <= 0.

RVO2 solves linearProgram2 incrementally (Seidel): it adds lines one by one and re-solves
linearProgram1 on the newest violated line. When the program is feasible its answer is the
unique optimum, so here every line is solved against all other lines at once (a (K, L, L)
computation, no loop over lines) and the best feasible candidate is taken. Where the program
is infeasible, RVO2's failing line index is the first prefix 0..i that is infeasible; it is
found with cumulative bounds over the same (K, L, L) arrays.

linearProgram3 (minimise the largest penetration of the agent lines, obstacle lines stay
hard) is sequential over lines by nature: a loop over line index vectorised over the
agents that need it, each step a batched directional linearProgram2.
"""
import numpy as np

RVO_EPSILON = 1e-5  # RVO2's RVO_EPSILON: (almost) parallel lines in linearProgram1/3


def _pair_terms(px, py, dx, dy, pair_mask, radius):
    """linearProgram1's pieces for every line i bounded by every line j (masked by pair_mask).

    Returns disc (K, L), the circle interval (t_left0, t_right0), parallel_fail (K, L, L),
    and per-pair interval limits (K, L, L) (-inf / +inf where j does not bound i).
    """
    dot = px * dx + py * dy
    disc = dot * dot + (radius * radius)[:, None] - (px * px + py * py)
    root = np.sqrt(np.maximum(disc, 0.0))
    t_left0 = -dot - root
    t_right0 = -dot + root
    dxi, dyi = dx[:, :, None], dy[:, :, None]
    dxj, dyj = dx[:, None, :], dy[:, None, :]
    denominator = dxi * dyj - dyi * dxj
    numerator = dxj * (py[:, :, None] - py[:, None, :]) - dyj * (px[:, :, None] - px[:, None, :])
    parallel = np.abs(denominator) <= RVO_EPSILON
    parallel_fail = pair_mask & parallel & (numerator < 0.0)
    bounding = pair_mask & ~parallel
    with np.errstate(divide='ignore', invalid='ignore'):
        t = numerator / denominator
    right_limits = np.where(bounding & (denominator >= 0.0), t, np.inf)
    left_limits = np.where(bounding & (denominator < 0.0), t, -np.inf)
    return disc, t_left0, t_right0, parallel_fail, left_limits, right_limits


def _other_lines_mask(valid):
    count = valid.shape[1]
    not_self = ~np.eye(count, dtype=bool)
    return valid[:, None, :] & not_self[None, :, :]


def violation(px, py, dx, dy, vx, vy):
    """det(direction, point - v) for (K, L) lines and (K,) velocities: > 0 means violated."""
    return dx * (py - vy[:, None]) - dy * (px - vx[:, None])


def clamp_to_speed(opt_x, opt_y, radius):
    """linearProgram2's start for the closest-point objective: opt, pulled onto the circle."""
    speed_sq = opt_x * opt_x + opt_y * opt_y
    outside = speed_sq > radius * radius
    scale = np.ones_like(speed_sq)
    scale[outside] = radius[outside] / np.sqrt(speed_sq[outside])
    return opt_x * scale, opt_y * scale


def closest_point(px, py, dx, dy, valid, radius, opt_x, opt_y):
    """linearProgram2 (closest point to opt) for K agents whose start violates some line.

    Returns (vx, vy, line_fail): line_fail is -1 where feasible, otherwise RVO2's failing
    line index (the velocity is then meaningless; linearProgram3 takes over).
    """
    count = px.shape[0]
    start_x, start_y = clamp_to_speed(opt_x, opt_y, radius)
    pair_mask = _other_lines_mask(valid)
    disc, t_left0, t_right0, parallel_fail, left_limits, right_limits = _pair_terms(
        px, py, dx, dy, pair_mask, radius)
    t_left = np.maximum(t_left0, left_limits.max(axis=2))
    t_right = np.minimum(t_right0, right_limits.min(axis=2))
    usable = valid & (disc >= 0.0) & ~parallel_fail.any(axis=2) & (t_left <= t_right)
    t_opt = dx * (opt_x[:, None] - px) + dy * (opt_y[:, None] - py)
    t = np.minimum(np.maximum(t_opt, t_left), t_right)
    cand_x = px + t * dx
    cand_y = py + t * dy
    dist_sq = np.where(usable, (cand_x - opt_x[:, None]) ** 2 + (cand_y - opt_y[:, None]) ** 2, np.inf)
    best = dist_sq.argmin(axis=1)
    rows = np.arange(count)
    vx = cand_x[rows, best]
    vy = cand_y[rows, best]
    feasible = usable[rows, best]
    line_fail = np.full(count, -1, dtype=np.intp)
    if not feasible.all():
        bad = ~feasible
        line_fail[bad] = _first_infeasible_prefix(
            valid[bad], disc[bad], t_left0[bad], t_right0[bad], parallel_fail[bad],
            left_limits[bad], right_limits[bad],
            violation(px[bad], py[bad], dx[bad], dy[bad], start_x[bad], start_y[bad]) > 0.0)
        vx[bad] = start_x[bad]
        vy[bad] = start_y[bad]
    return vx, vy, line_fail


def _first_infeasible_prefix(valid, disc, t_left0, t_right0, parallel_fail, left_limits,
                             right_limits, start_violates):
    """Smallest i such that lines 0..i (with the speed circle) have no common point.

    Lines 0..i are feasible when the start point satisfies all of them, or when some line
    m <= i keeps a non-empty interval against the other lines of the prefix.
    """
    count = valid.shape[1]
    lines = np.arange(count)
    broken = np.logical_or.accumulate(parallel_fail, axis=2)
    t_left = np.maximum(t_left0[:, :, None], np.maximum.accumulate(left_limits, axis=2))
    t_right = np.minimum(t_right0[:, :, None], np.minimum.accumulate(right_limits, axis=2))
    # ok[k, m, i]: line m usable within prefix 0..i
    ok = ((lines[:, None] <= lines[None, :])[None] & valid[:, :, None] & (disc >= 0.0)[:, :, None]
          & ~broken & (t_left <= t_right))
    start_ok = ~np.logical_or.accumulate(start_violates & valid, axis=1)
    feasible_prefix = ok.any(axis=1) | start_ok | ~valid
    return np.argmin(feasible_prefix, axis=1)


def _best_direction(px, py, dx, dy, valid, radius, dir_x, dir_y):
    """linearProgram2 with directionOpt: the point of the disk and half-planes furthest along
    the unit vector `dir`. Returns (vx, vy, ok); ok is False where it found no point."""
    count = px.shape[0]
    start_x = dir_x * radius
    start_y = dir_y * radius
    start_ok = ~((violation(px, py, dx, dy, start_x, start_y) > 0.0) & valid).any(axis=1)
    vx, vy = start_x.copy(), start_y.copy()
    ok = start_ok.copy()
    need = ~start_ok
    if need.any():
        sub = np.flatnonzero(need)
        spx, spy, sdx, sdy, svalid = px[sub], py[sub], dx[sub], dy[sub], valid[sub]
        disc, t_left0, t_right0, parallel_fail, left_limits, right_limits = _pair_terms(
            spx, spy, sdx, sdy, _other_lines_mask(svalid), radius[sub])
        t_left = np.maximum(t_left0, left_limits.max(axis=2))
        t_right = np.minimum(t_right0, right_limits.min(axis=2))
        usable = svalid & (disc >= 0.0) & ~parallel_fail.any(axis=2) & (t_left <= t_right)
        along = dir_x[sub, None] * sdx + dir_y[sub, None] * sdy
        t = np.where(along > 0.0, t_right, t_left)
        cand_x = spx + t * sdx
        cand_y = spy + t * sdy
        score = np.where(usable, cand_x * dir_x[sub, None] + cand_y * dir_y[sub, None], -np.inf)
        best = score.argmax(axis=1)
        rows = np.arange(len(sub))
        vx[sub] = cand_x[rows, best]
        vy[sub] = cand_y[rows, best]
        ok[sub] = usable[rows, best]
    return vx, vy, ok


def min_max_penetration(px, py, dx, dy, valid, num_hard, begin_line, radius, vx, vy):
    """linearProgram3 for K agents: from line `begin_line` on, keep the velocity that
    minimises the largest penetration of the soft lines; lines < num_hard stay hard.

    (vx, vy) is linearProgram2's result at failure; returns the new (vx, vy).
    """
    count, num_lines = px.shape
    vx, vy = vx.copy(), vy.copy()
    distance = np.zeros(count)
    slots = np.arange(num_lines)
    for line in range(int(begin_line.min()), num_lines):
        pen = dx[:, line] * (py[:, line] - vy) - dy[:, line] * (px[:, line] - vx)
        # At begin_line the LP2 result violates the line by construction.
        act = np.flatnonzero((line == begin_line)
                             | ((line > begin_line) & valid[:, line] & (pen > distance)))
        if act.size == 0:
            continue
        # Lines before `line`: hard lines as they are, soft lines j replaced by the
        # bisector of lines j and `line` (points of equal penetration).
        ix, iy = dx[act, line:line + 1], dy[act, line:line + 1]
        jx, jy = dx[act, :line], dy[act, :line]
        ipx, ipy = px[act, line:line + 1], py[act, line:line + 1]
        jpx, jpy = px[act, :line], py[act, :line]
        determinant = ix * jy - iy * jx
        parallel = np.abs(determinant) <= RVO_EPSILON
        same_direction = parallel & (ix * jx + iy * jy > 0.0)
        with np.errstate(divide='ignore', invalid='ignore'):
            along = (jx * (ipy - jpy) - jy * (ipx - jpx)) / determinant
        bis_px = np.where(parallel, 0.5 * (ipx + jpx), ipx + along * ix)
        bis_py = np.where(parallel, 0.5 * (ipy + jpy), ipy + along * iy)
        bis_dx, bis_dy = jx - ix, jy - iy
        norm = np.sqrt(bis_dx * bis_dx + bis_dy * bis_dy)
        with np.errstate(divide='ignore', invalid='ignore'):
            bis_dx = bis_dx / norm
            bis_dy = bis_dy / norm
        hard = slots[None, :line] < num_hard[act, None]
        proj_px = np.where(hard, jpx, bis_px)
        proj_py = np.where(hard, jpy, bis_py)
        proj_dx = np.where(hard, jx, bis_dx)
        proj_dy = np.where(hard, jy, bis_dy)
        proj_valid = hard | ~same_direction
        proj_px[~proj_valid] = 0.0
        proj_py[~proj_valid] = 0.0
        proj_dx[~proj_valid] = 1.0
        proj_dy[~proj_valid] = 0.0
        new_x, new_y, ok = _best_direction(proj_px, proj_py, proj_dx, proj_dy, proj_valid,
                                           radius[act], -iy[:, 0], ix[:, 0])
        # RVO2 keeps the previous result when this fails (floating point trouble only).
        vx[act] = np.where(ok, new_x, vx[act])
        vy[act] = np.where(ok, new_y, vy[act])
        distance[act] = ix[:, 0] * (ipy[:, 0] - vy[act]) - iy[:, 0] * (ipx[:, 0] - vx[act])
    return vx, vy
