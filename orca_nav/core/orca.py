"""ORCA exactly as RVO2 2.0.3 computes it, batched over all agents with numpy.

One call of `compute_velocities` is RVO2's `RVOSimulator::doStep` without the position
update: for every agent, `Agent::computeNeighbors` then `Agent::computeNewVelocity`.

- Agent neighbours: the `max_neighbors` nearest other agents with squared distance strictly
  below `neighbor_dist**2` (scipy cKDTree k-nearest query).
- Obstacle neighbours: edges the agent is strictly outside of, within
  `time_horizon_obst * max_speed + radius`, nearest first (see `obstacles.ObstacleSet`,
  which also reproduces RVO2's edge splitting in its obstacle tree).
- ORCA lines: obstacle lines first (already-covered test, convex/concave vertices, legs,
  legs cut off by neighbouring edges, collision with the obstacle), then agent lines
  (cut-off circle, legs, the already-colliding case that uses `time_step`).
- The new velocity: linearProgram2 (closest point to the preferred velocity within
  `max_speed`), and where that is infeasible linearProgram3 (minimise the largest
  penetration of agent lines, obstacle lines hard); see `linear_program`.

Precision: agent ORCA lines are built in float32 with RVO2's operation order (near contact
their legs come from sqrt(dist^2 - r^2), so the reference's rounding decides them); obstacle
lines and the linear programs run in float64. On the recorded RVO2 runs every new velocity
agrees within ~1e-5 m/s. Inputs and outputs are float64.

Degenerate input RVO2 turns into NaN (coincident agents with equal velocities) gets a
separating direction instead. As in RVO2, an agent whose centre is inside a solid polygon
sees none of its edges (only edges it is outside of count).

Usage::

    params = OrcaParams(time_step=0.25, neighbor_dist=15.0, max_neighbors=10,
                        time_horizon=10.0, time_horizon_obst=10.0, radius=1.5, max_speed=2.0)
    new_v = compute_velocities(positions, velocities, pref_velocities, params,
                               obstacles=[square_ccw, segment])
    solution = solve(positions, velocities, pref_velocities, params)  # the same, plus
    solution.infeasible   # (N,) bool: linearProgram2 failed, linearProgram3 chose the velocity
    solution.lines        # OrcaLines: each agent's half-planes in velocity space

`radius` and `max_speed` (and also `neighbor_dist`, `max_neighbors`, `time_horizon`,
`time_horizon_obst`) may be floats or (N,) arrays.

Obstacles that rarely change (e.g. a node calling this at 20 Hz with map polygons):
build `obstacles = prepare_obstacles(polygons)` once per map and pass that `ObstacleSet` as
`obstacles` on every call. It holds the validated polygons and RVO2's processed obstacle
tree (with its edge splits), so nothing is re-validated or rebuilt per cycle. A plain list
must be counter-clockwise; `prepare_obstacles` also accepts clockwise polygons as RVO2
enclosures (solid outside: room walls, the map border), unless allow_enclosures=False.

`OrcaSimulator` is RVO2's simulator (add agents, obstacles, preferred velocities, step),
plus `remove_agent(id)` and `set_obstacles(polygons)` to replace the obstacles at run time.
"""
from dataclasses import dataclass
from typing import NamedTuple, Union

import numpy as np
from scipy.spatial import cKDTree

from .linear_program import (RVO_EPSILON, clamp_to_speed, closest_point, min_max_penetration,
                             take_columns, violation)
from .obstacles import ObstacleSet, as_obstacle_set, validate_polygons

__all__ = ['OrcaParams', 'OrcaSolution', 'OrcaLines', 'compute_velocities', 'solve',
           'OrcaSimulator', 'ObstacleSet', 'prepare_obstacles']

ArrayLike = Union[float, np.ndarray]
_LINE_BLOCK = 2048  # agents per block in the agent-line computation
_PARALLEL_QUERY_MIN_AGENTS = 5000  # neighbour queries on all cores from this many agents
PER_AGENT_FIELDS = ('neighbor_dist', 'max_neighbors', 'time_horizon', 'time_horizon_obst',
                    'radius', 'max_speed')


def prepare_obstacles(polygons, allow_enclosures=True):
    """Validate polygons and build RVO2's obstacle structure once (an ObstacleSet).

    Counter-clockwise polygons are solid inside; clockwise ones are accepted here as RVO2
    enclosures (solid outside, e.g. room walls from `map_polygons`) unless
    allow_enclosures=False. A plain list passed as `obstacles` must be counter-clockwise.
    """
    return ObstacleSet(polygons, allow_enclosures=allow_enclosures)


