"""RVO2's linearProgram1/2/3, batched over agents.

Lines are given as component arrays of shape (L, K), line index first and agent last (numpy
then runs its inner loops over the long agent axis): point (px, py), unit direction
(dx, dy), with a `valid` mask (valid lines of an agent form a prefix). The feasible side of
a line is the left of its direction: det(direction, point - v) <= 0.

linearProgram2 runs RVO2's own incremental algorithm: walk the lines in order and, where the
current result violates line i, re-solve linearProgram1 on line i against lines 0..i-1 (or
fail at line i, where linearProgram3 then starts). The loop is over line index, each step
batched over the agents whose line i is violated. Being RVO2's algorithm, it also picks
RVO2's point where the directional program has several optima. (An active-set solver was
tried first: in crowds most programs are infeasible and need this walk for their failing
line anyway, so it only added work.)

linearProgram3 (minimise the largest penetration of the agent lines, obstacle lines stay
hard) walks the lines in order like RVO2: a loop over line index, batched over the agents
whose line triggers, each step a directional linearProgram2 solved the same way.
"""
import functools
from typing import NamedTuple

import numpy as np

RVO_EPSILON = 1e-5  # RVO2's RVO_EPSILON: (almost) parallel lines in linearProgram1/3
_HUGE = np.finfo(np.float64).max
# linearProgram2 on up to this many (lines^2 * agents) entries solves linearProgram1 for every
# line at once (fewer numpy calls: a fleet's 20 robots with 19 lines each take half the time);
# larger batches solve only where a line is hit (less arithmetic).
_DENSE_MAX_ENTRIES = 28800
# Offset of a line that stands for "no line" (squares stay finite; beyond any speed circle).
_FAR_LINE = 1e150
# linearProgram3: once this few agents have lines left, they are solved together.
_LP3_MERGE_AGENTS = 64
# linearProgram3: a round's band of lines is as wide as keeps its batch of sub-problems within
# this many (lines^2 * sub-problems) entries (measured on the crossing crowd, 100-10,000 agents).
_LP3_BAND_ENTRIES = 4000
# Packed pairs are reduced row by row from this many columns (agents) on, else by reduceat.
_SEGMENT_ROWS_MIN_COLUMNS = 64


def take_columns(arrays, columns):
    """The given columns (agents) of each (L, K) array; take is several times faster than
    a[:, columns] fancy indexing (the method: np.take adds a Python wrapper per call)."""
    return tuple([a.take(columns, axis=1) for a in arrays])


def _interval_on_lines(cpx, cpy, cdx, cdy, px, py, dx, dy, pair_mask, radius):
    """linearProgram1 on candidate lines c bounded by lines j, batch axis last: the
    feasible interval [t_left, t_right] along each candidate.

    Candidates (C, X), bounding lines (J, X), pair_mask (C, J, X) or broadcastable says
    which j bound which c (None: all of them), radius (X,). Returns (t_left, t_right, usable),
    each (C, X); usable False where the candidate misses the speed circle, a parallel line
    excludes it, or the interval is empty. A candidate line among its own bounding lines adds
    nothing (its denominator and numerator are exactly 0: parallel, not failing).
    """
    dot = cpx * cdx + cpy * cdy
    disc = dot * dot + radius * radius - (cpx * cpx + cpy * cpy)
    root = np.sqrt(np.maximum(disc, 0.0))
    dxi, dyi = cdx[:, None, :], cdy[:, None, :]
    denominator = dxi * dy - dyi * dx
    numerator = dx * (cpy[:, None, :] - py) - dy * (cpx[:, None, :] - px)
    parallel = np.abs(denominator) <= RVO_EPSILON
    if pair_mask is None:
        # Usually no pair is parallel: then every j bounds c, with no masking to do.
        if parallel.any():
            parallel_fail = (parallel & (numerator < 0.0)).any(axis=1)
            # NaN where j does not bound c (no limit below). The division then never sees a
            # zero (|denominator| > RVO_EPSILON or NaN): no warnings.
            np.putmask(denominator, parallel, np.nan)
        else:
            parallel_fail = None
    else:
        parallel_fail = (pair_mask & parallel & (numerator < 0.0)).any(axis=1)
        np.putmask(denominator, parallel | ~pair_mask, np.nan)
    t = numerator / denominator
    # A line with denominator > 0 limits t from above, < 0 from below. Cheaper than selects:
    # pad the other side's entries to -/+_HUGE (beyond every finite t and the circle
    # interval, so the result is as if they were absent); fmin/fmax skip the NaN ones.
    pad = np.sign(denominator)
    pad *= -_HUGE
    neg_dot = -dot
    t_right = np.minimum(neg_dot + root, np.fmin.reduce(np.fmax(t, pad), axis=1, initial=np.inf))
    t_left = np.maximum(neg_dot - root, np.fmax.reduce(np.fmin(t, pad), axis=1, initial=-np.inf))
    usable = (disc >= 0.0) & (t_left <= t_right)
    if parallel_fail is not None:
        usable &= ~parallel_fail
    return t_left, t_right, usable


