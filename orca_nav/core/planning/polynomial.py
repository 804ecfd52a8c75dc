"""Time-parametrised piecewise-polynomial trajectory in 2-D or 3-D.

Segment ``s`` starts at time ``starts[s] = sum(durations[:s])`` and its position is
``p(t) = sum_k coefficients[s, k] * (t - starts[s]) ** k`` (k = 0..degree), one column per axis.
Velocity and acceleration are the exact derivatives. Time runs from 0 to ``duration``; evaluating
outside that range clamps to the end points.
"""
from __future__ import annotations

import numpy as np

from orca_nav.core.validation import finite_at_least_zero


class PolynomialTrajectory:
    """Piecewise polynomial ``p(t)`` with per-segment local time."""

    def __init__(self, durations, coefficients):
        dur = np.asarray(durations, dtype=float).reshape(-1)
        coef = np.asarray(coefficients, dtype=float)
        if coef.ndim != 3 or coef.shape[0] != dur.size or coef.shape[0] == 0:
            raise ValueError(f'coefficients must have shape (segments={dur.size}, degree+1, ndim), '
                             f'got {coef.shape}')
        if not np.all(np.isfinite(dur)) or np.any(dur <= 0.0):
            bad = int(np.flatnonzero(~(np.isfinite(dur) & (dur > 0.0)))[0])
            raise ValueError(f'durations[{bad}] must be finite and > 0, got {dur[bad]}')
        if not np.all(np.isfinite(coef)):
            raise ValueError('coefficients must be finite')
        self._durations = dur
        self._coefficients = coef
        self._starts = np.concatenate(([0.0], np.cumsum(dur)[:-1]))
        self._duration = float(dur.sum())

    @classmethod
    def from_segments(cls, segments):
        """Build from a list of ``(duration, coefficients (degree+1, ndim))``; lower degrees are
        zero-padded to the highest one."""
        if not segments:
            raise ValueError('segments must not be empty')
        degree = max(np.shape(c)[0] for _, c in segments)
        ndim = np.shape(segments[0][1])[1]
        coef = np.zeros((len(segments), degree, ndim))
        for s, (_, c) in enumerate(segments):
            coef[s, :np.shape(c)[0]] = c
        return cls([d for d, _ in segments], coef)

    @property
    def duration(self) -> float:
        return self._duration

    @property
    def ndim(self) -> int:
        return self._coefficients.shape[2]

    @property
    def durations(self) -> np.ndarray:
        return self._durations.copy()

    @property
    def coefficients(self) -> np.ndarray:
        return self._coefficients.copy()

    @property
    def segment_start_times(self) -> np.ndarray:
        return self._starts.copy()

    def evaluate(self, times):
        """Position, velocity, acceleration ``(K, ndim)`` at the given times (clamped to [0,
        duration])."""
        t = np.clip(np.asarray(times, dtype=float).reshape(-1), 0.0, self._duration)
        seg = np.clip(np.searchsorted(self._starts, t, side='right') - 1, 0,
                      self._durations.size - 1)
        local = (t - self._starts[seg])[:, None]
        coef = self._coefficients[seg]                      # (K, degree+1, ndim)
        degree = coef.shape[1] - 1
        pos = np.zeros((t.size, self.ndim))
        vel = np.zeros_like(pos)
        acc = np.zeros_like(pos)
        # Horner over the (few) polynomial degrees, vectorised over all samples.
        for k in range(degree, -1, -1):
            pos = pos * local + coef[:, k]
            if k >= 1:
                vel = vel * local + k * coef[:, k]
            if k >= 2:
                acc = acc * local + k * (k - 1) * coef[:, k]
        return pos, vel, acc

    def sample(self, dt: float):
        """``(t, pos, vel, acc)`` at ``0, dt, 2 dt, ...`` plus the final time ``duration``."""
        dt = finite_at_least_zero('dt', dt, positive=True)
        t = np.arange(0.0, self._duration, dt)
        if t.size == 0 or self._duration - t[-1] > 1e-9:
            t = np.append(t, self._duration)
        pos, vel, acc = self.evaluate(t)
        return t, pos, vel, acc

    def length(self, dt: float = 0.01) -> float:
        """Arc length of the position curve (polyline through samples every ``dt``)."""
        _, pos, _, _ = self.sample(dt)
        return float(np.linalg.norm(np.diff(pos, axis=0), axis=1).sum())

    def __repr__(self) -> str:
        return (f'PolynomialTrajectory(segments={self._durations.size}, ndim={self.ndim}, '
                f'duration={self._duration:.3f})')
