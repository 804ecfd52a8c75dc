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

from typing import Dict, Optional, Tuple

import numpy as np
from rclpy.qos import DurabilityPolicy, QoSProfile
from tf2_msgs.msg import TFMessage

from orca_nav.core.fleet.names import RobotNames, robot_names
from orca_nav.core.transforms import (ExtrapolationError, TransformBuffer, TransformError,
                                      quaternion_rotate, yaw_of)
from orca_nav.ros.convert import OdomState, node_now, stamp_to_seconds

# tf2_ros's listener QoS: /tf reliable, depth 100; /tf_static also transient local.
_TF_QOS = QoSProfile(depth=100)
_TF_STATIC_QOS = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL)

GlobalState = Tuple[np.ndarray, np.ndarray, float]     # position (3,), velocity (3,), yaw


class FleetPoses:
    """Odometry -> global-frame states for the robots of one node (see the module doc)."""

    def __init__(self, node, robots, tf_layout: str, global_frame: str,
                 transform_tolerance: float):
        self._node = node
        self.names: Dict[str, RobotNames] = {r: robot_names(r, tf_layout, global_frame)
                                             for r in robots}
        self.global_frame = global_frame
        self.tolerance = transform_tolerance
        self.buffer = TransformBuffer()
        if tf_layout == 'none':
            return
        # One subscription per topic: the shared /tf once, or each robot's own tree.
        topics = {}
        for names in self.names.values():
            owner = names if tf_layout == 'namespaced' else None
            topics[(names.tf_topic, False)] = owner
            topics[(names.tf_static_topic, True)] = owner
        for (topic, static), owner in topics.items():
            node.create_subscription(
                TFMessage, topic, lambda msg, o=owner, s=static: self._on_tf(msg, o, s),
                _TF_STATIC_QOS if static else _TF_QOS)

    def _on_tf(self, msg: TFMessage, owner: Optional[RobotNames], static: bool) -> None:
        self.buffer.observe_time(node_now(self._node))
        for tf in msg.transforms:
            t, q = tf.transform.translation, tf.transform.rotation
            parent, child = tf.header.frame_id, tf.child_frame_id
            if owner is not None:
                parent, child = owner.buffer_frame(parent), owner.buffer_frame(child)
            try:
                self.buffer.set_transform(parent, child, stamp_to_seconds(tf.header.stamp),
                                          (t.x, t.y, t.z), (q.x, q.y, q.z, q.w), static=static)
            except ValueError as err:
                self._node.get_logger().warning(f'ignoring a transform: {err}',
                                                throttle_duration_sec=5.0)

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
        yaw = float(np.arctan2(np.sin(state.yaw + yaw_of(tf.rotation)),
                               np.cos(state.yaw + yaw_of(tf.rotation))))
        return position, velocity, yaw

    def _lookup(self, target: str, source: str, stamp: float):
        try:
            return self.buffer.lookup(target, source, stamp)
        except ExtrapolationError:
            newest = self.buffer.latest_common_time(target, source)
            if not (stamp - self.tolerance <= newest < stamp):
                raise
            return self.buffer.lookup(target, source, newest)