def _best_t(cpx, cpy, cdx, cdy, t_left, t_right, ox, oy, direction):
    """linearProgram1's choice on each candidate's interval: the end furthest along opt if
    `direction`, otherwise the point closest to opt."""
    if direction:
        return np.where(ox * cdx + oy * cdy > 0.0, t_right, t_left)
    return np.minimum(np.maximum(cdx * (ox - cpx) + cdy * (oy - cpy), t_left), t_right)


def violation(px, py, dx, dy, vx, vy):
    """det(direction, point - v) for (L, K) lines and (K,) velocities: > 0 means violated."""
    return dx * (py - vy) - dy * (px - vx)


def clamp_to_speed(opt_x, opt_y, radius):
    """linearProgram2's start for the closest-point objective: opt, pulled onto the circle."""
    speed_sq = opt_x * opt_x + opt_y * opt_y
    # The same quotients as dividing the gathered entries, in two calls instead of six.
    scale = np.divide(radius, np.sqrt(speed_sq), out=np.ones_like(speed_sq),
                      where=speed_sq > radius * radius)
    return opt_x * scale, opt_y * scale


def closest_point(px, py, dx, dy, valid, radius, opt_x, opt_y):
    """linearProgram2 (closest point to opt within the speed circle) for K agents.

    Lines (L, K). Returns (vx, vy, line_fail): line_fail is -1 where feasible, otherwise
    RVO2's failing line index (the velocity is then meaningless; linearProgram3 takes over).
    """
    start_x, start_y = clamp_to_speed(opt_x, opt_y, radius)
    fail, vx, vy = _incremental(px, py, dx, dy, valid, radius, opt_x, opt_y, start_x, start_y,
                                direction=False)
    return vx, vy, np.where(fail < px.shape[0], fail, -1)


def _best_direction(px, py, dx, dy, valid, radius, dir_x, dir_y):
    """linearProgram2 with directionOpt: the point of the disk and half-planes furthest along
    the unit vector `dir`. Lines (L, K). Returns (vx, vy, ok); ok is False where it found no
    point."""
    fail, vx, vy = _incremental(px, py, dx, dy, valid, radius, dir_x, dir_y,
                                dir_x * radius, dir_y * radius, direction=True)
    return vx, vy, fail == px.shape[0]


