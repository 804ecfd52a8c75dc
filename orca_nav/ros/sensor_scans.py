"""orca_node's sensor input: per commanded robot, sensor_msgs/LaserScan on
`/<robot>/<scan_topic>` and sensor_msgs/PointCloud2 on `/<robot>/<cloud_topic>` (each off when
its topic is empty), handed to the controller as points in the robot's body frame
(`FleetController.set_scan`, `core.fleet.sensed_obstacles`).

A message may be in the robot's base frame or in any frame TF connects to it (a lidar on its
mount, `base_scan`), read from the TF the node already follows for odometry (`tf_layout`; with
`none` only the base frame is accepted). Laser beams outside [range_min, range_max] (no return:
inf, REP-117) are skipped. A cloud (a depth camera, a 3-D lidar) becomes the scan a planar laser
would give: its points within the height band [cloud_min_z, cloud_max_z] of the base frame, the
nearest in each bearing (`sensed_obstacles.planar_scan`), so the floor and what the robot passes
under are not obstacles and a dense cloud costs what a scan does.
"""
from __future__ import annotations

import math
from typing import Callable, Dict, List

import numpy as np
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import LaserScan, PointCloud2

from orca_nav.core.fleet.sensed_obstacles import planar_scan
from orca_nav.ros.convert import cloud_xyz, stamp_to_seconds
from orca_nav.ros.qos_events import subscription_events


def scan_points(msg: LaserScan) -> np.ndarray:
    """(M, 2) points of the beams with a usable return, in the scan's frame; ValueError naming
    a bad field (non-finite angles, increment 0)."""
    values = (msg.angle_min, msg.angle_increment, msg.range_min, msg.range_max)
    if not all(math.isfinite(v) for v in values) or msg.angle_increment == 0.0:
        raise ValueError(f'angle_min, angle_increment, range_min, range_max = {values} are not '
                         'usable (finite, increment not 0)')
    ranges = np.asarray(msg.ranges, dtype=float)
    angles = msg.angle_min + msg.angle_increment * np.arange(len(ranges))
    hit = np.isfinite(ranges) & (ranges >= msg.range_min) & (ranges <= msg.range_max)
    return ranges[hit, None] * np.column_stack([np.cos(angles[hit]), np.sin(angles[hit])])


class ScanInput:
    """Subscribes every commanded robot's scans and clouds (`poses`: the node's FleetPoses)."""

    def __init__(self, node, fleet, cfg: Dict, poses, commanded: List[str],
                 warn: Callable[[tuple, str], None]):
        self._fleet, self._poses, self._cfg, self._warn = fleet, poses, cfg, warn
        for robot in commanded:
            names = poses.names[robot]
            if cfg['scan_topic']:
                node.create_subscription(LaserScan, names.topic(cfg['scan_topic']),
                                         lambda msg, r=robot: self._on_scan(r, msg),
                                         qos_profile_sensor_data,
                                         event_callbacks=subscription_events())
            if cfg['cloud_topic']:
                node.create_subscription(PointCloud2, names.topic(cfg['cloud_topic']),
                                         lambda msg, r=robot: self._on_cloud(r, msg),
                                         qos_profile_sensor_data,
                                         event_callbacks=subscription_events())

    def _on_scan(self, robot: str, msg: LaserScan) -> None:
        try:
            planar = scan_points(msg)
            self._hand_over(robot, msg.header, np.column_stack([planar, np.zeros(len(planar))]),
                            cloud=False)
        except ValueError as err:
            self._warn((robot, 'scan'), f'{robot}: ignoring a scan: {err}')

    def _on_cloud(self, robot: str, msg: PointCloud2) -> None:
        try:
            self._hand_over(robot, msg.header, cloud_xyz(msg), cloud=True)
        except ValueError as err:
            self._warn((robot, 'cloud'), f'{robot}: ignoring a point cloud: {err}')

    def _hand_over(self, robot: str, header, points: np.ndarray, cloud: bool) -> None:
        """(M, 3) points in the message's frame to the controller, in the robot's base frame;
        a laser's in scan order, a cloud's as a planar scan."""
        stamp = stamp_to_seconds(header.stamp)
        base = self._poses.in_base_frame(robot, header.frame_id, stamp, points)
        planar = (planar_scan(base, self._cfg['cloud_min_z'], self._cfg['cloud_max_z']) if cloud
                  else base[:, :2])
        problem = self._fleet.set_scan(self._fleet.index[robot], stamp, planar)
        if problem is not None:
            raise ValueError(problem)
