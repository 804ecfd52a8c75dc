"""Robot states in the global frame: odometry composed with TF (REP-105 map -> odom -> base_link).

A robot's odometry gives its pose in the frame its header names (normally its odom frame);
localization (AMCL, SLAM) publishes map -> odom on TF. `FleetPoses` holds every robot's tree in
one `orca_nav.core.transforms.TransformBuffer` (tf2's semantics: static and dynamic transforms,
interpolation within the buffer, extrapolation refused) and composes each odometry sample with
global <- odometry frame at the sample's stamp. Why not tf2_ros: it is not on PyPI, and one
buffer for a fleet of namespaced trees is one subscription set, not one listener per robot.

Layouts (`tf_layout`, names from `orca_nav.core.fleet.names`): `none`, odometry already in the
global frame (no TF read); `namespaced`, each robot's tree on `<robot>/tf` and
`<robot>/tf_static`; `prefixed`, one shared `/tf` and `/tf_static`.

Localization runs slower than odometry and stamps its map -> odom correction when it was
computed, so the newest odometry is usually ahead of the newest correction: a lookup that
would extrapolate less than `transform_tolerance` into the future uses the newest correction
(what Nav2's costmaps and controllers allow with their transform_tolerance). Older odometry
than the buffer holds, or a gap larger than the tolerance, is an error naming the robot, the
frame pair and the times: the node drops the sample, so the robot goes stale and stops.
"""
from __future__ import annotations

from typing import Dict, Tuple

import numpy as np

from orca_nav.core.fleet.names import RobotNames, robot_names
from orca_nav.core.geometry import wrap_angle
from orca_nav.core.transforms import TransformBuffer, TransformError, quaternion_rotate, yaw_of
from orca_nav.ros.convert import OdomState
from orca_nav.ros.tf_listener import TfListener

GlobalState = Tuple[np.ndarray, np.ndarray, float]     # position (3,), velocity (3,), yaw


class FleetPoses:
    """Odometry -> global-frame states for the robots of one node (see the module doc)."""

    def __init__(self, node, robots, tf_layout: str, global_frame: str,
                 transform_tolerance: float):
        self.names: Dict[str, RobotNames] = {r: robot_names(r, tf_layout, global_frame)
                                             for r in robots}
        self.global_frame = global_frame
        self.tolerance = transform_tolerance
        self.buffer = TransformBuffer()
        if tf_layout != 'none':
            TfListener(node, list(self.names.values()), self.buffer)

    def to_global(self, robot: str, state: OdomState) -> GlobalState:
        """The state in the global frame; ValueError naming the robot, the frames and why."""
        names = self.names[robot]
        if state.frame_id == self.global_frame:
            return state.position, state.velocity, state.yaw
        if names.tf_layout == 'none':
            raise ValueError(f'header.frame_id {state.frame_id!r} is not the global frame '
                             f'{self.global_frame!r} (tf_layout none: odometry must be in it)')
        target, source = names.buffer_frame(self.global_frame), names.buffer_frame(state.frame_id)
        try:
            tf = self._lookup(target, source, state.stamp_s)
        except TransformError as err:
            raise ValueError(f'no transform {self.global_frame} <- {state.frame_id} at '
                             f'{state.stamp_s:.3f} s: {err}') from None
        position = quaternion_rotate(tf.rotation, state.position) + tf.translation
        velocity = quaternion_rotate(tf.rotation, state.velocity)
        yaw = float(wrap_angle(state.yaw + yaw_of(tf.rotation)))
        return position, velocity, yaw

    def in_base_frame(self, robot: str, frame_id: str, stamp: float, points) -> np.ndarray:
        """(M, 3) points given in `frame_id` (e.g. a sensor mounted on the robot) expressed in
        the robot's base frame; ValueError naming the frames when TF does not connect them."""
        names = self.names[robot]
        points = np.asarray(points, dtype=float).reshape(-1, 3)
        if frame_id == names.base_frame:
            return points
        if names.tf_layout == 'none':
            raise ValueError(f'header.frame_id {frame_id!r} is not the robot\'s base frame '
                             f'{names.base_frame!r} (tf_layout none: no TF to place a sensor)')
        try:
            tf = self._lookup(names.buffer_frame(names.base_frame), names.buffer_frame(frame_id),
                              stamp)
        except TransformError as err:
            raise ValueError(f'no transform {names.base_frame} <- {frame_id} at {stamp:.3f} s: '
                             f'{err}') from None
        return quaternion_rotate(tf.rotation, points) + tf.translation

    def _lookup(self, target: str, source: str, stamp: float):
        return self.buffer.lookup_late(target, source, stamp, self.tolerance)
