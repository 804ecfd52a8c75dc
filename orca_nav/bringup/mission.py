"""The demo's mission layer: steps each robot through its goals and records the run.

Every robot starts with its first goal already given (the bringup passes it as the `<robot>.goal`
parameter, so motion starts with the first control cycle and nothing here can race it); the
mission publishes `/<robot>/goal_pose` for each further goal once the robot is within the demo's
goal tolerance of the current one. It records every robot's odometry (time, x, y), the
simulator's collision reports (`/fleet_sim/collisions`, std_msgs/String with one JSON object per
new contact) and the planned paths on `/<robot>/plan`. Times are odometry stamps, in seconds
since the first odometry heard: simulated time when the run is on /clock. The record ends at
the stamp that completed the mission (the last robot at its last goal) or at the demo's
duration, whichever comes first, whenever the caller stops the run: on simulated time in
lockstep the same run gives the same record.

All rclpy calls happen in callbacks on the graph's executor (calling into rclpy from another
thread while the EventsExecutor spins can deadlock); the CLI only reads the recorded state,
which one lock guards.
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

from orca_nav.bringup.fleet_file import FleetConfig, RobotConfig
from orca_nav.bringup.report import RobotTrack
from orca_nav.ros.convert import latched_qos, robot_topic, stamp_to_seconds, yaw_to_quaternion
from orca_nav.ros.fleet_sim_node import COLLISION_HISTORY

COLLISIONS_TOPIC = '/fleet_sim/collisions'
_CLASH_CHECK_EVERY = 100    # odometry messages between two looks for a second odometry publisher


@dataclass
class _RobotLog:
    config: RobotConfig
    samples: List[tuple] = field(default_factory=list)       # (t, x, y) since the origin
    latest_stamp: Optional[float] = None
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
        self._error: Optional[str] = None
        self._logs: Dict[str, _RobotLog] = {
            r.name: _RobotLog(r, goal_times=[None] * len(r.goals)) for r in cfg.robots}
        self._origin: Optional[float] = None
        self._newest: Optional[float] = None
        self._end = cfg.demo.duration      # s since the origin: the record stops here
        self._odometry_count = 0
        self._collision_events = 0
        self._goal_pubs = {name: self.create_publisher(
            PoseStamped, robot_topic(name, 'goal_pose'), QoSProfile(depth=10))
            for name, log in self._logs.items() if len(log.config.goals) > 1}
        for name in self._logs:
            # Best effort matches reliable and best-effort odometry publishers alike.
            self.create_subscription(Odometry, robot_topic(name, 'odom'),
                                     lambda msg, n=name: self._on_odom(n, msg),
                                     qos_profile_sensor_data)
            self.create_subscription(Path, robot_topic(name, 'plan'),
                                     lambda msg, n=name: self._on_plan(n, msg), latched_qos())
        # Transient local like the simulator's publisher: contacts from before this node
        # connected (robots overlapping at start) arrive too.
        self.create_subscription(String, COLLISIONS_TOPIC, self._on_collision,
                                 latched_qos(COLLISION_HISTORY))

    # ---- state for the CLI (plain Python state only: no rclpy calls off the executor) --------

    def started(self) -> bool:
        """Every robot has reported odometry."""
        return not self.missing_odometry()

    def missing_odometry(self) -> List[str]:
        with self._lock:
            return [name for name, log in self._logs.items() if log.latest_stamp is None]

    def error(self) -> Optional[str]:
        """Why the run cannot continue (another fleet on the same topics), else None."""
        with self._lock:
            return self._error

    def elapsed(self) -> float:
        """Seconds of odometry time since the origin (the newest stamp of any robot)."""
        with self._lock:
            return 0.0 if self._origin is None else self._newest - self._origin

    def over(self) -> bool:
        """The record is complete: the mission finished or its duration ran out."""
        return self.elapsed() >= self._end

    def progress(self) -> Dict[str, int]:
        with self._lock:
            logs = self._logs.values()
            return {'at_goal': sum(log.goal_index >= len(log.config.goals) for log in logs),
                    'robots': len(self._logs),
                    'goals_reached': sum(log.goal_index for log in logs),
                    'goals': sum(len(log.config.goals) for log in logs),
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
        self._odometry_count += 1
        if self._odometry_count % _CLASH_CHECK_EVERY == 1:
            self._check_for_another_fleet()
        with self._lock:
            log = self._logs[name]
            if log.latest_stamp is not None and stamp <= log.latest_stamp:
                return          # late or repeated sample
            log.latest_stamp = stamp
            if self._origin is None:
                self._origin = stamp
            if stamp < self._origin:
                return
            self._newest = max(self._newest or stamp, stamp)
            t = stamp - self._origin
            if t > self._end:
                return
            log.samples.append((t, position.x, position.y))
            goals = log.config.goals
            if log.goal_index < len(goals):
                goal = goals[log.goal_index]
                if math.hypot(position.x - goal[0], position.y - goal[1]) <= self._tolerance:
                    log.goal_times[log.goal_index] = t
                    log.goal_index += 1
                    self._send_goal(log)
                    if all(other.goal_index >= len(other.config.goals)
                           for other in self._logs.values()):
                        self._end = t

    def _check_for_another_fleet(self) -> None:
        clashes = [robot_topic(name, 'odom') for name in self._logs
                   if self.count_publishers(robot_topic(name, 'odom')) > 1]
        if clashes:
            with self._lock:
                self._error = (f'{clashes[0]} has another publisher: another fleet runs on '
                               'this ROS domain (or one killed in the last ~20 s is still '
                               'in DDS discovery); give this run its own ROS_DOMAIN_ID')

    def _on_collision(self, msg: String) -> None:
        try:
            report = json.loads(msg.data)
            names, stamp = report['robots'], float(report['time'])
            count = int(report.get('count', 0))
        except (ValueError, KeyError, TypeError):
            self.get_logger().warning(f'{COLLISIONS_TOPIC}: unreadable report {msg.data!r}')
            names, stamp, count = [], None, 0
        with self._lock:
            if stamp is not None and self._origin is not None and \
                    stamp - self._origin > self._end:
                return      # after the record ended
            # The simulator's running count covers reports that fell out of its history.
            self._collision_events = max(self._collision_events + 1, count)
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
        """Publishes the robot's next goal, if it has one left (caller holds the lock)."""
        if log.goal_index >= len(log.config.goals):
            return
        x, y, yaw = log.config.goals[log.goal_index]
        msg = PoseStamped()
        msg.header.frame_id = self._cfg.global_frame
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.pose.position.x, msg.pose.position.y = float(x), float(y)
        msg.pose.orientation = yaw_to_quaternion(yaw)
        self._goal_pubs[log.config.name].publish(msg)
