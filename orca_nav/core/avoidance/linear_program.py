"""RVO2's linearProgram1/2/3, batched over agents.

Lines are given as component arrays of shape (L, K), line index first and agent last (numpy
then runs its inner loops over the long agent axis): point (px, py), unit direction
(dx, dy), with a `valid` mask (valid lines of an agent form a prefix). The feasible side of
a line is the left of its direction: det(direction, point - v) <= 0.

linearProgram2. RVO2 adds lines one by one (Seidel) and re-solves linearProgram1 on each
newly violated line. When the program is feasible its answer is the unique optimum, so it
can be found in any order; here:
- an active-set pass settles most agents: solve on the line the start violates most, then
  add the line the answer violates most, up to three lines; an answer that satisfies every
  line is the optimum of the whole program;
- the rest solve linearProgram1 on every line the start violates, against all their lines
  at once (the optimum always lies on such a line), and keep the best usable point.
Where the program is infeasible, RVO2's failing line index (where linearProgram3 starts) is
found by running its incremental algorithm, batched over just those agents.

linearProgram3 (minimise the largest penetration of the agent lines, obstacle lines stay
hard) walks the lines in order like RVO2: a loop over line index, batched over the agents
whose line triggers, each step a directional linearProgram2 solved the same way.
"""
import numpy as np

RVO_EPSILON = 1e-5  # RVO2's RVO_EPSILON: (almost) parallel lines in linearProgram1/3
_HUGE = np.finfo(np.float64).max
# Below this many agents the active-set rounds cost more numpy calls than they save.
_ACTIVE_SET_MIN_AGENTS = 200
# Up to this many lines, linearProgram1 runs on every line pair densely (no gathers).
_DENSE_MAX_LINES = 12
# Failing-line search: all lines at once for small batches (fewer numpy calls); larger ones
# solve only where a line is hit (far less arithmetic).
_DENSE_PREFIX_MAX_AGENTS = 200


def take_columns(arrays, columns):
    """The given columns (agents) of each (L, K) array; np.take is several times faster than
    a[:, columns] fancy indexing."""
    return tuple(np.take(a, columns, axis=1) for a in arrays)


def _subset(arrays, columns):
    """take_columns, without copying when `columns` (sorted, unique) selects every column."""
    if columns.size == arrays[0].shape[1]:
        return tuple(arrays)
    return take_columns(arrays, columns)


def take_entries(arrays, rows, columns):
    """a[rows, columns] of each (L, K) array, by flat C-order index (faster than fancy indexing)."""
    flat = rows * arrays[0].shape[1] + columns
    return tuple(np.take(a, flat) for a in arrays)


def _interval_on_lines(cpx, cpy, cdx, cdy, px, py, dx, dy, pair_mask, radius):
    """linearProgram1 on candidate lines c bounded by lines j, batch axis last: the
    feasible interval [t_left, t_right] along each candidate.

    Candidates (C, X), bounding lines (J, X), pair_mask (C, J, X) or broadcastable says
    which j bound which c, radius (X,). Returns (t_left, t_right, usable), each (C, X);
    usable False where the candidate misses the speed circle, a parallel line excludes it,
    or the interval is empty. A candidate line among its own bounding lines adds nothing
    (its denominator and numerator are exactly 0: parallel, not failing).
    """
    dot = cpx * cdx + cpy * cdy
    disc = dot * dot + radius * radius - (cpx * cpx + cpy * cpy)
    root = np.sqrt(np.maximum(disc, 0.0))
    dxi, dyi = cdx[:, None, :], cdy[:, None, :]
    denominator = dxi * dy - dyi * dx
    numerator = dx * (cpy[:, None, :] - py) - dy * (cpx[:, None, :] - px)
    parallel = np.abs(denominator) <= RVO_EPSILON
    parallel_fail = (pair_mask & parallel & (numerator < 0.0)).any(axis=1)
    # NaN where j does not bound c (no limit below). The division then never sees a zero
    # (|denominator| > RVO_EPSILON or NaN): no warnings.
    np.putmask(denominator, parallel | ~pair_mask, np.nan)
    t = numerator / denominator
    # A line with denominator > 0 limits t from above, < 0 from below. Cheaper than selects:
    # pad the other side's entries to -/+_HUGE (beyond every finite t and the circle
    # interval, so the result is as if they were absent); fmin/fmax skip the NaN ones.
    pad = np.sign(denominator)
    pad *= -_HUGE
    t_right = np.minimum(-dot + root, np.fmin.reduce(np.fmax(t, pad), axis=1, initial=np.inf))
    t_left = np.maximum(-dot - root, np.fmax.reduce(np.fmin(t, pad), axis=1, initial=-np.inf))
    usable = (disc >= 0.0) & ~parallel_fail & (t_left <= t_right)
    return t_left, t_right, usable


