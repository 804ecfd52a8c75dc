"""Planar robot kinematics, batched over robots: forward models, limits and velocity mapping.

Conventions
-----------
* A pose is (x, y, yaw) in the global frame; yaw counter-clockwise from +x (REP-103).
* A *twist* is the body-frame velocity (vx, vy, wz) a robot executes, as in a ROS `cmd_vel`
  (geometry_msgs/Twist: linear.x, linear.y, angular.z in `base_link`, REP-105).
* Models (`KINEMATIC_MODELS`):
  - ``holonomic`` and ``quadrotor``: any (vx, vy); |(vx, vy)| <= max_speed;
    |wz| <= max_yaw_rate. A quadrotor also climbs: its linear velocity (vx, vy, vz) is bounded
    as a 3-D vector, |(vx, vy, vz)| <= max_speed, and its change by max_accel * dt
    (`limit_velocity_3d`); its altitude integrates vz.
  - ``diff_drive`` (unicycle): vy = 0; |vx| <= max_speed; |wz| <= max_yaw_rate.
  - ``car`` (kinematic bicycle, reference point = rear-axle centre): vy = 0; |vx| <= max_speed;
    the path curvature wz / vx is limited by the steering: |wz| <= |vx| / min_turning_radius
    (min_turning_radius = wheelbase / tan(max_steer)); a car cannot turn on the spot.
* Time is discretised with a zero-order hold on the twist: at the start of a step the twist
  moves from the previous one toward the command by at most max_accel * dt (linear part), then
  it is held for the step and the pose is integrated *exactly* along the resulting arc
  (the SE(2) exponential), so there is no Euler drift however long the step.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property
from typing import Sequence

import numpy as np

from orca_nav.core.fleet.robots import KINEMATICS
from orca_nav.core.geometry import rotate, row_norms, world_to_body, wrap_angle
from orca_nav.core.validation import finite_array
from orca_nav.core.validation import per_robot_values as _per_robot

KINEMATIC_MODELS = KINEMATICS     # the codes below index it
HOLONOMIC, DIFF_DRIVE, CAR, QUADROTOR = range(4)
_CAR_HEADING_TIME = 0.5         # s: planar_velocity_to_car's defaults
_CAR_MIN_SPEED_FRACTION = 0.5


def _along(value, n: int) -> np.ndarray:
    """`value` as a float array of shape (n,), broadcast only when it is not one already."""
    arr = np.asarray(value, dtype=float)
    return arr if arr.shape == (n,) else np.broadcast_to(arr, (n,))


@dataclass(frozen=True)
class RobotLimits:
    """Per-robot model and limits, each an (N,) array. Build with `RobotLimits.create`."""

    model: np.ndarray               # int codes into KINEMATIC_MODELS
    max_speed: np.ndarray
    max_accel: np.ndarray
    max_yaw_rate: np.ndarray
    min_turning_radius: np.ndarray  # used by car robots only

    @classmethod
    def create(cls, kinematics: Sequence[str], max_speed, max_accel, max_yaw_rate,
               min_turning_radius=1.0) -> 'RobotLimits':
        """Scalars broadcast over robots. Raises ValueError naming a bad field and index."""
        names = list(kinematics)
        for i, name in enumerate(names):
            if name not in KINEMATIC_MODELS:
                raise ValueError(f'kinematics[{i}]: {name!r} is not one of '
                                 f'{", ".join(KINEMATIC_MODELS)}')
        n = len(names)
        return cls(model=np.array([KINEMATIC_MODELS.index(k) for k in names], dtype=int),
                   max_speed=_per_robot('max_speed', max_speed, n),
                   max_accel=_per_robot('max_accel', max_accel, n),
                   max_yaw_rate=_per_robot('max_yaw_rate', max_yaw_rate, n),
                   min_turning_radius=_per_robot('min_turning_radius', min_turning_radius, n))

    def __len__(self) -> int:
        return int(self.model.size)

    def subset(self, rows) -> 'RobotLimits':
        """The limits of the robots `rows` (indices or a boolean mask)."""
        return RobotLimits(*(getattr(self, f.name)[rows] for f in fields(self)))

    # The model masks are read several times a control cycle; the limits never change (a new
    # configuration builds new ones), so each is computed once.
    @cached_property
    def planar_holonomic(self) -> np.ndarray:
        """(N,) bool: robots that can move sideways (holonomic and quadrotor)."""
        return (self.model == HOLONOMIC) | (self.model == QUADROTOR)

    @cached_property
    def diff_drive(self) -> np.ndarray:
        """(N,) bool: diff-drive robots."""
        return self.model == DIFF_DRIVE

    @cached_property
    def car(self) -> np.ndarray:
        """(N,) bool: car robots."""
        return self.model == CAR

    @cached_property
    def has_car(self) -> bool:
        return bool(self.car.any())


def _clip_norm(vectors: np.ndarray, max_norm: np.ndarray) -> np.ndarray:
    norm = row_norms(vectors)
    scale = np.where(norm > max_norm, max_norm / np.maximum(norm, 1e-300), 1.0)
    return vectors * scale[:, None]


def admissible_twist(twist, limits: RobotLimits) -> np.ndarray:
    """Projects (N,3) body twists onto what each robot's model allows (no acceleration limit).

    Non-holonomic robots lose vy; speeds are clipped; a car keeps the commanded curvature
    wz/vx clipped to 1/min_turning_radius (wz = 0 when vx = 0, it cannot turn on the spot).
    """
    return _made_admissible(finite_array('twist', twist, (len(limits), 3)).copy(), limits)


def _made_admissible(twist: np.ndarray, limits: RobotLimits) -> np.ndarray:
    """`admissible_twist` in place on checked (N, 3) twists of this module's own making."""
    twist[~limits.planar_holonomic, 1] = 0.0
    twist[:, :2] = _clip_norm(twist[:, :2], limits.max_speed)
    if limits.has_car:
        car = limits.car
        vx = twist[car, 0]
        max_rate = np.abs(vx) / limits.min_turning_radius[car]
        twist[car, 2] = np.clip(twist[car, 2], -max_rate, max_rate)
    twist[:, 2] = np.minimum(np.maximum(twist[:, 2], -limits.max_yaw_rate), limits.max_yaw_rate)
    return twist


