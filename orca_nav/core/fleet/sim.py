"""A fleet simulator without ROS: N planar robots, per-robot kinematics, noise, latency, collisions.

* Motion: each robot executes a body twist (vx, vy, wz) under its model's limits
  (`kinematics.limit_twist`, zero-order hold per step) and its pose is integrated exactly
  (`kinematics.integrate_pose`), so the result does not depend on the step size except through
  the acceleration ramp.
* Latency: a command given at time t takes effect in the first step that starts at or after
  t + cmd_latency (a FIFO delay queue).
* Noise (seeded `numpy.random.default_rng(seed)`):
  - ``noise_vel_std``: actuation noise, added to the linear velocity each robot executes (along
    the axes its model can move on), then the limits are applied again. The true trajectory
    carries it, as with wheel slip.
  - ``noise_pos_std``: measurement noise on the reported odometry position (per axis).
* Collisions are checked on the true poses after every step:
  - robot-robot: centres closer than r_i + r_j (pairs found with a cKDTree);
  - robot-map: the robot's disc overlaps an occupied cell square or leaves the map (exact
    point-to-square distance, not the cell-centre clearance, so a robot hugging a wall that is
    legally r away from the cells' edges is not reported).
  An event is returned once when a contact starts; the contact must end before the same pair
  (or robot and map) is reported again.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np
from scipy.spatial import cKDTree

from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.fleet.kinematics import (RobotLimits, admissible_twist, finite_array, integrate_pose,
                                      limit_twist)

ROBOT_ROBOT = 'robot_robot'
ROBOT_MAP = 'robot_map'


@dataclass(frozen=True)
class CollisionEvent:
    """A contact that started at `time`: robots (i, j) for robot_robot, (i,) for robot_map.

    `position` is the contact point: on the segment between the two centres for robot_robot
    (where the discs first touch), the robot's centre for robot_map.
    """

    time: float
    kind: str
    robots: Tuple[int, ...]
    position: Tuple[float, float]


class FleetSim:
    """N robots integrated together; see the module docstring for the model."""

    def __init__(self, limits: RobotLimits, radius, start_poses, grid: Optional[OccupancyGrid] = None,
                 noise_pos_std: float = 0.0, noise_vel_std: float = 0.0, cmd_latency: float = 0.0,
                 seed: Optional[int] = None):
        n = len(limits)
        self.limits = limits
        self.radius = np.broadcast_to(np.asarray(radius, dtype=float), (n,)).copy()
        bad = np.flatnonzero(~np.isfinite(self.radius) | (self.radius <= 0.0))
        if bad.size:
            raise ValueError(f'radius[{int(bad[0])}] must be finite and > 0, '
                             f'got {self.radius[bad[0]]}')
        self._pose = finite_array('start_poses', start_poses, (n, 3)).copy()
        for name, value in (('noise_pos_std', noise_pos_std), ('noise_vel_std', noise_vel_std),
                            ('cmd_latency', cmd_latency)):
            if not (np.isfinite(value) and value >= 0.0):
                raise ValueError(f'{name} must be finite and >= 0, got {value}')
        self.noise_pos_std = float(noise_pos_std)
        self.noise_vel_std = float(noise_vel_std)
        self.cmd_latency = float(cmd_latency)
        self._rng = np.random.default_rng(seed)
        self._twist = np.zeros((n, 3))         # executed during the last step
        self._command = np.zeros((n, 3))       # in effect (after latency)
        self._pending = deque()                # (due_time, robot indices, twists), FIFO
        self.time = 0.0
        self.grid = grid
        self._robot_contacts: set = set()
        self._map_contacts = np.zeros(n, dtype=bool)

    # ------------------------------------------------------------------ state
    def __len__(self) -> int:
        return len(self.limits)

    @property
    def poses(self) -> np.ndarray:
        """(N,3) true poses x, y, yaw (a copy)."""
        return self._pose.copy()

    @property
    def twists(self) -> np.ndarray:
        """(N,3) body twists executed during the last step (a copy)."""
        return self._twist.copy()

    @property
    def robot_contacts(self) -> List[Tuple[int, int]]:
        """Ongoing robot-robot contacts as sorted index pairs (i < j)."""
        return sorted(self._robot_contacts)

    @property
    def map_contacts(self) -> np.ndarray:
        """(N,) bool: the robot is in an ongoing contact with the map (a copy)."""
        return self._map_contacts.copy()

    @property
    def colliding(self) -> np.ndarray:
        """(N,) bool: the robot is in an ongoing contact with a robot or the map."""
        out = self._map_contacts.copy()
        for i, j in self._robot_contacts:
            out[i] = out[j] = True
        return out

    def set_grid(self, grid: Optional[OccupancyGrid]) -> None:
        """Map for robot-map collisions (2-D); None disables them."""
        if grid is not None and grid.ndim != 2:
            raise ValueError(f'grid must be 2-D, got {grid.ndim}-D')
        self.grid = grid
        self._map_contacts[:] = False

    def odometry(self) -> Tuple[np.ndarray, np.ndarray]:
        """(poses (N,3), body twists (N,3)) as odometry reports them: position noise added."""
        poses = self._pose.copy()
        if self.noise_pos_std > 0.0:
            poses[:, :2] += self._rng.normal(0.0, self.noise_pos_std, size=(len(self), 2))
        return poses, self._twist.copy()

    # ------------------------------------------------------------------ commands and steps
    def set_commands(self, twists, robots: Optional[Sequence[int]] = None) -> None:
        """Command body twists (K,3) for `robots` (default all); effective after cmd_latency."""
        idx = np.arange(len(self)) if robots is None else np.asarray(robots, dtype=int).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= len(self)):
            raise ValueError(f'robots: index out of range 0..{len(self) - 1}: {idx.tolist()}')
        twists = finite_array('twists', twists, (idx.size, 3))
        self._pending.append((self.time + self.cmd_latency, idx, twists.copy()))

    def step(self, dt: float, commands=None) -> List[CollisionEvent]:
        """Advance by dt (optionally commanding all robots first); returns new collision events."""
        if not (np.isfinite(dt) and dt > 0.0):
            raise ValueError(f'dt must be finite and > 0, got {dt}')
        if commands is not None:
            self.set_commands(commands)
        while self._pending and self._pending[0][0] <= self.time + 1e-9:
            _, idx, twists = self._pending.popleft()
            self._command[idx] = twists
        twist = limit_twist(self._command, self._twist, self.limits, dt)
        if self.noise_vel_std > 0.0:
            noise = self._rng.normal(0.0, self.noise_vel_std, size=(len(self), 2))
            twist[:, :2] += noise
            twist = admissible_twist(twist, self.limits)
        self._pose = integrate_pose(self._pose, twist, dt)
        self._twist = twist
        self.time += dt
        return self.check_collisions()

    # ------------------------------------------------------------------ collisions
    def check_collisions(self) -> List[CollisionEvent]:
        """Updates the ongoing contacts from the true poses; returns those that just started."""
        return self._robot_robot_events() + self._robot_map_events()

    def _robot_robot_events(self) -> List[CollisionEvent]:
        pos = self._pose[:, :2]
        if len(self) < 2:
            return []
        pairs = cKDTree(pos).query_pairs(2.0 * float(self.radius.max()), output_type='ndarray')
        if pairs.size:
            i, j = pairs[:, 0], pairs[:, 1]
            reach = self.radius[i] + self.radius[j]
            touching = np.linalg.norm(pos[i] - pos[j], axis=1) < reach
            pairs = pairs[touching]
        contacts = {(int(a), int(b)) for a, b in pairs}
        started = sorted(contacts - self._robot_contacts)
        self._robot_contacts = contacts
        events = []
        for a, b in started:
            share = self.radius[a] / (self.radius[a] + self.radius[b])
            point = pos[a] + share * (pos[b] - pos[a])
            events.append(CollisionEvent(self.time, ROBOT_ROBOT, (a, b),
                                         (float(point[0]), float(point[1]))))
        return events

    def _robot_map_events(self) -> List[CollisionEvent]:
        if self.grid is None:
            return []
        touching = map_overlap(self.grid, self._pose[:, :2], self.radius)
        started = np.flatnonzero(touching & ~self._map_contacts)
        self._map_contacts = touching
        return [CollisionEvent(self.time, ROBOT_MAP, (int(i),),
                               (float(self._pose[i, 0]), float(self._pose[i, 1]))) for i in started]


def map_overlap(grid: OccupancyGrid, positions: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """(N,) bool: the disc of `radius` at each position overlaps an occupied cell or the outside.

    The cell-centre clearance screens out robots far from everything; the rest test the exact
    distance from the centre to every cell square in a window around it.
    """
    res = grid.resolution
    near = grid.clearance_at(positions) < radius + 1.5 * res
    out = np.zeros(len(positions), dtype=bool)
    if not near.any():
        return out
    pos = positions[near]
    rad = radius[near]
    half = int(np.ceil(rad.max() / res)) + 1
    offsets = np.arange(-half, half + 1)
    ox, oy = np.meshgrid(offsets, offsets, indexing='xy')
    centre = grid.world_to_cell(pos)                                     # (K, 2) ix, iy
    cells = centre[:, None, :] + np.stack([ox.ravel(), oy.ravel()], axis=1)[None]   # (K, W, 2)
    flat = cells.reshape(-1, 2)
    ny, nx = grid.shape
    inside = (flat[:, 0] >= 0) & (flat[:, 0] < nx) & (flat[:, 1] >= 0) & (flat[:, 1] < ny)
    blocked = np.ones(flat.shape[0], dtype=bool)                         # outside the map
    blocked[inside] = grid.occupied[flat[inside, 1], flat[inside, 0]]
    lower = grid.origin[:2] + flat * res                                 # cell square corner
    p = np.repeat(pos, cells.shape[1], axis=0)
    gap = np.maximum(np.maximum(lower - p, p - (lower + res)), 0.0)
    dist = np.where(blocked, np.hypot(gap[:, 0], gap[:, 1]), np.inf).reshape(cells.shape[:2])
    out[near] = dist.min(axis=1) < rad
    return out