def _incremental(px, py, dx, dy, valid, radius, opt_x, opt_y, start_x, start_y, direction):
    """RVO2's linearProgram2 from (start_x, start_y): one loop step per line, batched over
    the agents that violate that line.

    At step i the result is the optimum of lines 0..i-1; if it violates line i,
    linearProgram1 on line i against lines 0..i-1 either moves it or fails (i is the
    failing line). Returns (line_fail, vx, vy); line_fail is L where the program is
    feasible, (vx, vy) the result (meaningless where it failed).
    """
    width, count = px.shape
    if width * width * count > _DENSE_MAX_ENTRIES:
        return _incremental_per_line(px, py, dx, dy, valid, radius, opt_x, opt_y, start_x,
                                     start_y, direction)
    if width == 0:
        return np.zeros(count, dtype=np.intp), start_x.copy(), start_y.copy()
    # linearProgram1 on line i against lines 0..i-1 does not depend on the current result:
    # solve it for every line at once, then replay the incremental walk. The pairs of lines
    # are packed (the i pairs (i, j < i) of each line i in a row, reduced by _segment_reduce),
    # not padded to L x L with a mask: under half the entries.
    pairs = _packed_pairs(width)
    dot = px * dx + py * dy
    disc = dot * dot + radius * radius - (px * px + py * py)
    root = np.sqrt(np.maximum(disc, 0.0))
    neg_dot = -dot
    t_left = neg_dot - root
    t_right = neg_dot + root
    usable = disc >= 0.0
    if width > 1:
        # Lines 1.. (line 0 has nothing bounding it): the interval along candidate line i
        # that lines j < i leave, as _interval_on_lines finds it.
        cand, bound = pairs.candidate, pairs.bound
        cpx, cpy = px.take(cand, axis=0), py.take(cand, axis=0)
        bdx, bdy = dx.take(bound, axis=0), dy.take(bound, axis=0)
        denominator = dx.take(cand, axis=0) * bdy - dy.take(cand, axis=0) * bdx
        numerator = bdx * (cpy - py.take(bound, axis=0)) - bdy * (cpx - px.take(bound, axis=0))
        parallel = np.abs(denominator) <= RVO_EPSILON
        if parallel.any():
            failing = parallel & (numerator < 0.0)
            usable[1:] &= ~_segment_reduce(np.logical_or, failing, pairs.bound_segments)
            np.putmask(denominator, parallel, np.nan)
        t = numerator / denominator
        pad = np.sign(denominator)
        pad *= -_HUGE
        # fmin/fmax skip the NaN (parallel) pairs; a line with only those keeps its circle
        # interval (fmin(NaN, inf) is inf).
        upper = np.fmin(_segment_reduce(np.fmin, np.fmax(t, pad), pairs.bound_segments), np.inf)
        lower = np.fmax(_segment_reduce(np.fmax, np.fmin(t, pad), pairs.bound_segments),
                        -np.inf)
        np.minimum(t_right[1:], upper, out=t_right[1:])
        np.maximum(t_left[1:], lower, out=t_left[1:])
    usable &= t_left <= t_right
    t = _best_t(px, py, dx, dy, t_left, t_right, opt_x, opt_y, direction)
    # The walk's states: the start (0) and the result after a move at line i (i + 1). From
    # each, the next line the walk stops at is the first later valid line its result
    # violates (the walk's own test, on the same values); there it moves to that line's
    # result, or fails and stays. Following these steps from the start, L + 1 of them at the
    # most, by repeated squaring of the step map: the walk's end, without a loop over lines.
    state_x = np.empty((width + 1, count))
    state_y = np.empty((width + 1, count))
    state_x[0], state_y[0] = start_x, start_y
    state_x[1:] = px + t * dx
    state_y[1:] = py + t * dy
    # Pairs (state s < L, line j >= s), packed like the line pairs above.
    state, later = pairs.state, pairs.later
    hit = dx.take(later, axis=0) * (py.take(later, axis=0) - state_y.take(state, axis=0)) \
        - dy.take(later, axis=0) * (px.take(later, axis=0) - state_x.take(state, axis=0)) > 0.0
    hit &= valid.take(later, axis=0)
    stop = np.full((width + 1, count), width)       # state L (a move at the last line) ends
    stop[:width] = _segment_reduce(np.minimum, np.where(hit, pairs.later_column, width),
                                   pairs.later_segments)
    stops = stop < width
    columns = np.arange(count)
    moves = (valid & usable).reshape(-1).take(np.minimum(stop, width - 1) * count + columns)
    # The step map as flat indices (next state * count + column) into the (L + 1, K) arrays:
    # composing it with itself is then one take a round.
    step = np.where(stops & moves, stop + 1, np.arange(width + 1)[:, None]) * count + columns
    for _ in range(int(width).bit_length()):        # 2^rounds >= L + 1 steps
        step = step.reshape(-1).take(step)
    flat = step[0]      # the walk's end
    line_fail = stop.reshape(-1).take(flat)
    return line_fail, state_x.reshape(-1).take(flat), state_y.reshape(-1).take(flat)


