"""What the fleet controller knows of each robot's measured state: pose, velocity, altitude and
climb (drones), the stamp it was measured at, its position covariance and localization jumps.

A robot's state counts at its stamp; `live` says which states are within the odometry timeout
of a time passed in, `projected` moves live positions on to it (latency). Uncertainty becomes
room the others keep (`margins`): the covariance's margin (`state_estimate`) and, for
JUMP_MARGIN_HOLD_S after a localization jump, the size of the jump.
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from orca_nav.core.fleet.state_estimate import (
    covariance_problem,
    project_positions,
    uncertainty_margins,
)

# A state more than this far from where the previous one's velocity leads is a localization
# jump (odometry noise and one cycle's acceleration stay far below it).
LOCALIZATION_JUMP_M = 0.25
JUMP_MARGIN_HOLD_S = 3.0     # s the extra ORCA radius of a jump lasts
_ZERO_COVARIANCE = np.zeros((2, 2))       # a state without one: no uncertainty margin


class FleetState:
    """Rows over all robots of the fleet; NaN positions before a robot's first state."""

    def __init__(self, count: int):
        self.position = np.full((count, 2), np.nan)
        self.velocity = np.zeros((count, 2))
        self.yaw = np.zeros(count)
        self.stamp = np.full(count, -np.inf)
        self.altitude = np.zeros(count)             # drones: z and vz of the last state
        self.climb = np.zeros(count)
        self.covariance = np.zeros((count, 2, 2))   # xy position covariance of the last state
        self.covariance_unusable = np.zeros(count, dtype=bool)   # ... was refused
        self.fresh = np.zeros(count, dtype=bool)    # new state since the last cycle
        self.jump_margin = np.zeros(count)          # m of the last localization jump
        self.jump_until = np.full(count, -np.inf)   # ... held until then
        self.input_problem: Dict[int, str] = {}     # why a robot's last state was refused

    def __len__(self) -> int:
        return len(self.stamp)

    @property
    def known(self) -> np.ndarray:
        """(N,) bool: robots with a state."""
        return np.isfinite(self.position[:, 0])

    def live(self, now: float, timeout: float) -> np.ndarray:
        """(N,) bool: robots whose state is within `timeout` of `now`."""
        return now - self.stamp <= timeout

    def age(self, now: float) -> np.ndarray:
        """(N,) s since each robot's state was measured (inf before the first)."""
        return now - self.stamp

    def projected(self, now: float, live: np.ndarray, max_extrapolation: float) -> np.ndarray:
        """(N, 2) positions at `now`: live states moved on by their velocity (by at most
        `max_extrapolation` s), stale ones where they were seen."""
        return np.where(live[:, None], project_positions(
            self.position, self.velocity, self.stamp, now, max_extrapolation), self.position)

    def margins(self, rows: np.ndarray, now: float, gain: float, max_margin: float) -> np.ndarray:
        """(K,) m of room the others keep from robots `rows`: the covariance's margin (the
        largest where it was refused) plus a recent localization jump."""
        covariance = np.where(self.covariance_unusable[rows], max_margin,
                              uncertainty_margins(self.covariance[rows], gain, max_margin))
        return covariance + self.jump_margins(rows, now)

    def jump_margins(self, rows: np.ndarray, now: float) -> np.ndarray:
        return np.where(now < self.jump_until[rows], self.jump_margin[rows], 0.0)

    def newest_fresh_stamp(self) -> float:
        return float(self.stamp[self.fresh].max(initial=-np.inf))

    def set_state(self, i: int, stamp: float, position, velocity, yaw: float,
                  covariance=None) -> Optional[str]:
        """Robot i's state; see `FleetController.set_state`. Returns why the covariance was
        refused, else None."""
        if stamp < self.stamp[i]:
            return None
        covariance = _ZERO_COVARIANCE if covariance is None else np.asarray(covariance, dtype=float)
        problem = covariance_problem(covariance)
        if len(position) > 2:       # a 2-D state keeps the altitude and climb held
            position = (position[0], position[1], position[2])
            velocity = (velocity[0], velocity[1], velocity[2] if len(velocity) > 2 else 0.0)
        else:
            position = (position[0], position[1], self.altitude[i])
            velocity = (velocity[0], velocity[1], self.climb[i])
        self.set_states([i], [stamp], [position], [velocity], [yaw],
                        [covariance if problem is None else _ZERO_COVARIANCE])
        self.covariance_unusable[i] = problem is not None
        return problem

    def set_states(self, rows, stamps, positions, velocities, yaws, covariances) -> None:
        """set_state for many robots at once; see `FleetController.set_states`."""
        rows = np.asarray(rows, dtype=int)
        last = len(rows) - 1 - np.unique(rows[::-1], return_index=True)[1]
        rows, stamps = rows[last], np.asarray(stamps, dtype=float)[last]
        newer = stamps >= self.stamp[rows]     # older than the state held: late, ignored
        take = last[newer]
        rows, stamps = rows[newer], stamps[newer]
        positions = np.asarray(positions, dtype=float).reshape(-1, 3)[take]
        velocities = np.asarray(velocities, dtype=float).reshape(-1, 3)[take]
        known = np.isfinite(self.position[rows, 0])    # (a first state cannot jump)
        was = rows[known]
        expected = self.position[was] + self.velocity[was] * (stamps[known]
                                                              - self.stamp[was])[:, None]
        jump = np.zeros(len(rows))
        jump[known] = np.hypot(*(positions[known, :2] - expected).T)
        jumped = jump > LOCALIZATION_JUMP_M
        if jumped.any():
            held, when = rows[jumped], stamps[jumped]
            self.jump_margin[held] = np.maximum(
                jump[jumped], np.where(when < self.jump_until[held], self.jump_margin[held], 0.0))
            self.jump_until[held] = when + JUMP_MARGIN_HOLD_S
        for i in rows.tolist() if self.input_problem else ():
            self.input_problem.pop(i, None)
        self.covariance_unusable[rows] = False
        self.position[rows] = positions[:, :2]
        self.velocity[rows] = velocities[:, :2]
        self.altitude[rows] = positions[:, 2]
        self.climb[rows] = velocities[:, 2]
        self.yaw[rows] = np.asarray(yaws, dtype=float)[take]
        self.stamp[rows] = stamps
        self.covariance[rows] = np.asarray(covariances, dtype=float).reshape(-1, 2, 2)[take]
        self.fresh[rows] = True
