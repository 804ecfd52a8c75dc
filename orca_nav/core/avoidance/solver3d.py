"""ORCA in 3-D exactly as RVO2-3D computes it (`RVOSimulator::doStep` without the position
update), batched over all agents, plus static voxel obstacles (which RVO2-3D does not have).

- Neighbours: RVO2-3D's kd-tree choice and order, float32 distances (`neighbors3d`).
- ORCA planes: cut-off sphere, cone, collision (`agent_planes`), float32 in RVO2-3D's order.
- Obstacle planes first (one per nearby occupied voxel sphere, `voxel_obstacles`), then the
  agent planes.
- linearProgram3 from the preferred velocity; where it fails, linearProgram4 from the failing
  plane, obstacle planes hard (`linear_program3d`).

Everything runs in float32 like RVO2-3D (positions, velocities and parameters are rounded to
float32 first, as RVO2-3D stores them); the new velocities are returned as float64.
"""
from typing import NamedTuple

import numpy as np

from .agent_planes import agent_planes
from .linear_program3d import F32, Planes, linear_program3, linear_program4
from .neighbors3d import agent_neighbors_3d
from .responsibility import slot_shares


class OrcaPlanes(NamedTuple):
    """Every agent's ORCA planes: point and normal (N, P, 3), valid (N, P); obstacle planes
    (the first `num_obstacle` columns, padded) then agent planes in RVO2-3D's order. The
    permitted velocities v satisfy dot(normal, v - point) >= 0."""
    point: np.ndarray
    normal: np.ndarray
    valid: np.ndarray
    num_obstacle: int


class OrcaSolution3d(NamedTuple):
    velocities: np.ndarray   # (N, 3) float64
    # (N,) bool: linearProgram3 failed, linearProgram4 minimised the largest violation
    infeasible: np.ndarray
    planes: OrcaPlanes


def new_velocities_3d(positions, velocities, pref_velocities, agent_params, time_step, obstacles,
                      weights=None, others=None):
    """One RVO2-3D doStep over validated input; weights: None or (N,) responsibility weights,
    others: None or a checked 3-D NonCooperative (neighbours the agents take all of the
    avoidance toward; they get no velocity)."""
    count = len(positions)
    if count == 0:
        empty = np.zeros((0, 0, 3))
        return OrcaSolution3d(np.zeros((0, 3)), np.zeros(0, dtype=bool),
                              OrcaPlanes(empty, empty, np.zeros((0, 0), dtype=bool), 0))
    extra = 0 if others is None else len(others.positions)
    if extra:
        # The others ride along as agents whose own planes and velocities are dropped.
        positions = np.concatenate([positions, others.positions])
        velocities = np.concatenate([velocities, others.velocities])
        pref_velocities = np.concatenate([pref_velocities, others.velocities])
        agent_params = {name: np.concatenate([value, np.full(extra, value[0])])
                        for name, value in agent_params.items()}
        agent_params['radius'][count:] = others.radii
    pos = positions.astype(F32)
    vel = velocities.astype(F32)
    pref = pref_velocities.T.astype(F32)
    radius = agent_params['radius'].astype(F32)
    max_speed = agent_params['max_speed'].astype(F32)
    inv_step = F32(1.0) / F32(time_step)
    with np.errstate(all='ignore'):  # NaN planes are RVO2-3D's own degenerate case
        neighbors, keep = agent_neighbors_3d(pos, agent_params['neighbor_dist'],
                                             agent_params['max_neighbors'])
        inv_horizon = F32(1.0) / agent_params['time_horizon'].astype(F32)
        shares = slot_shares(weights, neighbors[:count], keep[:count], count)
        if shares is not None:
            shares = np.concatenate([shares.T, np.full((extra, neighbors.shape[1]), F32(0.5))])
        point, normal = agent_planes(pos, vel, radius, inv_horizon, inv_step, neighbors, keep,
                                     shares)
        point, normal, keep = point[:, :count], normal[:, :count], keep[:count]
        pos, vel, pref = pos[:count], vel[:count], pref[:, :count]
        max_speed = max_speed[:count]
        valid = keep
        num_obstacle = 0
        if obstacles is not None:
            o_point, o_normal, o_valid = obstacles.planes(
                pos, vel, agent_params['radius'][:count], agent_params['max_speed'][:count],
                agent_params['time_horizon_obst'][:count], time_step)
            num_obstacle = o_valid.shape[1]
            point = np.concatenate([o_point, point], axis=2)
            normal = np.concatenate([o_normal, normal], axis=2)
            valid = np.concatenate([o_valid, keep], axis=1)
        planes = Planes.of(point, normal, valid)
        result, fail = linear_program3(planes, max_speed, pref, False)
        failed = np.flatnonzero(fail >= 0)
        if failed.size:
            fixed = linear_program4(planes.rows(failed), fail[failed], max_speed[failed],
                                    result[:, failed], np.full(failed.size, num_obstacle))
            result[:, failed] = fixed
    infeasible = np.zeros(count, dtype=bool)
    infeasible[failed] = True
    planes_out = OrcaPlanes(np.moveaxis(point, 0, -1), np.moveaxis(normal, 0, -1), valid,
                            num_obstacle)
    return OrcaSolution3d(result.T.astype(np.float64), infeasible, planes_out)
