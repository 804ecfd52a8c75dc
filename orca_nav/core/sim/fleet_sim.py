"""A fleet simulator without ROS: N robots (planar, and quadrotors in 3-D), per-robot kinematics,
noise, latency, collisions.

* Motion: each robot executes a body twist (vx, vy, wz) under its model's limits
  (`kinematics.limit_twist`, zero-order hold per step) and its pose is integrated exactly
  (`kinematics.integrate_pose`), so the result does not depend on the step size except through
  the acceleration ramp.
* Quadrotors (kinematics ``quadrotor``) fly: they also take a climb rate vz with their twist,
  their linear velocity (vx, vy, vz) is limited as a 3-D vector (`kinematics.limit_velocity_3d`:
  |v| <= max_speed, |dv| <= max_accel * dt) and their altitude z integrates vz. Every other
  robot stays on the ground, z = 0 (`altitudes`).
* Latency: a command given at time t takes effect in the first step that starts at or after
  t + cmd_latency (a FIFO delay queue).
* Watchdog (``cmd_timeout``, 0 disables it): a robot whose last command took effect more than
  cmd_timeout ago is commanded to stop (it still decelerates within max_accel), as a base
  controller's watchdog does; the watchdog sits on the robot, after the latency.
* Noise (seeded `numpy.random.default_rng(seed)`):
  - ``noise_vel_std``: actuation noise, added to the linear velocity each robot executes (along
    the axes its model can move on), then the limits are applied again. The true trajectory
    carries it, as with wheel slip.
  - ``noise_pos_std``: measurement noise on the reported odometry position (per axis).
* Collisions are checked on the true poses after every step:
  - robot-robot: centres closer than r_i + r_j (pairs found with a cKDTree); two drones by the
    3-D distance of their centres (spheres); a drone and a ground robot when their discs overlap
    in x, y and the drone's sphere reaches below `ground_clearance` (a ground robot is a
    vertical cylinder of that height, the layer rule of docs/orca3d.md);
  - robot-map: the robot's disc overlaps an occupied cell square or leaves the map (exact
    point-to-square distance, not the cell-centre clearance, so a robot hugging a wall that is
    legally r away from the cells' edges is not reported); for a drone, its sphere against the
    voxel cubes of the 3-D map (`set_grid_3d`; without one, drones have no map contacts);
  - robot-person: with scripted `pedestrians` (walked in every step; people who avoid no one,
    or stop short of the robots), a robot's centre closer than r + the person's radius (a
    drone only while its sphere reaches below the people's height);
  - robot-obstacle: the robot's disc overlaps an unmapped box (`boxes`, `scan`).
  An event is returned once when a contact starts; the contact must end before the same pair
  (or robot and map) is reported again.

Injected faults: `faults.Faults`. Time is the simulation's own (`FleetSim.time`, advanced by
`step`); what a driver does around the steps (when odometry is due, lockstep): `lockstep`.

One file: one simulation step (motion, noise, latency, collisions) reads and writes the same
per-robot arrays; its separable parts (faults, lockstep, localization, scans, pedestrians) are
modules of their own.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from orca_nav.core.fleet.kinematics import (
    QUADROTOR,
    RobotLimits,
    admissible_twist,
    integrate_pose,
    limit_twist,
    limit_velocity_3d,
)
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.sim.faults import NO_ROBOT, TIME_TOL, Faults
from orca_nav.core.sim.pedestrians import Pedestrians
from orca_nav.core.sim.scan import box_overlap, check_boxes
from orca_nav.core.validation import finite_array, finite_at_least_zero, per_robot_values

ROBOT_ROBOT = 'robot_robot'
ROBOT_MAP = 'robot_map'
ROBOT_PERSON = 'robot_person'
ROBOT_OBSTACLE = 'robot_obstacle'
CONTACT_CATEGORIES = (ROBOT_ROBOT, ROBOT_OBSTACLE, ROBOT_PERSON)
REST_SPEED = 0.05       # m/s: a robot in contact at or below this speed was at rest
# m: height of the ground layer (ground robots are cylinders this tall; docs/orca3d.md)
GROUND_CLEARANCE = 1.0


@dataclass(frozen=True)
class CollisionEvent:
    """A contact that started at `time`: robots (i, j) for robot_robot, (i,) for robot_map,
    robot_obstacle and robot_person (then `person` is the pedestrian's index).

    `position` is the contact point: on the segment between the two centres for robot_robot
    (where the discs first touch), the robot's centre for robot_map; (x, y, z) when a drone is
    involved, else (x, y).
    """

    time: float
    kind: str
    robots: Tuple[int, ...]
    position: Tuple[float, ...]
    person: int = -1
    speeds: Tuple[float, ...] = ()      # each robot's true speed (m/s) when the contact started

    def moving(self, rest_speed: float = REST_SPEED) -> bool:
        """A robot of the contact moved faster than `rest_speed` (the safety layer's promise is
        that none does)."""
        return any(speed > rest_speed for speed in self.speeds)

    @property
    def category(self) -> str:
        """robot_robot, robot_person or robot_obstacle (the map and unmapped boxes alike)."""
        return ROBOT_OBSTACLE if self.kind == ROBOT_MAP else self.kind


class FleetSim:
    """N robots integrated together; see the module docstring for the model."""

    def __init__(self, limits: RobotLimits, radius, start_poses,
                 grid: Optional[OccupancyGrid] = None, noise_pos_std: float = 0.0,
                 noise_vel_std: float = 0.0, cmd_latency: float = 0.0,
                 seed: Optional[int] = None, cmd_timeout: float = 0.0,
                 faults: Faults = Faults(), pedestrians: Optional[Pedestrians] = None,
                 boxes=None, start_altitudes=None, ground_clearance: float = GROUND_CLEARANCE):
        n = len(limits)
        faults.check_robots(n)
        self.faults = faults
        # The jump's direction, drawn once from the faults' own seeded generator.
        angle = np.random.default_rng([faults.seed, 0]).uniform(0.0, 2.0 * np.pi)
        self._jump_offset = faults.jump_size * np.array([np.cos(angle), np.sin(angle)])
        self.limits = limits
        self.radius = per_robot_values('radius', radius, n)
        self._pose = finite_array('start_poses', start_poses, (n, 3)).copy()
        flying = self.flying
        self._altitude = np.zeros(n) if start_altitudes is None else \
            finite_array('start_altitudes', start_altitudes, (n,)).copy()
        grounded = np.flatnonzero(~flying & (self._altitude != 0.0))
        if grounded.size:
            i = int(grounded[0])
            raise ValueError(f'start_altitudes[{i}] must be 0 for a ground robot '
                             f'(kinematics {limits.model[i]}), got {self._altitude[i]}')
        self.ground_clearance = finite_at_least_zero('ground_clearance', ground_clearance)
        self._climb = np.zeros(n)              # vz executed during the last step (drones)
        self._climb_command = np.zeros(n)      # vz in effect (after latency)
        self.grid_3d: Optional[OccupancyGrid] = None
        self.noise_pos_std = finite_at_least_zero('noise_pos_std', noise_pos_std)
        self.noise_vel_std = finite_at_least_zero('noise_vel_std', noise_vel_std)
        self.cmd_latency = finite_at_least_zero('cmd_latency', cmd_latency)
        self.cmd_timeout = finite_at_least_zero('cmd_timeout', cmd_timeout)
        self._rng = np.random.default_rng(seed)
        self._twist = np.zeros((n, 3))         # executed during the last step
        self._command = np.zeros((n, 3))       # in effect (after latency)
        self._command_time = np.full(n, -np.inf)   # when each robot's command took effect
        self.commanded_since = np.full(n, np.inf)  # when each robot's first command took effect
        self._pending = deque()                # (due_time, robot indices, twists, vz), FIFO
        self.time = 0.0
        self.grid = grid
        self._robot_contacts: set = set()
        self._map_contacts = np.zeros(n, dtype=bool)
        self.pedestrians = pedestrians
        self._person_contacts: set = set()     # (robot, person)
        self.boxes = check_boxes(np.zeros((0, 4)) if boxes is None else boxes)
        self._box_contacts = np.zeros(n, dtype=bool)

    # ------------------------------------------------------------------ state
    def __len__(self) -> int:
        return len(self.limits)

    @property
    def flying(self) -> np.ndarray:
        """(N,) bool: the robot flies (a drone)."""
        return self.limits.model == QUADROTOR

    @property
    def poses(self) -> np.ndarray:
        """(N,3) true poses x, y, yaw (a copy)."""
        return self._pose.copy()

    @property
    def altitudes(self) -> np.ndarray:
        """(N,) true altitudes z (0 for ground robots; a copy)."""
        return self._altitude.copy()

    @property
    def climb_rates(self) -> np.ndarray:
        """(N,) vz executed during the last step (0 for ground robots; a copy)."""
        return self._climb.copy()

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
        """(N,) bool: the robot is in an ongoing contact with a robot, a person, a box or the
        map."""
        out = self._map_contacts | self._box_contacts
        for i, j in self._robot_contacts:
            out[i] = out[j] = True
        for i, _ in self._person_contacts:
            out[i] = True
        return out

    def speeds(self, robots) -> Tuple[float, ...]:
        """True speeds (m/s) of `robots` over the last step (a drone's climb included)."""
        return tuple(float(np.sqrt(self._twist[i, 0] ** 2 + self._twist[i, 1] ** 2
                                   + self._climb[i] ** 2)) for i in robots)

    @property
    def command_age(self) -> np.ndarray:
        """(N,) time since each robot's last command took effect; inf if it never got one."""
        return self.time - self._command_time

    def set_grid(self, grid: Optional[OccupancyGrid]) -> None:
        """Map for robot-map collisions (2-D); None disables them."""
        if grid is not None and grid.ndim != 2:
            raise ValueError(f'grid must be 2-D, got {grid.ndim}-D')
        self.grid = grid
        self._map_contacts[:] = False

    def set_grid_3d(self, grid: Optional[OccupancyGrid]) -> None:
        """3-D map for drone-map collisions (voxels); None disables them."""
        if grid is not None and grid.ndim != 3:
            raise ValueError(f'grid must be 3-D, got {grid.ndim}-D')
        self.grid_3d = grid
        self._map_contacts[self.flying] = False

    def odometry(self) -> Tuple[np.ndarray, np.ndarray]:
        """(poses (N,3), body twists (N,3)) as odometry reports them: position noise and the
        localization error added."""
        poses = self._pose.copy()
        if self.noise_pos_std > 0.0:
            poses[:, :2] += self._rng.normal(0.0, self.noise_pos_std, size=(len(self), 2))
        poses[:, :2] += self.localization_error()
        return poses, self._twist.copy()

    def localization_error(self, time: Optional[float] = None) -> np.ndarray:
        """(N, 2) error of the map-frame position each robot's localization reports at `time`
        (default: now): the injected jump while it lasts, else zero. Whatever reports a robot's
        map pose (odometry here, a map -> odom transform) adds this."""
        f = self.faults
        error = np.zeros((len(self), 2))
        if f.jump_robot == NO_ROBOT:
            return error
        t = (self.time if time is None else time) - self.commanded_since[f.jump_robot]
        if t >= f.jump_time - TIME_TOL and (
                f.jump_duration == 0.0 or t < f.jump_time + f.jump_duration - TIME_TOL):
            error[f.jump_robot] = self._jump_offset
        return error

    def _fault_started(self, robot: int, at: float) -> bool:
        return robot != NO_ROBOT and self.time - self.commanded_since[robot] >= at - TIME_TOL

    def _obeyed_commands(self) -> np.ndarray:
        """The commands the drives execute: a dead robot's is zero, a faulty robot's linear
        velocity scaled and rotated."""
        f = self.faults
        command = self._command
        if f.dead_robot == NO_ROBOT and f.faulty_robot == NO_ROBOT:
            return command
        command = command.copy()
        if self._fault_started(f.faulty_robot, f.faulty_time):
            c, s = np.cos(f.faulty_rotation), np.sin(f.faulty_rotation)
            vx, vy = command[f.faulty_robot, :2]
            command[f.faulty_robot, :2] = f.faulty_scale * np.array([c * vx - s * vy,
                                                                     s * vx + c * vy])
        if self._fault_started(f.dead_robot, f.dead_time):
            command[f.dead_robot] = 0.0
        return command

    def _obeyed_climb(self) -> np.ndarray:
        f = self.faults
        if self._fault_started(f.dead_robot, f.dead_time):
            climb = self._climb_command.copy()
            climb[f.dead_robot] = 0.0
            return climb
        return self._climb_command

    # ------------------------------------------------------------------ commands and steps
    def set_commands(self, twists, robots: Optional[Sequence[int]] = None,
                     climb_rates=None) -> None:
        """Command body twists (K,3) for `robots` (default all), and climb rates vz (K,) (default
        0; ground robots ignore them); effective after cmd_latency."""
        idx = np.arange(len(self)) if robots is None else np.asarray(robots, dtype=int).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= len(self)):
            raise ValueError(f'robots: index out of range 0..{len(self) - 1}: {idx.tolist()}')
        twists = finite_array('twists', twists, (idx.size, 3))
        climb = np.zeros(idx.size) if climb_rates is None else \
            finite_array('climb_rates', climb_rates, (idx.size,))
        self._pending.append((self.time + self.cmd_latency, idx, twists.copy(), climb.copy()))

    def step(self, dt: float, commands=None) -> List[CollisionEvent]:
        """Advance by dt (optionally commanding all robots first); returns new collision events."""
        finite_at_least_zero('dt', dt, positive=True)
        if commands is not None:
            self.set_commands(commands)
        while self._pending and self._pending[0][0] <= self.time + TIME_TOL:
            due, idx, twists, climb = self._pending.popleft()
            self._command[idx] = twists
            self._climb_command[idx] = climb
            self._command_time[idx] = due
            self.commanded_since[idx] = np.minimum(self.commanded_since[idx], due)
        if self.cmd_timeout > 0.0:
            expired = self.command_age > self.cmd_timeout + TIME_TOL
            self._command[expired] = 0.0
            self._climb_command[expired] = 0.0
        command = self._obeyed_commands()
        twist = limit_twist(command, self._twist, self.limits, dt)
        flying = self.flying
        climb = np.zeros(len(self))
        if flying.any():
            linear = limit_velocity_3d(
                np.column_stack([command[flying, :2], self._obeyed_climb()[flying]]),
                np.column_stack([self._twist[flying, :2], self._climb[flying]]),
                self.limits.max_speed[flying], self.limits.max_accel[flying], dt)
            twist[flying, :2] = linear[:, :2]
            climb[flying] = linear[:, 2]
        if self.noise_vel_std > 0.0:
            noise = self._rng.normal(0.0, self.noise_vel_std, size=(len(self), 2))
            twist[:, :2] += noise
            twist = admissible_twist(twist, self.limits)
        self._pose = integrate_pose(self._pose, twist, dt)
        self._altitude += climb * dt
        self._twist = twist
        self._climb = climb
        if self.pedestrians is not None:
            self.pedestrians.step(dt, self._pose[:, :2], self.radius)
        self.time += dt
        return self.check_collisions()

    def advance(self, duration: float, max_step: float) -> List[CollisionEvent]:
        """Advance by `duration` in equal steps of at most `max_step`; returns the new events."""
        finite_at_least_zero('duration', duration, positive=True)
        finite_at_least_zero('max_step', max_step, positive=True)
        count = max(1, int(np.ceil(duration / max_step - TIME_TOL)))
        events = []
        for _ in range(count):
            events += self.step(duration / count)
        return events

    # ------------------------------------------------------------------ collisions
    def check_collisions(self) -> List[CollisionEvent]:
        """Updates the ongoing contacts from the true poses; returns those that just started."""
        return (self._robot_robot_events() + self._robot_map_events() + self._person_events()
                + self._box_events())

    def _box_events(self) -> List[CollisionEvent]:
        if len(self.boxes) == 0:
            return []
        touching = box_overlap(self.boxes, self._pose[:, :2], self.radius)
        started = np.flatnonzero(touching & ~self._box_contacts)
        self._box_contacts = touching
        return [CollisionEvent(self.time, ROBOT_OBSTACLE, (int(i),),
                               (float(self._pose[i, 0]), float(self._pose[i, 1])),
                               speeds=self.speeds([i])) for i in started]

    @property
    def box_contacts(self) -> np.ndarray:
        """(N,) bool: the robot is in an ongoing contact with an unmapped box (a copy)."""
        return self._box_contacts.copy()

    @property
    def person_contacts(self) -> List[Tuple[int, int]]:
        """Ongoing robot-person contacts as (robot, person) pairs."""
        return sorted(self._person_contacts)

    def _person_events(self) -> List[CollisionEvent]:
        if self.pedestrians is None or not len(self.pedestrians):
            return []
        people = self.pedestrians.positions
        reach = float(self.radius.max()) + self.pedestrians.radius
        near = _kd_tree(self._pose[:, :2]).query_ball_point(people, reach)
        # A person is a cylinder of the pedestrians' height: a drone above it passes over.
        below = self._altitude - self.radius < self.pedestrians.params.height
        contacts = set()
        for person, robots in enumerate(near):
            for robot in robots:
                gap = np.hypot(*(self._pose[robot, :2] - people[person]))
                if gap < self.radius[robot] + self.pedestrians.radius and below[robot]:
                    contacts.add((int(robot), person))
        started = sorted(contacts - self._person_contacts)
        self._person_contacts = contacts
        events = []
        for robot, person in started:
            share = self.radius[robot] / (self.radius[robot] + self.pedestrians.radius)
            point = self._pose[robot, :2] + share * (people[person] - self._pose[robot, :2])
            events.append(CollisionEvent(self.time, ROBOT_PERSON, (robot,),
                                         (float(point[0]), float(point[1])), person,
                                         self.speeds([robot])))
        return events

    def _robot_robot_events(self) -> List[CollisionEvent]:
        pos = self._pose[:, :2]
        if len(self) < 2:
            return []
        pairs = _kd_tree(pos).query_pairs(2.0 * float(self.radius.max()), output_type='ndarray')
        flying = self.flying
        if pairs.size:
            i, j = pairs[:, 0], pairs[:, 1]
            reach = self.radius[i] + self.radius[j]
            touching = np.linalg.norm(pos[i] - pos[j], axis=1) < reach
            if flying.any():
                z = self._altitude
                both = flying[i] & flying[j]
                spheres = np.sqrt(np.sum((pos[i] - pos[j]) ** 2, axis=1)
                                  + (z[i] - z[j]) ** 2) < reach
                # A drone meets a ground robot (a cylinder ground_clearance tall) only low.
                drone = np.where(flying[i], i, j)
                low = z[drone] - self.radius[drone] < self.ground_clearance
                touching = np.where(both, spheres,
                                    np.where(flying[i] | flying[j], touching & low, touching))
            pairs = pairs[touching]
        contacts = {(int(a), int(b)) for a, b in pairs}
        started = sorted(contacts - self._robot_contacts)
        self._robot_contacts = contacts
        events = []
        for a, b in started:
            share = self.radius[a] / (self.radius[a] + self.radius[b])
            centres = self._positions([a, b])
            point = centres[0] + share * (centres[1] - centres[0])
            events.append(CollisionEvent(self.time, ROBOT_ROBOT, (a, b),
                                         tuple(float(v) for v in point),
                                         speeds=self.speeds([a, b])))
        return events

    def _positions(self, robots: Sequence[int]) -> np.ndarray:
        """(K, 3) x, y, z of `robots` if any of them flies, else (K, 2)."""
        rows = np.asarray(robots)
        if self.flying[rows].any():
            return np.column_stack([self._pose[rows, :2], self._altitude[rows]])
        return self._pose[rows, :2]

    def _robot_map_events(self) -> List[CollisionEvent]:
        flying = self.flying
        touching = np.zeros(len(self), dtype=bool)
        if self.grid is not None and (~flying).any():
            touching[~flying] = map_overlap(self.grid, self._pose[~flying, :2],
                                            self.radius[~flying])
        if self.grid_3d is not None and flying.any():
            centres = np.column_stack([self._pose[flying, :2], self._altitude[flying]])
            touching[flying] = map_overlap(self.grid_3d, centres, self.radius[flying])
        started = np.flatnonzero(touching & ~self._map_contacts)
        self._map_contacts = touching
        return [CollisionEvent(self.time, ROBOT_MAP, (int(i),),
                               tuple(float(v) for v in self._positions([i])[0]),
                               speeds=self.speeds([i])) for i in started]


def _kd_tree(points: np.ndarray):
    # scipy.spatial is imported on first use: it takes longer to load than all of a fleet
    # file's checks, which use this module's map_overlap and GROUND_CLEARANCE.
    from scipy.spatial import cKDTree
    return cKDTree(points)


def map_overlap(grid: OccupancyGrid, positions: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """(N,) bool: the disc (2-D grid) or ball (3-D grid) of `radius` at each position (N, ndim)
    overlaps an occupied cell or the outside.

    The cell-centre clearance screens out robots far from everything; the rest test the exact
    distance from the centre to every cell square (voxel cube) in a window around it.
    """
    if len(positions) == 0:
        return np.zeros(0, dtype=bool)
    res = grid.resolution
    near = grid.clearance_near(positions, float(radius.max()) + 1.5 * res) < radius + 1.5 * res
    out = np.zeros(len(positions), dtype=bool)
    if not near.any():
        return out
    pos = positions[near]
    rad = radius[near]
    half = int(np.ceil(rad.max() / res)) + 1
    offsets = np.arange(-half, half + 1)
    window = np.stack([axis.ravel() for axis in np.meshgrid(*[offsets] * grid.ndim)], axis=1)
    centre = grid.world_to_cell(pos)                                     # (K, ndim) ix, iy[, iz]
    cells = centre[:, None, :] + window[None]                            # (K, W, ndim)
    flat = cells.reshape(-1, grid.ndim)
    inside = np.all((flat >= 0) & (flat < grid.size_cells), axis=1)
    blocked = np.ones(flat.shape[0], dtype=bool)                         # outside the map
    blocked[inside] = grid.occupied[tuple(flat[inside, ::-1].T)]
    lower = grid.origin + flat * res                                     # cell corner
    p = np.repeat(pos, cells.shape[1], axis=0)
    gap = np.maximum(np.maximum(lower - p, p - (lower + res)), 0.0)
    dist = np.where(blocked, np.linalg.norm(gap, axis=1), np.inf).reshape(cells.shape[:2])
    out[near] = dist.min(axis=1) < rad
    return out
