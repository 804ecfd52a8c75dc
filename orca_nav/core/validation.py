"""Checks of numbers handed to the core, shared by every part of it.

Each returns the value as float(s) and raises ValueError naming the field (with the index of the
first bad entry) and the value otherwise, so a caller's error message says what to fix.
"""
from __future__ import annotations

import math
import numbers
from typing import Optional, Sequence

import numpy as np

# The bound a per-robot value must keep, as the error message says it.
_BOUND_VIOLATED = {None: lambda a: np.zeros(a.shape, dtype=bool),
                   '> 0': lambda a: a <= 0.0, '>= 0': lambda a: a < 0.0}


def finite_number(name: str, value) -> float:
    """`value` as a float; ValueError naming it unless it is a finite number."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f'{name} must be a number, got {value!r}') from None
    if not math.isfinite(out):
        raise ValueError(f'{name} must be finite, got {value!r}')
    return out


def finite_at_least_zero(name: str, value, positive: bool = False) -> float:
    """`value` as a float; ValueError naming it unless finite and >= 0 (> 0 when `positive`).
    A bool or a string is no number here."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f'{name} must be a number, got {value!r}')
    if not (math.isfinite(value) and (value > 0.0 if positive else value >= 0.0)):
        raise ValueError(f"{name} must be finite and {'>' if positive else '>='} 0, got {value}")
    return float(value)


def positive_limit(name: str, value) -> float:
    """A limit (a speed, a rate) as a float: ValueError naming it unless > 0; inf: no limit."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f'{name} must be a number, got {value!r}')
    if not value > 0.0:     # also NaN
        raise ValueError(f'{name} must be > 0, got {value}')
    return float(value)


def finite_array(name: str, value, shape: Optional[Sequence[int]] = None) -> np.ndarray:
    """`value` as a float array (of `shape` when given); ValueError naming `name` and the index
    of the first entry that is not finite otherwise."""
    arr = np.asarray(value, dtype=float)
    if shape is not None and arr.shape != tuple(shape):
        raise ValueError(f'{name} must have shape {tuple(shape)}, got {arr.shape}')
    if np.isfinite(arr).all():      # the usual case, checked cheaply
        return arr
    index = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
    raise ValueError(f'{name}{list(index)} is not finite ({arr[index]})')


def finite_vectors(name: str, value, count: Optional[int] = None, dims=(2,)) -> np.ndarray:
    """`value` as an (N, d) float array with d in `dims` (and N == `count` when given);
    ValueError naming `name` and the first row that is not finite otherwise."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim != 2 or arr.shape[1] not in dims or (count is not None and arr.shape[0] != count):
        expected = (f'({count}, ' if count is not None else '(N, ') + ' or '.join(map(str, dims))
        raise ValueError(f'{name} must have shape {expected}), got {arr.shape}')
    if np.isfinite(arr).all():
        return arr
    row = int(np.argwhere(~np.isfinite(arr))[0][0])
    raise ValueError(f'{name}[{row}] is not finite: {arr[row].tolist()}')


def per_robot_values(name: str, value, n: int, bound: Optional[str] = '> 0') -> np.ndarray:
    """`value` (one number, or one per robot) as an (n,) float array; ValueError naming
    `name[i]` and its value unless each is finite and keeps `bound` ('> 0', '>= 0' or None)."""
    arr = np.array(value, dtype=float)      # a copy: the caller may write to it
    if arr.shape != (n,):
        # One number (the usual other case): np.full, a tenth of np.broadcast_to's cost.
        arr = np.full(n, arr) if arr.ndim == 0 else np.broadcast_to(arr, (n,)).astype(float)
    # The usual case (every value finite and > 0) in two comparisons; NaN fails the first.
    if bound == '> 0' and (n == 0 or arr.min() > 0.0 and arr.max() < np.inf):
        return arr
    bad = np.flatnonzero(~np.isfinite(arr) | _BOUND_VIOLATED[bound](arr))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name}[{i}] must be finite{' and ' + bound if bound else ''}, "
                         f'got {arr[i]}')
    return arr
