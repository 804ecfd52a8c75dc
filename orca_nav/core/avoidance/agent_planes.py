"""ORCA planes in 3-D (RVO2-3D `Agent::computeNewVelocity`), batched, in float32 with RVO2-3D's
operation order: the cut-off sphere, the cone (a quadratic, not 2-D legs), and the already
colliding case that uses the time step.

The same construction serves agent neighbours (each side takes half: responsibility 0.5) and
static obstacle spheres (other velocity 0, full responsibility, the obstacle time horizon).
"""
import numpy as np

from .linear_program3d import F32, cross, dot

_HALF = F32(0.5)


def orca_planes(rel_pos, rel_vel, combined_radius, inv_horizon, inv_step, velocity, responsibility):
    """ORCA planes for (K, M) pairs: rel_pos = other - own, rel_vel = own - other velocity
    ((3, K, M) float32), combined_radius (K, M), inv_horizon (K, 1) or (K, M), inv_step a
    float32 scalar, velocity the own velocity ((3, K, 1)).

    Returns (point, normal), each (3, K, M) float32. As in RVO2-3D a degenerate pair (w = 0)
    gives a NaN plane, which the linear programs ignore.
    """
    dist_sq = dot(rel_pos, rel_pos)
    combined_sq = combined_radius * combined_radius
    colliding = ~(dist_sq > combined_sq)
    # No collision: w from the cut-off centre to the relative velocity.
    w = rel_vel - inv_horizon * rel_pos
    w_length_sq = dot(w, w)
    dot_product = dot(w, rel_pos)
    on_cutoff = (dot_product < 0.0) & (dot_product * dot_product > combined_sq * w_length_sq)
    w_length = np.sqrt(w_length_sq)
    cut_normal = w * (F32(1.0) / w_length)
    cut_u = (combined_radius * inv_horizon - w_length) * cut_normal
    # Cone: the relative velocity projected on the cone of the time horizon.
    a = dist_sq
    b = dot(rel_pos, rel_vel)
    rel_cross = cross(rel_pos, rel_vel)
    c = dot(rel_vel, rel_vel) - dot(rel_cross, rel_cross) / (dist_sq - combined_sq)
    t = (b + np.sqrt(b * b - a * c)) / a
    ww = rel_vel - t * rel_pos
    ww_length = np.sqrt(dot(ww, ww))
    cone_normal = ww * (F32(1.0) / ww_length)
    cone_u = (combined_radius * t - ww_length) * cone_normal
    # Collision: the cut-off sphere of one time step.
    wc = rel_vel - inv_step * rel_pos
    wc_length = np.sqrt(dot(wc, wc))
    hit_normal = wc * (F32(1.0) / wc_length)
    hit_u = (combined_radius * inv_step - wc_length) * hit_normal
    normal = np.where(colliding, hit_normal, np.where(on_cutoff, cut_normal, cone_normal))
    u = np.where(colliding, hit_u, np.where(on_cutoff, cut_u, cone_u))
    return velocity + F32(responsibility) * u, normal


def agent_planes(pos, vel, radius, inv_horizon, inv_step, neighbors, keep, shares=None):
    """Agent-agent ORCA planes, (3, N, k), slot j of agent a from neighbour neighbors[a, j];
    slots outside `keep` are padding (NaN). pos, vel (N, 3) float32. shares: None (RVO2-3D: each
    takes half) or (N, k) float32, the share of the avoidance agent a takes in each slot."""
    other = np.where(keep, neighbors, 0)
    pos_t, vel_t = pos.T, vel.T
    own_vel = vel_t[:, :, None]
    rel_pos = pos_t[:, other] - pos_t[:, :, None]
    rel_vel = own_vel - vel_t[:, other]
    combined = radius[:, None] + radius[other]
    point, normal = orca_planes(rel_pos, rel_vel, combined, inv_horizon[:, None], inv_step,
                                own_vel, _HALF if shares is None else shares)
    return np.where(keep, point, np.nan).astype(F32), np.where(keep, normal, np.nan).astype(F32)
