"""The demo's recorder: follows each robot through its goals and records the run.

mission_node (started by the graph, as under `ros2 launch`) steps the robots through their
goals; this recorder applies the same `GoalSequences` to the same odometry, so it knows when
each goal was reached without asking. It records every robot's odometry (time, x, y, z: a
drone's goal counts as reached only at its goal altitude too, within the tolerance), the
simulator's collision reports (`/fleet_sim/collisions`, std_msgs/String with one JSON object per
new contact), the planned paths on `/<robot>/plan`, the people (non-cooperative agents) on
`tracked_agents`, and planner_node's status per robot on `/diagnostics`: a robot whose planning
failed (an ERROR status: no path, budget spent, goal in an obstacle) holds still for good, and
the report says why. Times are odometry stamps, in seconds
since the first odometry heard: simulated time when the run is on /clock. The record ends at
the stamp that completed the mission (every robot has reached its goals in turn and all are at
their last goals at once: one pushed off its goal after reaching it is waited for), or at which
every robot is at its last goal or has failed to plan (nothing more will happen), or at the
demo's duration, whichever comes first, whenever the caller stops the run: on simulated time in
lockstep the same run gives the same record.

All rclpy calls happen in callbacks on the graph's executor (calling into rclpy from another
thread while the EventsExecutor spins can deadlock); the CLI only reads the recorded state,
which one lock guards.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import Odometry, Path
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from std_msgs.msg import String

from orca_nav.bringup.fleet_file import FleetConfig, RobotConfig
from orca_nav.bringup.report import PersonTrack, RobotTrack, empty_contact_tally
from orca_nav.core.fleet.goal_sequence import GoalSequences
from orca_nav.core.fleet.names import robot_names
from orca_nav.parameters.shared import SHARED_SPECS
from orca_nav.ros.convert import latched_qos, odom_to_state, stamp_to_seconds
from orca_nav.ros.fleet_sim_node import COLLISION_HISTORY
from orca_nav.ros.tf_poses import FleetPoses
from orca_nav.ros.tracked_agents import TRACKED_AGENTS_QOS

COLLISIONS_TOPIC = 'fleet_sim/collisions'   # relative: the graph's namespace
DIAGNOSTICS_TOPIC = '/diagnostics'
PLANNER_STATUS = 'planner_node: '           # name prefix of planner_node's robot statuses
PEOPLE_TOPIC = 'tracked_agents'             # relative, as orca_node's default
_CLASH_CHECK_EVERY = 100    # odometry messages between two looks for a second odometry publisher


@dataclass
class _RobotLog:
    config: RobotConfig
    samples: List[tuple] = field(default_factory=list)       # (t, x, y, z) since the origin
    latest_stamp: Optional[float] = None
    collisions: int = 0
    plans: List[np.ndarray] = field(default_factory=list)
    planning_failure: Optional[str] = None      # planner_node's latest status, if an ERROR


def goal_altitude(robot: RobotConfig) -> float:
    """The altitude a drone's goals are at: goal_z, or its start altitude for goal_z 0 (flying
    level); 0 for a ground robot."""
    return (robot.goal_z or robot.start_z) if robot.flies else 0.0


class DemoMission(Node):
    """Goal sequencing and recording for one fleet run (see the module docstring)."""

    def __init__(self, cfg: FleetConfig, goal_tolerance: Optional[float] = None, **kwargs):
        super().__init__('demo_mission', **kwargs)
        self._cfg = cfg
        self._tolerance = cfg.demo.goal_tolerance if goal_tolerance is None else goal_tolerance
        self._lock = threading.Lock()
        self._error: Optional[str] = None
        self._logs: Dict[str, _RobotLog] = {
            r.name: _RobotLog(r) for r in cfg.robots}
        self._goals = GoalSequences({r.name: r.goals for r in cfg.robots}, self._tolerance)
        self._poses = FleetPoses(self, [r.name for r in cfg.robots], cfg.tf_layout,
                                 cfg.global_frame, SHARED_SPECS['transform_tolerance'].default)
        self._origin: Optional[float] = None
        self._newest: Optional[float] = None
        self._end = cfg.demo.duration      # s since the origin: the record stops here
        self._odometry_count = 0
        self._collision_events = 0
        self._person_contacts = 0
        self._contacts = empty_contact_tally()
        self._people: Dict[str, List[tuple]] = {}     # id -> [(t, x, y)]
        self.create_subscription(Odometry, PEOPLE_TOPIC, self._on_person, TRACKED_AGENTS_QOS)
        self.create_subscription(DiagnosticArray, DIAGNOSTICS_TOPIC, self._on_diagnostics, 100)
        for name in self._logs:
            # Best effort matches reliable and best-effort odometry publishers alike.
            self.create_subscription(Odometry, robot_names(name).odom_topic,
                                     lambda msg, n=name: self._on_odom(n, msg),
                                     qos_profile_sensor_data)
            self.create_subscription(Path, robot_names(name).plan_topic,
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

    def origin(self) -> Optional[float]:
        """The odometry stamp (s) the record's times count from (None before any)."""
        with self._lock:
            return self._origin

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
            return {'at_goal': sum(self._goals.done(name) for name in self._logs),
                    'robots': len(self._logs),
                    'goals_reached': sum(self._goals[name].index for name in self._logs),
                    'goals': sum(len(log.config.goals) for log in logs),
                    'collisions': self._collision_events,
                    'planning_failed': sum(log.planning_failure is not None for log in logs)}

    def finished(self) -> bool:
        progress = self.progress()
        return progress['at_goal'] == progress['robots']

    def tracks(self) -> List[RobotTrack]:
        with self._lock:
            out = []
            for name, log in self._logs.items():
                robot = log.config
                dim = 3 if robot.flies else 2
                samples = np.array(log.samples, dtype=float).reshape(-1, 4)
                goals = np.array([(*g[:2], goal_altitude(robot)) for g in robot.goals],
                                 dtype=float)[:, :dim].reshape(-1, dim)
                out.append(RobotTrack(name=name, radius=robot.radius, t=samples[:, 0],
                                      xy=samples[:, 1:1 + dim], goals=goals,
                                      goal_times=list(self._goals[name].reach_times),
                                      collisions=log.collisions,
                                      planning_failure=log.planning_failure))
            return out

    def plans(self) -> Dict[str, List[np.ndarray]]:
        with self._lock:
            return {name: list(log.plans) for name, log in self._logs.items() if log.plans}

    def collision_events(self) -> int:
        with self._lock:
            return self._collision_events

    def person_contacts(self) -> int:
        with self._lock:
            return self._person_contacts

    def contacts(self) -> Dict[str, Dict[str, int]]:
        """The contacts by class ({category: {'moving': n, 'rest': m}})."""
        with self._lock:
            return {category: dict(counts) for category, counts in self._contacts.items()}

    def people(self, radius: float) -> List[PersonTrack]:
        """Every person heard on `tracked_agents`, with the given radius."""
        with self._lock:
            out = []
            for name, samples in self._people.items():
                array = np.array(samples, dtype=float).reshape(-1, 3)
                out.append(PersonTrack(name, radius, array[:, 0], array[:, 1:]))
            return out

    # ---- callbacks ---------------------------------------------------------------------------

    def _on_odom(self, name: str, msg: Odometry) -> None:
        try:        # the pose in the global frame, as orca_node sees it (TF layouts included)
            state = odom_to_state(msg)
            xy, _, _ = self._poses.to_global(name, state)
        except ValueError:
            return
        stamp, x, y, z = state.stamp_s, float(xy[0]), float(xy[1]), float(xy[2])
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
            log.samples.append((t, x, y, z))
            if not self._goals.done(name) and self._at_goal_altitude(log.config, z):
                self._goals.update(name, t, x, y)
            if self._all_settled():
                self._end = t

    def _all_settled(self) -> bool:
        """Nothing more will happen: every robot with goals has reached them in turn and is at
        its last one now (its newest sample), or its planning failed (it holds still)."""
        for name, log in self._logs.items():
            robot = log.config
            if not robot.goals or log.planning_failure is not None:
                continue
            if not self._goals.done(name) or not log.samples:
                return False
            _, x, y, z = log.samples[-1]
            goal = robot.goals[-1]
            if np.hypot(x - goal[0], y - goal[1]) > self._tolerance or \
                    not self._at_goal_altitude(robot, z):
                return False
        return True

    def _at_goal_altitude(self, robot: RobotConfig, z: float) -> bool:
        """A drone is at its goals' altitude; a ground robot always."""
        return not robot.flies or abs(z - goal_altitude(robot)) <= self._tolerance

    def _check_for_another_fleet(self) -> None:
        topics = [self.resolve_topic_name(robot_names(name).odom_topic) for name in self._logs]
        clashes = [topic for topic in topics if self.count_publishers(topic) > 1]
        if clashes:
            with self._lock:
                self._error = (f'{clashes[0]} has another publisher: another fleet runs on '
                               'this ROS domain (or one killed in the last ~20 s is still '
                               'in DDS discovery); give this run its own ROS_DOMAIN_ID')

    def _on_collision(self, msg: String) -> None:
        try:
            report = json.loads(msg.data)
            names, stamp = report['robots'], float(report['time'])
            count, kind = int(report.get('count', 0)), report.get('kind')
            category, moving = report.get('category'), bool(report.get('moving', True))
        except (ValueError, KeyError, TypeError, AttributeError):
            self.get_logger().warning(f'{COLLISIONS_TOPIC}: unreadable report {msg.data!r}')
            names, stamp, count, kind, category, moving = [], None, 0, None, None, True
        with self._lock:
            if stamp is not None and self._origin is not None and \
                    stamp - self._origin > self._end:
                return      # after the record ended
            # The simulator's running count covers reports that fell out of its history.
            self._collision_events = max(self._collision_events + 1, count)
            if kind == 'robot_person':
                self._person_contacts += 1
            if category in self._contacts:
                self._contacts[category]['moving' if moving else 'rest'] += 1
            for name in names if isinstance(names, list) else []:
                if name in self._logs:
                    self._logs[name].collisions += 1

    def _on_person(self, msg: Odometry) -> None:
        stamp = stamp_to_seconds(msg.header.stamp)
        position = msg.pose.pose.position
        with self._lock:
            if self._origin is None or not self._origin <= stamp <= self._origin + self._end:
                return
            self._people.setdefault(msg.child_frame_id, []).append(
                (stamp - self._origin, position.x, position.y))

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        with self._lock:
            for status in msg.status:
                log = self._logs.get(status.hardware_id)
                if log is not None and status.name.startswith(PLANNER_STATUS):
                    log.planning_failure = (status.message if status.level == DiagnosticStatus.ERROR
                                            else None)

    def _on_plan(self, name: str, msg: Path) -> None:
        points = np.array([(p.pose.position.x, p.pose.position.y, p.pose.position.z)
                           for p in msg.poses], dtype=float).reshape(-1, 3)
        points = points if self._logs[name].config.flies else points[:, :2]
        if len(points) and np.all(np.isfinite(points)):
            with self._lock:
                self._logs[name].plans.append(points)
