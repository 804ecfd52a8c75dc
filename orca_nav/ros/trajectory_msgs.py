"""core Reference <-> nav_msgs/Path and trajectory_msgs/MultiDOFJointTrajectory.

Trajectory message convention (standard fields only):

* ``header.frame_id`` is the global frame; ``header.stamp`` is the ROS time at which
  ``time_from_start`` = 0. planner_node stamps it with the odometry state the plan starts from,
  so ``time_from_start`` 0 is that state, not the moment of publishing.
* Joint 0, ``<robot>/base_link``: per point, the pose (``transforms``), the velocity (linear, and
  angular z = yaw rate) and the acceleration, all in the global frame.
* Joint 1, ``<robot>/driving_direction``: per point, ``transforms[1].translation.x`` is +1.0 when
  the robot drives forward and -1.0 when it reverses (its velocity against its heading); the
  rest of that transform is identity and its velocities and accelerations are zero. The
  direction comes from ``Reference.direction`` and travels with the plan, so no consumer has to
  guess it.
* A trajectory from a third-party planner with the base joint only: the direction is inferred
  from the geometry, a sample reversing when its motion to the next sample is against its
  heading (:func:`path_timing.step_directions`).
* An empty trajectory (no points) means "stop tracking and hold still".
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
from geometry_msgs.msg import PoseStamped, Transform, Twist
from nav_msgs.msg import Path
from trajectory_msgs.msg import MultiDOFJointTrajectory, MultiDOFJointTrajectoryPoint

from orca_nav.core.planning.path_timing import step_directions
from orca_nav.core.planning.reference import Reference
from orca_nav.ros.convert import (
    quaternion_to_yaw,
    seconds_to_duration,
    seconds_to_time,
    stamp_to_seconds,
    yaw_to_quaternion,
)

DIRECTION_JOINT = 'driving_direction'
_HOLD_S = 1e-3      # a single-point trajectory holds its pose: a Reference needs two samples


def direction_joint_name(pose_joint: str) -> str:
    """`<robot>/driving_direction` beside the pose joint `<robot>/base_link`."""
    namespace = pose_joint.rpartition('/')[0]
    return f'{namespace}/{DIRECTION_JOINT}' if namespace else DIRECTION_JOINT


def _is_direction_joint(name: str) -> bool:
    return name == DIRECTION_JOINT or name.endswith('/' + DIRECTION_JOINT)


def _xyz(row: np.ndarray) -> Tuple[float, float, float]:
    return float(row[0]), float(row[1]), float(row[2]) if row.size > 2 else 0.0


def reference_to_path(reference: Reference, frame_id: str, start_s: float) -> Path:
    """nav_msgs/Path: one PoseStamped per sample, stamped start + t."""
    msg = Path()
    msg.header.frame_id = frame_id
    msg.header.stamp = seconds_to_time(start_s)
    for t, pos, yaw in zip(reference.times, reference.positions, reference.yaw):
        pose = PoseStamped()
        pose.header.frame_id = frame_id
        pose.header.stamp = seconds_to_time(start_s + t)
        p = pose.pose.position
        p.x, p.y, p.z = _xyz(pos)
        pose.pose.orientation = yaw_to_quaternion(yaw)
        msg.poses.append(pose)
    return msg


def empty_path(frame_id: str, stamp_s: float) -> Path:
    """A Path without poses: no plan (the robot holds still)."""
    msg = Path()
    msg.header.frame_id = frame_id
    msg.header.stamp = seconds_to_time(stamp_s)
    return msg


def reference_to_trajectory(reference: Reference, frame_id: str, start_s: float,
                            joint_name: str) -> MultiDOFJointTrajectory:
    """The trajectory message of the module docstring: joint `joint_name` (`<robot>/base_link`)
    and its driving-direction joint; t = 0 at ROS time `start_s`."""
    msg = empty_trajectory(frame_id, start_s)
    msg.joint_names = [joint_name, direction_joint_name(joint_name)]
    for t, pos, vel, acc, yaw, yaw_rate, direction in zip(
            reference.times, reference.positions, reference.velocities,
            reference.accelerations, reference.yaw, reference.yaw_rate, reference.direction):
        pose = Transform()
        pose.translation.x, pose.translation.y, pose.translation.z = _xyz(pos)
        pose.rotation = yaw_to_quaternion(yaw)
        driving = Transform()
        driving.translation.x = 1.0 if direction > 0 else -1.0
        driving.rotation.w = 1.0
        velocity = Twist()
        velocity.linear.x, velocity.linear.y, velocity.linear.z = _xyz(vel)
        velocity.angular.z = float(yaw_rate)
        acceleration = Twist()
        acceleration.linear.x, acceleration.linear.y, acceleration.linear.z = _xyz(acc)
        msg.points.append(MultiDOFJointTrajectoryPoint(
            transforms=[pose, driving], velocities=[velocity, Twist()],
            accelerations=[acceleration, Twist()], time_from_start=seconds_to_duration(t)))
    return msg


def empty_trajectory(frame_id: str, stamp_s: float) -> MultiDOFJointTrajectory:
    """A trajectory without points: the robot stops tracking and holds still."""
    msg = MultiDOFJointTrajectory()
    msg.header.frame_id = frame_id
    msg.header.stamp = seconds_to_time(stamp_s)
    return msg


def _first_bad_row(values: np.ndarray) -> Optional[int]:
    bad = ~np.isfinite(values).all(axis=1)
    return int(np.argmax(bad)) if bad.any() else None


def msg_to_reference(msg: MultiDOFJointTrajectory, dim: int = 2
                     ) -> Tuple[Optional[Reference], float, str]:
    """-> (reference or None for an empty trajectory, start time in seconds, frame_id).

    Reads the convention of the module docstring. Missing velocities/accelerations count as
    zero. Raises ValueError naming the point and field when the message is malformed (a missing
    transform, non-finite values, time not increasing, a direction other than +1/-1).
    """
    start_s = stamp_to_seconds(msg.header.stamp)
    if not msg.points:
        return None, start_s, msg.header.frame_id
    directions = [i for i, name in enumerate(msg.joint_names) if _is_direction_joint(name)]
    direction_joint = directions[0] if directions else None
    pose_joint = 1 if direction_joint == 0 else 0
    n = len(msg.points)
    times = np.empty(n)
    pos, vel, acc = np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3))
    yaw, yaw_rate = np.empty(n), np.zeros(n)
    given = np.ones(n)
    for k, point in enumerate(msg.points):
        if len(point.transforms) <= pose_joint:
            raise ValueError(f'points[{k}].transforms[{pose_joint}] is missing (the pose)')
        tr = point.transforms[pose_joint]
        times[k] = point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec
        pos[k] = tr.translation.x, tr.translation.y, tr.translation.z
        yaw[k] = quaternion_to_yaw(tr.rotation)
        if len(point.velocities) > pose_joint:
            v = point.velocities[pose_joint]
            vel[k] = v.linear.x, v.linear.y, v.linear.z
            yaw_rate[k] = v.angular.z
        if len(point.accelerations) > pose_joint:
            a = point.accelerations[pose_joint].linear
            acc[k] = a.x, a.y, a.z
        if direction_joint is not None:
            given[k] = _direction(point, k, direction_joint)
    for name, values in ((f'transforms[{pose_joint}]', np.column_stack([pos, yaw])),
                         (f'velocities[{pose_joint}]', np.column_stack([vel, yaw_rate])),
                         (f'accelerations[{pose_joint}]', acc)):
        k = _first_bad_row(values)
        if k is not None:
            raise ValueError(f'points[{k}].{name} is not finite ({values[k].tolist()})')
    late = np.flatnonzero(np.diff(times) <= 0.0)
    if late.size:
        k = int(late[0]) + 1
        raise ValueError(f'points[{k}].time_from_start ({times[k]:g} s) is not after '
                         f'points[{k - 1}] ({times[k - 1]:g} s)')
    if n == 1:     # a single pose: hold it
        times = np.array([times[0], times[0] + _HOLD_S])
        pos, vel, acc = (np.vstack([a, a]) for a in (pos, vel * 0.0, acc * 0.0))
        yaw, yaw_rate, given = np.repeat(yaw, 2), np.zeros(2), np.repeat(given, 2)
    if direction_joint is not None:
        direction = given
    else:
        steps = step_directions(pos[:, :2], yaw, np.ones(times.size))
        direction = np.append(steps, steps[-1])
    start_s += float(times[0])     # Reference times start at 0
    ref = Reference(times=times, positions=pos[:, :dim], velocities=vel[:, :dim],
                    accelerations=acc[:, :dim], yaw=yaw, yaw_rate=yaw_rate, direction=direction)
    return ref, start_s, msg.header.frame_id


def _direction(point: MultiDOFJointTrajectoryPoint, k: int, joint: int) -> float:
    """+1.0 / -1.0 from the driving-direction joint of point `k`."""
    if len(point.transforms) <= joint:
        raise ValueError(f'points[{k}].transforms[{joint}] is missing (the driving direction)')
    value = point.transforms[joint].translation.x
    if value not in (1.0, -1.0):
        raise ValueError(f'points[{k}].transforms[{joint}].translation.x (driving direction) '
                         f'is {value!r}, expected +1.0 or -1.0')
    return value
