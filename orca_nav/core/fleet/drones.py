"""Drones in a fleet: the 3-D map prepared for avoidance, and the two layers' rule.

Ground robots avoid each other in 2-D (the plane z = 0), drones (kinematics ``quadrotor``)
avoid each other and the 3-D map in 3-D (RVO2-3D's ORCA with voxel obstacles). The layers meet
near the ground; docs/orca3d.md ("Drones in a fleet") states the rule, implemented here:

* A ground robot is a vertical cylinder of its radius from z = 0 up to ``ground_clearance``.
* A drone whose sphere reaches below that height (z - radius < ground_clearance) is *low*: the
  ground robots' 2-D ORCA sees it as one more reciprocal agent, a disc of its radius at its
  (x, y) moving with its horizontal velocity.
* Every drone's 3-D ORCA sees every ground robot as a reciprocal agent: the sphere that encloses
  its cylinder, centred at z = ground_clearance / 2 with radius
  sqrt(r^2 + (ground_clearance / 2)^2), moving with its horizontal velocity. A drone flying
  higher than that sphere reaches is not constrained by it.

Symmetry: RVO2-3D's ORCA plane is undefined (NaN, so dropped) when the relative velocity is
exactly parallel to the relative position, so two drones flying exactly head-on would not see
each other (the 2-D ORCA has no such case). `keep_right` tilts each drone's preferred velocity
by KEEP_RIGHT radians to its right (seen from above; a vertical one toward +x when climbing,
-x when descending): head-on drones then approach slightly offset, every plane is defined, and
they pass each other right side to right side.

Both sides take their half of the avoidance (ORCA's reciprocity) on their own model of the
other: the ground robot on the drone's disc, the drone on the robot's enclosing sphere, which
contains the cylinder, so each model covers the real body.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from orca_nav.core.avoidance import NonCooperative
from orca_nav.core.avoidance.voxel_obstacles import (
    DEFAULT_MAX_OBSTACLES,
    VoxelObstacles,
    prepare_voxel_obstacles,
)
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.obstacle_distance import ObstacleDistance


@dataclass(frozen=True)
class Map3dModel:
    """A 3-D map prepared for drone avoidance: the voxel grid, its sphere obstacles and the
    exact distances to its voxels (the safety layer's)."""

    grid: OccupancyGrid
    obstacles: VoxelObstacles
    distance: ObstacleDistance


def prepare_map_3d(grid: OccupancyGrid, max_obstacles: int = DEFAULT_MAX_OBSTACLES) -> Map3dModel:
    """The voxel obstacles of a 3-D grid (its surface voxels in a cKDTree)."""
    if grid.ndim != 3:
        raise ValueError(f'a 3-D map needs a 3-D grid, got a {grid.ndim}-D one')
    return Map3dModel(grid, prepare_voxel_obstacles(grid, max_obstacles), ObstacleDistance(grid))


KEEP_RIGHT = 0.01     # rad


def keep_right(pref: np.ndarray) -> np.ndarray:
    """(N, 3) preferred velocities turned KEEP_RIGHT rad to the right (see the module docstring),
    speeds unchanged."""
    pref = np.asarray(pref, dtype=float)
    right = np.column_stack([pref[:, 1], -pref[:, 0], np.zeros(len(pref))])   # v x z
    vertical = np.hypot(pref[:, 0], pref[:, 1]) <= 1e-9 * np.linalg.norm(pref, axis=1)
    right[vertical] = np.outer(np.sign(pref[vertical, 2]), [1.0, 0.0, 0.0])
    norm = np.linalg.norm(right, axis=1, keepdims=True)
    unit = np.divide(right, norm, out=np.zeros_like(right), where=norm > 0.0)
    speed = np.linalg.norm(pref, axis=1, keepdims=True)
    return np.cos(KEEP_RIGHT) * pref + np.sin(KEEP_RIGHT) * speed * unit


def low_flying(altitude, radius, ground_clearance: float) -> np.ndarray:
    """(N,) bool: the drone's sphere reaches into the ground robots' layer."""
    return np.asarray(altitude) - np.asarray(radius) < ground_clearance


def ground_robot_spheres(radius, ground_clearance: float):
    """(centre altitude, sphere radii (N,)): the spheres that enclose ground robots' cylinders
    (radius `radius`, height `ground_clearance`) in the drones' 3-D avoidance."""
    half = 0.5 * ground_clearance
    return half, np.sqrt(np.asarray(radius, dtype=float) ** 2 + half * half)


def goal_problem_3d(grid: Optional[OccupancyGrid], goal, radius: float) -> Optional[str]:
    """Why a drone of `radius` cannot have its goal at `goal` (x, y, z) in the 3-D map, or None:
    outside the map's bounds, or with the drone's sphere on an occupied voxel (cell-centre
    clearance). A NaN z (an altitude not known yet) checks x, y against the bounds only."""
    goal = np.asarray(goal, dtype=float)
    if not np.all(np.isfinite(goal[:2])) or np.isinf(goal[2]):
        return f'goal {goal.tolist()} is not finite'
    if grid is None:
        return None
    if np.isnan(goal[2]):
        lower, upper = grid.extent
        goal = np.array([goal[0], goal[1], 0.5 * (lower[2] + upper[2])])
        if grid.in_bounds(goal)[0]:
            return None
    text = '(' + ', '.join(f'{v:.3f}' for v in goal) + ')'
    if not grid.in_bounds(goal)[0]:
        lower, upper = grid.extent
        return (f'{text} is outside the 3-D map (x {lower[0]:g}..{upper[0]:g}, '
                f'y {lower[1]:g}..{upper[1]:g}, z {lower[2]:g}..{upper[2]:g})')
    clearance = float(grid.clearance_near(goal[None, :], radius)[0])
    if clearance <= radius:
        return (f'{text} is inside an obstacle of the 3-D map (clearance {clearance:.3f} m '
                f'<= radius {radius:.3f} m)')
    return None


def people_as_spheres(others: NonCooperative, height: float) -> NonCooperative:
    """Non-cooperative agents (discs on the ground) as the drones' 3-D ORCA sees them: each the
    sphere that encloses its cylinder (its radius, `height` tall), as ground robots are seen."""
    centre_z, radii = ground_robot_spheres(others.radii, height)
    count = len(others.radii)
    return NonCooperative(np.column_stack([others.positions, np.full(count, centre_z)]),
                          np.column_stack([others.velocities, np.zeros(count)]), radii)