@dataclass
class OrcaParams:
    """RVO2's agent parameters (names as RVO2's) plus the simulation time step.

    Per-agent fields may be a scalar (all agents) or an (N,) array.
    """
    time_step: float
    neighbor_dist: ArrayLike
    max_neighbors: ArrayLike
    time_horizon: ArrayLike
    time_horizon_obst: ArrayLike
    radius: ArrayLike
    max_speed: ArrayLike

    def per_agent(self, count):
        """Validated per-agent arrays (dict name -> (count,) array) and the time step."""
        time_step = _check_scalar('params.time_step', self.time_step, positive=True)
        arrays = {}
        for name in PER_AGENT_FIELDS:
            value = np.asarray(getattr(self, name))
            label = f'params.{name}'
            if value.ndim == 0:
                value = np.full(count, value.item())
            elif value.shape != (count,):
                raise ValueError(f'{label}: expected a scalar or shape ({count},), got {value.shape}')
            try:
                value = value.astype(np.float64)
            except (TypeError, ValueError):
                raise ValueError(f'{label} must be numeric, got {value!r}') from None
            if name == 'max_neighbors':
                whole = np.isfinite(value) & (value >= 0.0) & (value == np.floor(value))
                bad = np.flatnonzero(~whole)
                if bad.size:
                    raise ValueError(f'{label}[{bad[0]}] must be an integer >= 0, got {value[bad[0]]}')
                arrays[name] = value.astype(np.int64)
                continue
            _check_finite(label, value)
            strict = name in ('time_horizon', 'time_horizon_obst')
            bad = np.flatnonzero(value <= 0.0 if strict else value < 0.0)
            if bad.size:
                relation = '> 0' if strict else '>= 0'
                raise ValueError(f'{label}[{bad[0]}] must be {relation}, got {value[bad[0]]}')
            arrays[name] = value
        return arrays, time_step


def _signed_area(polygon):
    x, y = polygon[:, 0], polygon[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(np.roll(x, -1), y))


def _check_scalar(label, value, positive=False):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f'{label} must be a number, got {value!r}') from None
    if not np.isfinite(value) or (positive and value <= 0.0):
        raise ValueError(f'{label} must be finite{" and > 0" if positive else ""}, got {value}')
    return value


def _check_finite(label, array):
    if not np.isfinite(array).all():
        flat = np.flatnonzero(~np.isfinite(array.reshape(len(array), -1)).all(axis=1))[0]
        raise ValueError(f'{label}[{flat}] is not finite: {array[flat].tolist()}')


def _as_point(label, value):
    """One (x, y) pair as a float64 (2,) array; ValueError naming `label` otherwise."""
    try:
        point = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f'{label} must be a numeric (x, y) pair, got {value!r}') from None
    if point.shape != (2,):
        raise ValueError(f'{label}: expected 2 numbers (x, y), got shape {np.shape(value)}')
    if not np.isfinite(point).all():
        raise ValueError(f'{label} is not finite: {point.tolist()}')
    return point


def _as_vectors(label, value, count=None):
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f'{label} must be a numeric (N, 2) array') from None
    if array.ndim != 2 or array.shape[1] != 2 or (count is not None and array.shape[0] != count):
        expected = f'({count}, 2)' if count is not None else '(N, 2)'
        raise ValueError(f'{label}: expected shape {expected}, got {array.shape}')
    _check_finite(label, array)
    return array


class OrcaLines(NamedTuple):
    """Every agent's ORCA lines, (L, N) arrays: column j holds agent j's lines, obstacle lines
    first, in RVO2's order; rows where `valid` is False are padding. The permitted velocities
    of a line lie left of its direction: det(direction, v - point) >= 0."""
    point_x: np.ndarray
    point_y: np.ndarray
    dir_x: np.ndarray
    dir_y: np.ndarray
    valid: np.ndarray

    def segments(self, agent: int, half_length: float) -> np.ndarray:
        """(M, 2, 2): both ends of each of `agent`'s M lines, `half_length` either side of its
        point, in velocity space (for drawing them around the agent)."""
        rows = self.valid[:, agent]
        point = np.stack([self.point_x[rows, agent], self.point_y[rows, agent]], axis=1)
        reach = half_length * np.stack([self.dir_x[rows, agent], self.dir_y[rows, agent]], axis=1)
        return np.stack([point - reach, point + reach], axis=1).astype(float)


class OrcaSolution(NamedTuple):
    velocities: np.ndarray   # (N, 2) float64: the new velocities
    # (N,) bool: no velocity within max_speed satisfies all of the agent's ORCA lines
    # (linearProgram2 failed), so linearProgram3 minimised the largest penetration. Normal
    # now and then in a crowd; persistent, it means the agent is jammed.
    infeasible: np.ndarray
    lines: OrcaLines