class _Segments(NamedTuple):
    """Consecutive runs of rows (segments) of a packed pair array: the row each segment starts
    at, and for each offset d >= 1 the segments longer than d (a slice of them) with the rows
    of their entries d."""
    first: np.ndarray
    steps: tuple


class _PackedPairs(NamedTuple):
    candidate: np.ndarray       # line i >= 1 of each pair (i, j < i), i ascending
    bound: np.ndarray           # its line j
    bound_segments: _Segments   # line i's pairs (i = 1..L-1)
    state: np.ndarray           # state s of each pair (s, j >= s), s ascending
    later: np.ndarray           # its line j
    later_column: np.ndarray    # j, as a column
    later_segments: _Segments   # state s's pairs (s = 0..L-1)


def _segments(starts, lengths):
    """_Segments of rows starts[k] .. starts[k] + lengths[k] - 1 (lengths ascending or
    descending, so the segments longer than d are a slice)."""
    steps = []
    for d in range(1, int(lengths.max(initial=0))):
        longer = np.flatnonzero(lengths > d)
        steps.append((slice(int(longer[0]), int(longer[-1]) + 1), starts[longer] + d))
    return _Segments(starts, tuple(steps))


def _segment_reduce(ufunc, values, segments):
    """ufunc.reduceat(values, starts, axis=0) over the segments of rows. Over many columns
    row by row, in reduceat's order (each segment's first row, then its next rows one by one:
    identical results): there reduceat along the first axis is several times slower than
    these few whole-row operations (at 300 columns and 5 lines ~8 vs ~27 us); over a few
    columns (a fleet) reduceat is quicker."""
    if values.shape[1] < _SEGMENT_ROWS_MIN_COLUMNS:
        return ufunc.reduceat(values, segments.first, axis=0)
    out = values.take(segments.first, axis=0)
    for rows_of, entries in segments.steps:
        part = out[rows_of]
        ufunc(part, values.take(entries, axis=0), out=part)
    return out


@functools.lru_cache(maxsize=64)
def _packed_pairs(width):
    """The packed pair indices of the dense linearProgram2 for `width` lines (read-only)."""
    lines = np.arange(width)
    candidate = np.repeat(lines, lines)
    bound = np.concatenate([lines[:i] for i in range(width)])
    bound_starts = (lines[1:] * (lines[1:] - 1)) // 2
    state = np.repeat(lines, width - lines)
    later = np.concatenate([lines[s:] for s in range(width)])
    later_starts = np.concatenate([[0], np.cumsum(width - lines[:-1])]).astype(np.intp)
    pairs = _PackedPairs(candidate, bound, _segments(bound_starts, lines[1:]), state, later,
                         later[:, None], _segments(later_starts, width - lines))
    for group in (pairs.candidate, pairs.bound, pairs.state, pairs.later, pairs.later_column,
                  pairs.bound_segments.first, pairs.later_segments.first,
                  *(rows for _, rows in pairs.bound_segments.steps + pairs.later_segments.steps)):
        group.setflags(write=False)
    return pairs


