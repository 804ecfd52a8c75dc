"""orca_nav's algorithms as a library: numpy and scipy only, no ROS, no clock (time is passed in).

Four parts, each a subpackage that imports only the ones below it, plus what they share:

    sim/         the fleet simulator: robots, people, scans, localization, faults, lockstep
    fleet/       robots, kinematics, tracking, preferred velocities, the fleet controller and
                 the fleet planning supervisor
    planning/    global planners (kinodynamic A*, hybrid A*) and the planner -> tracker Reference
    avoidance/   ORCA exactly as RVO2 (2-D) and RVO2-3D (3-D, plus voxel obstacles) compute it
    grid.py      occupancy grids, map_server I/O, clearance (shared)
    geometry.py  angles and planar rotations (shared)
    validation   checks of numbers handed to the core (shared)

The public API is re-exported here: ``from orca_nav.core import compute_velocities, ...``.
"""
from orca_nav.core.avoidance import (OrcaParams, OrcaSimulator, compute_velocities,
                                     prepare_obstacles, prepare_voxel_obstacles, solve)
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.planning.hybrid_astar import HybridAStar, HybridParams
from orca_nav.core.planning.kinodynamic_astar import KinodynamicAStar, KinodynamicParams
from orca_nav.core.planning.result import PlanStatus

__all__ = ['OrcaParams', 'compute_velocities', 'solve', 'OrcaSimulator', 'prepare_obstacles',
           'prepare_voxel_obstacles', 'OccupancyGrid', 'KinodynamicAStar', 'KinodynamicParams', 'HybridAStar',
           'HybridParams', 'PlanStatus']