def limit_twist(command, previous, limits: RobotLimits, dt: float) -> np.ndarray:
    """The twist each robot executes over the next `dt` when commanded `command` (N,3).

    `previous` (N,3) is the twist held during the last step. The command is first made
    admissible (`admissible_twist`); then the linear velocity moves toward it by at most
    max_accel * dt (as a vector, so holonomic robots also respect the bound while turning).
    For a car the commanded curvature is kept while its speed ramps, so the path stays
    within the steering limit. The yaw rate is bounded by max_yaw_rate only.
    """
    if not (np.isfinite(dt) and dt > 0.0):
        raise ValueError(f'dt must be finite and > 0, got {dt}')
    n = len(limits)
    target = admissible_twist(command, limits)
    previous = finite_array('previous', previous, (n, 3))
    step = _clip_norm(target[:, :2] - previous[:, :2], limits.max_accel * dt)
    out = target.copy()
    out[:, :2] = previous[:, :2] + step
    if limits.has_car:
        car = limits.car
        # Keep the target curvature at the ramped speed (0 where the target speed is 0).
        v_target = target[car, 0]
        curvature = np.divide(target[car, 2], v_target, out=np.zeros_like(v_target),
                              where=v_target != 0.0)
        # admissible_twist bounds it already, except where a denormal speed rounds it up.
        bound = 1.0 / limits.min_turning_radius[car]
        curvature = np.clip(curvature, -bound, bound)
        out[car, 2] = np.clip(curvature * out[car, 0], -limits.max_yaw_rate[car],
                              limits.max_yaw_rate[car])
    return out


def limit_velocity_3d(command, previous, max_speed, max_accel, dt: float) -> np.ndarray:
    """The linear velocities (N,3) a quadrotor executes over the next `dt` when commanded
    `command` (N,3), having held `previous` (N,3): the command clipped to max_speed (as a 3-D
    vector), then reached from `previous` by a step of at most max_accel * dt (a 3-D vector)."""
    if not (np.isfinite(dt) and dt > 0.0):
        raise ValueError(f'dt must be finite and > 0, got {dt}')
    n = len(np.atleast_2d(command))
    target = _clip_norm(finite_array('command', command, (n, 3)),
                        _per_robot('max_speed', max_speed, n))
    previous = finite_array('previous', previous, (n, 3))
    step = _clip_norm(target - previous, _per_robot('max_accel', max_accel, n) * dt)
    return previous + step


def integrate_pose(pose, twist, dt: float) -> np.ndarray:
    """Exact pose after holding body twists (N,3) for dt from poses (N,3) (SE(2) exponential).

    With theta = wz * dt the body-frame displacement is
    (vx sin(theta) - vy (1 - cos(theta)), vx (1 - cos(theta)) + vy sin(theta)) / wz,
    written with sinc so wz -> 0 is the straight line without a branch.
    """
    pose = np.asarray(pose, dtype=float)
    twist = np.asarray(twist, dtype=float)
    theta = twist[:, 2] * dt
    a = dt * np.sinc(theta / np.pi)                                   # sin(theta) / wz
    b = dt * np.sin(0.5 * theta) * np.sinc(0.5 * theta / np.pi)       # (1 - cos(theta)) / wz
    body = np.empty((len(twist), 2))
    body[:, 0] = twist[:, 0] * a - twist[:, 1] * b
    body[:, 1] = twist[:, 0] * b + twist[:, 1] * a
    out = np.empty_like(pose)
    out[:, :2] = pose[:, :2] + rotate(body, pose[:, 2])
    out[:, 2] = wrap_angle(pose[:, 2] + theta)
    return out


