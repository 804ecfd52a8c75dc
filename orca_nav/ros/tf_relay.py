"""tf_relay: a namespaced fleet's TF trees as one tree, for RViz.

In the namespaced TF layout every robot publishes its own tree on `<robot>/tf` and
`<robot>/tf_static` with the same frame names (`map`, `odom`, `base_link`); one RViz reads one
tree. This node republishes every robot's transforms into one tree on `orca_nav/tf` and
`orca_nav/tf_static` (bringup remaps RViz's `/tf` and `/tf_static` there), the robot's own
frames under its name as in the prefixed layout (`robot1/odom`, `robot1/base_link`) and the
global frame shared (`orca_nav.core.fleet.names.RobotNames.fleet_frame`). Stamps and values are
unchanged. Static transforms are kept and sent together, latched, as tf2_ros's static
broadcaster sends its own; a static transform sent again for the same child frame replaces it.

Parameters: `robots`, `global_frame`. Bringup starts it with RViz for a namespaced fleet only.
"""
from __future__ import annotations

from typing import Dict

from geometry_msgs.msg import TransformStamped
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Header
from tf2_msgs.msg import TFMessage

from orca_nav.core.fleet.names import FLEET_TF_STATIC_TOPIC, FLEET_TF_TOPIC, RobotNames, robot_names
from orca_nav.parameters.tf_relay import NODE_SPECS
from orca_nav.ros.construction import released_on_failure
from orca_nav.ros.node_main import run_node
from orca_nav.ros.params import declare_parameters
from orca_nav.ros.tf_listener import TF_QOS, TF_STATIC_QOS

# Every robot's latched tf_static publishers, not only the last one heard.
_STATIC_IN_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                            durability=DurabilityPolicy.TRANSIENT_LOCAL)


def renamed(names: RobotNames, transform: TransformStamped) -> TransformStamped:
    """The transform with its frames as the fleet's one tree names them."""
    return TransformStamped(
        header=Header(stamp=transform.header.stamp,
                      frame_id=names.fleet_frame(transform.header.frame_id)),
        child_frame_id=names.fleet_frame(transform.child_frame_id),
        transform=transform.transform)


class TfRelay(Node):
    """Relays the robots' namespaced trees into one (see the module docstring)."""

    @released_on_failure
    def __init__(self, **kwargs):
        super().__init__('tf_relay', **kwargs)
        params = declare_parameters(self, NODE_SPECS)
        self._tf_pub = self.create_publisher(TFMessage, FLEET_TF_TOPIC, TF_QOS)
        self._static_pub = self.create_publisher(TFMessage, FLEET_TF_STATIC_TOPIC, TF_STATIC_QOS)
        self._static: Dict[str, TransformStamped] = {}      # by (renamed) child frame
        for robot in params['robots']:
            names = robot_names(robot, 'namespaced', params['global_frame'])
            self.create_subscription(TFMessage, names.tf_topic,
                                     lambda msg, n=names: self._on_tf(n, msg), TF_QOS)
            self.create_subscription(TFMessage, names.tf_static_topic,
                                     lambda msg, n=names: self._on_static(n, msg), _STATIC_IN_QOS)
        self.get_logger().info(f'relaying the trees of {len(params["robots"])} robots to '
                               f'{FLEET_TF_TOPIC} and {FLEET_TF_STATIC_TOPIC}')

    def _on_tf(self, names: RobotNames, msg: TFMessage) -> None:
        self._tf_pub.publish(TFMessage(transforms=[renamed(names, t) for t in msg.transforms]))

    def _on_static(self, names: RobotNames, msg: TFMessage) -> None:
        for t in msg.transforms:
            out = renamed(names, t)
            self._static[out.child_frame_id] = out
        self._static_pub.publish(TFMessage(transforms=list(self._static.values())))


def main(args=None):
    run_node(TfRelay, 'tf_relay', args)


if __name__ == '__main__':
    main()