def _incremental_per_line(px, py, dx, dy, valid, radius, opt_x, opt_y, start_x, start_y,
                          direction):
    """_incremental for many agents or lines: linearProgram1 only where line i is hit.

    The loop tests line i for the open agents; where none violates it, it looks at every
    later line at once and jumps to the first violated one (lines no open agent violates
    change nothing). An agent that fails leaves the walk: its column is masked out, and the
    columns are compacted once half of them are closed (a compaction costs more than
    testing a few closed columns)."""
    width, count = px.shape
    vx, vy = start_x.copy(), start_y.copy()
    line_fail = np.full(count, width, dtype=np.intp)
    agents = np.arange(count)       # the agents of the columns of the arrays below
    lines, mask, bound = (px, py, dx, dy), valid, (radius, opt_x, opt_y)
    mask_is_copy = False
    is_open = np.ones(count, dtype=bool)
    open_count = count
    cur_x, cur_y = vx.copy(), vy.copy()
    i = 0
    while i < width:
        lx, ly, ldx, ldy = lines
        hits = ldx[i] * (ly[i] - cur_y) - ldy[i] * (lx[i] - cur_x) > 0.0
        hits &= mask[i]
        cols = hits.nonzero()[0]
        if not cols.size:
            later = ldx[i:] * (ly[i:] - cur_y) - ldy[i:] * (lx[i:] - cur_x) > 0.0
            later &= mask[i:]
            violated = later.any(axis=1)
            if not violated.any():
                break
            ahead = int(violated.argmax())
            i += ahead
            cols = later[ahead].nonzero()[0]
        # Lines 0..i-1 all bound line i (valid lines form a prefix; see _bisector_problem).
        bounds = take_columns((lx[:i], ly[:i], ldx[:i], ldy[:i]), cols)
        cpx, cpy, cdx, cdy = (lx[i].take(cols), ly[i].take(cols), ldx[i].take(cols),
                              ldy[i].take(cols))
        rad, ox, oy = (b.take(cols) for b in bound)
        t_left, t_right, usable = (a[0] for a in _interval_on_lines(
            cpx[None], cpy[None], cdx[None], cdy[None], *bounds, None, rad))
        t = _best_t(cpx, cpy, cdx, cdy, t_left, t_right, ox, oy, direction)
        cur_x[cols] = np.where(usable, cpx + t * cdx, cur_x.take(cols))
        cur_y[cols] = np.where(usable, cpy + t * cdy, cur_y.take(cols))
        if not usable.all():
            # The failed agents leave with the result they had (linearProgram3 starts there).
            failed = cols[~usable]
            line_fail[agents.take(failed)] = i
            open_count -= failed.size
            if not open_count:
                break
            is_open[failed] = False
            if 2 * open_count <= agents.size:
                vx[agents], vy[agents] = cur_x, cur_y
                keep = is_open.nonzero()[0]
                agents = agents.take(keep)
                lines = take_columns(lines, keep)
                mask = mask.take(keep, axis=1)
                mask_is_copy = True
                bound = tuple(b.take(keep) for b in bound)
                cur_x, cur_y = cur_x.take(keep), cur_y.take(keep)
                is_open = np.ones(open_count, dtype=bool)
            else:
                if not mask_is_copy:
                    mask = mask.copy()
                    mask_is_copy = True
                mask[:, failed] = False     # its result stays as it was at the failure
        i += 1
    vx[agents], vy[agents] = cur_x, cur_y
    return line_fail, vx, vy


def _lp3_band(at, low, num_lines):
    """How many lines from the lowest next line `low` one round of linearProgram3 takes:
    the most whose padded batch of sub-problems (at line i, i lines; one per agent and line
    from its next one to the band's end) stays within _LP3_BAND_ENTRIES, at least one."""
    ends = np.arange(low, num_lines)
    pairs = np.cumsum(np.cumsum(np.bincount(at - low, minlength=ends.size)))
    fits = np.count_nonzero(ends * ends * pairs <= _LP3_BAND_ENTRIES)
    return max(int(fits), 1)


