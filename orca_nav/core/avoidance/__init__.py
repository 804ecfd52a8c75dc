"""Local avoidance: ORCA exactly as RVO2 computes it, batched over agents with numpy.

One concept per module, as RVO2 splits them:

    params          OrcaParams (RVO2's agent parameters) and the shared input checks
    neighbors       agent neighbours (RVO2's KdTree agent queries, a scipy cKDTree, or a
                    Verlet list kept over calls)
    obstacles       polygon obstacles and RVO2's obstacle tree (edge splits, neighbour queries)
    agent_lines     agent-agent ORCA lines
    obstacle_lines  agent-obstacle ORCA lines
    linear_program  linearProgram1/2/3
    responsibility  per-agent responsibility weights, non-cooperative agents (not in RVO2)
    acceleration    ORCA over the velocities reachable in one step (not in RVO2)
    solver          compute_velocities / solve: one RVO2 doStep without the position update
                    (2-D; (N, 3) input goes to solver3d)
    simulator       OrcaSimulator: RVO2's RVOSimulator
    map_polygons    occupancy grid -> ORCA polygons

In 3-D, as RVO2-3D:

    neighbors3d        agent neighbours (RVO2-3D's KdTree choice and tie order)
    agent_planes       ORCA planes (cut-off sphere, cone, collision)
    linear_program3d   linearProgram1/2/3/4
    voxel_obstacles    3-D occupancy grid -> static sphere obstacles (not in RVO2-3D)
    solver3d           one RVO2-3D doStep without the position update

This package imports nothing from planning or fleet.
"""
from .obstacles import ObstacleSet, prepare_obstacles
from .params import OrcaParams
from .responsibility import NonCooperative
from .simulator import OrcaSimulator
from .solver import OrcaLines, OrcaSolution, compute_velocities, solve
from .solver3d import OrcaPlanes, OrcaSolution3d
from .voxel_obstacles import VoxelObstacles, prepare_voxel_obstacles

__all__ = ['OrcaParams', 'OrcaSolution', 'OrcaLines', 'compute_velocities', 'solve',
           'OrcaSimulator', 'ObstacleSet', 'prepare_obstacles', 'OrcaSolution3d', 'OrcaPlanes',
           'VoxelObstacles', 'prepare_voxel_obstacles', 'NonCooperative']