def _point_on_line(cpx, cpy, cdx, cdy, t_left, t_right, usable, ox, oy, direction):
    """The best point of each candidate's interval and its score (lower is better; inf
    where not usable): closest to opt, or furthest along opt if `direction`."""
    if direction:
        t = np.where(ox * cdx + oy * cdy > 0.0, t_right, t_left)
    else:
        t = np.minimum(np.maximum(cdx * (ox - cpx) + cdy * (oy - cpy), t_left), t_right)
    cand_x = cpx + t * cdx
    cand_y = cpy + t * cdy
    if direction:
        score = -(cand_x * ox + cand_y * oy)
    else:
        score = (cand_x - ox) ** 2 + (cand_y - oy) ** 2
    score[~usable] = np.inf
    return cand_x, cand_y, score


def _best_on_violated_lines(px, py, dx, dy, valid, radius, violated, opt_x, opt_y, direction):
    """Solve linearProgram1 on every violated line against all other lines and keep, per
    agent, the best usable point (closest to opt, or furthest along opt if `direction`).

    The optimum always lies on a line that the unconstrained optimum violates, so only
    those lines are candidates. With few lines every line is a candidate against every
    other, (L, L, K), non-violated ones scored out; otherwise the candidates are processed
    as a flat list of P (agent, line) pairs, each against all lines of its agent, (L, P).
    Either way the first best candidate in line order wins. Every agent must have a
    violated line. Returns (vx, vy, ok); ok False means no point exists (the program is
    infeasible; vx, vy are then meaningless).
    """
    width, count = px.shape
    if width <= _DENSE_MAX_LINES:
        t_left, t_right, usable = _interval_on_lines(px, py, dx, dy, px, py, dx, dy,
                                                     valid[None, :, :], radius)
        usable &= violated  # only violated lines are candidates
        cand_x, cand_y, score = _point_on_line(px, py, dx, dy, t_left, t_right, usable,
                                               opt_x, opt_y, direction)
        best = score.argmin(axis=0)
        return take_entries((cand_x, cand_y, usable), best, np.arange(count))
    flat = np.flatnonzero(violated.T)  # grouped by agent, in line order
    agent, line = flat // width, flat % width
    cpx, cpy, cdx, cdy = take_entries((px, py, dx, dy), line, agent)
    bpx, bpy, bdx, bdy, bvalid = take_columns((px, py, dx, dy, valid), agent)
    pair_mask = (bvalid & (np.arange(width)[:, None] != line[None, :]))[None]
    t_left, t_right, usable = _interval_on_lines(cpx[None], cpy[None], cdx[None], cdy[None],
                                                 bpx, bpy, bdx, bdy, pair_mask, radius[agent])
    cand_x, cand_y, score = _point_on_line(cpx, cpy, cdx, cdy, t_left[0], t_right[0],
                                           usable[0], opt_x[agent], opt_y[agent], direction)
    # Best pair per agent: scatter the scores into a (candidates, agents) table.
    per_agent = np.bincount(agent, minlength=count)
    starts = np.cumsum(per_agent) - per_agent
    table = np.full((int(per_agent.max()), count), np.inf)
    table[np.arange(agent.size) - starts[agent], agent] = score
    best = starts + table.argmin(axis=0)
    return cand_x[best], cand_y[best], usable[0, best]


