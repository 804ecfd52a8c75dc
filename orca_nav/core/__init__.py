"""orca_nav's algorithms as a library: numpy and scipy only, no ROS, no clock (time is passed in).

Three parts, each a subpackage, plus what they share:

    avoidance/   ORCA exactly as RVO2 (2-D) and RVO2-3D (3-D, plus voxel obstacles) compute it
                 (imports neither planning nor fleet)
    planning/    global planners (kinodynamic A*, hybrid A*) and the planner -> tracker Reference
    fleet/       robots, kinematics, tracking, preferred velocities, the fleet controller, the simulator
    grid.py      occupancy grids, map_server I/O, clearance (shared)
    geometry.py  angles and planar rotations (shared)

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
