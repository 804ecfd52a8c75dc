"""ORCA over the velocities an agent can reach in one step, and a fallback that weighs time to
contact (not in RVO2, which lets every agent take any velocity within max_speed at once).

ORCA's promise ("this velocity avoids the other for the time horizon if both take their new
velocity now") fails for a robot that needs half a second to reach it. Restricting the choice to
the velocities reachable within one time step, the disc |v - v_now| <= reach around the current
velocity (reach = max_accel * time_step, plus what turning adds for a non-holonomic robot, see
`kinematics`), makes the promise true again up to max_accel * time_step^2 / 2 of position per
step (2.5 mm at 2 m/s^2 and 20 Hz), which the caller's safety margin covers. It is the discrete
form of AVO's idea (van den Berg et al. 2011: avoid in the space of reachable velocities); we
keep ORCA's half-planes, and so RVO2's linear programs, by solving them in the disc around the
current velocity: lines shifted by -v_now, radius `reach`, and where the disc crosses the
max_speed circle a fan of hard tangent lines of that circle (the linear programs know one
circle only).

Where every line can be met, but not within one step, the agent heads for RVO2's choice as fast
as it can. Where no velocity at all satisfies every line, RVO2's linearProgram3 takes the
velocity that least violates the worst line, however soon that contact comes. Here the agent
takes, among candidate velocities spread over its reachable set, the one with the least
`weight / time_to_contact + |v - v_lp3|` (RVO's penalty, van den Berg et al. 2008, anchored at
linearProgram3's choice rather than at the preferred velocity, which in a jam drove robots into
each other): the time to contact with each neighbour assuming it keeps its velocity, obstacle
lines kept hard as far as any candidate can. Agents with an infinite max_velocity_change take
RVO2's path unchanged.
"""
import numpy as np

from .linear_program import closest_point, take_columns, violation

_FAN_LINES = 7          # tangent lines of the max_speed circle where the reachable disc crosses it
_RING_ANGLES = 16       # candidate directions of the fallback, on each ring of the reachable disc
_RINGS = (0.5, 1.0)     # candidate rings, as fractions of the reach
_FAR = 1e12             # time to contact of a neighbour never touched
_FAN_STEPS = np.linspace(-1.0, 1.0, _FAN_LINES)[:, None]     # the fan's angles, per half arc
_RING_UNIT = np.column_stack([np.cos(2.0 * np.pi * np.arange(_RING_ANGLES) / _RING_ANGLES),
                              np.sin(2.0 * np.pi * np.arange(_RING_ANGLES) / _RING_ANGLES)])
# The fallback's candidate offsets (C, 2), in units of the reach: the centre, then the rings.
_OFFSETS = np.concatenate([np.zeros((1, 2))] + [ring * _RING_UNIT for ring in _RINGS])