def violation(px, py, dx, dy, vx, vy):
    """det(direction, point - v) for (L, K) lines and (K,) velocities: > 0 means violated."""
    return dx * (py - vy) - dy * (px - vx)


def clamp_to_speed(opt_x, opt_y, radius):
    """linearProgram2's start for the closest-point objective: opt, pulled onto the circle."""
    speed_sq = opt_x * opt_x + opt_y * opt_y
    outside = speed_sq > radius * radius
    scale = np.ones_like(speed_sq)
    scale[outside] = radius[outside] / np.sqrt(speed_sq[outside])
    return opt_x * scale, opt_y * scale


def closest_point(px, py, dx, dy, valid, radius, opt_x, opt_y, start_violation=None):
    """linearProgram2 (closest point to opt) for K agents whose start violates some line.

    Lines (L, K); start_violation: `violation` of the lines at clamp_to_speed(opt), if the
    caller has it. Returns (vx, vy, line_fail): line_fail is -1 where feasible, otherwise
    RVO2's failing line index (the velocity is then meaningless; linearProgram3 takes over).
    """
    count = px.shape[1]
    start_x, start_y = clamp_to_speed(opt_x, opt_y, radius)
    line_fail = np.full(count, -1, dtype=np.intp)
    infeasible = np.zeros(count, dtype=bool)
    if count >= _ACTIVE_SET_MIN_AGENTS:
        vx, vy, settled, infeasible = _growing_active_set(
            px, py, dx, dy, valid, radius, opt_x, opt_y, start_x, start_y,
            start_violation=start_violation)
        if settled.all():
            return vx, vy, line_fail
        # The rest run RVO2's incremental algorithm: in crowds most of them are infeasible
        # and need it for their failing line anyway, and it costs O(L) per agent and line
        # where solving on every violated line at once costs O(L^2).
        infeasible = ~settled
    else:
        vx, vy, settled = start_x.copy(), start_y.copy(), np.zeros(count, dtype=bool)
    rest = np.flatnonzero(~settled & ~infeasible)
    if rest.size:
        rpx, rpy, rdx, rdy, rvalid = _subset((px, py, dx, dy, valid), rest)
        violated = (violation(rpx, rpy, rdx, rdy, start_x[rest], start_y[rest]) > 0.0) & rvalid
        rx, ry, feasible = _best_on_violated_lines(rpx, rpy, rdx, rdy, rvalid, radius[rest],
                                                   violated, opt_x[rest], opt_y[rest],
                                                   direction=False)
        vx[rest], vy[rest] = rx, ry
        infeasible[rest[~feasible]] = True
    worse = np.flatnonzero(infeasible)
    if worse.size:
        fail, vx[worse], vy[worse] = _first_infeasible_prefix(
            *take_columns((px, py, dx, dy, valid), worse), radius[worse],
            opt_x[worse], opt_y[worse], start_x[worse], start_y[worse])
        line_fail[worse] = np.where(fail < px.shape[0], fail, -1)
    return vx, vy, line_fail


