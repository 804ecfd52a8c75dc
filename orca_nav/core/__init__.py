"""orca_nav's algorithms as a library: numpy and scipy only, no ROS, no clock (time is passed in).

Four parts, each a subpackage that imports only the ones below it, plus what they share:

    sim/         the fleet simulator: robots, people, scans, localization, faults, lockstep
    fleet/       robots, kinematics, tracking, preferred velocities, the fleet controller and
                 the fleet planning supervisor
    planning/    global planners (kinodynamic A*, hybrid A*) and the planner -> tracker Reference
    avoidance/   ORCA exactly as RVO2 (2-D) and RVO2-3D (3-D, plus voxel obstacles) compute it
    shared:      grid (occupancy grids and their clearance), map_image (map_server's image
                 rule, PGM), coarse_geodesic (distance to a goal on a coarse graph),
                 obstacle_distance (exact distances to occupied cells), voxel_map (3-D maps
                 on disk), geometry (angles, rotations), transforms (a tf buffer's core),
                 validation (checks of numbers handed to the core), traffic_rules (lanes
                 and one-robot zones annotated beside a map)

The public API is re-exported here: ``from orca_nav.core import compute_velocities, ...``.
"""
import importlib

# Re-exported name -> its module. Loaded on first use (PEP 562): importing any one core module
# (the fleet file's robot schema, say) does not load every planner and solver with it.
_EXPORTS = {
    'OrcaParams': 'orca_nav.core.avoidance', 'OrcaSimulator': 'orca_nav.core.avoidance',
    'compute_velocities': 'orca_nav.core.avoidance', 'prepare_obstacles': 'orca_nav.core.avoidance',
    'prepare_voxel_obstacles': 'orca_nav.core.avoidance', 'solve': 'orca_nav.core.avoidance',
    'OccupancyGrid': 'orca_nav.core.grid',
    'HybridAStar': 'orca_nav.core.planning.hybrid_astar',
    'HybridParams': 'orca_nav.core.planning.hybrid_astar',
    'KinodynamicAStar': 'orca_nav.core.planning.kinodynamic_astar',
    'KinodynamicParams': 'orca_nav.core.planning.kinodynamic_astar',
    'PlanStatus': 'orca_nav.core.planning.result',
}
__all__ = list(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    return getattr(importlib.import_module(_EXPORTS[name]), name)
