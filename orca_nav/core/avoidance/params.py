"""RVO2's agent parameters (`OrcaParams`) and the input checks every avoidance entry point shares.

Names are RVO2's (`neighborDist` -> `neighbor_dist`, ...). Every check raises ValueError naming
the argument and, for arrays, the offending index.
"""
import math
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

ArrayLike = Union[float, np.ndarray]
PER_AGENT_FIELDS = ('neighbor_dist', 'max_neighbors', 'time_horizon', 'time_horizon_obst',
                    'radius', 'max_speed')


@dataclass
class OrcaParams:
    """RVO2's agent parameters (names as RVO2's) plus the simulation time step.

    Per-agent fields may be a scalar (all agents) or an (N,) array. Not in RVO2:
    `max_velocity_change` (m/s, per agent), how far an agent's velocity can change within one
    time step; None (inf) is RVO2's agent, which takes any velocity at once. A finite one makes
    the agent choose among the velocities it can reach and, where none satisfies its lines,
    weigh time to contact by `ttc_weight` (m) (`acceleration`).
    """
    time_step: float
    neighbor_dist: ArrayLike
    max_neighbors: ArrayLike
    time_horizon: ArrayLike
    time_horizon_obst: ArrayLike
    radius: ArrayLike
    max_speed: ArrayLike
    max_velocity_change: Optional[ArrayLike] = None
    ttc_weight: float = 1.0

    def per_agent(self, count):
        """Validated per-agent arrays (dict name -> (count,) array) and the time step."""
        time_step = check_scalar('params.time_step', self.time_step, positive=True)
        arrays = {}
        for name in PER_AGENT_FIELDS:
            value = np.asarray(getattr(self, name))
            label = f'params.{name}'
            if value.ndim == 0 and _valid_number(name, value.item()):
                # A valid plain number (the usual case, every cycle): no array checks needed.
                arrays[name] = np.full(count, value.item(), dtype=np.int64 if
                                       name == 'max_neighbors' else np.float64)
                continue
            strict = name in ('time_horizon', 'time_horizon_obst')
            if (name != 'max_neighbors' and value.shape == (count,) and count
                    and value.dtype == np.float64 and value.max() < np.inf
                    and (value.min() > 0.0 if strict else value.min() >= 0.0)):
                # Valid per-agent floats (the usual case; NaN fails the comparisons).
                arrays[name] = value.copy()
                continue
            if value.ndim == 0:
                value = np.full(count, value.item())
            elif value.shape != (count,):
                raise ValueError(f'{label}: expected a scalar or shape ({count},), '
                                 f'got {value.shape}')
            try:
                value = value.astype(np.float64)
            except (TypeError, ValueError):
                raise ValueError(f'{label} must be numeric, got {value!r}') from None
            if name == 'max_neighbors':
                whole = np.isfinite(value) & (value >= 0.0) & (value == np.floor(value))
                bad = np.flatnonzero(~whole)
                if bad.size:
                    raise ValueError(f'{label}[{bad[0]}] must be an integer >= 0, '
                                     f'got {value[bad[0]]}')
                arrays[name] = value.astype(np.int64)
                continue
            check_finite(label, value)
            bad = np.flatnonzero(value <= 0.0 if strict else value < 0.0)
            if bad.size:
                relation = '> 0' if strict else '>= 0'
                raise ValueError(f'{label}[{bad[0]}] must be {relation}, got {value[bad[0]]}')
            arrays[name] = value
        arrays['max_velocity_change'] = _velocity_change(self.max_velocity_change, count)
        return arrays, time_step


def _velocity_change(value, count):
    """(count,) float64 max_velocity_change, inf for None; ValueError unless each is > 0."""
    label = 'params.max_velocity_change'
    if value is None:
        return np.full(count, np.inf)
    array = np.asarray(value, dtype=np.float64)
    array = array.copy() if array.shape == (count,) else np.broadcast_to(array, (count,)).copy()
    if count and array.min() > 0.0:     # the usual case (NaN fails it)
        return array
    bad = np.flatnonzero(np.isnan(array) | (array <= 0.0))
    if bad.size:
        raise ValueError(f'{label}[{bad[0]}] must be > 0 (inf: unlimited), got {array[bad[0]]}')
    return array


def _valid_number(name, value):
    """A Python int or float that `OrcaParams.per_agent` accepts for field `name` (anything else
    goes through its array checks, which name the problem)."""
    if name == 'max_neighbors':
        return type(value) is int and value >= 0
    if type(value) not in (int, float) or not math.isfinite(value):
        return False
    return value > 0 if name in ('time_horizon', 'time_horizon_obst') else value >= 0


def check_scalar(label, value, positive=False):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f'{label} must be a number, got {value!r}') from None
    if not np.isfinite(value) or (positive and value <= 0.0):
        raise ValueError(f'{label} must be finite{" and > 0" if positive else ""}, got {value}')
    return value


def check_finite(label, array):
    if not np.isfinite(array).all():
        flat = np.flatnonzero(~np.isfinite(array.reshape(len(array), -1)).all(axis=1))[0]
        raise ValueError(f'{label}[{flat}] is not finite: {array[flat].tolist()}')


def as_point(label, value):
    """One (x, y) pair as a float64 (2,) array; ValueError naming `label` otherwise."""
    try:
        point = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f'{label} must be a numeric (x, y) pair, got {value!r}') from None
    if point.shape != (2,):
        raise ValueError(f'{label}: expected 2 numbers (x, y), got shape {np.shape(value)}')
    if not np.isfinite(point).all():
        raise ValueError(f'{label} is not finite: {point.tolist()}')
    return point


def as_vectors(label, value, count=None, dims=(2,)):
    """An (N, d) float64 array with d in `dims` (and N == count if given); ValueError naming
    `label` otherwise."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f'{label} must be a numeric (N, {dims[0]}) array') from None
    if (array.ndim != 2 or array.shape[1] not in dims
            or (count is not None and array.shape[0] != count)):
        rows = count if count is not None else 'N'
        expected = ' or '.join(f'({rows}, {d})' for d in dims)
        raise ValueError(f'{label}: expected shape {expected}, got {array.shape}')
    check_finite(label, array)
    return array
