"""The demo's mission layer: sends each robot its goals in turn and records the run.

It publishes `/<robot>/goal_pose` (the next goal once the previous one is reached), records
every robot's odometry (time, x, y), the simulator's collision reports (`/fleet_sim/collisions`,
std_msgs/String holding one JSON object per new contact, with the robots' names under `robots`)
and any planned path on `/<robot>/plan`. Times are odometry stamps, in seconds since `start()`.
All recorded state is guarded by one lock: callbacks run on the graph's executor threads while
the CLI reads progress from the main thread.
"""
from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry, Path
from rclpy.node import Node
from rclpy.qos import QoSProfile, qos_profile_sensor_data
from std_msgs.msg import String

from orca_nav.core.fleet_config import FleetConfig, RobotConfig
from orca_nav.core.report import RobotTrack
from orca_nav.ros.convert import robot_topic, stamp_to_seconds, yaw_to_quaternion

COLLISIONS_TOPIC = '/fleet_sim/collisions'


@dataclass
class _RobotLog:
    config: RobotConfig
    samples: List[tuple] = field(default_factory=list)       # (t, x, y) since start
    latest_stamp: Optional[float] = None
    latest_xy: Optional[tuple] = None
    goal_index: int = 0
    goal_times: List[Optional[float]] = field(default_factory=list)
    collisions: int = 0
    plans: List[np.ndarray] = field(default_factory=list)


class DemoMission(Node):
    """Goal sequencing and recording for one fleet run (see the module docstring)."""

    def __init__(self, cfg: FleetConfig, goal_tolerance: Optional[float] = None, **kwargs):
        super().__init__('demo_mission', **kwargs)
        self._cfg = cfg
        self._tolerance = cfg.demo.goal_tolerance if goal_tolerance is None else goal_tolerance
        self._lock = threading.Lock()
        self._logs: Dict[str, _RobotLog] = {
            r.name: _RobotLog(r, goal_times=[None] * len(r.goals)) for r in cfg.robots}
        self._start_stamp: Optional[float] = None
        self._collision_events = 0
        self._goal_pubs = {name: self.create_publisher(
            PoseStamped, robot_topic(name, 'goal_pose'), QoSProfile(depth=10))
            for name in self._logs}
        for name in self._logs:
            # Best effort matches reliable and best-effort odometry publishers alike.
            self.create_subscription(Odometry, robot_topic(name, 'odom'),
                                     lambda msg, n=name: self._on_odom(n, msg),
                                     qos_profile_sensor_data)
            self.create_subscription(Path, robot_topic(name, 'plan'),
                                     lambda msg, n=name: self._on_plan(n, msg), QoSProfile(depth=10))
        self.create_subscription(String, COLLISIONS_TOPIC, self._on_collision,
                                 QoSProfile(depth=100))

    # ---- state for the CLI -------------------------------------------------------------------

    def all_odometry_received(self) -> bool:
        with self._lock:
            return all(log.latest_stamp is not None for log in self._logs.values())

    def goal_subscribers(self) -> int:
        """The smallest number of subscribers on any robot's goal topic."""
        return min(pub.get_subscription_count() for pub in self._goal_pubs.values())

    def start(self) -> None:
        """Starts the clock at the newest odometry stamp and sends every robot its first goal."""
        with self._lock:
            stamps = [log.latest_stamp for log in self._logs.values() if log.latest_stamp]
            self._start_stamp = max(stamps) if stamps else self.get_clock().now().nanoseconds * 1e-9
            for log in self._logs.values():
                if log.latest_xy is not None:
                    log.samples.append((0.0,) + log.latest_xy)
                self._send_goal(log)

    def elapsed(self) -> float:
        """Seconds of odometry time since start() (the newest stamp of any robot)."""
        with self._lock:
            if self._start_stamp is None:
                return 0.0
            stamps = [log.latest_stamp for log in self._logs.values() if log.latest_stamp]
            return max(0.0, max(stamps) - self._start_stamp) if stamps else 0.0

    def progress(self) -> Dict[str, int]:
        with self._lock:
            done = sum(log.goal_index >= len(log.config.goals) for log in self._logs.values())
            return {'at_goal': done, 'robots': len(self._logs),
                    'collisions': self._collision_events}

    def finished(self) -> bool:
        progress = self.progress()
        return progress['at_goal'] == progress['robots']


    def tracks(self) -> List[RobotTrack]:
        with self._lock:
            out = []
            for name, log in self._logs.items():
                samples = np.array(log.samples, dtype=float).reshape(-1, 3)
                goals = np.array([g[:2] for g in log.config.goals], dtype=float).reshape(-1, 2)
                out.append(RobotTrack(name=name, radius=log.config.radius, t=samples[:, 0],
                                      xy=samples[:, 1:], goals=goals,
                                      goal_times=list(log.goal_times),
                                      collisions=log.collisions))
            return out

    def plans(self) -> Dict[str, List[np.ndarray]]:
        with self._lock:
            return {name: list(log.plans) for name, log in self._logs.items() if log.plans}

    def collision_events(self) -> int:
        with self._lock:
            return self._collision_events

    # ---- callbacks ---------------------------------------------------------------------------

    def _on_odom(self, name: str, msg: Odometry) -> None:
        stamp = stamp_to_seconds(msg.header.stamp)
        position = msg.pose.pose.position
        if not all(math.isfinite(v) for v in (stamp, position.x, position.y)):
            return
        with self._lock:
            log = self._logs[name]
            log.latest_stamp, log.latest_xy = stamp, (position.x, position.y)
            if self._start_stamp is None or stamp < self._start_stamp:
                return
            t = stamp - self._start_stamp
            log.samples.append((t, position.x, position.y))
            goals = log.config.goals
            if log.goal_index < len(goals):
                goal = goals[log.goal_index]
                if math.hypot(position.x - goal[0], position.y - goal[1]) <= self._tolerance:
                    log.goal_times[log.goal_index] = t
                    log.goal_index += 1
                    self._send_goal(log)

    def _on_collision(self, msg: String) -> None:
        try:
            names = json.loads(msg.data)['robots']
        except (ValueError, KeyError, TypeError):
            self.get_logger().warn(f'{COLLISIONS_TOPIC}: unreadable report {msg.data!r}')
            names = []
        with self._lock:
            self._collision_events += 1
            for name in names if isinstance(names, list) else []:
                if name in self._logs:
                    self._logs[name].collisions += 1

    def _on_plan(self, name: str, msg: Path) -> None:
        points = np.array([(p.pose.position.x, p.pose.position.y) for p in msg.poses],
                          dtype=float).reshape(-1, 2)
        if len(points) and np.all(np.isfinite(points)):
            with self._lock:
                self._logs[name].plans.append(points)

    def _send_goal(self, log: _RobotLog) -> None:
        """Publishes the robot's current goal, if it has one left (caller holds the lock)."""
        if log.goal_index >= len(log.config.goals):
            return
        x, y, yaw = log.config.goals[log.goal_index]
        msg = PoseStamped()
        msg.header.frame_id = self._cfg.global_frame
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.pose.position.x, msg.pose.position.y = float(x), float(y)
        msg.pose.orientation = yaw_to_quaternion(yaw)
        self._goal_pubs[log.config.name].publish(msg)
