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
from typing import Union

import numpy as np
from scipy.spatial import cKDTree

from .linear_program import (RVO_EPSILON, clamp_to_speed, closest_point, min_max_penetration,
                             violation)
from .obstacles import ObstacleSet, as_obstacle_set, validate_polygons

__all__ = ['OrcaParams', 'compute_velocities', 'OrcaSimulator', 'ObstacleSet',
           'prepare_obstacles']

ArrayLike = Union[float, np.ndarray]
_LINE_BLOCK = 2048  # agents per block in the agent-line computation
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


def compute_velocities(positions, velocities, pref_velocities, params, obstacles=()):
    """The new velocity of every agent, as RVO2's computeNewVelocity picks it.

    positions, velocities, pref_velocities: (N, 2). params: OrcaParams. obstacles: list of
    (M, 2) counter-clockwise vertex arrays (2 vertices = a segment) or an ObstacleSet.
    Returns (N, 2) float64.
    """
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
    """(N, k) neighbour indices, nearest first, and a prefix mask of the ones RVO2 keeps."""
    count = len(positions)
    k = int(min(max_neighbors.max(initial=0), count - 1))
    if k <= 0:
        return np.zeros((count, 0), dtype=np.intp), np.zeros((count, 0), dtype=bool)
    tree = cKDTree(positions, balanced_tree=False, compact_nodes=False)
    reach = float(neighbor_dist.max()) * (1.0 + 1e-9) + 1e-12
    dist, found = tree.query(positions, k=k + 1, distance_upper_bound=reach)
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
    # Unused slots point at index `count` (cKDTree's "missing"), a far sentinel agent.
    if not np.array_equal(keep, neighbors < count):
        neighbors = neighbors.copy()
        np.putmask(neighbors, ~keep, count)
    return neighbors, keep


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
    other = np.ascontiguousarray(neighbors.T)
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
    length = np.sqrt(x * x + y * y)
    length = np.where(length > 0.0, length, 1.0)
    return x / length, y / length