# ---------------------------------------------------------------------------------------------
# Desired planar velocity (what ORCA outputs) -> commands a non-holonomic robot can execute.

def _heading_inputs(v_des, yaw, max_speed):
    """v_des (N, 2), yaw (N,) and max_speed (N,) as checked float arrays."""
    v_des = np.atleast_2d(np.asarray(v_des, dtype=float))
    n = v_des.shape[0]
    return (finite_array('v_des', v_des, (n, 2)), finite_array('yaw', _along(yaw, n), (n,)),
            _per_robot('max_speed', max_speed, n))


def _desired_heading(v_des, yaw, max_speed, allow_reverse):
    """Checked inputs -> (speed (N,) clipped to max_speed, heading error alpha (N,),
    backwards (N,)).

    Where `allow_reverse` (bool, or (N,) bool per robot), a desired direction behind the robot
    (|alpha| > pi/2) is driven backwards: alpha is then the error of the robot's tail, so
    |alpha| <= pi/2.
    """
    n = len(yaw)
    speed = np.minimum(row_norms(v_des), max_speed)
    alpha = np.where(speed > 0.0, wrap_angle(np.arctan2(v_des[:, 1], v_des[:, 0]) - yaw), 0.0)
    backwards = np.zeros(n, dtype=bool)
    allow = np.asarray(allow_reverse, dtype=bool)
    if allow.any():
        backwards = allow & (np.abs(alpha) > 0.5 * np.pi)     # (broadcast to (n,))
        alpha = np.where(backwards, wrap_angle(alpha - np.pi), alpha)
    return speed, alpha, backwards


def _check_heading_time(heading_time: float) -> None:
    if not (np.isfinite(heading_time) and heading_time > 0.0):
        raise ValueError(f'heading_time must be finite and > 0, got {heading_time}')


def planar_velocity_to_unicycle(v_des, yaw, max_speed, max_yaw_rate, heading_time: float = 0.2,
                                allow_reverse: bool = False):
    """Diff-drive (v, omega) that tracks desired global velocities `v_des` (N,2) (NH-ORCA idea).

    The robot turns toward the desired direction with omega = alpha / heading_time (alpha the
    heading error, clipped to +-max_yaw_rate) and drives with the projection of v_des on its
    heading, v = |v_des| cos(alpha) (0 when facing away, |alpha| >= pi/2). With
    `allow_reverse` a robot facing away drives backwards instead, so |alpha| <= pi/2 always.
    Keep heading_time >= the control period so the heading does not overshoot within a cycle.
    Returns (v (N,), omega (N,)); |v| <= max_speed. See `tracking_error_bound`.
    """
    v_des, yaw, max_speed = _heading_inputs(v_des, yaw, max_speed)
    max_yaw_rate = _per_robot('max_yaw_rate', max_yaw_rate, len(yaw))
    _check_heading_time(heading_time)
    return _unicycle(v_des, yaw, max_speed, max_yaw_rate, heading_time, allow_reverse)


def _unicycle(v_des, yaw, max_speed, max_yaw_rate, heading_time, allow_reverse):
    """`planar_velocity_to_unicycle` of checked (N,) arrays (the fleet's own, each cycle)."""
    speed, alpha, backwards = _desired_heading(v_des, yaw, max_speed, allow_reverse)
    v = speed * np.maximum(np.cos(alpha), 0.0)
    v = np.where(backwards, -v, v)
    omega = np.minimum(np.maximum(alpha / heading_time, -max_yaw_rate), max_yaw_rate)
    return v, omega


def planar_velocity_to_car(v_des, yaw, min_turning_radius, max_speed, max_yaw_rate=np.inf,
                           heading_time: float = _CAR_HEADING_TIME, allow_reverse=True,
                           min_speed_fraction: float = _CAR_MIN_SPEED_FRACTION,
                           path_curvature=0.0):
    """Car (v, omega) with |omega| <= |v| / min_turning_radius toward desired velocities (N,2).

    Like the unicycle mapping, but a car cannot turn on the spot: while the heading error
    alpha is large it keeps at least `min_speed_fraction` of the desired speed so that it can
    turn, and it turns at the tightest curvature the steering allows. Where `allow_reverse`
    (bool, or per car) a car whose desired direction is behind it (|alpha| > pi/2) reverses
    toward it. `path_curvature` (N,; yaw change per metre driven) is steered on top of what
    closes the heading error: the curve of a path the car follows.
    Returns (v (N,), omega (N,)); omega = curvature * v with |curvature| <= 1/min_turning_radius.
    Keeping speed while turning costs tracking accuracy: over a cycle of length T the car
    deviates from v_des * T by at most |v_des| T sqrt(1 + f^2) with reversing, |v_des| T (1 + f)
    without (f = min_speed_fraction), against |v_des| T for `tracking_error_bound`'s unicycle.
    """
    v_des, yaw, max_speed = _heading_inputs(v_des, yaw, max_speed)
    n = len(yaw)
    radius = _per_robot('min_turning_radius', min_turning_radius, n)
    max_yaw_rate = np.broadcast_to(np.asarray(max_yaw_rate, dtype=float), (n,))
    _check_heading_time(heading_time)
    if not 0.0 <= min_speed_fraction <= 1.0:
        raise ValueError(f'min_speed_fraction must be in [0, 1], got {min_speed_fraction}')
    return _car(v_des, yaw, radius, max_speed, max_yaw_rate, heading_time, allow_reverse,
                min_speed_fraction, path_curvature)