def _growing_active_set(px, py, dx, dy, valid, radius, opt_x, opt_y, start_x, start_y,
                        direction=False, max_lines=3, start_violation=None):
    """Cheap exact path for most agents: solve the program on a small subset of lines
    (first the line the start violates most, then, round by round, the line the current
    answer violates most). Once the subset's optimum satisfies every line it is the
    optimum of the whole program; once a subset has no solution, neither has the program.
    Returns (vx, vy, settled, infeasible); agents with neither need the full solve.
    """
    width, count = px.shape
    if start_violation is None:
        start_violation = violation(px, py, dx, dy, start_x, start_y)
    start_violation = np.where(valid, start_violation, -np.inf)
    cols = np.arange(count)
    first = start_violation.argmax(axis=0)
    # Round one, a single line: the best point on it within the speed circle.
    lpx, lpy, ldx, ldy = take_entries((px, py, dx, dy), first, cols)
    dot = lpx * ldx + lpy * ldy
    disc = dot * dot + radius * radius - (lpx * lpx + lpy * lpy)
    root = np.sqrt(np.maximum(disc, 0.0))
    if direction:
        t = np.where(opt_x * ldx + opt_y * ldy > 0.0, root - dot, -dot - root)
    else:
        t = np.minimum(np.maximum(ldx * (opt_x - lpx) + ldy * (opt_y - lpy), -dot - root), -dot + root)
    cx = lpx + t * ldx
    cy = lpy + t * ldy
    ok = disc >= 0.0
    chosen = first[None, :]
    vx, vy = start_x.copy(), start_y.copy()
    settled = np.zeros(count, dtype=bool)
    infeasible = np.zeros(count, dtype=bool)
    open_cols = cols
    rpx, rpy, rdx, rdy, rvalid, rstart = px, py, dx, dy, valid, start_violation
    rounds = min(max_lines, width)
    for size in range(1, rounds + 1):
        if size > 1:
            chosen_flat = chosen * open_cols.size + np.arange(open_cols.size)
            take = lambda a: np.take(a, chosen_flat)  # noqa: E731  (flat C-order index)
            cx, cy, ok = _best_on_violated_lines(
                take(rpx), take(rpy), take(rdx), take(rdy), np.ones(chosen.shape, dtype=bool),
                radius[open_cols], take(rstart) > 0.0, opt_x[open_cols], opt_y[open_cols],
                direction=direction)
        remaining = violation(rpx, rpy, rdx, rdy, cx, cy)
        remaining[~rvalid] = -np.inf
        np.put(remaining, chosen * open_cols.size + np.arange(open_cols.size), -np.inf)
        worst = remaining.argmax(axis=0)
        done = ok & ~(remaining[worst, np.arange(open_cols.size)] > 0.0)
        finished = open_cols[done]
        vx[finished] = cx[done]
        vy[finished] = cy[done]
        settled[finished] = True
        infeasible[open_cols[~ok]] = True
        keep_going = np.flatnonzero(ok & ~done)
        if keep_going.size == 0 or size == rounds:
            break
        open_cols = open_cols[keep_going]
        rpx, rpy, rdx, rdy, rvalid, rstart = take_columns(
            (px, py, dx, dy, valid, start_violation), open_cols)
        chosen = np.concatenate([np.take(chosen, keep_going, axis=1), worst[None, keep_going]],
                                axis=0)
    return vx, vy, settled, infeasible


def _first_infeasible_prefix(px, py, dx, dy, valid, radius, opt_x, opt_y, start_x, start_y):
    """RVO2's failing line for agents whose linearProgram2 is infeasible: its incremental
    algorithm, one loop step per line, batched over the agents that violate that line.

    At step i the result is the optimum of lines 0..i-1; if it violates line i,
    linearProgram1 on line i against lines 0..i-1 either moves it or fails (i is the
    failing line). Returns (line_fail, vx, vy); line_fail is L where the incremental
    algorithm found the program feasible after all (rounding), (vx, vy) its result.
    """
    width, count = px.shape
    if width > _DENSE_MAX_LINES or count > _DENSE_PREFIX_MAX_AGENTS:
        return _first_infeasible_prefix_per_line(px, py, dx, dy, valid, radius, opt_x, opt_y,
                                                 start_x, start_y)
    # linearProgram1 on line i against lines 0..i-1 does not depend on the current result:
    # solve it for every line at once, then replay the incremental walk.
    lines = np.arange(width)
    prefix = (lines[None, :] < lines[:, None])[:, :, None]
    t_left, t_right, usable = _interval_on_lines(px, py, dx, dy, px, py, dx, dy, prefix, radius)
    t = np.minimum(np.maximum(dx * (opt_x - px) + dy * (opt_y - py), t_left), t_right)
    cand_x = px + t * dx
    cand_y = py + t * dy
    vx, vy = start_x.copy(), start_y.copy()
    line_fail = np.full(count, width, dtype=np.intp)
    open_ = np.ones(count, dtype=bool)
    for i in range(width):
        hit = open_ & valid[i] & (dx[i] * (py[i] - vy) - dy[i] * (px[i] - vx) > 0.0)
        move = hit & usable[i]
        vx = np.where(move, cand_x[i], vx)
        vy = np.where(move, cand_y[i], vy)
        failed = hit & ~usable[i]
        line_fail[failed] = i
        open_ &= ~failed
        if not open_.any():
            break
    return line_fail, vx, vy


