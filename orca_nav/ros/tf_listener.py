"""Fills a TransformBuffer from the TF topics of a fleet's robots, as tf2_ros's
TransformListener fills its buffer: every robot's tf and tf_static topic (per its `RobotNames`:
one per robot when namespaced, the shared `/tf` and `/tf_static` once when prefixed), frames
keyed by `RobotNames.buffer_frame`, static transforms from tf_static, the buffer cleared when the
node's clock jumps back. A transform the buffer rejects is logged (throttled) and skipped.
"""
from __future__ import annotations

from typing import Dict, Sequence

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from tf2_msgs.msg import TFMessage

from orca_nav.core.fleet.names import RobotNames
from orca_nav.core.transforms import TransformBuffer
from orca_nav.ros.convert import node_now, stamp_to_seconds

# tf2_ros's QoS: /tf keeps 100, reliable; /tf_static keeps the last message, latched.
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
TF_STATIC_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                           reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL)

_WARN_PERIOD_S = 2.0


class TfListener:
    """Subscribes the TF topics of `names` (module doc) and feeds `buffer`."""

    def __init__(self, node, names: Sequence[RobotNames], buffer: TransformBuffer):
        self.node, self.buffer = node, buffer
        self._last_warning: Dict[str, float] = {}
        self.subscriptions = []
        seen = set()
        for n in names:
            for topic, qos, static in ((n.tf_topic, TF_QOS, False),
                                       (n.tf_static_topic, TF_STATIC_QOS, True)):
                if topic in seen:       # the prefixed layout's shared topics: once
                    continue
                seen.add(topic)
                self.subscriptions.append(node.create_subscription(
                    TFMessage, topic,
                    lambda msg, n=n, topic=topic, static=static: self._on_tf(n, topic, msg,
                                                                             static), qos))

    def _on_tf(self, names: RobotNames, topic: str, msg: TFMessage, static: bool) -> None:
        if self.buffer.observe_time(node_now(self.node)):
            self.node.get_logger().warning('time jumped back: TF buffer cleared')
        for t in msg.transforms:
            tr, q = t.transform.translation, t.transform.rotation
            try:
                self.buffer.set_transform(names.buffer_frame(t.header.frame_id),
                                          names.buffer_frame(t.child_frame_id),
                                          stamp_to_seconds(t.header.stamp), (tr.x, tr.y, tr.z),
                                          (q.x, q.y, q.z, q.w), static=static)
            except ValueError as err:
                self._warn(topic, f'{topic}: ignoring a transform: {err}')

    def _warn(self, key: str, text: str) -> None:
        now = node_now(self.node)
        if abs(now - self._last_warning.get(key, -1e18)) >= _WARN_PERIOD_S:
            self._last_warning[key] = now
            self.node.get_logger().warning(text)
