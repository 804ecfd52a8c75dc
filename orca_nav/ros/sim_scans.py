"""fleet_sim_node's simulated laser scans and unmapped boxes (`core.sim.scan`).

With `scan.rate` > 0 every robot publishes a sensor_msgs/LaserScan on `/<robot>/<scan.topic>`
at that rate (with the odometry it is due with), from its centre in its base frame: a full turn
of `scan.beams` beams up to `scan.range`, seeing the map, the unmapped `boxes`, the other
robots and the pedestrians, without noise. `boxes` (4 numbers each: x0, y0, x1, y1) are solid
for robots (contacts reported as robot_obstacle) and for the scans, and are not on /map.
"""
from __future__ import annotations

import math
from typing import List

import numpy as np
from sensor_msgs.msg import LaserScan

from orca_nav.core.sim.fleet_sim import FleetSim
from orca_nav.core.sim.lockstep import PeriodicSchedule
from orca_nav.core.sim.scan import beam_angles, scan_ranges
from orca_nav.ros.convert import seconds_to_time
from orca_nav.ros.qos_events import publisher_events


def boxes_from_parameter(values: List[float]) -> np.ndarray:
    if len(values) % 4:
        raise ValueError(f'boxes: 4 numbers per box (x0, y0, x1, y1), got {len(values)} numbers')
    return np.asarray(values, dtype=float).reshape(-1, 4)


class ScanPublisher:
    """Publishes every robot's simulated scan when due."""

    def __init__(self, node, sim: FleetSim, names, scan_cfg, step_s: float):
        self._sim = sim
        self._range = float(scan_cfg['range'])
        self._angles = beam_angles(int(scan_cfg['beams']))
        self._due = PeriodicSchedule(1.0 / scan_cfg['rate'], tolerance=0.5 * step_s)
        self._pubs = [node.create_publisher(LaserScan, n.topic(scan_cfg['topic']), 10,
                                            event_callbacks=publisher_events())
                      for n in names]
        self._msgs = []
        for n in names:
            msg = LaserScan()
            msg.header.frame_id = n.base_frame
            msg.angle_min = float(self._angles[0])
            msg.angle_increment = 2.0 * math.pi / len(self._angles)
            msg.angle_max = float(self._angles[-1])
            msg.range_min, msg.range_max = 0.05, self._range
            self._msgs.append(msg)

    def publish_if_due(self, now: float) -> None:
        if not self._due.due(now):
            return
        sim = self._sim
        poses = sim.poses
        people = sim.pedestrians
        centres = poses[:, :2] if people is None else np.vstack([poses[:, :2], people.positions])
        radii = sim.radius if people is None else np.concatenate(
            [sim.radius, np.full(len(people), people.radius)])
        others = np.ones(len(centres), dtype=bool)
        stamp = seconds_to_time(now)
        for index, (pub, msg) in enumerate(zip(self._pubs, self._msgs)):
            others[index] = False       # a robot's own disc is around its sensor
            ranges = scan_ranges(poses[index, :2], poses[index, 2], self._angles, self._range,
                                 sim.grid, sim.boxes, centres[others], radii[others])
            others[index] = True
            msg.header.stamp = stamp
            msg.ranges = ranges.tolist()
            pub.publish(msg)