def _bisector_problem(px, py, dx, dy, num_hard, agents, lines):
    """Directional sub-problem of linearProgram3 at line i = lines[k] for each given agent:
    lines j < i, hard ones as they are, soft ones replaced by the bisector of lines j and i
    (the points of equal penetration). Returns (max i, K) lines (rows j >= i stand for no
    line), their mask and the objective direction (the left normal of line i)."""
    width = int(lines.max())
    flat = lines * px.shape[1] + agents
    ix, iy, ipx, ipy = dx.take(flat), dy.take(flat), px.take(flat), py.take(flat)
    jx, jy, jpx, jpy = take_columns((dx[:width], dy[:width], px[:width], py[:width]), agents)
    beyond = np.arange(width)[:, None] >= lines[None, :]  # rows past an agent's own line i
    determinant = ix * jy - iy * jx
    parallel = np.abs(determinant) <= RVO_EPSILON
    bis_dx, bis_dy = jx - ix, jy - iy
    if parallel.any():
        same_direction = parallel & (ix * jx + iy * jy > 0.0)
        with np.errstate(divide='ignore', invalid='ignore'):
            along = (jx * (ipy - jpy) - jy * (ipx - jpx)) / determinant
            bis_px = np.where(parallel, 0.5 * (ipx + jpx), ipx + along * ix)
            bis_py = np.where(parallel, 0.5 * (ipy + jpy), ipy + along * iy)
            norm = np.sqrt(bis_dx * bis_dx + bis_dy * bis_dy)
            bis_dx = bis_dx / norm
            bis_dy = bis_dy / norm
    else:  # the usual case: no zero divisor
        same_direction = None
        along = (jx * (ipy - jpy) - jy * (ipx - jpx)) / determinant
        bis_px = ipx + along * ix
        bis_py = ipy + along * iy
        norm = np.sqrt(bis_dx * bis_dx + bis_dy * bis_dy)
        bis_dx = bis_dx / norm
        bis_dy = bis_dy / norm
    # RVO2 leaves out the bisector of a line parallel to line i in the same direction; here
    # it becomes y >= -_FAR_LINE, which no velocity violates and which cuts no line within
    # the speed circle, so the walk can treat every line as present.
    # Rows past an agent's own line are left out the same way.
    left_out = beyond if same_direction is None else beyond | same_direction
    hard_count = num_hard[agents]
    if not hard_count.any():  # no obstacle lines: only bisectors
        if not left_out.any():
            return bis_px, bis_py, bis_dx, bis_dy, ~left_out, -iy, ix
        proj_valid = ~left_out
        return (np.where(proj_valid, bis_px, 0.0), np.where(proj_valid, bis_py, -_FAR_LINE),
                np.where(proj_valid, bis_dx, 1.0), np.where(proj_valid, bis_dy, 0.0), proj_valid,
                -iy, ix)
    hard = (np.arange(width)[:, None] < hard_count[None, :]) & ~beyond
    proj_valid = hard | ~left_out
    soft = proj_valid & ~hard
    proj_px = np.where(hard, jpx, np.where(soft, bis_px, 0.0))
    proj_py = np.where(hard, jpy, np.where(soft, bis_py, -_FAR_LINE))
    proj_dx = np.where(hard, jx, np.where(soft, bis_dx, 1.0))
    proj_dy = np.where(hard, jy, np.where(soft, bis_dy, 0.0))
    return proj_px, proj_py, proj_dx, proj_dy, proj_valid, -iy, ix


