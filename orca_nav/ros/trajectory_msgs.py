"""core Reference <-> nav_msgs/Path and trajectory_msgs/MultiDOFJointTrajectory.

The trajectory message carries one "joint" (the robot's base, `<robot>/base_link`) whose
transforms, velocities and accelerations are in the global frame of ``header.frame_id``;
``header.stamp`` is the wall time at which ``time_from_start`` = 0. The angular z of each
velocity is the yaw rate. The driving direction is not a message field: a reversing sample is
one whose motion to the next sample is against its heading (:func:`step_directions`), which is
how any consumer of the message would read it too. An empty trajectory means "stop tracking".
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
from geometry_msgs.msg import PoseStamped, Transform, Twist
from nav_msgs.msg import Path
from trajectory_msgs.msg import MultiDOFJointTrajectory, MultiDOFJointTrajectoryPoint

from orca_nav.core.planning.path_timing import step_directions
from orca_nav.core.planning.reference import Reference
from orca_nav.ros.convert import (quaternion_to_yaw, seconds_to_duration, seconds_to_time,
                                  stamp_to_seconds, yaw_to_quaternion)


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


def reference_to_trajectory(reference: Reference, frame_id: str, start_s: float,
                            joint_name: str) -> MultiDOFJointTrajectory:
    """MultiDOFJointTrajectory with transforms, velocities, accelerations and time_from_start."""
    msg = empty_trajectory(frame_id, start_s)
    msg.joint_names = [joint_name]
    for t, pos, vel, acc, yaw, yaw_rate in zip(reference.times, reference.positions,
                                               reference.velocities, reference.accelerations,
                                               reference.yaw, reference.yaw_rate):
        transform = Transform()
        tr = transform.translation
        tr.x, tr.y, tr.z = _xyz(pos)
        transform.rotation = yaw_to_quaternion(yaw)
        velocity = Twist()
        velocity.linear.x, velocity.linear.y, velocity.linear.z = _xyz(vel)
        velocity.angular.z = float(yaw_rate)
        acceleration = Twist()
        acceleration.linear.x, acceleration.linear.y, acceleration.linear.z = _xyz(acc)
        msg.points.append(MultiDOFJointTrajectoryPoint(
            transforms=[transform], velocities=[velocity], accelerations=[acceleration],
            time_from_start=seconds_to_duration(t)))
    return msg


def empty_trajectory(frame_id: str, stamp_s: float) -> MultiDOFJointTrajectory:
    """A trajectory without points: the robot stops tracking and holds still."""
    msg = MultiDOFJointTrajectory()
    msg.header.frame_id = frame_id
    msg.header.stamp = seconds_to_time(stamp_s)
    return msg


def msg_to_reference(msg: MultiDOFJointTrajectory, dim: int = 2
                     ) -> Tuple[Optional[Reference], float, str]:
    """-> (reference or None for an empty trajectory, start time in seconds, frame_id).

    Missing velocities/accelerations count as zero. Raises ValueError naming the point and
    field when the message is malformed (no transform, non-finite values, time going back).
    """
    start_s = stamp_to_seconds(msg.header.stamp)
    if not msg.points:
        return None, start_s, msg.header.frame_id
    n = len(msg.points)
    times = np.empty(n)
    pos = np.zeros((n, 3))
    vel = np.zeros((n, 3))
    acc = np.zeros((n, 3))
    yaw = np.empty(n)
    yaw_rate = np.zeros(n)
    for k, point in enumerate(msg.points):
        if not point.transforms:
            raise ValueError(f'points[{k}].transforms is empty')
        tr = point.transforms[0]
        times[k] = point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec
        pos[k] = tr.translation.x, tr.translation.y, tr.translation.z
        yaw[k] = quaternion_to_yaw(tr.rotation)
        if point.velocities:
            v = point.velocities[0]
            vel[k] = v.linear.x, v.linear.y, v.linear.z
            yaw_rate[k] = v.angular.z
        if point.accelerations:
            a = point.accelerations[0].linear
            acc[k] = a.x, a.y, a.z
    if n == 1:     # a single pose: hold it
        times = np.array([times[0], times[0] + 1e-3])
        pos, vel, acc = (np.vstack([a, a]) for a in (pos, vel * 0, acc * 0))
        yaw, yaw_rate = np.repeat(yaw, 2), np.zeros(2)
    bad = ~np.isfinite(pos).all(axis=1) | ~np.isfinite(yaw)
    if bad.any():
        raise ValueError(f'points[{int(np.argmax(bad))}].transforms[0] is not finite')
    steps = step_directions(pos[:, :2], yaw, np.ones(times.size))
    direction = np.append(steps, steps[-1])
    start_s += float(times[0])     # Reference times start at 0
    ref = Reference(times=times, positions=pos[:, :dim], velocities=vel[:, :dim],
                    accelerations=acc[:, :dim], yaw=yaw, yaw_rate=yaw_rate, direction=direction)
    return ref, start_s, msg.header.frame_id
