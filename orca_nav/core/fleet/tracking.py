"""Trajectory tracking for a whole fleet: reference trajectory -> preferred velocity per robot.

Every robot may follow a :class:`Reference` (times, positions, velocities, yaw, driving direction).
:class:`FleetTracker` turns the references of all robots into preferred velocities in one
vectorised step (references are packed into padded ``(N, K_max)`` arrays):

    v_pref = v_ref(tau) + position_gain * (p_ref(tau) - p),   clamped to the robot's max speed.

``tau`` is each robot's *reference clock*. It advances with wall time, but it is kept within
``lookahead_time`` of the robot's actual progress (the reference sample nearest to the robot,
searched forward from the last progress point), so a robot that was held up by others follows a
carrot ``lookahead_time`` ahead of where it is on the path instead of chasing a stale, far-away
time point and cutting corners. The clock never passes the end of the current driving-direction
segment before the robot reaches the cusp (within ``cusp_tolerance``, or past it): a car stops at
the cusp and only then drives the next segment backward (``direction`` = -1).

A robot has reached its goal when its clock is at the end of the reference, it is within
``position_tolerance`` of the last position and, for yaw-aware robots (car, diff-drive), within
``yaw_tolerance`` of the last yaw. A car (``steered``) cannot correct a sideways error without a
manoeuvre, so at the end of its reference it only closes the error along its heading and accepts
a sideways error up to ``car_lateral_tolerance`` (a larger one is the planner's to fix by
replanning). ``yaw_rate`` gives yaw-aware robots a heading command
(reference yaw rate + feedback on the yaw error) that diff-drive robots use to turn in place.

In 3-D (``dim`` 3) the same law gives drones (vx, vy, vz) preferred velocities from their
(x, y, z) references: the fleet controller keeps one 3-D tracker for its drones' 3-D plans.

numpy only; no ROS.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from orca_nav.core.fleet.kinematics import (
    RobotLimits,
    admissible_twist,
    finite_array,
    planar_velocity_to_car,
    planar_velocity_to_twist,
    planar_velocity_to_unicycle,
)
from orca_nav.core.geometry import wrap_angle
from orca_nav.core.planning.reference import Reference


@dataclass(frozen=True)
class TrackingParams:
    """Gains and tolerances of the tracking law (SI units)."""

    position_gain: float = 1.5        # 1/s: feedback on the position error
    yaw_gain: float = 2.0             # 1/s: feedback on the yaw error (yaw-aware robots)
    lookahead_time: float = 1.0       # s: the carrot never leads the robot's progress by more
    progress_window: float = 4.0      # s of reference searched ahead for the robot's progress
    yaw_distance_scale: float = 0.3   # m per rad when matching yaw-aware robots to samples
    position_tolerance: float = 0.15  # m: goal reached
    yaw_tolerance: float = 0.2        # rad: goal reached (yaw-aware robots)
    cusp_tolerance: float = 0.25      # m: a cusp counts as reached
    # m: sideways goal error a car accepts (it cannot fix it in place)
    car_lateral_tolerance: float = 0.4

    def __post_init__(self):
        for name in ('position_gain', 'yaw_gain', 'lookahead_time', 'progress_window',
                     'yaw_distance_scale', 'position_tolerance', 'yaw_tolerance', 'cusp_tolerance',
                     'car_lateral_tolerance'):
            value = getattr(self, name)
            if not np.isfinite(value) or value <= 0.0:
                raise ValueError(f'{name} must be finite and > 0, got {value}')


@dataclass(frozen=True)
class TrackingCommand:
    """Output of one :meth:`FleetTracker.update` (arrays over all N robots)."""

    pref_velocity: np.ndarray    # (N, d) preferred velocity; zero for robots without a reference
    # (N,) +1 forward, -1 reversing segment (car/diff-drive drive backward)
    direction: np.ndarray
    yaw_rate: np.ndarray         # (N,) heading command for yaw-aware robots, 0 for the others
    reference_position: np.ndarray   # (N, d) carrot / reference point (current position if idle)
    active: np.ndarray           # (N,) bool: robot has a reference it has not finished
    reached: np.ndarray          # (N,) bool: robot has a reference and is at its end (tolerances)
    # (N,) the reference path's curvature where the robot is on it (rad per metre driven; 0 at
    # its end, on a turn in place, or without a reference): a car steers it ahead of any error
    path_curvature: np.ndarray


class FleetTracker:
    """Tracks one :class:`Reference` per robot for N robots, vectorised over robots."""

    def __init__(self, yaw_aware, dim: int = 2, params: Optional[TrackingParams] = None,
                 steered=None):
        """``yaw_aware`` (N,) bool: the goal yaw counts (car, diff-drive); ``steered`` (N,) bool:
        car-like, cannot turn in place (default: none)."""
        self.yaw_aware = np.asarray(yaw_aware, dtype=bool).reshape(-1)
        self.steered = np.zeros(self.yaw_aware.size, dtype=bool) if steered is None else \
            np.asarray(steered, dtype=bool).reshape(-1)
        if self.steered.size != self.yaw_aware.size:
            raise ValueError(f'steered must have {self.yaw_aware.size} values, '
                             f'got {self.steered.size}')
        if dim not in (2, 3):
            raise ValueError(f'dim must be 2 or 3, got {dim}')
        self.dim = dim
        self.params = params or TrackingParams()
        self.n = self.yaw_aware.size
        self._refs = [None] * self.n
        self._start = np.zeros(self.n)          # wall time of each reference's t = 0
        self._tau = np.zeros(self.n)            # reference clock
        self._last_now = np.full(self.n, np.nan)   # NaN: first update after set_reference
        self._progress = np.zeros(self.n, dtype=np.int64)
        self._pack()

    # ------------------------------------------------------------------ references
    def set_reference(self, index: int, reference: Optional[Reference], start_time: float) -> None:
        """Robot ``index`` follows ``reference`` whose t = 0 is wall time ``start_time``;
        ``None`` clears it (the robot holds still)."""
        if not 0 <= index < self.n:
            raise ValueError(f'index {index} out of range for {self.n} robots')
        if reference is not None:
            if reference.dim != self.dim:
                raise ValueError(f'reference for robot {index} is {reference.dim}-D, '
                                 f'tracker is {self.dim}-D')
            if not np.isfinite(start_time):
                raise ValueError(f'start_time must be finite, got {start_time}')
        self._refs[index] = reference
        self._start[index] = float(start_time) if reference is not None else 0.0
        self._tau[index] = 0.0
        self._last_now[index] = np.nan
        self._progress[index] = 0
        self._pack()

    def clear(self, index: int) -> None:
        self.set_reference(index, None, 0.0)

    def reference(self, index: int) -> Optional[Reference]:
        return self._refs[index]

    @property
    def has_reference(self) -> np.ndarray:
        """(N,) bool: the robot follows a reference."""
        return self._has.copy()

    def _pack(self) -> None:
        """Padded (N, K_max) copies of all references; padding repeats the last sample."""
        lengths = np.array([len(r) if r is not None else 2 for r in self._refs], dtype=np.int64)
        k_max = int(lengths.max()) if self.n else 2
        n, d = self.n, self.dim
        self._len = lengths
        self._has = np.array([r is not None for r in self._refs], dtype=bool)
        self._t = np.full((n, k_max), np.inf)
        self._t[:, :2] = [0.0, 1.0]
        self._p = np.zeros((n, k_max, d))
        self._v = np.zeros((n, k_max, d))
        self._yaw = np.zeros((n, k_max))
        self._yaw_rate = np.zeros((n, k_max))
        self._dir = np.ones((n, k_max), dtype=np.int8)
        self._curvature = np.zeros((n, k_max))     # of the piece from each sample to the next
        self._seg_end = np.tile(np.arange(k_max), (n, 1))
        for i, ref in enumerate(self._refs):
            if ref is None:
                continue
            k = len(ref)
            self._t[i, :k] = ref.times
            self._p[i, :k], self._p[i, k:] = ref.positions, ref.positions[-1]
            self._v[i, :k] = ref.velocities
            self._yaw[i, :k], self._yaw[i, k:] = ref.yaw, ref.yaw[-1]
            self._yaw_rate[i, :k] = ref.yaw_rate
            self._dir[i, :k], self._dir[i, k:] = ref.direction, ref.direction[-1]
            self._seg_end[i, :k], self._seg_end[i, k:] = ref.segment_ends(), k - 1
            self._curvature[i, :k - 1] = _piece_curvature(ref)

    # ------------------------------------------------------------------ control step
    def update(self, now: float, positions, yaws, max_speed,
               max_yaw_rate=np.inf) -> TrackingCommand:
        """One tracking step at wall time ``now`` for robots at ``positions`` (N, d) with
        ``yaws`` (N,)."""
        p = finite_array('positions', positions, (self.n, self.dim))
        has = self._has
        if not has.any():       # (yaws and limits are not read then)
            return self._idle(p)
        yaw = finite_array('yaws', np.reshape(yaws, -1), (self.n,))
        vmax = np.broadcast_to(finite_array('max_speed', max_speed, np.shape(max_speed)), (self.n,))
        wmax = np.broadcast_to(np.asarray(max_yaw_rate, dtype=float), (self.n,))
        prm = self.params
        rows = np.arange(self.n)
        last = self._len - 1

        # Reference clock: wall time since the start on the first step, then advance by dt.
        first = np.isnan(self._last_now)
        dt = np.where(first, 0.0, now - np.nan_to_num(self._last_now))
        tau = np.where(first, np.maximum(now - self._start, 0.0), self._tau + np.maximum(dt, 0.0))

        # Progress: the sample nearest to the robot, searched forward inside the current segment.
        prog = self._progress
        seg_end = self._seg_end[rows, prog]
        t_prog = self._t[rows, prog]
        k = np.arange(self._t.shape[1])
        # The first step after set_reference searches the whole first segment.
        horizon = np.where(first, np.inf, t_prog + prm.progress_window)
        window = (k >= prog[:, None]) & (k <= seg_end[:, None]) & (self._t <= horizon[:, None])
        dist2 = np.sum((self._p - p[:, None, :]) ** 2, axis=2)
        yaw_err2 = wrap_angle(self._yaw - yaw[:, None]) ** 2
        match = dist2 + (np.where(self.yaw_aware, prm.yaw_distance_scale ** 2, 0.0)[:, None]
                         * yaw_err2)
        prog = np.argmin(np.where(window, match, np.inf), axis=1)
        # A cusp (end of a segment that is not the last) is passed once the robot is close to it,
        # or past it: its nearest sample is the segment's last (a car overshooting sideways).
        cusp_reached = (seg_end < last) & ((dist2[rows, seg_end] <= prm.cusp_tolerance ** 2) |
                                           (prog == seg_end))
        prog = np.where(cusp_reached, seg_end + 1, prog)
        seg_end = self._seg_end[rows, prog]
        t_prog = self._t[rows, prog]
        tau = np.clip(tau, t_prog, np.minimum(t_prog + prm.lookahead_time, self._t[rows, seg_end]))

        # Interpolate the reference at tau (padded times are inf, so they never count).
        idx = np.clip(np.sum(self._t <= tau[:, None], axis=1) - 1, 0, np.maximum(last - 1, 0))
        t0, t1 = self._t[rows, idx], self._t[rows, idx + 1]
        alpha = np.clip((tau - t0) / np.where(np.isfinite(t1), t1 - t0, 1.0), 0.0, 1.0)
        a = alpha[:, None]
        p_ref = (1 - a) * self._p[rows, idx] + a * self._p[rows, idx + 1]
        v_ref = (1 - a) * self._v[rows, idx] + a * self._v[rows, idx + 1]
        yaw0 = self._yaw[rows, idx]
        yaw_ref = yaw0 + alpha * wrap_angle(self._yaw[rows, idx + 1] - yaw0)
        yaw_rate_ref = ((1 - alpha) * self._yaw_rate[rows, idx]
                        + alpha * self._yaw_rate[rows, idx + 1])
        direction = self._dir[rows, prog].astype(np.int64)
        curvature = self._curvature[rows, prog]

        pref = v_ref + prm.position_gain * (p_ref - p)
        speed = np.linalg.norm(pref, axis=1)
        scale = np.where(speed > vmax, vmax / np.maximum(speed, 1e-12), 1.0)
        pref = pref * scale[:, None]

        at_end = (seg_end == last) & (tau >= self._t[rows, last])
        goal_vec = self._p[rows, last] - p
        goal_err = np.linalg.norm(goal_vec, axis=1)
        yaw_err = wrap_angle(self._yaw[rows, last] - yaw)
        # Cars at the end: close the error along the heading only.
        car_end = at_end & self.steered
        if car_end.any():
            heading = np.zeros_like(p)
            heading[:, 0], heading[:, 1] = np.cos(yaw), np.sin(yaw)
            along = np.sum(goal_vec * heading, axis=1)
            pref[car_end] = (prm.position_gain * along[:, None] * heading)[car_end]
            pref = pref * np.minimum(
                1.0, vmax / np.maximum(np.linalg.norm(pref, axis=1), 1e-12))[:, None]
            car_in = (np.abs(along) <= prm.position_tolerance) & \
                (goal_err <= prm.car_lateral_tolerance)
            direction = np.where(car_end, np.where(along >= 0.0, 1, -1), direction)
        else:
            car_in = np.zeros(self.n, dtype=bool)
        in_position = at_end & np.where(self.steered, car_in, goal_err <= prm.position_tolerance)
        reached = has & in_position & (~self.yaw_aware | (np.abs(yaw_err) <= prm.yaw_tolerance))
        pref[in_position | ~has] = 0.0

        yaw_cmd = np.where(in_position, prm.yaw_gain * yaw_err,
                           yaw_rate_ref + prm.yaw_gain * wrap_angle(yaw_ref - yaw))
        yaw_cmd = np.where(self.yaw_aware & has & ~reached, np.clip(yaw_cmd, -wmax, wmax), 0.0)

        self._tau = np.where(has, tau, 0.0)
        self._progress = np.where(has, prog, 0)
        self._last_now = np.where(has, now, np.nan)
        return TrackingCommand(pref_velocity=pref, direction=np.where(has, direction, 1),
                               yaw_rate=yaw_cmd,
                               reference_position=np.where(has[:, None], p_ref, p),
                               active=has & ~reached, reached=reached,
                               path_curvature=np.where(has & ~at_end, curvature, 0.0))

    def _idle(self, p: np.ndarray) -> TrackingCommand:
        """`update` when no robot has a reference (a fleet steering by goals): what its full
        computation gives then, without the per-cycle cost of it."""
        self._tau = np.zeros(self.n)
        self._progress = np.zeros(self.n, dtype=np.int64)
        self._last_now = np.full(self.n, np.nan)
        return TrackingCommand(pref_velocity=np.zeros_like(p),
                               direction=np.ones(self.n, dtype=np.int64),
                               yaw_rate=np.zeros(self.n), reference_position=p.copy(),
                               active=np.zeros(self.n, dtype=bool),
                               reached=np.zeros(self.n, dtype=bool),
                               path_curvature=np.zeros(self.n))

    def progress_time(self) -> np.ndarray:
        """(N,) reference time of each robot's progress point (0 without a reference)."""
        return np.where(self._has, self._t[np.arange(self.n), self._progress], 0.0)


