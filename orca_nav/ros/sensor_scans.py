"""orca_node's input of laser scans: sensor_msgs/LaserScan per commanded robot on
`/<robot>/<scan_topic>` (off when `scan_topic` is empty), handed to the controller as points in
the robot's body frame (`FleetController.set_scan`, `core.fleet.sensed_obstacles`).

The scan's `header.frame_id` must be the robot's base frame (`<robot>/base_link` with
`tf_layout: none`, `base_link` in a robot's own namespace): the points are placed with the
robot's pose, so a sensor mounted off the centre needs its scan re-expressed in the base frame
first (e.g. by a laser filter); other frames are refused with a warning. Beams outside
[range_min, range_max] (no return: inf, REP-117) are skipped.
"""
from __future__ import annotations

import math
from typing import Callable, Dict, List

import numpy as np
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import LaserScan

from orca_nav.ros.convert import stamp_to_seconds


def scan_points(msg: LaserScan) -> np.ndarray:
    """(M, 2) body-frame points of the beams with a usable return; ValueError naming a bad
    field (non-finite angles, increment 0)."""
    values = (msg.angle_min, msg.angle_increment, msg.range_min, msg.range_max)
    if not all(math.isfinite(v) for v in values) or msg.angle_increment == 0.0:
        raise ValueError(f'angle_min, angle_increment, range_min, range_max = {values} are not '
                         'usable (finite, increment not 0)')
    ranges = np.asarray(msg.ranges, dtype=float)
    angles = msg.angle_min + msg.angle_increment * np.arange(len(ranges))
    hit = np.isfinite(ranges) & (ranges >= msg.range_min) & (ranges <= msg.range_max)
    return ranges[hit, None] * np.column_stack([np.cos(angles[hit]), np.sin(angles[hit])])


class ScanInput:
    """Subscribes every commanded robot's scans (with a `scan_topic`)."""

    def __init__(self, node, fleet, cfg: Dict, names: Dict, commanded: List[str],
                 warn: Callable[[tuple, str], None]):
        self._fleet, self._names, self._warn = fleet, names, warn
        topic = cfg['scan_topic']
        if topic:
            for robot in commanded:
                node.create_subscription(LaserScan, names[robot].topic(topic),
                                         lambda msg, r=robot: self._on_scan(r, msg),
                                         qos_profile_sensor_data)

    def _on_scan(self, robot: str, msg: LaserScan) -> None:
        base = self._names[robot].base_frame
        try:
            if msg.header.frame_id != base:
                raise ValueError(f'header.frame_id {msg.header.frame_id!r} is not the robot\'s '
                                 f'base frame {base!r}')
            problem = self._fleet.set_scan(self._fleet.index[robot],
                                           stamp_to_seconds(msg.header.stamp), scan_points(msg))
            if problem is not None:
                raise ValueError(problem)
        except ValueError as err:
            self._warn((robot, 'scan'), f'{robot}: ignoring a scan: {err}')
