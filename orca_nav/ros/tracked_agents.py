"""orca_node's input of non-cooperative agents (people, forklifts, robots of another fleet).

Message: nav_msgs/Odometry on one topic (`tracked_agents_topic`), one message per agent and
update, `child_frame_id` the agent's id, the pose in the global frame, the twist in the agent's
own frame (as any odometry), `pose.covariance` its position uncertainty. Why Odometry: it is the
one standard message that carries a stamp, a frame, a pose, a velocity and their covariances
together; a tracker publishes each track as it updates it; and the node already reads it
without full deserialization. A PoseArray has no velocities (a second topic would need pairing
by stamp and index), and per-agent topics under a prefix would need topic discovery at run time.
Radius: Odometry has none, so every agent gets `tracked_agent_radius`.

Each cycle the agents are handed to the controller projected to the cycle time
(`core.fleet.tracked_agents`); an agent not heard of for `tracked_agent_timeout` is dropped with
a warning, the same agent's later drops at most once per DROP_REPORT_PERIOD_S with a count (a
tracker that keeps losing and finding someone made dozens of lines in one run).
"""
from __future__ import annotations

from typing import Callable, Dict

from nav_msgs.msg import Odometry
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from orca_nav.core.fleet.tracked_agents import DropReports, TrackedAgents
from orca_nav.ros.convert import odom_state_from_cdr

DROP_REPORT_PERIOD_S = 60.0     # node-clock s between two warnings about one agent's drops
# One message per agent: a tracker's burst for a crowd must fit (best effort matches any publisher).
TRACKED_AGENTS_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=200,
                  reliability=ReliabilityPolicy.BEST_EFFORT)


class TrackedAgentsInput:
    """Subscribes to the tracked agents (if `tracked_agents_topic` is set) and hands them to the
    controller before each cycle. `cfg` is the node's parameter dict (read live)."""

    def __init__(self, node, fleet, cfg: Dict, global_frame: str,
                 warn: Callable[[tuple, str], None]):
        self._node, self._fleet, self._cfg = node, fleet, cfg
        self._global_frame, self._warn = global_frame, warn
        self.agents = TrackedAgents(cfg['tracked_agent_radius'], cfg['tracked_agent_timeout'])
        self._drop_reports = DropReports(DROP_REPORT_PERIOD_S)
        topic = cfg['tracked_agents_topic']
        if topic:
            node.create_subscription(Odometry, topic, self._on_agent, TRACKED_AGENTS_QOS,
                                     raw=True)

    def _on_agent(self, raw: bytes) -> None:
        topic = self._cfg['tracked_agents_topic']
        try:
            state = odom_state_from_cdr(raw)
            if not state.child_frame_id:
                raise ValueError('child_frame_id (the agent id) is empty')
            if state.frame_id != self._global_frame:
                raise ValueError(f'header.frame_id {state.frame_id!r} is not the global frame '
                                 f'{self._global_frame!r}')
            self.agents.update(state.child_frame_id, state.stamp_s, state.position,
                               state.velocity, state.position_covariance)
        except ValueError as err:
            self._warn(('tracked_agents', 'input'), f'{topic}: ignoring an agent: {err}')

    def refresh(self, now: float) -> None:
        """Drops stale agents (with a warning) and gives the controller the others at `now`."""
        self.agents.radius = self._cfg['tracked_agent_radius']
        self.agents.timeout = self._cfg['tracked_agent_timeout']
        drops = self.agents.drop_stale(now)
        for line in self._drop_reports.lines(drops, now, self.agents.timeout):
            self._node.get_logger().warning(f'{self._cfg["tracked_agents_topic"]}: {line}')
        p = self._fleet.params
        self._fleet.set_others(self.agents.at(now, p.uncertainty_gain, p.max_uncertainty_margin,
                                              p.max_extrapolation))
