"""ORCA planes in 3-D (RVO2-3D `Agent::computeNewVelocity`), batched, in float32 with RVO2-3D's
operation order: the cut-off sphere, the cone (a quadratic, not 2-D legs), and the already
colliding case that uses the time step.

The same construction serves agent neighbours (each side takes half: responsibility 0.5) and
static obstacle spheres (other velocity 0, full responsibility, the obstacle time horizon).
"""
import numpy as np

from .linear_program3d import F32, add, cross, dot, scaled, sub

_HALF = F32(0.5)


def orca_planes(rel_pos, rel_vel, combined_radius, inv_horizon, inv_step, velocity, responsibility):
    """ORCA planes for (K, M) pairs: rel_pos = other - own, rel_vel = own - other velocity
    (tuples of three (K, M) float32 arrays), combined_radius (K, M), inv_horizon (K, 1) or
    (K, M), inv_step a float32 scalar, velocity the own velocity (three (K, 1) arrays).

    Returns (point, normal), each three (K, M) float32 arrays. As in RVO2-3D a degenerate
    pair (w = 0) gives a NaN plane, which the linear programs ignore.
    """
    dist_sq = dot(rel_pos, rel_pos)
    combined_sq = combined_radius * combined_radius
    colliding = ~(dist_sq > combined_sq)
    # No collision: w from the cut-off centre to the relative velocity.
    w = sub(rel_vel, scaled(inv_horizon, rel_pos))
    w_length_sq = dot(w, w)
    dot_product = dot(w, rel_pos)
    on_cutoff = (dot_product < 0.0) & (dot_product * dot_product > combined_sq * w_length_sq)
    w_length = np.sqrt(w_length_sq)
    inv_w = F32(1.0) / w_length
    cut_normal = (w[0] * inv_w, w[1] * inv_w, w[2] * inv_w)
    cut_u = scaled(combined_radius * inv_horizon - w_length, cut_normal)
    # Cone: the relative velocity projected on the cone of the time horizon.
    a = dist_sq
    b = dot(rel_pos, rel_vel)
    rel_cross = cross(rel_pos, rel_vel)
    c = dot(rel_vel, rel_vel) - dot(rel_cross, rel_cross) / (dist_sq - combined_sq)
    t = (b + np.sqrt(b * b - a * c)) / a
    ww = sub(rel_vel, scaled(t, rel_pos))
    ww_length = np.sqrt(dot(ww, ww))
    inv_ww = F32(1.0) / ww_length
    cone_normal = (ww[0] * inv_ww, ww[1] * inv_ww, ww[2] * inv_ww)
    cone_u = scaled(combined_radius * t - ww_length, cone_normal)
    # Collision: the cut-off sphere of one time step.
    wc = sub(rel_vel, scaled(inv_step, rel_pos))
    wc_length = np.sqrt(dot(wc, wc))
    inv_wc = F32(1.0) / wc_length
    hit_normal = (wc[0] * inv_wc, wc[1] * inv_wc, wc[2] * inv_wc)
    hit_u = scaled(combined_radius * inv_step - wc_length, hit_normal)

    def pick(hit, cut, cone):
        return tuple(np.where(colliding, h, np.where(on_cutoff, k, n))
                     for h, k, n in zip(hit, cut, cone))

    normal = pick(hit_normal, cut_normal, cone_normal)
    u = pick(hit_u, cut_u, cone_u)
    point = add(velocity, scaled(F32(responsibility), u))
    return point, normal


def agent_planes(pos, vel, radius, inv_horizon, inv_step, neighbors, keep):
    """Agent-agent ORCA planes, (N, k) per component, slot j of agent a from neighbour
    neighbors[a, j]; slots outside `keep` are padding (NaN). pos, vel (N, 3) float32."""
    count, width = neighbors.shape
    other = np.where(keep, neighbors, 0)
    own = tuple(pos[:, d][:, None] for d in range(3))
    own_vel = tuple(vel[:, d][:, None] for d in range(3))
    rel_pos = tuple(pos[:, d][other] - own[d] for d in range(3))
    rel_vel = tuple(own_vel[d] - vel[:, d][other] for d in range(3))
    combined = radius[:, None] + radius[other]
    point, normal = orca_planes(rel_pos, rel_vel, combined, inv_horizon[:, None], inv_step,
                                own_vel, _HALF)
    point = tuple(np.where(keep, c, np.nan).astype(F32) for c in point)
    normal = tuple(np.where(keep, c, np.nan).astype(F32) for c in normal)
    return point, normal
