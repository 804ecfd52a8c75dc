"""What a fleet's robots are, as rows over all of them: limits, sizes, avoidance shares.

Built from the robot specs and the controller's parameters whenever either changes; the cycle
reads it, nothing writes it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.kinematics import (
    CAR,
    DIFF_DRIVE,
    QUADROTOR,
    RobotLimits,
    tracking_error_bound,
)
from orca_nav.core.fleet.robots import RobotSpec


@dataclass(frozen=True)
class FleetBodies:
    """Rows over the fleet's robots."""

    limits: RobotLimits
    radius: np.ndarray          # (N,) physical radii
    responsibility: np.ndarray  # (N,) each robot's share of the avoidance (RVO2: 0.5)
    flying: np.ndarray          # (N,) bool: drones, which avoid in 3-D
    orca_radius: np.ndarray     # (N,) the radius ORCA keeps apart (see `create`)
    braking_decel: np.ndarray   # (N,) m/s^2 the safety layer counts on

    @classmethod
    def create(cls, robots: Sequence[RobotSpec], params: ControllerParams) -> 'FleetBodies':
        limits = RobotLimits.create([r.kinematics for r in robots], [r.max_speed for r in robots],
                                    [r.max_accel for r in robots],
                                    [r.max_yaw_rate for r in robots],
                                    [r.min_turning_radius for r in robots])
        radius = np.array([r.radius for r in robots], dtype=float)
        # NH-ORCA: a diff-drive/car robot tracks the ORCA velocity only up to a bounded error,
        # so ORCA keeps it apart by its radius plus that bound (kinematics.tracking_error_bound).
        non_holonomic = (limits.model == DIFF_DRIVE) | (limits.model == CAR)
        bound = tracking_error_bound(limits.max_speed, params.period, params.command_latency)
        return cls(limits, radius, np.array([r.responsibility for r in robots], dtype=float),
                   limits.model == QUADROTOR,
                   radius + params.safety_margin + np.where(non_holonomic, bound, 0.0),
                   np.array([r.braking_decel for r in robots]))
