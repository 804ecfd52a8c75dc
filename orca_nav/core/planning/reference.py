"""The planner -> tracker contract: a time-parametrised reference for one robot.

Every planner's result becomes a `Reference` (`path_timing.time_path`, `reference_from_samples`);
the fleet's tracker follows it (`orca_nav.core.fleet.tracking`). The driving direction is part
of the reference (+1 forward, -1 reversing), so nobody has to guess it from the geometry.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orca_nav.core.validation import finite_array


@dataclass(frozen=True)
class Reference:
    """A time-parametrised reference for one robot (global frame).

    ``times`` (K,) seconds from the trajectory start, strictly increasing, starting at 0;
    ``positions``/``velocities``/``accelerations`` (K, d), d = 2 or 3; ``yaw`` and ``yaw_rate``
    (K,); ``direction`` (K,) +1 driving forward, -1 reversing (velocity opposite to the heading).
    """

    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    yaw: np.ndarray
    yaw_rate: np.ndarray
    direction: np.ndarray

    def __post_init__(self):
        times = finite_array('times', self.times).reshape(-1)
        if times.size < 2:
            raise ValueError(f'times must have at least 2 samples, got {times.size}')
        steps = np.diff(times)
        if np.any(steps <= 0.0):
            k = int(np.argmax(steps <= 0.0)) + 1
            raise ValueError(f'times must be strictly increasing; times[{k}] = {times[k]} '
                             f'<= times[{k - 1}] = {times[k - 1]}')
        n = times.size
        arrays = {}
        for name in ('positions', 'velocities', 'accelerations'):
            arr = finite_array(name, getattr(self, name))
            if arr.ndim != 2 or arr.shape[0] != n or arr.shape[1] not in (2, 3):
                raise ValueError(f'{name} must have shape ({n}, 2 or 3), got {arr.shape}')
            arrays[name] = arr
        dims = {a.shape[1] for a in arrays.values()}
        if len(dims) != 1:
            raise ValueError('positions, velocities and accelerations disagree on dimension '
                             f'{dims}')
        for name in ('yaw', 'yaw_rate'):
            arr = finite_array(name, getattr(self, name)).reshape(-1)
            if arr.size != n:
                raise ValueError(f'{name} must have {n} values, got {arr.size}')
            arrays[name] = arr
        direction = np.asarray(self.direction).reshape(-1)
        if direction.size != n or not np.all(np.isin(direction, (-1, 1))):
            raise ValueError(f'direction must be {n} values of +1 or -1, got '
                             f'{direction.tolist()[:8]}...')
        object.__setattr__(self, 'times', times - times[0])
        for name, arr in arrays.items():
            object.__setattr__(self, name, arr)
        object.__setattr__(self, 'direction', direction.astype(np.int8))

    @property
    def dim(self) -> int:
        return self.positions.shape[1]

    @property
    def duration(self) -> float:
        return float(self.times[-1])

    def __len__(self) -> int:
        return self.times.size

    def segment_ends(self) -> np.ndarray:
        """(K,) index of the last sample of the driving-direction segment each sample is in."""
        n = len(self)
        # the last index of each segment
        change = np.flatnonzero(self.direction[1:] != self.direction[:-1])
        ends = np.append(change, n - 1)
        return ends[np.searchsorted(ends, np.arange(n))]

    def sample_at(self, t: float) -> int:
        """Index of the last sample at or before time ``t`` (0 before the start, the last one
        after the end)."""
        k = int(np.searchsorted(self.times, t, side='right')) - 1
        return max(min(k, len(self) - 1), 0)

    def position_at(self, t) -> np.ndarray:
        """Linearly interpolated positions (len(t), d) at times ``t`` (clamped to the span)."""
        t = np.clip(np.atleast_1d(np.asarray(t, dtype=float)), 0.0, self.duration)
        return np.stack([np.interp(t, self.times, self.positions[:, j]) for j in range(self.dim)],
                        axis=1)

    def nearest_time(self, point, after: float = 0.0) -> float:
        """Time of the sample nearest to ``point`` (positions only) among samples at or after
        ``after``."""
        point = finite_array('point', point).reshape(-1)[:self.dim]
        first = int(np.searchsorted(self.times, after, side='left'))
        first = min(first, len(self) - 1)
        d2 = np.sum((self.positions[first:] - point) ** 2, axis=1)
        return float(self.times[first + int(np.argmin(d2))])
