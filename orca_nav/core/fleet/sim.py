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
    or stop short of the robots), a robot's centre closer than r + the person's radius;
  - robot-obstacle: the robot's disc overlaps an unmapped box (`boxes`, `sim_scan`).
  An event is returned once when a contact starts; the contact must end before the same pair
  (or robot and map) is reported again.

Injected faults (`Faults`, all off by default; seeded by their own generator, so turning one on
does not change the noise sequence; times are `FleetSim.time`):
  - a dead robot stops obeying cmd_vel from a given time (its drive is commanded to stop);
  - a faulty robot executes a wrong velocity: its commanded linear velocity scaled and rotated;
  - a localization jump: from a given time (for a given duration, or for good) one robot's
    reported position is off by a given distance in a seeded direction
    (`FleetSim.localization_error`, also for whatever else reports the robot's pose);
  - odometry loss, delay and jitter: `OdometryLink`, between the simulator and its publisher.
A robot's fault times count from its first command (`FleetSim.commanded_since`).

Time is the simulation's own (`FleetSim.time`, advanced by `step`). Two helpers decide, from times
passed in, what a simulator driver does around the steps: `PeriodicSchedule` (when odometry and
diagnostics are due) and `Lockstep` (when the next exchange of odometry and commands may start).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np
from scipy.spatial import cKDTree

from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.fleet.kinematics import (QUADROTOR, RobotLimits, admissible_twist,
                                            finite_array, integrate_pose, limit_twist,
                                            limit_velocity_3d)
from orca_nav.core.fleet.pedestrians import Pedestrians
from orca_nav.core.fleet.sim_scan import box_overlap, check_boxes

ROBOT_ROBOT = 'robot_robot'
ROBOT_MAP = 'robot_map'
ROBOT_PERSON = 'robot_person'
ROBOT_OBSTACLE = 'robot_obstacle'
_TIME_TOL = 1e-9    # absorbs the rounding of summed step sizes when comparing times
# m: height of the ground layer (ground robots are cylinders this tall; docs/orca3d.md)
GROUND_CLEARANCE = 1.0


def _finite_at_least_zero(name: str, value: float, positive: bool = False) -> float:
    """`value` as a float; ValueError naming it unless finite and >= 0 (> 0 when `positive`)."""
    if not (np.isfinite(value) and (value > 0.0 if positive else value >= 0.0)):
        raise ValueError(f"{name} must be finite and {'>' if positive else '>='} 0, got {value}")
    return float(value)


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


NO_ROBOT = -1


@dataclass(frozen=True)
class Faults:
    """Faults to inject (see the module docstring); robots by index (NO_ROBOT: none), angles in
    radians, times in seconds since the faulty robot's first command took effect (its mission
    start, however long the fleet took to come up)."""

    odom_drop_rate: float = 0.0     # probability that one odometry message is lost
    odom_delay: float = 0.0         # s added to every odometry message's delivery
    odom_jitter: float = 0.0        # s: a further uniform 0..jitter delay per message
    dead_robot: int = NO_ROBOT
    dead_time: float = 0.0
    faulty_robot: int = NO_ROBOT
    faulty_time: float = 0.0
    faulty_scale: float = 1.0       # executed linear speed / commanded
    faulty_rotation: float = 0.0    # executed linear velocity turned by this (counter-clockwise)
    jump_robot: int = NO_ROBOT
    jump_time: float = 0.0
    jump_size: float = 0.0          # m
    jump_duration: float = 0.0      # s; 0: the error stays
    seed: int = 0

    def __post_init__(self):
        for name in ('odom_delay', 'odom_jitter', 'dead_time', 'faulty_time', 'faulty_scale',
                     'jump_time', 'jump_size', 'jump_duration'):
            _finite_at_least_zero(name, getattr(self, name))
        if not 0.0 <= self.odom_drop_rate <= 1.0:
            raise ValueError(f'odom_drop_rate must be in [0, 1], got {self.odom_drop_rate}')
        if not np.isfinite(self.faulty_rotation):
            raise ValueError(f'faulty_rotation must be finite, got {self.faulty_rotation}')

    @property
    def odometry_faulty(self) -> bool:
        """Odometry messages are lost or late (an `OdometryLink` is needed)."""
        return self.odom_drop_rate > 0.0 or self.odom_delay > 0.0 or self.odom_jitter > 0.0

    def check_robots(self, count: int) -> None:
        for name in ('dead_robot', 'faulty_robot', 'jump_robot'):
            index = getattr(self, name)
            if index != NO_ROBOT and not 0 <= index < count:
                raise ValueError(f'{name}: robot index {index} is not in 0..{count - 1}')


class OdometryLink:
    """Odometry between the simulator and its publisher under `Faults`: each robot's message is
    lost with `odom_drop_rate`, else delivered `odom_delay` plus a uniform 0..`odom_jitter`
    later (messages may then overtake each other, as on a real network). Seeded."""

    def __init__(self, faults: Faults, seed_stream: int = 1):
        self.faults = faults
        self._rng = np.random.default_rng([faults.seed, seed_stream])
        self._queue: List[Tuple[float, int, float, np.ndarray]] = []   # (due, robot, stamp, row)
        self.sent = 0
        self.dropped = 0

    def send(self, now: float, rows: np.ndarray) -> None:
        """One message per robot (row i of `rows`: whatever the message carries) stamped `now`."""
        f = self.faults
        count = len(rows)
        self.sent += count
        lost = self._rng.random(count) < f.odom_drop_rate
        self.dropped += int(lost.sum())
        late = f.odom_delay + f.odom_jitter * self._rng.random(count)
        for robot in np.flatnonzero(~lost):
            self._queue.append((now + float(late[robot]), int(robot), now, rows[robot].copy()))

    def deliver(self, now: float) -> List[Tuple[int, float, np.ndarray]]:
        """(robot, stamp, row) of the messages due by `now`, in order of delivery."""
        due = sorted((m for m in self._queue if m[0] <= now + _TIME_TOL), key=lambda m: m[0])
        if due:
            self._queue = [m for m in self._queue if m[0] > now + _TIME_TOL]
        return [(robot, stamp, row) for _, robot, stamp, row in due]


class FleetSim:
    """N robots integrated together; see the module docstring for the model."""

    def __init__(self, limits: RobotLimits, radius, start_poses, grid: Optional[OccupancyGrid] = None,
                 noise_pos_std: float = 0.0, noise_vel_std: float = 0.0, cmd_latency: float = 0.0,
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
        self.radius = np.broadcast_to(np.asarray(radius, dtype=float), (n,)).copy()
        bad = np.flatnonzero(~np.isfinite(self.radius) | (self.radius <= 0.0))
        if bad.size:
            raise ValueError(f'radius[{int(bad[0])}] must be finite and > 0, '
                             f'got {self.radius[bad[0]]}')
        self._pose = finite_array('start_poses', start_poses, (n, 3)).copy()
        flying = limits.model == QUADROTOR
        self._altitude = np.zeros(n) if start_altitudes is None else \
            finite_array('start_altitudes', start_altitudes, (n,)).copy()
        grounded = np.flatnonzero(~flying & (self._altitude != 0.0))
        if grounded.size:
            i = int(grounded[0])
            raise ValueError(f'start_altitudes[{i}] must be 0 for a ground robot '
                             f'(kinematics {limits.model[i]}), got {self._altitude[i]}')
        self.ground_clearance = _finite_at_least_zero('ground_clearance', ground_clearance)
        self._climb = np.zeros(n)              # vz executed during the last step (drones)
        self._climb_command = np.zeros(n)      # vz in effect (after latency)
        self.grid_3d: Optional[OccupancyGrid] = None
        self.noise_pos_std = _finite_at_least_zero('noise_pos_std', noise_pos_std)
        self.noise_vel_std = _finite_at_least_zero('noise_vel_std', noise_vel_std)
        self.cmd_latency = _finite_at_least_zero('cmd_latency', cmd_latency)
        self.cmd_timeout = _finite_at_least_zero('cmd_timeout', cmd_timeout)
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
        """(N,) bool: the robot is in an ongoing contact with a robot, a person, a box or the map."""
        out = self._map_contacts | self._box_contacts
        for i, j in self._robot_contacts:
            out[i] = out[j] = True
        for i, _ in self._person_contacts:
            out[i] = True
        return out

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
        self._map_contacts[self.limits.model == QUADROTOR] = False

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
        if t >= f.jump_time - _TIME_TOL and (
                f.jump_duration == 0.0 or t < f.jump_time + f.jump_duration - _TIME_TOL):
            error[f.jump_robot] = self._jump_offset
        return error

    def _fault_started(self, robot: int, at: float) -> bool:
        return robot != NO_ROBOT and self.time - self.commanded_since[robot] >= at - _TIME_TOL

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
        _finite_at_least_zero('dt', dt, positive=True)
        if commands is not None:
            self.set_commands(commands)
        while self._pending and self._pending[0][0] <= self.time + _TIME_TOL:
            due, idx, twists, climb = self._pending.popleft()
            self._command[idx] = twists
            self._climb_command[idx] = climb
            self._command_time[idx] = due
            self.commanded_since[idx] = np.minimum(self.commanded_since[idx], due)
        if self.cmd_timeout > 0.0:
            expired = self.command_age > self.cmd_timeout + _TIME_TOL
            self._command[expired] = 0.0
            self._climb_command[expired] = 0.0
        command = self._obeyed_commands()
        twist = limit_twist(command, self._twist, self.limits, dt)
        flying = self.limits.model == QUADROTOR
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
        _finite_at_least_zero('duration', duration, positive=True)
        _finite_at_least_zero('max_step', max_step, positive=True)
        count = max(1, int(np.ceil(duration / max_step - _TIME_TOL)))
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
                               (float(self._pose[i, 0]), float(self._pose[i, 1]))) for i in started]

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
        near = cKDTree(self._pose[:, :2]).query_ball_point(people, reach)
        contacts = set()
        for person, robots in enumerate(near):
            for robot in robots:
                gap = np.hypot(*(self._pose[robot, :2] - people[person]))
                if gap < self.radius[robot] + self.pedestrians.radius:
                    contacts.add((int(robot), person))
        started = sorted(contacts - self._person_contacts)
        self._person_contacts = contacts
        events = []
        for robot, person in started:
            share = self.radius[robot] / (self.radius[robot] + self.pedestrians.radius)
            point = self._pose[robot, :2] + share * (people[person] - self._pose[robot, :2])
            events.append(CollisionEvent(self.time, ROBOT_PERSON, (robot,),
                                         (float(point[0]), float(point[1])), person))
        return events

    def _robot_robot_events(self) -> List[CollisionEvent]:
        pos = self._pose[:, :2]
        if len(self) < 2:
            return []
        pairs = cKDTree(pos).query_pairs(2.0 * float(self.radius.max()), output_type='ndarray')
        flying = self.limits.model == QUADROTOR
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
                                         tuple(float(v) for v in point)))
        return events

    def _positions(self, robots: Sequence[int]) -> np.ndarray:
        """(K, 3) x, y, z of `robots` if any of them flies, else (K, 2)."""
        rows = np.asarray(robots)
        if (self.limits.model[rows] == QUADROTOR).any():
            return np.column_stack([self._pose[rows, :2], self._altitude[rows]])
        return self._pose[rows, :2]

    def _robot_map_events(self) -> List[CollisionEvent]:
        flying = self.limits.model == QUADROTOR
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
                               tuple(float(v) for v in self._positions([i])[0]))
                for i in started]


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


