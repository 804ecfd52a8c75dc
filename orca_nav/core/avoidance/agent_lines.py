"""Agent-agent ORCA lines (RVO2 `Agent::computeNewVelocity`, agent part), batched over agents:
cut-off circle, legs, and the already-colliding case that uses the time step.
"""
import numpy as np

# Agent-line slots (agents x neighbour slots) per block of the computation, at most: its
# float32 temporaries stay in cache, and are freed and reused from block to block. The
# temporaries alive at once are few (each is deleted when done): many MB of them, freed at the
# end of every call, made the allocator hand the pages back to the system and fault them in
# again on the next call (at 1,000 agents ~150 page faults a call, as long as the arithmetic).
# Each block also pays its ~80 numpy calls: 16384 slots (64 KiB float32 temporaries) take
# the 10,000 slots of 1,000 agents in one block.
_LINE_BLOCK_SLOTS = 16384


def agent_lines(positions, velocities, radius, time_horizon, time_step, neighbors, keep,
                share=None):
    """Agent-agent ORCA lines as (k, N) float64 arrays (slot-major): point (px, py) and
    direction (dx, dy) of neighbour slot j of agent a at [j, a].

    positions, velocities, radius may hold more agents than the N rows of `neighbors`: the
    extra ones are neighbours only (non-cooperative agents). share: None (RVO2: every agent
    takes half of the avoidance, u/2) or a (k, N) float32 array, the part of u agent a takes
    toward its neighbour in slot j (1 toward a non-cooperative agent).

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
    total = len(positions)
    pos = np.empty((total + 1, 2), dtype=f32)
    pos[:total] = positions
    pos[total] = np.abs(positions).max(initial=0.0) * 4.0 + 1e4  # sentinel, far from all
    vel = np.zeros((total + 1, 2), dtype=f32)
    vel[:total] = velocities
    rad = np.zeros(total + 1, dtype=f32)
    rad[:total] = radius
    columns = (pos[:, 0].copy(), pos[:, 1].copy(), vel[:, 0].copy(), vel[:, 1].copy(), rad)
    inv_horizon = f32(1.0) / time_horizon.astype(f32)
    inv_step = f32(1.0) / f32(time_step)
    # Unused slots point at index `total`, a far sentinel agent. (Slot-major, C order.)
    other = np.empty((width, count), dtype=np.intp)
    np.copyto(other, neighbors.T)
    np.copyto(other, total, where=~keep.T)
    lines = np.empty((4, width, count))
    # Blocks of agents (see _LINE_BLOCK_SLOTS), of even size.
    blocks = -(-count * width // _LINE_BLOCK_SLOTS)
    block_agents = -(-count // blocks)
    for start in range(0, count, block_agents):
        block = slice(start, min(start + block_agents, count))
        _agent_lines_block(columns, block, other[:, block], inv_horizon[block], inv_step,
                           keep[block].T, f32(0.5) if share is None else share[:, block],
                           lines[:, :, block])
    return lines[0], lines[1], lines[2], lines[3]


def _agent_lines_block(columns, block, other, inv_horizon, inv_step, keep_t, share, out):
    """agent_lines for the agents in `block`; writes (px, py, dx, dy) into out (4, k, B)."""
    f32 = np.float32
    all_px, all_py, all_vx, all_vy, all_rad = columns
    own_px, own_py = all_px[block], all_py[block]
    own_vx, own_vy = all_vx[block], all_vy[block]
    # take: several times faster than fancy indexing for these gathers.
    rel_x = all_px.take(other) - own_px
    rel_y = all_py.take(other) - own_py
    rv_x = own_vx - all_vx.take(other)
    rv_y = own_vy - all_vy.take(other)
    combined = all_rad[block] + all_rad.take(other)
    dist_sq = rel_x * rel_x + rel_y * rel_y
    combined_sq = combined * combined
    # No collision: w from the cut-off centre to the relative velocity.
    w_x = rv_x - inv_horizon * rel_x
    w_y = rv_y - inv_horizon * rel_y
    dot1 = w_x * rel_x + w_y * rel_y
    colliding = dist_sq <= combined_sq
    special = ((dot1 < 0.0) & (dot1 * dot1 > combined_sq * (w_x * w_x + w_y * w_y))) | colliding
    # Names are deleted once their array is no longer needed: fewer temporaries alive at once
    # (see _LINE_BLOCK_SLOTS).
    del dot1
    any_legs = not special.all()  # unused slots (far sentinel) count as cut-off circle
    any_circle = special.any()

    if any_legs:
        # Legs: left (rx*leg - ry*cr, rx*cr + ry*leg) / d2,
        # right -(rx*leg + ry*cr, -rx*cr + ry*leg) / d2.
        leg = np.sqrt(np.maximum(dist_sq - combined_sq, f32(0.0)))
        sign = (rel_x * w_y - rel_y * w_x > 0.0).astype(f32) * f32(2.0) - f32(1.0)
        cr = combined * sign
        inv_d2 = sign / np.maximum(dist_sq, f32(1e-30))  # sign * (1/d2): the sign flip is exact
        leg_x = (rel_x * leg - rel_y * cr) * inv_d2
        leg_y = (rel_x * cr + rel_y * leg) * inv_d2
        del leg, sign, cr, inv_d2
        dot2 = rv_x * leg_x + rv_y * leg_y
        leg_ux = dot2 * leg_x - rv_x
        leg_uy = dot2 * leg_y - rv_y
        del dot2
    del dist_sq, combined_sq
    if any_circle:
        # Cut-off circle of the time horizon or, when already colliding, of one time step.
        if colliding.any():
            hit = colliding.astype(f32)
            miss = f32(1.0) - hit
            inv_time = inv_horizon * miss + inv_step * hit
            cw_x = w_x * miss + (rv_x - inv_step * rel_x) * hit
            cw_y = w_y * miss + (rv_y - inv_step * rel_y) * hit
            del hit, miss
        else:
            inv_time, cw_x, cw_y = inv_horizon, w_x, w_y
        cw_len = np.sqrt(cw_x * cw_x + cw_y * cw_y)
        inv_len = f32(1.0) / np.maximum(cw_len, f32(1e-30))
        unit_x = cw_x * inv_len
        unit_y = cw_y * inv_len
        del cw_x, cw_y, inv_len
        degenerate = np.flatnonzero((cw_len == 0.0) & special & keep_t)
        if degenerate.size:
            unit_x, unit_y = _separating_fallback(unit_x, unit_y, rel_x, rel_y, other, degenerate,
                                                  block.start)
        circle_u = combined * inv_time - cw_len
        circle_ux = circle_u * unit_x
        circle_uy = circle_u * unit_y
        del circle_u, cw_len, inv_time
    del rel_x, rel_y, rv_x, rv_y, w_x, w_y, combined, colliding
    # Blend the branches arithmetically (exact: the unused branch is finite, times 0).
    if any_legs and any_circle:
        on_circle = special.astype(f32)
        on_legs = f32(1.0) - on_circle
        d_x = unit_y * on_circle + leg_x * on_legs
        d_y = -unit_x * on_circle + leg_y * on_legs
        u_x = circle_ux * on_circle + leg_ux * on_legs
        u_y = circle_uy * on_circle + leg_uy * on_legs
        del on_circle, on_legs, unit_x, unit_y, circle_ux, circle_uy, leg_x, leg_y, leg_ux, leg_uy
    elif any_legs:
        d_x, d_y, u_x, u_y = leg_x, leg_y, leg_ux, leg_uy
    else:
        d_x, d_y, u_x, u_y = unit_y, -unit_x, circle_ux, circle_uy
    out[0] = own_vx + share * u_x
    out[1] = own_vy + share * u_y
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
    unit_x.ravel()[flat] = np.where(apart, -rx / safe,
                                    np.where(me < other.ravel()[flat], -1.0, 1.0))
    unit_y.ravel()[flat] = np.where(apart, -ry / safe, 0.0)
    return unit_x, unit_y

