"""What a real robot stack reports instead of the simulator's map poses (REP-105): wheel
odometry in an `odom` frame that drifts, and a localization that estimates `map -> odom`.

* Each robot's `odom` frame starts at its start pose (odometry starts at zero there).
* Odometry drifts as a random walk in the distance travelled: after d metres the error of the
  odom frame has a standard deviation of `odom_drift * sqrt(d)` per axis (m) and in heading (rad),
  the heading error turning the odom frame about the robot (so it does not move the robot's
  pose at once, as a wheel-slip heading error does not).
* The localization (AMCL, SLAM) makes a new estimate of `map -> odom` every
  1/`localization_rate`: it puts the robot off its true map pose by Gaussian noise of
  `localization_jump` (m per axis, and rad, the heading error turning about the robot), so the
  robot's pose in map jumps a little at each new estimate.
* As AMCL does, the newest estimate goes out with every scan (here: every odometry update),
  stamped `transform_tolerance` after it (AMCL: the scan's stamp plus its transform_tolerance),
  so a consumer can put odometry up to that much newer than the last transform it received in
  map by interpolating, and a transform that arrives late (a loaded machine) still covers the
  odometry that came before it. The price, as with AMCL: a lookup at time t uses the estimate
  sent at t - transform_tolerance. At start the exact `map -> odom` goes out at `now` too.

Poses are (x, y, yaw) rows; a frame transform T (x, y, yaw) maps a pose p of its child frame to
T * p in its parent. Seeded; no clock read: times come in.
"""
from __future__ import annotations

from typing import List, Tuple

import numpy as np

from orca_nav.core.geometry import wrap_angle
from orca_nav.core.validation import finite_at_least_zero


def compose_planar(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a * b for planar transforms / poses (..., 3)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    c, s = np.cos(a[..., 2]), np.sin(a[..., 2])
    return np.stack([a[..., 0] + c * b[..., 0] - s * b[..., 1],
                     a[..., 1] + s * b[..., 0] + c * b[..., 1],
                     wrap_angle(a[..., 2] + b[..., 2])], axis=-1)


def invert_planar(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, float)
    c, s = np.cos(a[..., 2]), np.sin(a[..., 2])
    return np.stack([-c * a[..., 0] - s * a[..., 1], s * a[..., 0] - c * a[..., 1],
                     wrap_angle(-a[..., 2])], axis=-1)


class SimLocalization:
    """Odometry drift and localization corrections for N simulated robots (see module doc)."""

    def __init__(self, start_poses, odom_drift: float = 0.0, localization_rate: float = 1.0,
                 localization_jump: float = 0.0, transform_tolerance: float = 0.0, seed: int = 0):
        starts = np.asarray(start_poses, float).reshape(-1, 3)
        self.odom_drift = finite_at_least_zero('odom_drift', odom_drift)
        self.localization_jump = finite_at_least_zero('localization_jump', localization_jump)
        self.transform_tolerance = finite_at_least_zero('transform_tolerance', transform_tolerance)
        self.period = 1.0 / finite_at_least_zero('localization_rate', localization_rate,
                                                 positive=True)
        self.map_to_odom = starts.copy()          # the true map -> odom of every robot
        self.estimate = starts.copy()             # the localization's newest map -> odom
        self._last_positions = starts[:, :2].copy()
        self._rng = np.random.default_rng([int(seed), 105])    # apart from the sim's stream
        self._next_correction = None

    def __len__(self) -> int:
        return len(self.map_to_odom)

    def update(self, true_poses) -> None:
        """Accumulates the odometry drift of the motion since the last update."""
        poses = np.asarray(true_poses, float)
        travelled = np.hypot(*(poses[:, :2] - self._last_positions).T)
        self._last_positions = poses[:, :2].copy()
        if self.odom_drift == 0.0:
            return
        std = self.odom_drift * np.sqrt(travelled)
        shift = self._rng.normal(size=(len(self), 3)) * std[:, None]
        self.map_to_odom = self._moved_about_robots(shift, self.map_to_odom)

    def _moved_about_robots(self, shift: np.ndarray, map_to_odom: np.ndarray) -> np.ndarray:
        """`map_to_odom` turned about each robot by shift's heading, then moved by its x, y: the
        robot's pose in map changes by `shift` whatever its distance to its odom origin."""
        about_robot = np.column_stack([self._last_positions, np.zeros(len(self))])
        turn = np.column_stack([np.zeros((len(self), 2)), shift[:, 2]])
        moved = compose_planar(compose_planar(about_robot, turn), invert_planar(about_robot))
        moved[:, :2] += shift[:, :2]
        return compose_planar(moved, map_to_odom)

    def odom_poses(self, map_poses) -> np.ndarray:
        """Poses in each robot's odom frame of poses given in map."""
        return compose_planar(invert_planar(self.map_to_odom), np.asarray(map_poses, float))

    def map_to_odom_transforms(self, now: float) -> List[Tuple[float, np.ndarray]]:
        """The `map -> odom` transforms to send at `now`, as (stamp, (N, 3)) pairs: the newest
        estimate (a new one when 1/localization_rate has passed since the last) stamped
        now + transform_tolerance; the first call also sends the exact transform at `now`."""
        if self._next_correction is None:
            self._next_correction = now + self.period
            exact = self.map_to_odom.copy()
            self.estimate = exact
            return [(now, exact), (now + self.transform_tolerance, exact)]
        if now >= self._next_correction:
            self._next_correction += self.period
            if now >= self._next_correction:    # periods missed by a stall are dropped
                self._next_correction = now + self.period
            # The estimate's error is in the robot's pose (AMCL's particles), not about the
            # far-away odom origin, where a small heading error would move the robot by metres.
            noise = self._rng.normal(size=(len(self), 3)) * self.localization_jump
            self.estimate = self._moved_about_robots(noise, self.map_to_odom)
        return [(now + self.transform_tolerance, self.estimate)]