def _obstacle_line(obstacles, vertex, pos, vel, radius, inv_time):
    """ORCA line of each (agent, obstacle edge) pair; vectorised Agent::computeNewVelocity
    obstacle branch. Returns (px, py, dx, dy, added)."""
    points, unit_dir, convex = obstacles.points, obstacles.unit_dir, obstacles.convex
    vertex2 = obstacles.next_vertex[vertex]
    p1, p2 = points[vertex], points[vertex2]
    rel1 = p1 - pos
    rel2 = p2 - pos
    dist_sq1 = (rel1 ** 2).sum(axis=1)
    dist_sq2 = (rel2 ** 2).sum(axis=1)
    radius_sq = radius * radius
    edge = p2 - p1
    s = (-(rel1 * edge).sum(axis=1)) / (edge ** 2).sum(axis=1)
    dist_sq_line = ((-rel1 - s[:, None] * edge) ** 2).sum(axis=1)
    convex1, convex2 = convex[vertex], convex[vertex2]
    unit1, unit2 = unit_dir[vertex], unit_dir[vertex2]
    prev_unit1 = unit_dir[obstacles.prev_vertex[vertex]]

    count = len(vertex)
    px, py = np.zeros(count), np.zeros(count)
    dx, dy = np.ones(count), np.zeros(count)
    added = np.zeros(count, dtype=bool)

    # Already colliding with the left vertex, the right vertex or the segment.
    hit_left = (s < 0.0) & (dist_sq1 <= radius_sq)
    hit_right = ~hit_left & (s > 1.0) & (dist_sq2 <= radius_sq)
    hit_segment = ~hit_left & ~hit_right & (s >= 0.0) & (s <= 1.0) & (dist_sq_line <= radius_sq)
    add = hit_left & convex1
    dx[add], dy[add] = _normalize(-rel1[add, 1], rel1[add, 0])
    added |= add
    add = hit_right & convex2 & (rel2[:, 0] * unit2[:, 1] - rel2[:, 1] * unit2[:, 0] >= 0.0)
    dx[add], dy[add] = _normalize(-rel2[add, 1], rel2[add, 0])
    added |= add
    dx[hit_segment], dy[hit_segment] = -unit1[hit_segment, 0], -unit1[hit_segment, 1]
    added |= hit_segment

    rest = ~(hit_left | hit_right | hit_segment)
    oblique_left = rest & (s < 0.0) & (dist_sq_line <= radius_sq)
    oblique_right = rest & ~oblique_left & (s > 1.0) & (dist_sq_line <= radius_sq)
    # Obliquely viewed past a non-convex vertex: ignored.
    rest &= ~(oblique_left & ~convex1) & ~(oblique_right & ~convex2)
    if not rest.any():
        return px, py, dx, dy, added
    same = oblique_left | oblique_right
    # When viewed obliquely both legs come from one vertex (RVO2 sets obstacle1 = obstacle2).
    q1 = np.where(oblique_right[:, None], p2, p1)
    q2 = np.where(oblique_left[:, None], p1, p2)
    q1_convex = np.where(oblique_right, convex2, convex1)
    q2_convex = np.where(oblique_left, convex1, convex2)
    q1_unit = np.where(oblique_right[:, None], unit2, unit1)
    q1_prev_unit = np.where(oblique_right[:, None], unit1, prev_unit1)
    q2_unit = np.where(oblique_left[:, None], unit1, unit2)
    r1 = q1 - pos
    r2 = q2 - pos
    d1 = (r1 ** 2).sum(axis=1)
    d2 = (r2 ** 2).sum(axis=1)
    leg1 = np.sqrt(np.maximum(d1 - radius_sq, 0.0))
    leg2 = np.sqrt(np.maximum(d2 - radius_sq, 0.0))
    with np.errstate(divide='ignore', invalid='ignore'):
        left_leg = np.where(q1_convex[:, None],
                            np.stack([r1[:, 0] * leg1 - r1[:, 1] * radius,
                                      r1[:, 0] * radius + r1[:, 1] * leg1], axis=1) / d1[:, None],
                            -unit1)
        right_leg = np.where(q2_convex[:, None],
                             np.stack([r2[:, 0] * leg2 + r2[:, 1] * radius,
                                       -r2[:, 0] * radius + r2[:, 1] * leg2], axis=1) / d2[:, None],
                             unit1)
    # Legs never point into a neighbouring edge at a convex vertex: use that edge instead
    # ("foreign" leg; projecting onto it adds no constraint).
    left_foreign = q1_convex & (left_leg[:, 0] * -q1_prev_unit[:, 1]
                                - left_leg[:, 1] * -q1_prev_unit[:, 0] >= 0.0)
    left_leg = np.where(left_foreign[:, None], -q1_prev_unit, left_leg)
    right_foreign = q2_convex & (right_leg[:, 0] * q2_unit[:, 1] - right_leg[:, 1] * q2_unit[:, 0] <= 0.0)
    right_leg = np.where(right_foreign[:, None], q2_unit, right_leg)

    scale = (radius * inv_time)[:, None]
    left_cutoff = inv_time[:, None] * r1
    right_cutoff = inv_time[:, None] * r2
    cutoff_vec = right_cutoff - left_cutoff
    from_left = vel - left_cutoff
    from_right = vel - right_cutoff
    with np.errstate(divide='ignore', invalid='ignore'):
        t = np.where(same, 0.5, (from_left * cutoff_vec).sum(axis=1) / (cutoff_vec ** 2).sum(axis=1))
    t_left = (from_left * left_leg).sum(axis=1)
    t_right = (from_right * right_leg).sum(axis=1)

    circle_left = rest & (((t < 0.0) & (t_left < 0.0)) | (same & (t_left < 0.0) & (t_right < 0.0)))
    circle_right = rest & ~circle_left & (t > 1.0) & (t_right < 0.0)
    for chosen, cutoff, offset in ((circle_left, left_cutoff, from_left),
                                   (circle_right, right_cutoff, from_right)):
        ux, uy = _normalize(offset[chosen, 0], offset[chosen, 1])
        dx[chosen], dy[chosen] = uy, -ux
        px[chosen] = cutoff[chosen, 0] + scale[chosen, 0] * ux
        py[chosen] = cutoff[chosen, 1] + scale[chosen, 0] * uy
        added |= chosen

    rest &= ~(circle_left | circle_right)
    inf = np.inf
    dist_cutoff = np.where((t < 0.0) | (t > 1.0) | same, inf,
                           ((from_left - t[:, None] * cutoff_vec) ** 2).sum(axis=1))
    dist_left = np.where(t_left < 0.0, inf, ((from_left - t_left[:, None] * left_leg) ** 2).sum(axis=1))
    dist_right = np.where(t_right < 0.0, inf, ((from_right - t_right[:, None] * right_leg) ** 2).sum(axis=1))
    on_cutoff = rest & (dist_cutoff <= dist_left) & (dist_cutoff <= dist_right)
    on_left = rest & ~on_cutoff & (dist_left <= dist_right) & ~left_foreign
    on_right = rest & ~on_cutoff & ~(dist_left <= dist_right) & ~right_foreign
    line_dir = np.where(on_cutoff[:, None], -q1_unit, np.where(on_left[:, None], left_leg, -right_leg))
    anchor = np.where(on_right[:, None], right_cutoff, left_cutoff)
    chosen = on_cutoff | on_left | on_right
    dx[chosen], dy[chosen] = line_dir[chosen, 0], line_dir[chosen, 1]
    px[chosen] = anchor[chosen, 0] - scale[chosen, 0] * line_dir[chosen, 1]
    py[chosen] = anchor[chosen, 1] + scale[chosen, 0] * line_dir[chosen, 0]
    added |= chosen
    return px, py, dx, dy, added