def compute_velocities(positions, velocities, pref_velocities, params, obstacles=()):
    """The new velocity of every agent, as RVO2's computeNewVelocity picks it.

    positions, velocities, pref_velocities: (N, 2). params: OrcaParams. obstacles: list of
    (M, 2) counter-clockwise vertex arrays (2 vertices = a segment) or an ObstacleSet.
    Returns (N, 2) float64.
    """
    return solve(positions, velocities, pref_velocities, params, obstacles).velocities


def solve(positions, velocities, pref_velocities, params, obstacles=()) -> OrcaSolution:
    """compute_velocities, plus which agents' linear programs were infeasible and the
    ORCA lines they were solved over."""
    positions = _as_vectors('positions', positions)
    count = len(positions)
    velocities = _as_vectors('velocities', velocities, count)
    pref_velocities = _as_vectors('pref_velocities', pref_velocities, count)
    if not isinstance(params, OrcaParams):
        raise ValueError(f'params must be an OrcaParams, got {type(params).__name__}')
    agent_params, time_step = params.per_agent(count)
    obstacle_set = as_obstacle_set(obstacles)
    return _new_velocities(positions, velocities, pref_velocities, agent_params, time_step,
                           obstacle_set)


# ---------------------------------------------------------------------------------------
# Neighbours

def _agent_neighbors(positions, neighbor_dist, max_neighbors):
    """(N, k) neighbour indices, nearest first, and a prefix mask of the ones RVO2 keeps
    (indices outside the mask are meaningless: cKDTree's "missing" N, or too far)."""
    count = len(positions)
    k = int(min(max_neighbors.max(initial=0), count - 1))
    if k <= 0:
        return np.zeros((count, 0), dtype=np.intp), np.zeros((count, 0), dtype=bool)
    tree = cKDTree(positions, balanced_tree=False, compact_nodes=False)
    reach = float(neighbor_dist.max()) * (1.0 + 1e-9) + 1e-12
    # Threads pay off only for large crowds (each query point is independent: same result).
    workers = -1 if count >= _PARALLEL_QUERY_MIN_AGENTS else 1
    dist, found = tree.query(positions, k=k + 1, distance_upper_bound=reach, workers=workers)
    own = np.arange(count)
    if (found[:, 0] == own).all():
        neighbors, dist = found[:, 1:], dist[:, 1:]
    else:
        # Coincident agents may come before the agent itself: drop the agent's own column.
        is_self = found == own[:, None]
        self_col = np.where(is_self.any(axis=1), is_self.argmax(axis=1), k + 1)
        cols = np.arange(k)[None, :]
        cols = cols + (cols >= self_col[:, None])
        neighbors = np.take_along_axis(found, cols, axis=1)
        dist = np.take_along_axis(dist, cols, axis=1)
    # Strictly inside neighbor_dist (missing neighbours have dist = inf), nearest first.
    keep = dist < neighbor_dist[:, None]
    if max_neighbors.min() < k:
        keep &= np.arange(k)[None, :] < max_neighbors[:, None]
    # Slots no agent uses would only carry masked sentinel lines through every later stage
    # (keep is a prefix mask: trailing slots are unused when no agent keeps them).
    used = k
    while used > 0 and not keep[:, used - 1].any():
        used -= 1
    return neighbors[:, :used], keep[:, :used]


# ---------------------------------------------------------------------------------------
# ORCA lines

def _agent_lines(positions, velocities, radius, time_horizon, time_step, neighbors, keep):
    """Agent-agent ORCA lines as (k, N) float64 arrays (slot-major): point (px, py) and
    direction (dx, dy) of neighbour slot j of agent a at [j, a].

    Computed in float32 with RVO2's operation order: near contact the legs come from
    sqrt(dist^2 - r^2), which is ill-conditioned, so the reference's own rounding decides
    the line; matching it keeps parity in crowds. (Vector division is by reciprocal, as in
    RVO2's Vector2.) Unused slots (neighbour index N) hold finite lines from a far sentinel
    agent; callers mask them with `keep`.

    Work happens in (k, N) layout so per-agent values broadcast along the long axis, and
    branches are blended arithmetically (mask * a + (1 - mask) * b is exact when the unused
    branch is finite), which is far cheaper in numpy than masked selection.
    """
    f32 = np.float32
    count, width = neighbors.shape
    if width == 0:
        empty = np.zeros((0, count))
        return empty, empty, empty, empty
    pos = np.empty((count + 1, 2), dtype=f32)
    pos[:count] = positions
    pos[count] = np.abs(positions).max(initial=0.0) * 4.0 + 1e4  # sentinel, far from all
    vel = np.zeros((count + 1, 2), dtype=f32)
    vel[:count] = velocities
    rad = np.zeros(count + 1, dtype=f32)
    rad[:count] = radius
    columns = (pos[:, 0].copy(), pos[:, 1].copy(), vel[:, 0].copy(), vel[:, 1].copy(), rad)
    inv_horizon = f32(1.0) / time_horizon.astype(f32)
    inv_step = f32(1.0) / f32(time_step)
    # Unused slots point at index `count`, a far sentinel agent. (Slot-major, C order.)
    other = np.empty((width, count), dtype=np.intp)
    np.copyto(other, neighbors.T)
    np.copyto(other, count, where=~keep.T)
    lines = np.empty((4, width, count))
    # Blocks of agents keep the ~40 temporaries in cache.
    for start in range(0, count, _LINE_BLOCK):
        block = slice(start, min(start + _LINE_BLOCK, count))
        _agent_lines_block(columns, block, other[:, block], inv_horizon[block], inv_step,
                           keep[block].T, lines[:, :, block])
    return lines[0], lines[1], lines[2], lines[3]