def reachable_velocities(px, py, dx, dy, valid, num_hard, velocities, reach, max_speed,
                         target, jammed, positions, radius, neighbors, keep, all_positions,
                         all_velocities, all_radius, ttc_weight):
    """New velocities (K, 2) of K acceleration-limited agents, and (K,) where no velocity met
    every line (`jammed`, RVO2's infeasible case).

    Lines (L, K) as in `linear_program` (the first `num_hard` (K,) of each agent are obstacle
    lines); velocities (K, 2) the current ones, reach (K,) the radius of the reachable disc,
    max_speed (K,), target (K, 2) the velocity to come closest to (RVO2's choice), jammed (K,)
    where RVO2's own program was infeasible (target is then linearProgram3's choice). For the
    fallback: the agents' positions (K, 2) and radii (K,), their neighbours (K, M) as indices
    into all_positions / all_velocities / all_radius, keep (K, M)."""
    v0x, v0y = velocities[:, 0], velocities[:, 1]
    speed0 = np.hypot(v0x, v0y)
    # The speed circle inside the disc: RVO2's program as it is (no shift, no fan).
    covers = reach >= speed0 + max_speed
    disc = np.where(covers, max_speed, reach)
    shift_x, shift_y = np.where(covers, 0.0, v0x), np.where(covers, 0.0, v0y)
    crosses = ~covers & (speed0 + reach > max_speed)
    if crosses.any():
        fan = _speed_fan(v0x, v0y, speed0, reach, max_speed, crosses)
        lpx = np.concatenate([fan[0], px - shift_x]) if px.size else fan[0]
        lpy = np.concatenate([fan[1], py - shift_y]) if px.size else fan[1]
        ldx = np.concatenate([fan[2], dx]) if px.size else fan[2]
        ldy = np.concatenate([fan[3], dy]) if px.size else fan[3]
        lvalid = np.concatenate([fan[4], valid]) if px.size else fan[4]
    else:
        # No disc crosses the circle: the fan would be dummy lines only, which never bind
        # nor bound another line within a disc (the same result); left out, the program
        # has 7 lines fewer to solve (a fleet below max_speed: a third of its cost at 10
        # lines).
        lpx, lpy, ldx, ldy, lvalid = px - shift_x, py - shift_y, dx, dy, valid
    opt_x, opt_y = target[:, 0] - shift_x, target[:, 1] - shift_y
    wx, wy, line_fail = closest_point(lpx, lpy, ldx, ldy, lvalid, disc, opt_x, opt_y)
    chosen = np.column_stack([wx + shift_x, wy + shift_y])
    infeasible = line_fail >= 0
    # Feasible for RVO2, not within reach: head for RVO2's choice as fast as the robot can.
    late = np.flatnonzero(infeasible & ~jammed)
    chosen[late] = velocities[late] + _clip(target[late] - velocities[late], reach[late])
    failed = np.flatnonzero(jammed)
    if failed.size:
        chosen[failed] = _least_penalty(
            failed, velocities, reach, max_speed, target, (px, py, dx, dy, valid),
            num_hard, positions, radius, neighbors, keep, all_positions, all_velocities,
            all_radius, ttc_weight)
    speed = np.hypot(chosen[:, 0], chosen[:, 1])
    over = speed > max_speed
    chosen[over] *= (max_speed[over] / speed[over])[:, None]
    return chosen, jammed


def _clip(vectors, limit):
    norm = np.hypot(vectors[:, 0], vectors[:, 1])
    return vectors * np.minimum(1.0, limit / np.maximum(norm, 1e-300))[:, None]


def _speed_fan(v0x, v0y, speed0, reach, max_speed, crosses):
    """(_FAN_LINES, K) hard lines tangent to the max_speed circle across the arc the reachable
    disc crosses where it `crosses` the circle (far-away dummy lines where the disc lies inside
    the circle or covers it), in the coordinates of the disc's centre."""
    count = len(v0x)
    heading = np.arctan2(v0y, v0x)
    cos_half = np.minimum(np.maximum((speed0 ** 2 + max_speed ** 2 - reach ** 2)
                                     / np.maximum(2.0 * speed0 * max_speed, 1e-300), -1.0), 1.0)
    half_arc = np.where(speed0 > 0.0, np.arccos(cos_half), np.pi)
    angle = heading[None, :] + _FAN_STEPS * half_arc[None, :]
    point_x = max_speed * np.cos(angle) - v0x
    point_y = max_speed * np.sin(angle) - v0y
    dir_x, dir_y = -np.sin(angle), np.cos(angle)
    # A line that never binds: far beyond any disc, on the feasible side of it.
    point_x = np.where(crosses, point_x, 0.0)
    point_y = np.where(crosses, point_y, -1e150)
    dir_x = np.where(crosses, dir_x, 1.0)
    dir_y = np.where(crosses, dir_y, 0.0)
    return point_x, point_y, dir_x, dir_y, np.ones((_FAN_LINES, count), dtype=bool)