def _obstacle_lines(obstacles, positions, velocities, radius, max_speed, time_horizon_obst):
    """Obstacle ORCA lines as (N, Lo) arrays and the per-agent line count."""
    count = len(positions)
    reach = time_horizon_obst * max_speed + radius
    agent, vertex = obstacles.neighbors(positions, reach * reach)
    num_lines = np.zeros(count, dtype=np.intp)
    if agent.size == 0:
        empty = np.zeros((count, 0))
        return empty, empty, empty, empty, num_lines
    per_agent = np.bincount(agent, minlength=count)
    rank = np.arange(agent.size) - np.repeat(np.cumsum(per_agent) - per_agent, per_agent)
    width = int(per_agent.max())
    px, py = np.zeros((count, width)), np.zeros((count, width))
    dx, dy = np.ones((count, width)), np.zeros((count, width))
    inv_time = 1.0 / time_horizon_obst
    slots = np.arange(width)
    # Sequential over neighbour rank because of the already-covered test.
    for r in range(width):
        pick = np.flatnonzero(rank == r)
        a, v = agent[pick], vertex[pick]
        rel1 = obstacles.points[v] - positions[a]
        rel2 = obstacles.points[obstacles.next_vertex[v]] - positions[a]
        if r > 0:
            it = inv_time[a, None]
            margin = it * radius[a, None] - RVO_EPSILON
            lpx, lpy, ldx, ldy = px[a, :r], py[a, :r], dx[a, :r], dy[a, :r]
            c1 = (it * rel1[:, :1] - lpx) * ldy - (it * rel1[:, 1:] - lpy) * ldx >= margin
            c2 = (it * rel2[:, :1] - lpx) * ldy - (it * rel2[:, 1:] - lpy) * ldx >= margin
            covered = (c1 & c2 & (slots[None, :r] < num_lines[a, None])).any(axis=1)
            a, v = a[~covered], v[~covered]
            if a.size == 0:
                continue
        lx, ly, ldx, ldy, added = _obstacle_line(obstacles, v, positions[a], velocities[a],
                                                 radius[a], inv_time[a])
        a, slot = a[added], num_lines[a[added]]
        px[a, slot], py[a, slot] = lx[added], ly[added]
        dx[a, slot], dy[a, slot] = ldx[added], ldy[added]
        num_lines[a] += 1
    return px, py, dx, dy, num_lines


# ---------------------------------------------------------------------------------------
# New velocities

def _new_velocities(positions, velocities, pref_velocities, agent_params, time_step,
                    obstacle_set):
    count = len(positions)
    if count == 0:
        return np.zeros((0, 2))
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
            lpx, lpy, ldx, ldy, lvalid = (a[:, idx] for a in (px, py, dx, dy, valid))
            sx, sy, line_fail = closest_point(lpx, lpy, ldx, ldy, lvalid, max_speed[idx],
                                              opt_x[idx], opt_y[idx], start_violation[:, idx])
            failed = np.flatnonzero(line_fail >= 0)
            if failed.size:
                f = idx[failed]
                sx[failed], sy[failed] = min_max_penetration(
                    lpx[:, failed], lpy[:, failed], ldx[:, failed], ldy[:, failed],
                    lvalid[:, failed], num_obst[f], line_fail[failed], max_speed[f],
                    sx[failed], sy[failed])
            vx[idx] = sx
            vy[idx] = sy
            # Points on the speed circle may exceed it by rounding (~1e-16 relative).
            speed_sq = vx * vx + vy * vy
            over = np.flatnonzero(speed_sq > max_speed * max_speed)
            if over.size:
                scale = max_speed[over] / np.sqrt(speed_sq[over])
                vx[over] *= scale
                vy[over] *= scale
    return np.stack([vx, vy], axis=1)


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
                                         self._agent_params, self.time_step, self.obstacles)
        self._velocities = new_velocities
        self._positions = self._positions + new_velocities * self.time_step
        self.global_time += self.time_step
        return new_velocities

    def params(self):
        """The current per-agent parameters as an OrcaParams (arrays in agent order)."""
        self._flush()
        return OrcaParams(self.time_step, **{n: self._agent_params[n].copy() for n in PER_AGENT_FIELDS})
