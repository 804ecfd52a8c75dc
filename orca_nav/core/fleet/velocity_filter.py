"""Filter mode: another controller's twists in, the same twists out unless ORCA must change them.

In a Nav2 chain (controller_server -> velocity_smoother -> orca_nav -> collision_monitor) each
robot's incoming body twist is its preferred velocity: rotated into the global frame with the
robot's heading (a diff-drive or car robot's sideways component is ignored: it cannot have one).
ORCA runs over the whole fleet; a robot whose ORCA velocity is exactly its preferred velocity
(nothing constrained it; within 1e-9 m/s, the rounding of the rotation and of RVO2's clamp to
max_speed for a robot asked to go exactly max_speed) gets its incoming twist back unchanged, bit
for bit, yaw rate included.
A constrained robot gets ORCA's velocity mapped to its kinematics (holonomic robots keep their
incoming yaw rate; diff-drive and car robots steer toward the new velocity, reversing allowed).
"""
from __future__ import annotations

import numpy as np

from orca_nav.core.fleet.kinematics import RobotLimits, planar_velocity_to_twist
from orca_nav.core.geometry import body_to_world

UNCHANGED = 1e-9    # m/s: an ORCA velocity this close to the preferred one left it unchanged


def preferred_from_twists(twists: np.ndarray, yaw: np.ndarray, limits: RobotLimits) -> np.ndarray:
    """(N, 2) global velocities the body twists (N, 3) ask for."""
    body = np.where(limits.planar_holonomic[:, None], twists[:, :2],
                    np.stack([twists[:, 0], np.zeros(len(twists))], axis=1))
    return body_to_world(body, yaw)


def filtered_twists(orca_velocities: np.ndarray, preferred: np.ndarray, twists: np.ndarray,
                    yaw: np.ndarray, limits: RobotLimits) -> np.ndarray:
    """(N, 3) body twists out: the incoming `twists` where ORCA left the preferred velocity as
    it was, else ORCA's velocity for the robot's kinematics."""
    unconstrained = np.all(np.abs(orca_velocities - preferred) <= UNCHANGED, axis=1)
    out = twists.copy()
    changed = ~unconstrained
    if changed.any():
        sub = limits.subset(changed)
        mapped = planar_velocity_to_twist(orca_velocities[changed], yaw[changed], sub,
                                          allow_reverse=True)
        holonomic = sub.planar_holonomic
        mapped[holonomic, 2] = twists[changed][holonomic, 2]
        out[changed] = mapped
    return out