def _least_penalty(rows, velocities, reach, max_speed, anchor, lines, num_hard,
                   positions, radius, neighbors, keep, all_positions, all_velocities,
                   all_radius, ttc_weight):
    """For the agents `rows`: the candidate reachable velocity with the least RVO penalty
    (time to contact against the distance from `anchor`, RVO2's least-violation choice), among
    those breaking the obstacle lines least."""
    v0 = velocities[rows]
    candidates = v0[:, None, :] + reach[rows, None, None] * _OFFSETS[None]           # (F, C, 2)
    toward = v0 + _clip(anchor[rows] - v0, reach[rows])
    candidates = np.concatenate([candidates, toward[:, None, :], np.zeros((len(rows), 1, 2))],
                                axis=1)
    zero_reachable = np.hypot(v0[:, 0], v0[:, 1]) <= reach[rows]
    speed = np.hypot(candidates[..., 0], candidates[..., 1])
    scale = np.minimum(1.0, max_speed[rows, None] / np.maximum(speed, 1e-300))
    candidates = candidates * scale[..., None]
    # Obstacle lines: how far each candidate breaks the worst of them (0: none).
    px, py, dx, dy, valid = take_columns(lines, rows)
    hard = valid & (np.arange(px.shape[0])[:, None] < num_hard[rows][None, :])
    if px.shape[0]:
        breach = violation(px[:, :, None], py[:, :, None], dx[:, :, None], dy[:, :, None],
                           candidates[None, ..., 0], candidates[None, ..., 1])   # (L, F, C)
        breach = np.where(hard[..., None], np.maximum(breach, 0.0), 0.0).max(axis=0)
    else:
        breach = np.zeros(candidates.shape[:2])
    penalty = ttc_weight / np.maximum(_time_to_contact(
        candidates, positions[rows], radius[rows], neighbors[rows], keep[rows],
        all_positions, all_velocities, all_radius), 1e-6)
    penalty += np.hypot(*(candidates - anchor[rows][:, None, :]).transpose(2, 0, 1))
    # Standing still is a candidate only where it is reachable.
    penalty[:, -1] = np.where(zero_reachable, penalty[:, -1], np.inf)
    least_breach = np.min(np.where(np.isfinite(penalty), breach, np.inf), axis=1, keepdims=True)
    penalty = np.where(breach <= least_breach + 1e-9, penalty, np.inf)
    return candidates[np.arange(len(rows)), np.argmin(penalty, axis=1)]


def _time_to_contact(candidates, positions, radius, neighbors, keep, all_positions,
                     all_velocities, all_radius):
    """(F, C): the soonest time at which an agent moving at each candidate velocity (F, C, 2)
    touches one of its neighbours moving at theirs (0 if they touch and close in; _FAR if
    never)."""
    if neighbors.shape[1] == 0:
        return np.full(candidates.shape[:2], _FAR)
    neighbors = np.where(keep, neighbors, 0)           # padding slots hold no valid index
    # x and y apart: the dot products as x*x + y*y, what a sum over an axis of 2 adds, at a
    # fraction of its cost (numpy reduces such short axes slowly).
    rel_px, rel_py = (all_positions[neighbors] - positions[:, None, :]).transpose(2, 0, 1)
    combined = radius[:, None] + all_radius[neighbors]                               # (F, M)
    other_vx, other_vy = all_velocities[neighbors].transpose(2, 0, 1)                # (F, M)
    rel_vx = candidates[:, :, None, 0] - other_vx[:, None, :]                        # (F, C, M)
    rel_vy = candidates[:, :, None, 1] - other_vy[:, None, :]
    a = rel_vx * rel_vx + rel_vy * rel_vy
    b = rel_vx * rel_px[:, None] + rel_vy * rel_py[:, None]        # closing speed x distance
    c = (rel_px * rel_px + rel_py * rel_py)[:, None, :] - combined[:, None, :] ** 2
    disc = b * b - a * c
    root = np.sqrt(np.maximum(disc, 0.0))
    t = np.divide(b - root, a, out=np.full_like(a, np.inf), where=a > 0.0)
    touching = c <= 0.0
    t = np.where(touching, np.where(b > 0.0, 0.0, _FAR),
                 np.where((disc >= 0.0) & (b > 0.0) & (t >= 0.0), t, _FAR))
    t = np.where(keep[:, None, :], t, _FAR)
    return t.min(axis=2)