def _agent_lines_block(columns, block, other, inv_horizon, inv_step, keep_t, out):
    """_agent_lines for the agents in `block`; writes (px, py, dx, dy) into out (4, k, B)."""
    f32 = np.float32
    all_px, all_py, all_vx, all_vy, all_rad = columns
    own_px, own_py = all_px[block], all_py[block]
    own_vx, own_vy = all_vx[block], all_vy[block]
    rel_x = all_px[other] - own_px
    rel_y = all_py[other] - own_py
    rv_x = own_vx - all_vx[other]
    rv_y = own_vy - all_vy[other]
    combined = all_rad[block] + all_rad[other]
    dist_sq = rel_x * rel_x + rel_y * rel_y
    combined_sq = combined * combined
    # No collision: w from the cut-off centre to the relative velocity.
    w_x = rv_x - inv_horizon * rel_x
    w_y = rv_y - inv_horizon * rel_y
    dot1 = w_x * rel_x + w_y * rel_y
    colliding = dist_sq <= combined_sq
    special = ((dot1 < 0.0) & (dot1 * dot1 > combined_sq * (w_x * w_x + w_y * w_y))) | colliding
    any_legs = not special.all()  # unused slots (far sentinel) count as cut-off circle
    any_circle = special.any()

    if any_legs:
        # Legs: left (rx*leg - ry*cr, rx*cr + ry*leg) / d2, right -(rx*leg + ry*cr, -rx*cr + ry*leg) / d2.
        leg = np.sqrt(np.maximum(dist_sq - combined_sq, f32(0.0)))
        sign = (rel_x * w_y - rel_y * w_x > 0.0).astype(f32) * f32(2.0) - f32(1.0)
        cr = combined * sign
        inv_d2 = sign / np.maximum(dist_sq, f32(1e-30))  # sign * (1/d2): the sign flip is exact
        leg_x = (rel_x * leg - rel_y * cr) * inv_d2
        leg_y = (rel_x * cr + rel_y * leg) * inv_d2
        dot2 = rv_x * leg_x + rv_y * leg_y
        leg_ux = dot2 * leg_x - rv_x
        leg_uy = dot2 * leg_y - rv_y
    if any_circle:
        # Cut-off circle of the time horizon or, when already colliding, of one time step.
        if colliding.any():
            hit = colliding.astype(f32)
            miss = f32(1.0) - hit
            inv_time = inv_horizon * miss + inv_step * hit
            cw_x = w_x * miss + (rv_x - inv_step * rel_x) * hit
            cw_y = w_y * miss + (rv_y - inv_step * rel_y) * hit
        else:
            inv_time, cw_x, cw_y = inv_horizon, w_x, w_y
        cw_len = np.sqrt(cw_x * cw_x + cw_y * cw_y)
        inv_len = f32(1.0) / np.maximum(cw_len, f32(1e-30))
        unit_x = cw_x * inv_len
        unit_y = cw_y * inv_len
        degenerate = np.flatnonzero((cw_len == 0.0) & special & keep_t)
        if degenerate.size:
            unit_x, unit_y = _separating_fallback(unit_x, unit_y, rel_x, rel_y, other, degenerate,
                                                  block.start)
        circle_u = combined * inv_time - cw_len
        circle_ux = circle_u * unit_x
        circle_uy = circle_u * unit_y
    # Blend the branches arithmetically (exact: the unused branch is finite, times 0).
    if any_legs and any_circle:
        on_circle = special.astype(f32)
        on_legs = f32(1.0) - on_circle
        d_x = unit_y * on_circle + leg_x * on_legs
        d_y = -unit_x * on_circle + leg_y * on_legs
        u_x = circle_ux * on_circle + leg_ux * on_legs
        u_y = circle_uy * on_circle + leg_uy * on_legs
    elif any_legs:
        d_x, d_y, u_x, u_y = leg_x, leg_y, leg_ux, leg_uy
    else:
        d_x, d_y, u_x, u_y = unit_y, -unit_x, circle_ux, circle_uy
    out[0] = own_vx + f32(0.5) * u_x
    out[1] = own_vy + f32(0.5) * u_y
    # Unit length in float64: the linear programs rely on it (float32 leaves ~1e-7).
    out[2] = d_x
    out[3] = d_y
    inv_norm = 1.0 / np.sqrt(out[2] * out[2] + out[3] * out[3])
    out[2] *= inv_norm
    out[3] *= inv_norm


