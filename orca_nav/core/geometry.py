"""Planar angles and rotations, the one copy every part of the core uses (REP-103: yaw
counter-clockwise from +x, radians)."""
import numpy as np


def wrap_angle(angle) -> np.ndarray:
    """Angles wrapped into [-pi, pi)."""
    return (np.asarray(angle, dtype=float) + np.pi) % (2.0 * np.pi) - np.pi


def row_norms(vectors: np.ndarray) -> np.ndarray:
    """Euclidean norms along the last axis: `np.linalg.norm(vectors, axis=-1)`'s own
    computation for real arrays (the same values), without its per-call overhead. Planar and
    3-D vectors go by `axis_norms` (the reduction over an axis of 2 or 3 costs several times
    the arithmetic)."""
    if vectors.shape[-1] in (2, 3):
        return axis_norms(vectors.T).T
    return np.sqrt(np.add.reduce(vectors * vectors, axis=-1))


def axis_norms(vectors: np.ndarray) -> np.ndarray:
    """Euclidean norms of axis-major planar or 3-D vectors (2 or 3, ...): the squares added
    x, y, z, left to right, as numpy's reduction adds so few (the same values)."""
    if len(vectors) == 2:
        x, y = vectors
        return np.sqrt(x * x + y * y)
    x, y, z = vectors
    return np.sqrt(x * x + y * y + z * z)


def rotate(vectors: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    x, y = vectors[:, 0], vectors[:, 1]
    shape = x.shape if x.shape == c.shape else np.broadcast_shapes(x.shape, c.shape)
    out = np.empty(shape + (2,))
    out[:, 0] = c * x - s * y
    out[:, 1] = s * x + c * y
    return out


def _vectors(value) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    return array if array.ndim == 2 else np.atleast_2d(array)


def body_to_world(velocity_body, yaw) -> np.ndarray:
    """(N,2) body-frame velocities -> global frame, for robots with heading `yaw` (N,)."""
    return rotate(_vectors(velocity_body), np.asarray(yaw, float))


def world_to_body(velocity_world, yaw) -> np.ndarray:
    """(N,2) global-frame velocities -> body frame of robots with heading `yaw` (N,)."""
    return rotate(_vectors(velocity_world), -np.asarray(yaw, float))