def _car(v_des, yaw, radius, max_speed, max_yaw_rate, heading_time, allow_reverse,
         min_speed_fraction, path_curvature=0.0):
    """`planar_velocity_to_car` of checked (N,) arrays (the fleet's own, each cycle)."""
    speed, alpha, backwards = _desired_heading(v_des, yaw, max_speed, allow_reverse)
    n = len(yaw)
    magnitude = speed * np.maximum(np.cos(alpha), min_speed_fraction)
    v = np.where(backwards, -magnitude, magnitude)
    # Yaw rate wanted to close the heading error (reversing turns the tail toward it).
    yaw_rate = alpha / heading_time
    curvature = np.divide(yaw_rate, v, out=np.zeros(n), where=v != 0.0) + path_curvature
    curvature = np.clip(curvature, -1.0 / radius, 1.0 / radius)
    omega = np.clip(curvature * v, -max_yaw_rate, max_yaw_rate)
    return v, omega


def tracking_error_bound(speed, control_period: float, latency: float = 0.0):
    """Largest distance a diff-drive robot driven by `planar_velocity_to_unicycle` ends up from
    where the holonomic velocity would have taken it, within one control cycle.

    ORCA runs every cycle from the measured states, so what its safety argument needs is the
    deviation between two cycles. With speed s = |v_des|, heading error alpha and the command
    held for T = control_period + latency, the robot drives s cos(alpha) along a heading that
    turns toward v_des, so its displacement differs from v_des * T by at most
    s T |sin(alpha)| <= s T (exactly s T when it turns on the spot). Hence

        E = speed * (control_period + latency)

    Enlarging each robot's ORCA radius by E keeps the real discs apart during the cycle whenever
    the enlarged discs are apart at its end. Works on scalars or arrays.
    """
    speed = np.asarray(speed, dtype=float)
    if np.any(~np.isfinite(speed) | (speed < 0.0)):
        raise ValueError(f'speed must be finite and >= 0, got {speed}')
    for name, value in (('control_period', control_period), ('latency', latency)):
        if not (np.isfinite(value) and value >= 0.0):
            raise ValueError(f'{name} must be finite and >= 0, got {value}')
    return speed * (control_period + latency)


def planar_velocity_to_twist(v_des, yaw, limits: RobotLimits, heading_time: float = 0.2,
                             allow_reverse: bool = False) -> np.ndarray:
    """Body twists (N,3) for desired global velocities (N,2), per robot model.

    Holonomic/quadrotor: v_des rotated into the body frame (no yaw command); diff_drive:
    `planar_velocity_to_unicycle`; car: `planar_velocity_to_car` (which always may reverse).
    The result is admissible for `limits` (acceleration limits are the caller's business).
    """
    n = len(limits)
    v_des = finite_array('v_des', np.atleast_2d(np.asarray(v_des, dtype=float)), (n, 2))
    yaw = finite_array('yaw', _along(yaw, n), (n,))
    twist = np.zeros((n, 3))
    sideways = limits.planar_holonomic
    if sideways.any():
        twist[sideways, :2] = world_to_body(v_des[sideways], yaw[sideways])
    # The limits are checked where they were created: the mappings take them as they are.
    diff = limits.diff_drive
    if diff.any():
        _check_heading_time(heading_time)
        v, w = _unicycle(v_des[diff], yaw[diff], limits.max_speed[diff],
                         limits.max_yaw_rate[diff], heading_time, allow_reverse)
        twist[diff, 0], twist[diff, 2] = v, w
    if limits.has_car:
        car = limits.car
        v, w = _car(v_des[car], yaw[car], limits.min_turning_radius[car], limits.max_speed[car],
                    limits.max_yaw_rate[car], _CAR_HEADING_TIME, True, _CAR_MIN_SPEED_FRACTION)
        twist[car, 0], twist[car, 2] = v, w
    return _made_admissible(twist, limits)
