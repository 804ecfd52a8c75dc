"""orca_node's trajectory seam, backed by `core.tracking.FleetTracker`.

orca_node hands every `/<robot>/trajectory` message to `set_trajectory` and asks, each control
cycle, for the preferred velocities of the robots it runs ORCA for (`preferred_velocities`), then
for the body twists that execute ORCA's velocities (`body_twists`): tracked car and diff-drive
robots drive reversing segments backward and diff-drive robots turn in place
(`core.tracking.tracking_twist`); the others get the plain kinematic mapping.

A robot is *tracked* from its first trajectory message on: an empty trajectory (the planner
failed, or was told to stop) makes it hold still rather than fall back to heading straight for
its goal. With `trajectories_only`, robots hold still until their first trajectory arrives too
(a planner owns every goal).

Times: trajectory stamps are ROS time; the control cycle runs on the monotonic clock (`clock`).
Each trajectory's start is converted when it arrives, with the ROS time orca_node passes in.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Dict, List, Optional

import numpy as np
from trajectory_msgs.msg import MultiDOFJointTrajectory

from orca_nav.core.fleet.kinematics import RobotLimits
from orca_nav.core.fleet.tracking import FleetTracker, TrackingCommand, TrackingParams, tracking_twist
from orca_nav.ros.trajectory_msgs import msg_to_reference


class TrackingSeam:
    """Per-robot trajectories -> preferred velocities and twists (see the module docstring)."""

    def __init__(self, robots: List[str], kinematics: List[str],
                 params: Optional[TrackingParams] = None, trajectories_only: bool = False,
                 clock: Callable[[], float] = time.monotonic):
        self.robots = list(robots)
        self.kinematics = list(kinematics)
        n = len(self.robots)
        self.tracker = FleetTracker([k in ('diff_drive', 'car') for k in self.kinematics],
                                    dim=2, params=params,
                                    steered=[k == 'car' for k in self.kinematics])
        self._clock = clock
        self._lock = threading.Lock()
        self._tracked = np.full(n, bool(trajectories_only))
        self._position = np.zeros((n, 2))
        self._yaw = np.zeros(n)
        self._max_speed = np.ones(n)
        self._max_yaw_rate = np.ones(n)
        self._command: Optional[TrackingCommand] = None
        self.errors: Dict[str, str] = {}       # robot -> why its last trajectory was refused

    def set_trajectory(self, index: int, msg: MultiDOFJointTrajectory, now_s: float) -> None:
        """Track `msg` (ROS time `now_s` = now); an empty or malformed one holds the robot still."""
        robot = self.robots[index]
        try:
            reference, start_s, _frame = msg_to_reference(msg)
            self.errors.pop(robot, None)
        except ValueError as err:
            reference, start_s = None, now_s
            self.errors[robot] = str(err)
        with self._lock:
            self._tracked[index] = True
            self.tracker.set_reference(index, reference, start_s - now_s + self._clock())

    def preferred_velocities(self, now_s: float, positions: np.ndarray, yaws: np.ndarray,
                             limits: RobotLimits, rows: Optional[np.ndarray] = None):
        """(pref (len(rows), 2), tracked (len(rows),) bool) for robots `rows` (default: all) at
        monotonic time `now_s`."""
        rows = np.arange(len(self.robots)) if rows is None else np.asarray(rows)
        with self._lock:
            self._position[rows] = positions
            self._yaw[rows] = yaws
            self._max_speed[rows] = limits.max_speed
            self._max_yaw_rate[rows] = limits.max_yaw_rate
            command = self.tracker.update(now_s, self._position, self._yaw, self._max_speed,
                                          self._max_yaw_rate)
            self._command = command
            return command.pref_velocity[rows], self._tracked[rows].copy()

    def body_twists(self, velocities: np.ndarray, yaws: np.ndarray, limits: RobotLimits,
                    rows: Optional[np.ndarray] = None) -> np.ndarray:
        """Body twists (len(rows), 3) executing ORCA's `velocities` for robots `rows`."""
        rows = np.arange(len(self.robots)) if rows is None else np.asarray(rows)
        with self._lock:
            full = self._command
        if full is None:
            n = len(rows)
            command = TrackingCommand(np.zeros((n, 2)), np.ones(n, dtype=int), np.zeros(n),
                                      np.zeros((n, 2)), np.zeros(n, bool), np.zeros(n, bool))
        else:
            command = TrackingCommand(*(getattr(full, f)[rows] for f in (
                'pref_velocity', 'direction', 'yaw_rate', 'reference_position', 'active',
                'reached')))
        return tracking_twist(velocities, yaws, limits, command)

    def reached(self) -> np.ndarray:
        """(N,) bool: robots at the end of their trajectory (last cycle)."""
        with self._lock:
            if self._command is None:
                return np.zeros(len(self.robots), dtype=bool)
            return self._command.reached.copy()
