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

`simulator.OrcaSimulator` is RVO2's simulator (add agents, obstacles, preferred velocities, step),
plus `remove_agent(id)` and `set_obstacles(polygons)` to replace the obstacles at run time.
"""
from typing import NamedTuple

import numpy as np

from .acceleration import reachable_velocities
from .agent_lines import agent_lines
from .linear_program import (
    clamp_to_speed,
    closest_point,
    min_max_penetration,
    take_columns,
    violation,
)
from .neighbors import agent_neighbors
from .obstacle_lines import obstacle_lines
from .obstacles import as_obstacle_set
from .params import OrcaParams, as_vectors
from .responsibility import check_responsibility, slot_shares
from .solver3d import new_velocities_3d
from .voxel_obstacles import as_voxel_obstacles


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


def compute_velocities(positions, velocities, pref_velocities, params, obstacles=(),
                       responsibility=None, others=None, extra_obstacles=None):
    """The new velocity of every agent, as RVO2's computeNewVelocity picks it (in 3-D, as
    RVO2-3D's does).

    positions, velocities, pref_velocities: (N, 2), or (N, 3) for 3-D. params: OrcaParams.
    obstacles (2-D): list of (M, 2) counter-clockwise vertex arrays (2 vertices = a segment)
    or an ObstacleSet; (3-D): a VoxelObstacles (`prepare_voxel_obstacles(grid)`) or a 3-D
    OccupancyGrid. Returns (N, 2) or (N, 3) float64.
    responsibility (2-D): None (RVO2) or a scalar or (N,) weights in [0, 1]: agent a takes
    w_a / (w_a + w_b) of the avoidance toward agent b. others (2-D): a NonCooperative, agents
    the fleet takes full responsibility toward (see `responsibility`). extra_obstacles (2-D):
    obstacles that change every call (e.g. sensed ones; an ObstacleSet or polygons), kept
    apart from `obstacles` so a prepared map is not rebuilt; their lines follow the map's.
    """
    return solve(positions, velocities, pref_velocities, params, obstacles, responsibility,
                 others, extra_obstacles).velocities


def solve(positions, velocities, pref_velocities, params, obstacles=(), responsibility=None,
          others=None, extra_obstacles=None, neighbor_list=None, reach_from=None):
    """compute_velocities, plus which agents' linear programs were infeasible and the
    ORCA lines (2-D, an OrcaSolution) or planes (3-D, an OrcaSolution3d) they were solved over.
    neighbor_list (2-D): an AgentNeighborList kept by a caller that solves again and again
    (the same answer, found faster while agents move a little). reach_from (2-D): (N, 2) the
    velocities the reachable ones are counted from (params.max_velocity_change; default
    `velocities`), e.g. the last commanded ones where a drive follows its commands."""
    positions = as_vectors('positions', positions, dims=(2, 3))
    count, dims = positions.shape
    velocities = as_vectors('velocities', velocities, count, dims=(dims,))
    pref_velocities = as_vectors('pref_velocities', pref_velocities, count, dims=(dims,))
    if not isinstance(params, OrcaParams):
        raise ValueError(f'params must be an OrcaParams, got {type(params).__name__}')
    agent_params, time_step = params.per_agent(count)
    weights = check_responsibility(responsibility, count)
    others = None if others is None else others.checked(dims)
    if dims == 3:
        if any(a is not None for a in (extra_obstacles, neighbor_list)):
            raise ValueError('extra_obstacles and neighbor_list: 2-D only')
        return new_velocities_3d(positions, velocities, pref_velocities, agent_params, time_step,
                                 as_voxel_obstacles(obstacles), weights, others)
    obstacle_set = as_obstacle_set(obstacles)
    extra = None if extra_obstacles is None else as_obstacle_set(extra_obstacles,
                                                                 'extra_obstacles')
    reach_from = velocities if reach_from is None else as_vectors('reach_from', reach_from, count)
    return new_velocities(positions, velocities, pref_velocities, agent_params, time_step,
                          obstacle_set, weights, others, extra, neighbor_list, params.ttc_weight,
                          reach_from)


def new_velocities(positions, velocities, pref_velocities, agent_params, time_step,
                   obstacle_set, weights=None, others=None, extra_obstacle_set=None,
                   neighbor_list=None, ttc_weight=1.0, reach_from=None):
    """One doStep over validated input; weights: None or (N,) responsibility weights (see
    `responsibility.check_responsibility`), others: None or a checked NonCooperative,
    extra_obstacle_set: None or a second ObstacleSet, neighbor_list: None or an
    AgentNeighborList. Agents with a finite agent_params['max_velocity_change'] choose among
    the velocities they can reach from `reach_from` (default `velocities`; `acceleration`), the
    others as RVO2."""
    count = len(positions)
    infeasible = np.zeros(count, dtype=bool)
    if count == 0:
        none = np.zeros((0, 0))
        return OrcaSolution(np.zeros((0, 2)), infeasible,
                            OrcaLines(none, none, none, none, none.astype(bool)))
    radius = agent_params['radius']
    max_speed = agent_params['max_speed']
    all_positions, all_velocities, all_radius, other_positions = (positions, velocities,
                                                                  radius, None)
    if others is not None and len(others.positions):
        other_positions = others.positions
        all_positions = np.concatenate([positions, others.positions])
        all_velocities = np.concatenate([velocities, others.velocities])
        all_radius = np.concatenate([radius, others.radii])
    find = agent_neighbors if neighbor_list is None else neighbor_list.neighbors
    neighbors, keep = find(positions, agent_params['neighbor_dist'],
                           agent_params['max_neighbors'], other_positions)
    # Lines are slot-major, (L, N): per-agent values broadcast along the long axis.
    px, py, dx, dy = agent_lines(all_positions, all_velocities, all_radius,
                                 agent_params['time_horizon'], time_step, neighbors, keep,
                                 slot_shares(weights, neighbors, keep, count))
    valid = np.ascontiguousarray(keep.T)
    num_obst = np.zeros(count, dtype=np.intp)
    sets = [s for s in (obstacle_set, extra_obstacle_set) if s is not None and len(s)]
    if sets:
        o_px, o_py, o_dx, o_dy, num_obst = obstacle_lines(
            sets[0], positions, velocities, radius, max_speed, agent_params['time_horizon_obst'])
        for more in sets[1:]:
            (o_px, o_py, o_dx, o_dy), num_obst = _append_lines(
                (o_px, o_py, o_dx, o_dy), num_obst, obstacle_lines(
                    more, positions, velocities, radius, max_speed,
                    agent_params['time_horizon_obst']))
        if o_px.shape[1]:
            # Obstacle lines first, then each agent's agent lines right after its own.
            obst_width, agent_width = o_px.shape[1], px.shape[0]
            width = obst_width + agent_width
            rows = num_obst[None, :] + np.arange(agent_width)[:, None]
            cols = np.arange(count)[None, :]    # broadcast against rows by the indexing
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
    change = agent_params.get('max_velocity_change')
    limited = np.zeros(count, dtype=bool) if change is None else np.isfinite(change)
    if px.shape[0]:
        start_violation = violation(px, py, dx, dy, vx, vy)
        need = ((start_violation > 0.0) & valid).any(axis=0)
        if need.any():
            idx = need.nonzero()[0]
            # In a crowd every agent needs it: no copies then.
            lpx, lpy, ldx, ldy, lvalid = (px, py, dx, dy, valid) if idx.size == count else \
                take_columns((px, py, dx, dy, valid), idx)
            sx, sy, line_fail = closest_point(lpx, lpy, ldx, ldy, lvalid, max_speed[idx],
                                              opt_x[idx], opt_y[idx])
            failed = (line_fail >= 0).nonzero()[0]
            if failed.size:
                f = idx[failed]
                infeasible[f] = True
                sx[failed], sy[failed] = min_max_penetration(
                    lpx, lpy, ldx, ldy, lvalid, num_obst if idx.size == count else num_obst[idx],
                    line_fail[failed], max_speed[f], sx[failed], sy[failed], failed)
            vx[idx] = sx
            vy[idx] = sy
            # Points on the speed circle may exceed it by rounding (~1e-16 relative).
            speed_sq = vx * vx + vy * vy
            over = (speed_sq > max_speed * max_speed).nonzero()[0]
            if over.size:
                scale = max_speed[over] / np.sqrt(speed_sq[over])
                vx[over] *= scale
                vy[over] *= scale
    chosen = np.empty((count, 2))
    chosen[:, 0], chosen[:, 1] = vx, vy
    if limited.any():
        # Toward RVO2's choice, among the velocities these agents can reach.
        rows = np.flatnonzero(limited)
        chosen[rows], infeasible[rows] = reachable_velocities(
            *take_columns((px, py, dx, dy, valid), rows), num_obst[rows],
            (velocities if reach_from is None else reach_from)[rows],
            change[rows], max_speed[rows], chosen[rows], infeasible[rows], positions[rows],
            radius[rows], neighbors[rows], keep[rows], all_positions, all_velocities, all_radius,
            ttc_weight)
    return OrcaSolution(chosen, infeasible, OrcaLines(px, py, dx, dy, valid))



def _append_lines(first, num_first, second):
    """Per agent (rows), the lines of `second` (lines..., counts) right after the num_first
    valid lines of `first` ((N, W) point/direction arrays); returns (lines, counts)."""
    *lines, num_second = second
    count, width_first = first[0].shape
    width = width_first + lines[0].shape[1]
    rows = np.broadcast_to(np.arange(count)[:, None], lines[0].shape)
    cols = num_first[:, None] + np.arange(lines[0].shape[1])[None, :]
    merged = []
    for a, b, fill in zip(first, lines, (0.0, 0.0, 1.0, 0.0)):
        out = np.full((count, width), fill, dtype=np.result_type(a, b))
        out[:, :width_first] = a
        out[rows, cols] = b
        merged.append(out)
    return merged, num_first + num_second