def _first_infeasible_prefix_per_line(px, py, dx, dy, valid, radius, opt_x, opt_y, start_x,
                                      start_y):
    """_first_infeasible_prefix for many lines: linearProgram1 only where line i is hit."""
    width, count = px.shape
    vx, vy = start_x.copy(), start_y.copy()
    line_fail = np.full(count, width, dtype=np.intp)
    open_cols = np.arange(count)
    for i in range(width):
        ox, oy = vx[open_cols], vy[open_cols]
        hit = valid[i, open_cols] & (dx[i, open_cols] * (py[i, open_cols] - oy)
                                     - dy[i, open_cols] * (px[i, open_cols] - ox) > 0.0)
        cols = open_cols[hit]
        if cols.size == 0:
            continue
        if i == 0:
            bounds = (np.zeros((0, cols.size)),) * 4
            mask = np.zeros((1, 0, cols.size), dtype=bool)
        else:
            bounds = take_columns((px[:i], py[:i], dx[:i], dy[:i]), cols)
            mask = np.ones((1, i, cols.size), dtype=bool)
        cpx, cpy, cdx, cdy = px[i, cols], py[i, cols], dx[i, cols], dy[i, cols]
        t_left, t_right, usable = (a[0] for a in _interval_on_lines(
            cpx[None], cpy[None], cdx[None], cdy[None], *bounds, mask, radius[cols]))
        t = np.minimum(np.maximum(cdx * (opt_x[cols] - cpx) + cdy * (opt_y[cols] - cpy), t_left),
                       t_right)
        vx[cols] = np.where(usable, cpx + t * cdx, vx[cols])
        vy[cols] = np.where(usable, cpy + t * cdy, vy[cols])
        line_fail[cols[~usable]] = i
        still_open = np.ones(open_cols.size, dtype=bool)
        still_open[hit] = usable
        open_cols = open_cols[still_open]
        if open_cols.size == 0:
            break
    return line_fail, vx, vy


def _best_direction(px, py, dx, dy, valid, radius, dir_x, dir_y):
    """linearProgram2 with directionOpt: the point of the disk and half-planes furthest along
    the unit vector `dir`. Lines (L, K). Returns (vx, vy, ok); ok is False where it found no
    point."""
    start_x = dir_x * radius
    start_y = dir_y * radius
    start_ok = ~((violation(px, py, dx, dy, start_x, start_y) > 0.0) & valid).any(axis=0)
    vx, vy = start_x.copy(), start_y.copy()
    ok = start_ok.copy()
    sub = np.flatnonzero(~start_ok)
    if sub.size == 0:
        return vx, vy, ok
    spx, spy, sdx, sdy, svalid = take_columns((px, py, dx, dy, valid), sub)
    if sub.size >= _ACTIVE_SET_MIN_AGENTS:
        sx, sy, settled, infeasible = _growing_active_set(
            spx, spy, sdx, sdy, svalid, radius[sub], dir_x[sub], dir_y[sub], start_x[sub],
            start_y[sub], direction=True)
        vx[sub], vy[sub], ok[sub] = sx, sy, settled
    else:
        settled = infeasible = np.zeros(sub.size, dtype=bool)
    if not (settled | infeasible).all():
        rest = np.flatnonzero(~settled & ~infeasible)
        keep = sub[rest]
        rpx, rpy, rdx, rdy, rvalid = _subset((spx, spy, sdx, sdy, svalid), rest)
        violated = (violation(rpx, rpy, rdx, rdy, start_x[keep], start_y[keep]) > 0.0) & rvalid
        vx[keep], vy[keep], ok[keep] = _best_on_violated_lines(
            rpx, rpy, rdx, rdy, rvalid, radius[keep], violated, dir_x[keep], dir_y[keep],
            direction=True)
    return vx, vy, ok