def _separating_fallback(unit_x, unit_y, rel_x, rel_y, other, flat, first_agent):
    """RVO2 divides by zero when the relative velocity equals relative position / time
    step (e.g. coincident agents at rest); push straight away from the other agent (or
    along -x / +x by index for coincident agents) instead of producing NaN."""
    unit_x, unit_y = unit_x.copy(), unit_y.copy()
    rx = rel_x.ravel()[flat].astype(np.float64)
    ry = rel_y.ravel()[flat].astype(np.float64)
    me = flat % rel_x.shape[1] + first_agent
    dist = np.hypot(rx, ry)
    apart = dist > 0.0
    safe = np.where(apart, dist, 1.0)
    unit_x.ravel()[flat] = np.where(apart, -rx / safe, np.where(me < other.ravel()[flat], -1.0, 1.0))
    unit_y.ravel()[flat] = np.where(apart, -ry / safe, 0.0)
    return unit_x, unit_y


def _normalize(x, y):
    """RVO2's normalize in float32: v * (1 / sqrt(v . v)), zero vectors left as zero."""
    length = np.sqrt(x * x + y * y)
    inv = np.float32(1.0) / np.where(length > 0.0, length, np.float32(1.0))
    return x * inv, y * inv


def _det(ax, ay, bx, by):
    return ax * by - ay * bx


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
    add = hit_left & convex1
    dx[add], dy[add] = _normalize(-r1y[add], r1x[add])
    added |= add
    add = hit_right & convex2 & (_det(r2x, r2y, u2x, u2y) >= 0.0)
    dx[add], dy[add] = _normalize(-r2y[add], r2x[add])
    added |= add
    dx[hit_segment], dy[hit_segment] = -u1x[hit_segment], -u1y[hit_segment]
    added |= hit_segment

    rest = ~(hit_left | hit_right | hit_segment)
    oblique_left = rest & (s < 0.0) & (dist_sq_line <= radius_sq)
    oblique_right = rest & ~oblique_left & (s > 1.0) & (dist_sq_line <= radius_sq)
    # Obliquely viewed past a non-convex vertex: ignored.
    rest &= ~(oblique_left & ~convex1) & ~(oblique_right & ~convex2)
    sel = np.flatnonzero(rest)
    if sel.size == 0:
        return px, py, dx, dy, added
    # From here on, only the remaining pairs. When viewed obliquely both legs come from one
    # vertex (RVO2 sets obstacle2 = obstacle1, or obstacle1 = obstacle2).
    ol, orr = oblique_left[sel], oblique_right[sel]
    same = ol | orr
    q1x, q1y = np.where(orr, p2x[sel], p1x[sel]), np.where(orr, p2y[sel], p1y[sel])
    q2x, q2y = np.where(ol, p1x[sel], p2x[sel]), np.where(ol, p1y[sel], p2y[sel])
    d1 = np.where(orr, dist_sq2[sel], dist_sq1[sel])
    d2 = np.where(ol, dist_sq1[sel], dist_sq2[sel])
    c1 = np.where(orr, convex2[sel], convex1[sel])
    c2 = np.where(ol, convex1[sel], convex2[sel])
    q1ux, q1uy = np.where(orr, u2x[sel], u1x[sel]), np.where(orr, u2y[sel], u1y[sel])
    q1pux, q1puy = np.where(orr, u1x[sel], pu1x[sel]), np.where(orr, u1y[sel], pu1y[sel])
    q2ux, q2uy = np.where(ol, u1x[sel], u2x[sel]), np.where(ol, u1y[sel], u2y[sel])
    e1x, e1y = u1x[sel], u1y[sel]  # the original obstacle1's edge direction
    rad, rsq, it = radius[sel], radius_sq[sel], inv_time[sel]
    vx, vy, ox, oy = vel_x[sel], vel_y[sel], pos_x[sel], pos_y[sel]
    a1x, a1y = q1x - ox, q1y - oy
    a2x, a2y = q2x - ox, q2y - oy
    leg1 = np.sqrt(np.maximum(d1 - rsq, zero))
    leg2 = np.sqrt(np.maximum(d2 - rsq, zero))
    with np.errstate(divide='ignore', invalid='ignore'):
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
    with np.errstate(divide='ignore', invalid='ignore'):
        t = np.where(same, f32(0.5), (flx * cvx + fly * cvy) / (cvx * cvx + cvy * cvy))
    t_left = flx * left_x + fly * left_y
    t_right = frx * right_x + fry * right_y
    scale = rad * it

    lpx, lpy = np.zeros(sel.size, dtype=f32), np.zeros(sel.size, dtype=f32)
    ldx, ldy = np.ones(sel.size, dtype=f32), np.zeros(sel.size, dtype=f32)
    ladd = np.zeros(sel.size, dtype=bool)
    circle_left = ((t < 0.0) & (t_left < 0.0)) | (same & (t_left < 0.0) & (t_right < 0.0))
    circle_right = ~circle_left & (t > 1.0) & (t_right < 0.0)
    for chosen, cx, cy, fx, fy in ((circle_left, lcx, lcy, flx, fly),
                                   (circle_right, rcx, rcy, frx, fry)):
        wx, wy = _normalize(fx[chosen], fy[chosen])
        ldx[chosen], ldy[chosen] = wy, -wx
        lpx[chosen] = cx[chosen] + scale[chosen] * wx
        lpy[chosen] = cy[chosen] + scale[chosen] * wy
        ladd |= chosen

    open_ = ~(circle_left | circle_right)
    inf = f32(np.inf)
    with np.errstate(invalid='ignore', over='ignore'):
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


