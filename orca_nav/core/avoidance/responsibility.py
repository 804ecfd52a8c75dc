"""Who takes how much of the avoidance: per-agent responsibility weights and non-cooperative
agents (not in RVO2, which always splits the avoidance half and half).

RVO2 puts an agent's ORCA line at v + u/2: each of two agents takes half of the smallest change
u of their relative velocity that avoids collision within the time horizon. Here agent a takes
the share  w_a / (w_a + w_b)  of u toward fleet agent b (both 0: a half each), so the pair always
takes all of it, and with equal weights (RVO2: every weight 0.5) the share is exactly 0.5 and
the lines are RVO2's bit for bit. A robot carrying a load with weight 0.2 next to robots of 0.5
takes 2/7 of each avoidance and leaves 5/7 to the other.

A non-cooperative agent (a person, a forklift, a robot of another vendor) avoids nobody: the
fleet agent takes all of u toward it (its line at v + u), with the other's velocity assumed
constant over the time horizon: RVO2's velocity obstacle without the reciprocal half.
"""
from typing import NamedTuple, Optional

import numpy as np

from .params import as_vectors, check_finite


class NonCooperative(NamedTuple):
    """Agents that are neighbours but do not react: (M, 2) positions, (M, 2) velocities (or
    (M, 3) each, in 3-D), (M,) radii (metres, metres per second)."""

    positions: np.ndarray
    velocities: np.ndarray
    radii: np.ndarray

    @classmethod
    def empty(cls) -> 'NonCooperative':
        return cls(np.zeros((0, 2)), np.zeros((0, 2)), np.zeros(0))

    def checked(self, dims: int = 2) -> 'NonCooperative':
        """Validated float64 copy with `dims` (2 or 3) coordinates; ValueError naming the field
        and index otherwise."""
        positions = as_vectors('others.positions', self.positions, dims=(dims,))
        count = len(positions)
        velocities = as_vectors('others.velocities', self.velocities, count, dims=(dims,))
        radii = np.asarray(self.radii, dtype=np.float64)
        radii = radii.copy() if radii.shape == (count,) else \
            np.broadcast_to(radii, (count,)).copy()
        check_finite('others.radii', radii)
        bad = np.flatnonzero(radii < 0.0)
        if bad.size:
            raise ValueError(f'others.radii[{bad[0]}] must be >= 0, got {radii[bad[0]]}')
        return NonCooperative(positions, velocities, radii)


def check_responsibility(weights, count) -> Optional[np.ndarray]:
    """(count,) float64 weights in [0, 1], or None for RVO2's equal split (None given, or every
    weight equal: the share is then exactly 0.5)."""
    if weights is None:
        return None
    value = np.asarray(weights, dtype=np.float64)
    if value.ndim == 0:
        value = np.full(count, value.item())
    if value.shape != (count,):
        raise ValueError(f'responsibility: expected a scalar or shape ({count},), '
                         f'got {value.shape}')
    check_finite('responsibility', value)
    bad = ((value < 0.0) | (value > 1.0)).nonzero()[0]
    if bad.size:
        raise ValueError(f'responsibility[{bad[0]}] must be in [0, 1], got {value[bad[0]]}')
    return None if (value == value[0]).all() else value


def slot_shares(weights: Optional[np.ndarray], neighbors: np.ndarray, keep: np.ndarray,
                count: int) -> Optional[np.ndarray]:
    """(k, N) float32: the share of u agent a takes toward its neighbour in slot j; neighbours
    with index >= count are non-cooperative (share 1). None when every share is RVO2's 0.5."""
    non_cooperative = (neighbors >= count) & keep
    if weights is None and not non_cooperative.any():
        return None
    f32 = np.float32
    share = np.full(neighbors.shape, f32(0.5), dtype=f32)
    if weights is not None:
        own = weights.astype(f32)[:, None]
        other = weights.astype(f32)[np.minimum(neighbors, count - 1)]
        total = own + other
        np.divide(own, total, out=share, where=total > 0.0)
    share[non_cooperative] = f32(1.0)
    return np.ascontiguousarray(share.T)
