"""Local avoidance: ORCA exactly as RVO2 computes it, batched over agents with numpy.

One concept per module, as RVO2 splits them:

    params          OrcaParams (RVO2's agent parameters) and the shared input checks
    neighbors       agent neighbours (RVO2's KdTree agent queries, a scipy cKDTree)
    obstacles       polygon obstacles and RVO2's obstacle tree (edge splits, neighbour queries)
    agent_lines     agent-agent ORCA lines
    obstacle_lines  agent-obstacle ORCA lines
    linear_program  linearProgram1/2/3
    solver          compute_velocities / solve: one RVO2 doStep without the position update
    simulator       OrcaSimulator: RVO2's RVOSimulator
    map_polygons    occupancy grid -> ORCA polygons

This package imports nothing from planning or fleet.
"""
from .obstacles import ObstacleSet, prepare_obstacles
from .params import OrcaParams
from .simulator import OrcaSimulator
from .solver import OrcaLines, OrcaSolution, compute_velocities, solve

__all__ = ['OrcaParams', 'OrcaSolution', 'OrcaLines', 'compute_velocities', 'solve',
           'OrcaSimulator', 'ObstacleSet', 'prepare_obstacles']
