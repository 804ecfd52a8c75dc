"""Time-parametrised references from planner outputs.

* :func:`time_path` turns a hybrid A* path (x, y, yaw, direction) into a :class:`Reference`:
  the path is split at its cusps into driving-direction segments, each gets a speed profile that
  starts and ends at rest (a trapezoid: accelerate at ``max_accel``, cruise, brake), lowered where
  the path curves (speed <= max_yaw_rate / curvature and <= sqrt(max_lateral_accel / curvature))
  and wherever the robot turns in place (zero speed, time |dyaw| / max_yaw_rate). The robot
  dwells ``cusp_dwell`` seconds at every cusp.
* :func:`reference_from_samples` wraps a sampled kinodynamic trajectory (t, p, v, a) with the
  heading along the velocity.

The speed profile is the classic forward/backward pass v_j^2 <= v_k^2 + 2 a (s_j - s_k),
vectorised as running minima over each segment.
"""
from __future__ import annotations

import numpy as np

from orca_nav.core.geometry import wrap_angle
from orca_nav.core.planning.reference import Reference
from orca_nav.core.validation import finite_array, positive_limit

_MOVE_EPS = 1e-6     # m: a step shorter than this is a turn in place


def step_directions(xy: np.ndarray, yaw: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """+1/-1 per step (pose k -> k+1) of poses xy (K,2), yaw (K,), given direction (K,): the sign
    of the displacement along the heading; the given direction where that is ambiguous; turns in
    place inherit their neighbour's direction (no spurious cusp)."""
    step = np.diff(xy, axis=0)
    length = np.linalg.norm(step, axis=1)
    along = step[:, 0] * np.cos(yaw[:-1]) + step[:, 1] * np.sin(yaw[:-1])
    moving = length > _MOVE_EPS
    clear = moving & (np.abs(along) >= 0.5 * length)
    given = np.where(direction[1:] < 0, -1, 1)
    signs = np.where(clear, np.sign(along), np.where(moving, given, 0)).astype(np.int64)
    if not np.any(signs):
        return np.where(given < 0, -1, 1)
    # Fill turns in place: forward from the last move, then backward for leading turns.
    idx = np.where(signs != 0, np.arange(signs.size), 0)
    np.maximum.accumulate(idx, out=idx)
    filled = signs[idx]
    first_move = int(np.flatnonzero(signs)[0])
    filled[:first_move] = signs[first_move]
    return filled


def _densify(xy, yaw, step_dir, spacing: float, angle_step: float):
    """Subdivide long steps (<= spacing metres and <= angle_step radians per step)."""
    step = np.diff(xy, axis=0)
    dyaw = wrap_angle(np.diff(yaw))
    pieces = np.maximum(1, np.ceil(np.maximum(np.linalg.norm(step, axis=1) / spacing,
                                              np.abs(dyaw) / angle_step))).astype(np.int64)
    owner = np.repeat(np.arange(pieces.size), pieces)
    frac = (np.arange(owner.size) - np.repeat(np.cumsum(pieces) - pieces, pieces)) / pieces[owner]
    new_xy = np.vstack([xy[owner] + frac[:, None] * step[owner], xy[-1:]])
    new_yaw = np.append(yaw[owner] + frac * dyaw[owner], yaw[-1])
    return new_xy, new_yaw, step_dir[owner]


def _segment_profile(ds, dyaw, max_speed, max_accel, max_yaw_rate, max_lateral_accel):
    """Node speeds (m+1,) and step durations (m,) of one segment that starts and ends at rest."""
    moving = ds > _MOVE_EPS
    curvature = np.where(moving, np.abs(dyaw) / np.where(moving, ds, 1.0), np.inf)
    with np.errstate(divide='ignore'):
        step_limit = np.minimum.reduce([
            np.full(ds.shape, max_speed),
            max_yaw_rate / curvature,
            np.sqrt(max_lateral_accel / curvature)])
    step_limit = np.where(moving, step_limit, 0.0)
    node_limit = np.minimum(np.append(step_limit, 0.0), np.insert(step_limit, 0, 0.0))
    limit2 = node_limit ** 2
    s = np.insert(np.cumsum(ds), 0, 0.0)
    two_a = 2.0 * max_accel
    forward = np.minimum.accumulate(limit2 - two_a * s) + two_a * s
    backward = np.minimum.accumulate((limit2 + two_a * s)[::-1])[::-1] - two_a * s
    speed = np.sqrt(np.clip(np.minimum(forward, backward), 0.0, None))
    mean_speed = 0.5 * (speed[:-1] + speed[1:])
    with np.errstate(divide='ignore', invalid='ignore'):
        drive_time = np.where(mean_speed > 0.0, ds / mean_speed, 2.0 * np.sqrt(ds / max_accel))
    turn_time = np.abs(dyaw) / max_yaw_rate
    return speed, np.maximum(np.maximum(drive_time, turn_time), 1e-3)


def time_path(x, y, yaw, direction, max_speed: float, max_accel: float,
              max_yaw_rate: float = np.inf, max_lateral_accel: float = None,
              cusp_dwell: float = 0.5, spacing: float = 0.1) -> Reference:
    """A :class:`Reference` that drives the path (x, y, yaw, direction +1/-1 per pose).

    Each driving-direction segment starts and ends at rest; the robot waits ``cusp_dwell`` s at
    cusps. ``max_lateral_accel`` defaults to ``max_accel``. Steps longer than ``spacing`` metres
    are subdivided so the reference is dense enough to track.
    """
    x, y, yaw = (finite_array(n, v).reshape(-1) for n, v in (('x', x), ('y', y), ('yaw', yaw)))
    direction = finite_array('direction', direction).reshape(-1)
    if not (x.size == y.size == yaw.size == direction.size) or x.size == 0:
        raise ValueError(f'x, y, yaw and direction must have the same non-zero length, got '
                         f'{x.size}, {y.size}, {yaw.size}, {direction.size}')
    max_speed = positive_limit('max_speed', max_speed)
    max_accel = positive_limit('max_accel', max_accel)
    max_yaw_rate = positive_limit('max_yaw_rate', max_yaw_rate)
    max_lateral_accel = positive_limit(
        'max_lateral_accel', max_accel if max_lateral_accel is None else max_lateral_accel)
    cusp_dwell = positive_limit('cusp_dwell', cusp_dwell)
    spacing = positive_limit('spacing', spacing)

    xy = np.column_stack([x, y])
    yaw = np.unwrap(yaw)
    keep = np.ones(x.size, dtype=bool)     # drop exact repeats of the previous pose
    keep[1:] = (np.linalg.norm(np.diff(xy, axis=0), axis=1) > _MOVE_EPS) | \
        (np.abs(np.diff(yaw)) > 1e-9)
    xy, yaw, direction = xy[keep], yaw[keep], direction[keep]
    if xy.shape[0] == 1:
        return _hold(xy[0], yaw[0], cusp_dwell)

    step_dir = step_directions(xy, yaw, direction)
    xy, yaw, step_dir = _densify(xy, yaw, step_dir, spacing, angle_step=0.1)
    ds = np.linalg.norm(np.diff(xy, axis=0), axis=1)
    dyaw = np.diff(yaw)
    # Segment boundaries: poses where the step direction flips (cusps).
    cusps = np.flatnonzero(step_dir[1:] != step_dir[:-1]) + 1
    bounds = np.concatenate([[0], cusps, [step_dir.size]])

    times, positions, velocities, accels, yaws, yaw_rates, dirs = [], [], [], [], [], [], []
    t_start = 0.0
    for a, b in zip(bounds[:-1], bounds[1:]):     # one iteration per segment, not per sample
        seg_dir = int(step_dir[a])
        speed, step_time = _segment_profile(ds[a:b], dyaw[a:b], max_speed, max_accel,
                                            max_yaw_rate, max_lateral_accel)
        t = t_start + np.insert(np.cumsum(step_time), 0, 0.0)
        seg_yaw = yaw[a:b + 1]
        heading = np.column_stack([np.cos(seg_yaw), np.sin(seg_yaw)])
        vel = (seg_dir * speed)[:, None] * heading
        times.append(t)
        positions.append(xy[a:b + 1])
        velocities.append(vel)
        accels.append(np.gradient(vel, t, axis=0))
        yaws.append(seg_yaw)
        yaw_rates.append(np.gradient(seg_yaw, t))
        dirs.append(np.full(t.size, seg_dir))
        t_start = t[-1] + cusp_dwell
    return Reference(times=np.concatenate(times), positions=np.vstack(positions),
                     velocities=np.vstack(velocities), accelerations=np.vstack(accels),
                     yaw=wrap_angle(np.concatenate(yaws)), yaw_rate=np.concatenate(yaw_rates),
                     direction=np.concatenate(dirs))


def _hold(xy, yaw: float, duration: float) -> Reference:
    """A reference that stays at one pose (a path of a single pose)."""
    zeros = np.zeros((2, 2))
    return Reference(times=np.array([0.0, duration]), positions=np.vstack([xy, xy]),
                     velocities=zeros, accelerations=zeros, yaw=np.full(2, wrap_angle(yaw)),
                     yaw_rate=np.zeros(2), direction=np.ones(2, dtype=np.int8))


def reference_from_samples(times, positions, velocities, accelerations,
                           start_yaw: float = 0.0, min_speed: float = 1e-3) -> Reference:
    """A forward-driving :class:`Reference` from a sampled trajectory; the heading follows the
    velocity and holds its last value (``start_yaw`` at first) while the speed is below
    ``min_speed``."""
    times = finite_array('times', times).reshape(-1)
    vel = np.asarray(velocities, dtype=float)
    if vel.ndim != 2 or vel.shape[0] != times.size:
        raise ValueError(f'velocities must have shape ({times.size}, d), got {vel.shape}')
    if not np.isfinite(start_yaw):
        raise ValueError(f'start_yaw must be finite, got {start_yaw}')
    moving = np.linalg.norm(vel[:, :2], axis=1) >= min_speed
    heading = np.arctan2(vel[:, 1], vel[:, 0])
    last_move = np.where(moving, np.arange(times.size), -1)
    np.maximum.accumulate(last_move, out=last_move)
    yaw = np.where(last_move >= 0, heading[np.maximum(last_move, 0)], start_yaw)
    yaw = np.unwrap(yaw)
    yaw_rate = np.gradient(yaw, times) if times.size > 1 else np.zeros(times.size)
    return Reference(times=times, positions=positions, velocities=vel, accelerations=accelerations,
                     yaw=wrap_angle(yaw), yaw_rate=yaw_rate,
                     direction=np.ones(times.size, dtype=np.int8))
