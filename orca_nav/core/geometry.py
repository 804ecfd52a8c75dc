"""Planar angles and rotations, the one copy every part of the core uses (REP-103: yaw
counter-clockwise from +x, radians)."""
import numpy as np


def wrap_angle(angle) -> np.ndarray:
    """Angles wrapped into [-pi, pi)."""
    return (np.asarray(angle, dtype=float) + np.pi) % (2.0 * np.pi) - np.pi


def rotate(vectors: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.stack([c * vectors[:, 0] - s * vectors[:, 1], s * vectors[:, 0] + c * vectors[:, 1]],
                    axis=1)


def body_to_world(velocity_body, yaw) -> np.ndarray:
    """(N,2) body-frame velocities -> global frame, for robots with heading `yaw` (N,)."""
    return rotate(np.atleast_2d(np.asarray(velocity_body, dtype=float)), np.asarray(yaw, float))


def world_to_body(velocity_world, yaw) -> np.ndarray:
    """(N,2) global-frame velocities -> body frame of robots with heading `yaw` (N,)."""
    return rotate(np.atleast_2d(np.asarray(velocity_world, dtype=float)), -np.asarray(yaw, float))