def _obstacle_lines(obstacles, positions, velocities, radius, max_speed, time_horizon_obst):
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
    per_agent = np.bincount(agent, minlength=count)
    rank = np.arange(agent.size) - np.repeat(np.cumsum(per_agent) - per_agent, per_agent)
    width = int(per_agent.max())
    px, py = np.zeros((count, width), dtype=f32), np.zeros((count, width), dtype=f32)
    dx, dy = np.ones((count, width), dtype=f32), np.zeros((count, width), dtype=f32)
    pos = positions.astype(f32)
    vel = velocities.astype(f32)
    rad = radius.astype(f32)
    inv_time = f32(1.0) / time_horizon_obst.astype(f32)
    points = obstacles.points32
    slots = np.arange(width)
    eps = f32(RVO_EPSILON)
    # Sequential over neighbour rank because of the already-covered test.
    for r in range(width):
        pick = np.flatnonzero(rank == r)
        a, v = agent[pick], vertex[pick]
        if r > 0:
            # Covered when both end points are beyond an earlier obstacle line by the radius.
            it = inv_time[a, None]
            margin = it * rad[a, None]
            lpx, lpy, ldx, ldy = px[a, :r], py[a, :r], dx[a, :r], dy[a, :r]
            covered = slots[None, :r] < num_lines[a, None]
            for end in (v, obstacles.next_vertex[v]):
                rx = points[end, 0][:, None] - pos[a, 0][:, None]
                ry = points[end, 1][:, None] - pos[a, 1][:, None]
                covered &= _det(it * rx - lpx, it * ry - lpy, ldx, ldy) - margin >= -eps
            covered = covered.any(axis=1)
            a, v = a[~covered], v[~covered]
            if a.size == 0:
                continue
        lx, ly, ldx, ldy, added = _obstacle_line(obstacles, v, pos[a, 0], pos[a, 1], vel[a, 0],
                                                 vel[a, 1], rad[a], inv_time[a])
        a, slot = a[added], num_lines[a[added]]
        px[a, slot], py[a, slot] = lx[added], ly[added]
        dx[a, slot], dy[a, slot] = ldx[added], ldy[added]
        num_lines[a] += 1
    # Unit length in float64: the linear programs rely on it.
    dx, dy = dx.astype(np.float64), dy.astype(np.float64)
    norm = np.sqrt(dx * dx + dy * dy)
    return px.astype(np.float64), py.astype(np.float64), dx / norm, dy / norm, num_lines


# ---------------------------------------------------------------------------------------
# New velocities