class PeriodicSchedule:
    """When an output sent every `period` (odometry, diagnostics) is due on a stepped time line.

    The first call is due; later calls are due once `now` reaches the next due time within
    `tolerance` (half an integration step, so an output at the step rate goes out at every step
    despite rounding). Due times advance by `period`; periods missed by a stall are dropped, not
    caught up in a burst.
    """

    def __init__(self, period: float, tolerance: float = 0.0):
        self.period = _finite_at_least_zero('period', period, positive=True)
        self.tolerance = _finite_at_least_zero('tolerance', tolerance)
        self._next: Optional[float] = None

    def due(self, now: float) -> bool:
        if self._next is not None and now < self._next - self.tolerance:
            return False
        self._next = now if self._next is None else self._next + self.period
        if now >= self._next - self.tolerance:
            self._next = now + self.period
        return True


class Lockstep:
    """The bookkeeping of a simulator that advances in lockstep with its robots' controllers.

    An exchange opens when the simulator publishes odometry for the current time (`open`); each
    robot answers it with a command (`answer`: any command received after the opening counts, once
    per robot); the simulator may advance one period (`ready`) when every robot answered or the
    exchange timed out, and not sooner than `pace_period` after the opening (real-time pacing; 0:
    as fast as the answers come). The first exchange waits up to `start_timeout` counted from
    construction, so controllers can start and discover the topics; the later ones `timeout` from
    their opening (or, if the first opened only when the start-up wait ran out, that one too).
    The first exchange waits for every robot; later ones only for the robots that have answered
    at least once (a robot nobody commands must not hold the fleet up every exchange), and a
    robot joins as soon as its first answer comes.

    The first exchange's odometry goes out again every `resend_period` to the robots that have
    not answered (`resend_due`): DDS can count a subscription as matched before the subscriber
    has matched the publisher, and a controller that started a moment before would lose it and
    hold the run up for the rest of `start_timeout`. Later exchanges end at `timeout` anyway.

    Times are seconds of the caller's wall clock (a steady one), passed in: they bound waits and
    pace the run, they never enter the simulation.
    """

    def __init__(self, n_robots: int, now: float, timeout: float, start_timeout: float,
                 pace_period: float = 0.0, resend_period: float = 0.5):
        if n_robots < 1:
            raise ValueError(f'n_robots must be >= 1, got {n_robots}')
        self.timeout = _finite_at_least_zero('timeout', timeout, positive=True)
        self.start_timeout = _finite_at_least_zero('start_timeout', start_timeout)
        self.pace_period = _finite_at_least_zero('pace_period', pace_period)
        self.resend_period = _finite_at_least_zero('resend_period', resend_period, positive=True)
        self.exchange = 0                   # exchanges opened; 0 while starting up
        self._answered = np.zeros(n_robots, dtype=bool)
        self._controlled = np.zeros(n_robots, dtype=bool)    # answered at least once
        self._started = float(now)
        self._opened = float(now)
        self._resent = float(now)

    def open(self, now: float) -> None:
        """Odometry for a new exchange went out at `now`: answers count from here."""
        self.exchange += 1
        self._answered[:] = False
        self._opened = self._resent = float(now)

    def resend_due(self, now: float) -> List[int]:
        """Robots whose odometry of the first exchange goes out again at `now` (every
        `resend_period` while it waits for them); none in later exchanges."""
        if self.exchange != 1 or now < self._resent + self.resend_period:
            return []
        self._resent = float(now)
        return self.missing

    def answer(self, robot: int) -> None:
        """`robot`'s command arrived (ignored before the first exchange opens)."""
        if self.exchange:
            self._answered[robot] = True
            self._controlled[robot] = True

    def _awaited(self) -> np.ndarray:
        return np.ones_like(self._answered) if self.exchange <= 1 else self._controlled

    @property
    def answered_all(self) -> bool:
        return bool(self.exchange and self._answered[self._awaited()].all())

    @property
    def missing(self) -> List[int]:
        """Robots the open exchange still waits for."""
        return np.flatnonzero(self._awaited() & ~self._answered).tolist()

    @property
    def deadline(self) -> float:
        """When the open exchange (or the start-up wait, before the first) times out."""
        start_deadline = self._started + self.start_timeout
        if self.exchange == 0:
            return start_deadline
        if self.exchange == 1:
            return max(start_deadline, self._opened + self.timeout)
        return self._opened + self.timeout

    def timed_out(self, now: float) -> bool:
        return now >= self.deadline

    def paced(self, now: float) -> bool:
        return now >= self._opened + self.pace_period

    def ready(self, now: float) -> bool:
        """The simulator may advance: an exchange is open, every robot answered it or it timed
        out, and the pacing allows it."""
        return bool(self.exchange) and self.paced(now) and (self.answered_all
                                                            or self.timed_out(now))