def min_max_penetration(px, py, dx, dy, valid, num_hard, begin_line, radius, vx, vy,
                        columns=None):
    """linearProgram3 for K agents: from line `begin_line` on, keep the velocity that
    minimises the largest penetration of the soft lines; lines < num_hard stay hard.

    Lines (L, K), num_hard (K,); or, given `columns` (K,), the K agents' columns of larger
    line and num_hard arrays (no copies of them). (vx, vy) is linearProgram2's result at
    failure; returns the new (vx, vy).
    Like RVO2 each agent walks its lines in order and, where line i is violated by more than
    the current penetration, solves a directional linearProgram2 on the bisector lines of i.
    Batched: each round takes the agents whose next such line lies in a band of lines from
    the lowest one, solves the sub-problem of each at every line of the band from its next
    one (the sub-problem does not depend on where the walk stands), and replays their walks
    over the band; or, once few agents have a line left, solves all of them at their own
    lines in one padded batch.
    """
    num_lines, count = px.shape[0], len(begin_line)
    vx, vy = vx.copy(), vy.copy()
    rows = np.arange(num_lines)[:, None]
    # Each agent's next line to solve at; at begin_line the LP2 result violates the line by
    # construction.
    next_line = begin_line.copy()
    waiting = np.arange(count)
    while waiting.size:
        at = next_line.take(waiting)
        low = int(at.min())
        if waiting.size <= _LP3_MERGE_AGENTS:
            # Few left: each at its own next line, in one padded batch.
            act = waiting
            act_cols = act if columns is None else columns.take(act)
            problem = _bisector_problem(px, py, dx, dy, num_hard, act_cols, at)
            ax, ay, ok = _best_direction(*problem[:5], radius.take(act), *problem[5:])
            # RVO2 keeps the previous result when the sub-problem fails (rounding trouble
            # only).
            ax = np.where(ok, ax, vx.take(act))
            ay = np.where(ok, ay, vy.take(act))
            apx, apy, adx, ady, avalid = take_columns(
                (px[low:], py[low:], dx[low:], dy[low:], valid[low:]), act_cols)
            pen = adx * (apy - ay) - ady * (apx - ax)
            reached = pen.take((at - low) * act.size + np.arange(act.size))
            trigger = avalid & (pen > reached) & (rows[:num_lines - low] > at - low)
        else:
            # The agents whose next line is in a band of lines from the lowest: the
            # sub-problem at each of their lines in the band (it does not depend on where
            # the walk stands) in one batch, then their walks over the band.
            band = _lp3_band(at, low, num_lines)
            chosen = at < low + band
            act, at = waiting.compress(chosen), at.compress(chosen)
            act_cols = act if columns is None else columns.take(act)
            in_band = at[None, :] <= np.arange(low, low + band)[:, None]   # (band line, agent)
            line, member = in_band.nonzero()
            pair_agents = act.take(member)
            problem = _bisector_problem(px, py, dx, dy, num_hard, act_cols.take(member),
                                        line + low)
            solved = _best_direction(*problem[:5], radius.take(pair_agents), *problem[5:])
            if band == 1:
                solved_x, solved_y, solved_ok = (a[None] for a in solved)
            else:
                solved_x, solved_y = np.empty(in_band.shape), np.empty(in_band.shape)
                solved_ok = np.zeros(in_band.shape, dtype=bool)
                solved_x[in_band], solved_y[in_band], solved_ok[in_band] = solved
            apx, apy, adx, ady, avalid = take_columns(
                (px[low:], py[low:], dx[low:], dy[low:], valid[low:]), act_cols)
            ax, ay = vx.take(act), vy.take(act)
            for k in range(band):
                if k:
                    # Solved at where the result violates line k by more than the
                    # penetration accepted; an agent's first line, by construction.
                    pen = adx[k] * (apy[k] - ay) - ady[k] * (apx[k] - ax) > reached
                    pen &= avalid[k]
                    trigger = at == low + k
                    trigger |= pen & (at < low + k)
                    move = trigger & solved_ok[k]
                else:
                    move = solved_ok[0]
                # RVO2 keeps the previous result when the sub-problem fails (rounding
                # trouble only).
                ax = np.where(move, solved_x[k], ax)
                ay = np.where(move, solved_y[k], ay)
                now = adx[k] * (apy[k] - ay) - ady[k] * (apx[k] - ax)
                reached = now if not k else np.where(trigger, now, reached)
            rest = slice(band, None)
            pen = adx[rest] * (apy[rest] - ay) - ady[rest] * (apx[rest] - ax)
            trigger = avalid[rest] & (pen > reached)
            low += band
        vx[act], vy[act] = ax, ay
        # The next line of these agents: the first later one violated by more than the
        # penetration accepted (lines before `low` cannot be next).
        next_line[act] = np.where(trigger.any(axis=0), trigger.argmax(axis=0) + low, num_lines) \
            if len(trigger) else num_lines
        waiting = (next_line < num_lines).nonzero()[0]
    return vx, vy