def _new_velocities(positions, velocities, pref_velocities, agent_params, time_step,
                    obstacle_set):
    count = len(positions)
    infeasible = np.zeros(count, dtype=bool)
    if count == 0:
        none = np.zeros((0, 0))
        return OrcaSolution(np.zeros((0, 2)), infeasible,
                            OrcaLines(none, none, none, none, none.astype(bool)))
    radius = agent_params['radius']
    max_speed = agent_params['max_speed']
    neighbors, keep = _agent_neighbors(positions, agent_params['neighbor_dist'],
                                       agent_params['max_neighbors'])
    # Lines are slot-major, (L, N): per-agent values broadcast along the long axis.
    px, py, dx, dy = _agent_lines(positions, velocities, radius, agent_params['time_horizon'],
                                  time_step, neighbors, keep)
    valid = np.ascontiguousarray(keep.T)
    num_obst = np.zeros(count, dtype=np.intp)
    if len(obstacle_set):
        o_px, o_py, o_dx, o_dy, num_obst = _obstacle_lines(
            obstacle_set, positions, velocities, radius, max_speed,
            agent_params['time_horizon_obst'])
        if o_px.shape[1]:
            # Obstacle lines first, then each agent's agent lines right after its own.
            obst_width, agent_width = o_px.shape[1], px.shape[0]
            width = obst_width + agent_width
            rows = num_obst[None, :] + np.arange(agent_width)[:, None]
            cols = np.broadcast_to(np.arange(count)[None, :], rows.shape)
            merged = []
            for obst_part, agent_part, fill in ((o_px, px, 0.0), (o_py, py, 0.0),
                                                (o_dx, dx, 1.0), (o_dy, dy, 0.0)):
                full = np.full((width, count), fill)
                full[:obst_width] = obst_part.T
                full[rows, cols] = agent_part
                merged.append(full)
            px, py, dx, dy = merged
            valid = np.arange(width)[:, None] < (num_obst + keep.sum(axis=1))[None, :]

    opt_x = pref_velocities[:, 0]
    opt_y = pref_velocities[:, 1]
    vx, vy = clamp_to_speed(opt_x, opt_y, max_speed)
    if px.shape[0]:
        start_violation = violation(px, py, dx, dy, vx, vy)
        need = ((start_violation > 0.0) & valid).any(axis=0)
        if need.any():
            idx = np.flatnonzero(need)
            lpx, lpy, ldx, ldy, lvalid, lstart = take_columns(
                (px, py, dx, dy, valid, start_violation), idx)
            sx, sy, line_fail = closest_point(lpx, lpy, ldx, ldy, lvalid, max_speed[idx],
                                              opt_x[idx], opt_y[idx], lstart)
            failed = np.flatnonzero(line_fail >= 0)
            if failed.size:
                f = idx[failed]
                infeasible[f] = True
                sx[failed], sy[failed] = min_max_penetration(
                    *take_columns((lpx, lpy, ldx, ldy, lvalid), failed), num_obst[f],
                    line_fail[failed], max_speed[f], sx[failed], sy[failed])
            vx[idx] = sx
            vy[idx] = sy
            # Points on the speed circle may exceed it by rounding (~1e-16 relative).
            speed_sq = vx * vx + vy * vy
            over = np.flatnonzero(speed_sq > max_speed * max_speed)
            if over.size:
                scale = max_speed[over] / np.sqrt(speed_sq[over])
                vx[over] *= scale
                vy[over] *= scale
    return OrcaSolution(np.stack([vx, vy], axis=1), infeasible, OrcaLines(px, py, dx, dy, valid))


# ---------------------------------------------------------------------------------------
# Simulator