def _bisector_problem(px, py, dx, dy, num_hard, agents, line):
    """Directional sub-problem of linearProgram3 at line i for the given agents: lines
    j < i, hard ones as they are, soft ones replaced by the bisector of lines j and i (the
    points of equal penetration). Returns (i, K) lines, their mask and the objective
    direction (the left normal of line i)."""
    ix, iy = dx[line, agents], dy[line, agents]
    ipx, ipy = px[line, agents], py[line, agents]
    jx, jy, jpx, jpy = take_columns((dx[:line], dy[:line], px[:line], py[:line]), agents)
    determinant = ix * jy - iy * jx
    parallel = np.abs(determinant) <= RVO_EPSILON
    same_direction = parallel & (ix * jx + iy * jy > 0.0)
    with np.errstate(divide='ignore', invalid='ignore'):
        along = (jx * (ipy - jpy) - jy * (ipx - jpx)) / determinant
        bis_px = np.where(parallel, 0.5 * (ipx + jpx), ipx + along * ix)
        bis_py = np.where(parallel, 0.5 * (ipy + jpy), ipy + along * iy)
        bis_dx, bis_dy = jx - ix, jy - iy
        norm = np.sqrt(bis_dx * bis_dx + bis_dy * bis_dy)
        bis_dx = bis_dx / norm
        bis_dy = bis_dy / norm
    hard_count = num_hard[agents]
    if not hard_count.any():  # no obstacle lines: only bisectors
        proj_valid = ~same_direction
        return (np.where(proj_valid, bis_px, 0.0), np.where(proj_valid, bis_py, 0.0),
                np.where(proj_valid, bis_dx, 1.0), np.where(proj_valid, bis_dy, 0.0), proj_valid,
                -iy, ix)
    hard = np.arange(line)[:, None] < hard_count[None, :]
    proj_valid = hard | ~same_direction
    soft = proj_valid & ~hard
    proj_px = np.where(hard, jpx, np.where(soft, bis_px, 0.0))
    proj_py = np.where(hard, jpy, np.where(soft, bis_py, 0.0))
    proj_dx = np.where(hard, jx, np.where(soft, bis_dx, 1.0))
    proj_dy = np.where(hard, jy, np.where(soft, bis_dy, 0.0))
    return proj_px, proj_py, proj_dx, proj_dy, proj_valid, -iy, ix


def min_max_penetration(px, py, dx, dy, valid, num_hard, begin_line, radius, vx, vy):
    """linearProgram3 for K agents: from line `begin_line` on, keep the velocity that
    minimises the largest penetration of the soft lines; lines < num_hard stay hard.

    Lines (L, K). (vx, vy) is linearProgram2's result at failure; returns the new (vx, vy).
    Like RVO2 it walks the lines in order and, where line i is violated by more than the
    current penetration, solves a directional linearProgram2 on the bisector lines of i;
    the loop is over line index, each step batched over the agents whose line i triggered.
    """
    num_lines, count = px.shape
    vx, vy = vx.copy(), vy.copy()
    distance = np.zeros(count)
    for i in range(int(begin_line.min()), num_lines):
        pen = dx[i] * (py[i] - vy) - dy[i] * (px[i] - vx)
        # At begin_line the LP2 result violates the line by construction.
        act = np.flatnonzero((i == begin_line) | ((i > begin_line) & valid[i] & (pen > distance)))
        if act.size == 0:
            continue
        problem = _bisector_problem(px, py, dx, dy, num_hard, act, i)
        new_x, new_y, ok = _best_direction(*problem[:5], radius[act], *problem[5:])
        # RVO2 keeps the previous result when the sub-problem fails (rounding trouble only).
        vx[act] = np.where(ok, new_x, vx[act])
        vy[act] = np.where(ok, new_y, vy[act])
        distance[act] = dx[i, act] * (py[i, act] - vy[act]) - dy[i, act] * (px[i, act] - vx[act])
    return vx, vy
