"""How the fleet controller runs: `ControllerParams` (SI units; ORCA's names follow RVO2).

The ROS parameters of orca_node (`orca_nav.parameters.orca_node`) map onto these fields; the
defaults here are the core's own, for library users and tests.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from orca_nav.core.fleet.deadlock import DeadlockParams
from orca_nav.core.fleet.safety import SafetyParams


@dataclass(frozen=True)
class ControllerParams:
    """How the controller runs (SI units). ORCA names follow RVO2."""

    control_rate: float = 20.0          # cycles per second (Hz): the time step ORCA plans for
    neighbor_dist: float = 5.0
    max_neighbors: int = 10
    time_horizon: float = 3.0
    time_horizon_obst: float = 2.0
    odom_timeout: float = 0.5           # s: older states stop the robot
    safety_margin: float = 0.05         # m added to every radius ORCA uses
    command_latency: float = 0.0        # s: expected cmd_vel latency (NH-ORCA bound)
    goal_tolerance: float = 0.15        # m: arrived (goal seeking and trajectory end)
    map_inflation: float = 0.0          # m around occupied cells before they become polygons
    trajectories_only: bool = False     # robots hold still until their first trajectory
    require_map: bool = False           # robots hold still until the first map is prepared
    filter_mode: bool = False           # preferred velocities are input twists (velocity_filter)
    source_timeout: float = 0.5         # s: in filter mode, older input twists stop the robot
    ground_clearance: float = 1.0       # m: height of the ground robots' layer (drones.py)
    require_map_3d: bool = False        # drones hold still until the first 3-D map is set
    deadlock: Optional[DeadlockParams] = field(default_factory=DeadlockParams)   # None: off
    uncertainty_gain: float = 2.0       # standard deviations of pose uncertainty others avoid
    max_uncertainty_margin: float = 0.3  # m: cap of that margin (0: covariance ignored)
    max_extrapolation: float = 0.25     # s: states projected to the cycle time by at most this
    sensor_persistence: float = 1.0     # s: sensor points stay obstacles this long
    sensor_max_points: int = 180        # sensor points kept per robot (bounds the cost)
    # The safety layer, last on every command (`safety`); None: off.
    safety: Optional[SafetyParams] = field(default_factory=SafetyParams)
    # ORCA picks among the velocities each robot reaches within a cycle (`avoidance.acceleration`);
    # False: RVO2's choice within max_speed (ground robots; drones always take RVO2-3D's).
    acceleration_aware: bool = True

    def __post_init__(self):
        for name in ('control_rate', 'time_horizon', 'time_horizon_obst', 'odom_timeout',
                     'source_timeout'):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0.0):
                raise ValueError(f'{name} must be finite and > 0, got {value}')
        for name in ('neighbor_dist', 'max_neighbors', 'safety_margin', 'command_latency',
                     'goal_tolerance', 'map_inflation', 'uncertainty_gain',
                     'max_uncertainty_margin', 'max_extrapolation', 'sensor_persistence',
                     'sensor_max_points', 'ground_clearance'):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0.0):
                raise ValueError(f'{name} must be finite and >= 0, got {value}')

    @property
    def period(self) -> float:
        return 1.0 / self.control_rate

