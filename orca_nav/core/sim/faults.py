"""Injected faults (all off by default; seeded by their own generator, so turning one on
does not change the noise sequence; times are `FleetSim.time`):
  - a dead robot stops obeying cmd_vel from a given time (its drive is commanded to stop);
  - a faulty robot executes a wrong velocity: its commanded linear velocity scaled and rotated;
  - a localization jump: from a given time (for a given duration, or for good) one robot's
    reported position is off by a given distance in a seeded direction
    (`FleetSim.localization_error`, also for whatever else reports the robot's pose);
  - odometry loss, delay and jitter: `OdometryLink`, between the simulator and its publisher.
A robot's fault times count from its first command (`FleetSim.commanded_since`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

import numpy as np

from orca_nav.core.validation import finite_at_least_zero

TIME_TOL = 1e-9     # absorbs the rounding of summed step sizes when comparing times

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
            finite_at_least_zero(name, getattr(self, name))
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
        due = sorted((m for m in self._queue if m[0] <= now + TIME_TOL), key=lambda m: m[0])
        if due:
            self._queue = [m for m in self._queue if m[0] > now + TIME_TOL]
        return [(robot, stamp, row) for _, robot, stamp, row in due]
