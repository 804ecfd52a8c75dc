"""What a robot's measured state is worth at the cycle time: how uncertain it is, and where it
is now rather than when it was measured.

Uncertainty (as collvoid does for ROS 1): a pose with position covariance C (x, y) is somewhere
around its mean; the others keep away from a disc grown by k standard deviations along C's
widest axis, k * sqrt(largest eigenvalue of C), capped by `max_margin` (a localization that
has lost the robot must not swell it across the aisle).

Latency: odometry stamped t arrives later (Wi-Fi, another machine, a busy executor) and the
robot has moved on; the cycle at `now` uses position + velocity * (now - t), the age capped by
`max_extrapolation` (a constant-velocity guess is good for a fraction of a second, not more;
older states go stale by `odom_timeout` anyway). A state stamped after `now` is not moved back.
"""
import math

import numpy as np


def uncertainty_margins(covariances: np.ndarray, gain: float, max_margin: float) -> np.ndarray:
    """(N,) margins (m) of (N, 2, 2) xy position covariances (m^2): gain * sqrt(largest
    eigenvalue), in [0, max_margin]. Closed form for symmetric 2 x 2 matrices."""
    a = covariances[:, 0, 0]
    c = covariances[:, 1, 1]
    b = 0.5 * (covariances[:, 0, 1] + covariances[:, 1, 0])
    largest = 0.5 * (a + c) + np.sqrt((0.5 * (a - c)) ** 2 + b * b)
    # np.clip's own result, without its per-call overhead
    return np.minimum(np.maximum(gain * np.sqrt(np.maximum(largest, 0.0)), 0.0), max_margin)


# What a usable covariance is, relative to its largest entry: rounding, not a wrong matrix.
_ASYMMETRY_TOLERANCE = 1e-6
_NEGATIVE_DETERMINANT_TOLERANCE = 1e-9


def covariance_problem(covariance: np.ndarray):
    """Why a (2, 2) position covariance cannot be used (None when it can): it must be finite,
    symmetric and positive semi-definite (within rounding). `usable_covariances` is the same
    test over many."""
    # Plain floats: this runs for every odometry message of the fleet.
    if covariance.shape != (2, 2):
        return f'position covariance {covariance.tolist()} is not a finite 2 x 2 matrix'
    xx, xy, yx, yy = covariance.ravel().tolist()
    if not all(math.isfinite(v) for v in (xx, xy, yx, yy)):
        return f'position covariance {covariance.tolist()} is not a finite 2 x 2 matrix'
    scale = max(abs(xx), abs(xy), abs(yx), abs(yy), 1e-12)
    if abs(xy - yx) > _ASYMMETRY_TOLERANCE * scale:
        return f'position covariance {covariance.tolist()} is not symmetric'
    if xx < 0.0 or yy < 0.0 or xx * yy - xy * yx < -_NEGATIVE_DETERMINANT_TOLERANCE * scale * scale:
        return f'position covariance {covariance.tolist()} is not positive semi-definite'
    return None


def usable_covariances(covariances: np.ndarray) -> np.ndarray:
    """(K,) covariance_problem(c) is None for each of (K, 2, 2) covariances, in numpy."""
    xx, xy, yx, yy = covariances.reshape(-1, 4).T
    scale = np.maximum(np.abs(covariances).reshape(-1, 4).max(axis=1, initial=0.0), 1e-12)
    with np.errstate(invalid='ignore', over='ignore'):     # not finite: not usable
        return (np.isfinite(covariances).reshape(-1, 4).all(axis=1)
                & (np.abs(xy - yx) <= _ASYMMETRY_TOLERANCE * scale) & (xx >= 0.0) & (yy >= 0.0)
                & (xx * yy - xy * yx >= -_NEGATIVE_DETERMINANT_TOLERANCE * scale * scale))


def project_positions(positions: np.ndarray, velocities: np.ndarray, stamps: np.ndarray,
                      now: float, max_extrapolation: float) -> np.ndarray:
    """(N, 2) positions moved on to `now` at their velocities, for at most max_extrapolation s."""
    age = np.minimum(np.maximum(now - stamps, 0.0), max_extrapolation)
    return positions + velocities * age[:, None]
