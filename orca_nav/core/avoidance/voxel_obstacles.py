"""Static obstacles for 3-D ORCA: the occupied voxels of a 3-D occupancy grid as spheres.

RVO2-3D has no obstacles. Here each surface voxel (occupied, with a free face neighbour; cells
outside the map count as free) is a static sphere at its centre with half the voxel diagonal as
radius, so the sphere contains the voxel's cube. An agent gets one ORCA plane per nearby sphere,
built like an agent plane with the other velocity 0, full responsibility (the point is
v + u, not v + u/2) and the obstacle time horizon, as RVO2 treats obstacles with
`time_horizon_obst`. The planes come first and stay hard in the fallback (linearProgram4).

Which spheres: the nearest ones within RVO2's obstacle range (time_horizon_obst * max_speed +
radius, plus the sphere radius), at most `max_obstacles` of them, but never fewer than all
within one step's reach (max_speed * time_step + radius + sphere radius): those are the only
ones the agent can touch during the step.

Guarantee: a velocity that satisfies a sphere's plane keeps the agent's centre at least
radius + sphere radius from the sphere's centre for the whole time horizon (the truncated cone
of a static sphere is convex and the plane supports it), hence at least `radius` from the voxel.
Zero velocity satisfies every such plane, so the planes of one step are always jointly
feasible, and an agent that starts at least `radius` clear of the occupied voxels stays so as
long as time_horizon_obst >= time_step, up to float32 rounding (about 1e-6 m).
"""
import numpy as np
from scipy.spatial import cKDTree

from .agent_planes import orca_planes
from .linear_program3d import F32
from .neighbors import without_unused_slots

DEFAULT_MAX_OBSTACLES = 32


def voxel_ball_radius(resolution: float) -> float:
    """Radius of the ball around a voxel's centre that contains the voxel: half its diagonal.
    What 3-D ORCA keeps an agent's radius clear of; plans for drones keep clear of it too."""
    return float(resolution) * np.sqrt(3.0) / 2.0


class VoxelObstacles:
    """The surface voxels of a 3-D occupancy grid, prepared once (a cKDTree of their centres)."""

    def __init__(self, grid, max_obstacles=DEFAULT_MAX_OBSTACLES):
        occupied = getattr(grid, 'occupied', None)
        if occupied is None or np.ndim(occupied) != 3:
            raise ValueError('obstacles: a 3-D occupancy grid ([iz, iy, ix]) is needed for 3-D '
                             f'ORCA, got {type(grid).__name__}'
                             + (f' with {np.ndim(occupied)} dimensions'
                                if occupied is not None else ''))
        if int(max_obstacles) != max_obstacles or max_obstacles < 1:
            raise ValueError(f'max_obstacles must be an integer >= 1, got {max_obstacles!r}')
        occupied = np.asarray(occupied, dtype=bool)
        padded = np.pad(occupied, 1, constant_values=False)
        enclosed = np.ones_like(occupied)
        for axis in range(3):
            for shift in (-1, 1):
                enclosed &= np.roll(padded, shift, axis=axis)[1:-1, 1:-1, 1:-1]
        iz, iy, ix = np.nonzero(occupied & ~enclosed)
        resolution = float(grid.resolution)
        origin = np.asarray(grid.origin, dtype=np.float64)
        self.centres = origin + (np.stack([ix, iy, iz], axis=1) + 0.5) * resolution
        self.sphere_radius = voxel_ball_radius(resolution)
        self.max_obstacles = int(max_obstacles)
        self._tree = cKDTree(self.centres) if len(self.centres) else None

    def __len__(self):
        return len(self.centres)

    def neighbors(self, positions, reach, step_reach):
        """(N, K) indices of the nearest spheres, nearest first, and the mask of those to use:
        within `reach` (N,), the first max_obstacles, and every one within `step_reach` (N,)."""
        count = len(positions)
        if self._tree is None or count == 0:
            return np.zeros((count, 0), dtype=np.intp), np.zeros((count, 0), dtype=bool)
        within_step = self._tree.query_ball_point(positions, step_reach, return_length=True)
        width = int(min(max(self.max_obstacles, within_step.max(initial=0)), len(self.centres)))
        dist, found = self._tree.query(positions, k=width, distance_upper_bound=float(reach.max()))
        dist, found = dist.reshape(count, width), found.reshape(count, width)
        rank = np.arange(width)[None, :]
        keep = ((dist < reach[:, None])
                & ((rank < self.max_obstacles) | (dist <= step_reach[:, None])))
        return without_unused_slots(np.where(keep, found, 0), keep)

    def planes(self, pos, vel, radius, max_speed, time_horizon_obst, time_step):
        """Obstacle ORCA planes ((3, N, K) float32 point and normal) and their (N, K) mask.

        pos, vel (N, 3) float32; radius, max_speed, time_horizon_obst (N,) float64."""
        positions = pos.astype(np.float64)
        reach = time_horizon_obst * max_speed + radius + self.sphere_radius
        step_reach = max_speed * time_step + radius + self.sphere_radius
        found, keep = self.neighbors(positions, reach, step_reach)
        centres = self.centres.astype(F32).T
        own_vel = vel.T[:, :, None]
        rel_pos = centres[:, found] - pos.T[:, :, None]
        rel_vel = np.broadcast_to(own_vel, rel_pos.shape)
        combined = np.broadcast_to((radius + self.sphere_radius).astype(F32)[:, None], found.shape)
        inv_horizon = (F32(1.0) / time_horizon_obst.astype(F32))[:, None]
        point, normal = orca_planes(rel_pos, rel_vel, combined, inv_horizon,
                                    F32(1.0) / F32(time_step), own_vel, 1.0)
        return point, normal, keep


def as_voxel_obstacles(obstacles):
    """None for no obstacles, else a VoxelObstacles (a 3-D grid is prepared here, per call)."""
    if obstacles is None or (isinstance(obstacles, (list, tuple)) and len(obstacles) == 0):
        return None
    if isinstance(obstacles, VoxelObstacles):
        return obstacles if len(obstacles) else None
    return VoxelObstacles(obstacles)


def prepare_voxel_obstacles(grid, max_obstacles=DEFAULT_MAX_OBSTACLES):
    """The obstacles of a 3-D occupancy grid for 3-D ORCA, prepared once per map (pass the
    result as `obstacles` on every call)."""
    return VoxelObstacles(grid, max_obstacles)