class OrcaSimulator:
    """RVO2's RVOSimulator over numpy arrays, plus agent removal and obstacle replacement.

    Agents are kept in insertion order; `positions`, `velocities` and
    `set_pref_velocities` use that order (`agent_ids` lists the ids in it).
    """

    def __init__(self, params: OrcaParams):
        if not isinstance(params, OrcaParams):
            raise ValueError(f'params must be an OrcaParams, got {type(params).__name__}')
        self.time_step = _check_scalar('params.time_step', params.time_step, positive=True)
        defaults = {}
        for name in PER_AGENT_FIELDS:
            value = np.asarray(getattr(params, name))
            if value.ndim != 0:
                raise ValueError(f'params.{name}: simulator defaults must be scalars')
            defaults[name] = value.item()
        # Validate the defaults once through the common path.
        self._default_params, _ = OrcaParams(self.time_step, **defaults).per_agent(1)
        self.defaults = defaults
        self.global_time = 0.0
        self._ids = np.zeros(0, dtype=np.int64)
        self._next_id = 0
        self._positions = np.zeros((0, 2))
        self._velocities = np.zeros((0, 2))
        self._pref = np.zeros((0, 2))
        self._agent_params = {name: np.zeros(0, dtype=np.int64 if name == 'max_neighbors'
                                              else np.float64) for name in PER_AGENT_FIELDS}
        self._pending = []
        self._polygons = []
        self._enclosures_allowed = False
        self._obstacle_set = ObstacleSet(())

    # -- agents --
    def add_agent(self, position, velocity=(0.0, 0.0), **overrides):
        """Add an agent; overrides: any of neighbor_dist, max_neighbors, time_horizon,
        time_horizon_obst, radius, max_speed. Returns its id (stable across removals)."""
        unknown = set(overrides) - set(PER_AGENT_FIELDS)
        if unknown:
            raise ValueError(f'add_agent: unknown parameter(s) {sorted(unknown)}; '
                             f'known: {list(PER_AGENT_FIELDS)}')
        if overrides:
            checked, _ = OrcaParams(self.time_step, **dict(self.defaults, **overrides)).per_agent(1)
        else:
            checked = self._default_params  # validated once in __init__
        position = _as_point('position', position)
        velocity = _as_point('velocity', velocity)
        agent_id = self._next_id
        self._next_id += 1
        self._pending.append((agent_id, position, velocity, checked))
        return agent_id

    def _flush(self):
        if not self._pending:
            return
        ids, positions, velocities, params = zip(*self._pending)
        self._pending = []
        self._ids = np.concatenate([self._ids, np.array(ids, dtype=np.int64)])
        self._positions = np.concatenate([self._positions, np.array(positions)])
        self._velocities = np.concatenate([self._velocities, np.array(velocities)])
        self._pref = np.concatenate([self._pref, np.zeros((len(ids), 2))])
        for name in PER_AGENT_FIELDS:
            self._agent_params[name] = np.concatenate(
                [self._agent_params[name], np.concatenate([p[name] for p in params])])

    def remove_agent(self, agent_id):
        """Remove the agent with this id; the others keep their order and ids."""
        self._flush()
        where = np.flatnonzero(self._ids == agent_id)
        if where.size == 0:
            raise ValueError(f'agent_id {agent_id!r} is not in the simulation')
        keep = self._ids != agent_id
        self._ids = self._ids[keep]
        self._positions = self._positions[keep]
        self._velocities = self._velocities[keep]
        self._pref = self._pref[keep]
        for name in PER_AGENT_FIELDS:
            self._agent_params[name] = self._agent_params[name][keep]

    @property
    def agent_ids(self):
        self._flush()
        return self._ids.copy()

    @property
    def num_agents(self):
        return len(self._ids) + len(self._pending)

    # -- obstacles --
    def add_obstacle(self, vertices):
        """Add a counter-clockwise polygon (or a 2-vertex segment); processed on the next step.
        Returns the polygon's index."""
        polygon = validate_polygons([vertices], argument='vertices')[0]
        self._polygons.append(polygon)
        self._obstacle_set = None
        return len(self._polygons) - 1

    def set_obstacles(self, polygons):
        """Replace all obstacles: a list of (M, 2) counter-clockwise arrays, or an ObstacleSet
        (from prepare_obstacles, which may include clockwise enclosures)."""
        if isinstance(polygons, ObstacleSet):
            self._obstacle_set = polygons
        else:
            self._obstacle_set = ObstacleSet(polygons, argument='polygons')
        self._polygons = list(self._obstacle_set.polygons)
        self._enclosures_allowed = any(_signed_area(p) < 0.0 for p in self._polygons)

    @property
    def obstacles(self):
        """The processed ObstacleSet (RVO2's processObstacles runs lazily)."""
        if self._obstacle_set is None:
            self._obstacle_set = ObstacleSet(self._polygons, allow_enclosures=self._enclosures_allowed)
        return self._obstacle_set

    # -- state --
    def set_pref_velocities(self, pref):
        self._flush()
        self._pref = _as_vectors('pref', pref, len(self._ids)).copy()

    @property
    def positions(self):
        self._flush()
        return self._positions.copy()

    @property
    def velocities(self):
        self._flush()
        return self._velocities.copy()

    @property
    def pref_velocities(self):
        self._flush()
        return self._pref.copy()

    def step(self):
        """One RVO2 doStep: new velocities for all agents, then move them."""
        self._flush()
        new_velocities = _new_velocities(self._positions, self._velocities, self._pref,
                                         self._agent_params, self.time_step,
                                         self.obstacles).velocities
        self._velocities = new_velocities
        self._positions = self._positions + new_velocities * self.time_step
        self.global_time += self.time_step
        return new_velocities

    def params(self):
        """The current per-agent parameters as an OrcaParams (arrays in agent order)."""
        self._flush()
        return OrcaParams(self.time_step, **{n: self._agent_params[n].copy() for n in PER_AGENT_FIELDS})