def _piece_curvature(reference: Reference) -> np.ndarray:
    """(K - 1,) yaw change per metre driven from each sample of a planar reference to the next
    (the same in either driving direction); 0 where the robot does not move (a cusp, a turn in
    place, a hold)."""
    step = np.linalg.norm(np.diff(reference.positions[:, :2], axis=0), axis=1)
    turn = wrap_angle(np.diff(reference.yaw))
    return np.divide(turn, step, out=np.zeros_like(step), where=step > 1e-6)


def tracking_twist(v_des, yaw, limits: RobotLimits, command: Optional[TrackingCommand],
                   heading_time: float = 0.2, car_heading_time: float = 0.5,
                   turn_in_place_speed: float = 0.05) -> np.ndarray:
    """Body twists (N, 3) that execute desired global velocities ``v_des`` (N, 2) (ORCA's output)
    for robots tracking references, per kinematics (``kinematics.planar_velocity_to_*``).

    Robots with a reference drive in its direction: on a reversing segment a car or diff-drive
    robot drives backward (it is mapped as a robot driving forward with heading yaw + pi, then the
    speed is negated; the yaw rate is the same), and on a forward segment it does not reverse,
    except a car whose ORCA velocity points behind its driving direction while the tracker's
    does not (ORCA asks it to give way): it backs off toward it, within the same NH-ORCA bound.
    A diff-drive robot whose desired speed is below ``turn_in_place_speed`` turns in place at the
    tracker's yaw rate (turn-in-place segments, final heading at the goal). Robots without a
    reference, holonomic robots and quadrotors get ``planar_velocity_to_twist``; all robots do
    when `command` is None (no robot has a reference).
    """
    v_des = np.asarray(v_des, dtype=float)
    yaw = np.asarray(yaw, dtype=float)
    twist = planar_velocity_to_twist(v_des, yaw, limits, heading_time)
    if command is None:
        return twist
    tracking = command.active | command.reached
    diff = tracking & limits.diff_drive
    car = tracking & limits.car
    if not (diff.any() or car.any()):
        return twist    # planar_velocity_to_twist's twists are admissible already
    backward = command.direction < 0
    heading = np.where(backward, yaw + np.pi, yaw)
    sign = np.where(backward, -1.0, 1.0)
    if diff.any():
        v, w = planar_velocity_to_unicycle(v_des[diff], heading[diff], limits.max_speed[diff],
                                           limits.max_yaw_rate[diff], heading_time,
                                           allow_reverse=False)
        slow = np.linalg.norm(v_des[diff], axis=1) < turn_in_place_speed
        twist[diff, 0] = np.where(slow, 0.0, sign[diff] * v)
        twist[diff, 1] = 0.0
        twist[diff, 2] = np.where(slow, command.yaw_rate[diff], w)
    if car.any():
        # ORCA's velocity behind the driving direction where the tracker's is not: ORCA asks
        # the car to give way. It backs off toward it; driving on (a car keeps speed to turn)
        # took it into what it gave way to, where the safety layer froze it for good.
        drive = np.column_stack([np.cos(heading[car]), np.sin(heading[car])])
        give_way = (np.sum(v_des[car] * drive, axis=1) < 0.0) & \
            (np.sum(command.pref_velocity[car] * drive, axis=1) >= 0.0)
        # Following its path, it steers the path's own curve too: steering only once a heading
        # error built up, it lags on every curve and ends its manoeuvre beside the goal.
        ahead = np.where(give_way, 0.0, command.path_curvature[car])
        v, w = planar_velocity_to_car(v_des[car], heading[car], limits.min_turning_radius[car],
                                      limits.max_speed[car], limits.max_yaw_rate[car],
                                      car_heading_time, allow_reverse=give_way,
                                      path_curvature=ahead)
        twist[car, 0], twist[car, 1], twist[car, 2] = sign[car] * v, 0.0, w
    return admissible_twist(twist, limits)
