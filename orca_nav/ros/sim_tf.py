"""The embedded simulator's robot-stack frames on TF, for fleet_sim_node (`tf_layout` other than
`none`); the model is `orca_nav.core.sim.localization`.

Per robot, in the layout's names (`orca_nav.core.fleet.names`):
* odometry in the robot's odom frame (drifting), child frame its base frame;
* `odom -> base_link` on the tf topic at every odometry, with the odometry's stamp (as a base
  driver or robot_localization broadcasts it);
* `map -> odom` from the simulated localization (a new estimate at `localization_rate`) with
  every odometry update, stamped `transform_tolerance` ahead, as AMCL sends it with every scan;
* `base_link -> base_scan` (a lidar mount 0.2 m above the base) on the tf_static topic,
  transient local with depth 1 (as tf2_ros's StaticTransformBroadcaster), sent once.

In the namespaced layout each robot's tree goes out on its own `<robot>/tf`; in the prefixed
layout all robots share one message per update on `/tf`.
"""
from __future__ import annotations

from typing import Dict, List

import numpy as np
from geometry_msgs.msg import TransformStamped
from tf2_msgs.msg import TFMessage

from orca_nav.core.fleet.names import RobotNames
from orca_nav.core.sim.localization import SimLocalization
from orca_nav.ros.convert import seconds_to_time
from orca_nav.ros.tf_listener import TF_QOS, TF_STATIC_QOS

SCAN_FRAME = 'base_scan'
SCAN_HEIGHT_M = 0.2


def planar_transform(parent: str, child: str, stamp, pose, z: float = 0.0) -> TransformStamped:
    t = TransformStamped()
    t.header.stamp = stamp
    t.header.frame_id, t.child_frame_id = parent, child
    t.transform.translation.x, t.transform.translation.y = float(pose[0]), float(pose[1])
    t.transform.translation.z = float(z)
    t.transform.rotation.z = float(np.sin(0.5 * pose[2]))
    t.transform.rotation.w = float(np.cos(0.5 * pose[2]))
    return t


class SimTfPublisher:
    """Odometry poses in odom frames, and the TF of every simulated robot (module doc)."""

    def __init__(self, node, names: List[RobotNames], start_poses, params: Dict[str, object]):
        self.names = names
        self.model = SimLocalization(start_poses, odom_drift=params['odom_drift'],
                                     localization_rate=params['localization_rate'],
                                     localization_jump=params['localization_jump'],
                                     transform_tolerance=params['transform_tolerance'],
                                     seed=params['seed'])
        # One publisher per distinct topic: per robot when namespaced, one shared when prefixed.
        self._trees: Dict[str, List[int]] = {}
        for i, n in enumerate(names):
            self._trees.setdefault(n.tf_topic, []).append(i)
        self._tf_pubs = {topic: node.create_publisher(TFMessage, topic, TF_QOS)
                         for topic in self._trees}
        statics = {n.tf_topic: n.tf_static_topic for n in names}
        zero = seconds_to_time(0.0)
        self._static_pubs = []      # kept: their transient-local message serves late joiners
        for topic, rows in self._trees.items():
            pub = node.create_publisher(TFMessage, statics[topic], TF_STATIC_QOS)
            pub.publish(TFMessage(transforms=[
                planar_transform(names[i].base_frame, names[i].robot_frame(SCAN_FRAME), zero,
                                 (0.0, 0.0, 0.0), z=SCAN_HEIGHT_M) for i in rows]))
            self._static_pubs.append(pub)

    def set_localization_jump(self, value: float) -> None:
        self.model.localization_jump = float(value)

    def odometry_poses(self, now: float, true_poses, measured_poses) -> np.ndarray:
        """Updates the drift with the robots' motion, publishes `odom -> base_link` stamped `now`
        and the localization's `map -> odom` post-dated by transform_tolerance, and returns the
        measured poses in the odom frames, for the odometry messages."""
        self.model.update(true_poses)
        odom = self.model.odom_poses(measured_poses)
        stamp = seconds_to_time(now)
        corrections = [(seconds_to_time(t), estimate)
                       for t, estimate in self.model.map_to_odom_transforms(now)]
        for topic, rows in self._trees.items():
            transforms = [planar_transform(self.names[i].odom_frame, self.names[i].base_frame,
                                           stamp, odom[i]) for i in rows]
            for when, estimate in corrections:
                transforms += [planar_transform(self.names[i].global_frame,
                                                self.names[i].odom_frame, when, estimate[i])
                               for i in rows]
            self._tf_pubs[topic].publish(TFMessage(transforms=transforms))
        return odom
