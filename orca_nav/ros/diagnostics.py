"""Core statuses -> diagnostic_msgs (the one place that knows the message's level encoding), the
control cycle's own timing, and a fleet's statuses published in parts."""
from __future__ import annotations

import math
import time
from typing import List, Mapping, Tuple

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from orca_nav.core.fleet.status import Level, RobotStatus
from orca_nav.ros.convert import node_now

_LEVELS = {Level.OK: DiagnosticStatus.OK, Level.WARN: DiagnosticStatus.WARN,
           Level.ERROR: DiagnosticStatus.ERROR}
# Robot statuses per /diagnostics message. A bigger fleet is reported in parts spread over the
# period, each robot still once a period: 500 statuses in one go hold up a control cycle ~15 ms.
_STATUSES_PER_MESSAGE = 50


def status_msg(name: str, hardware_id: str, level: Level, message: str,
               values: Mapping[str, str]) -> DiagnosticStatus:
    return DiagnosticStatus(level=_LEVELS[level], name=name, hardware_id=hardware_id,
                            message=message,
                            values=[KeyValue(key=k, value=v) for k, v in values.items()])


def robot_status_msg(node_name: str, status: RobotStatus) -> DiagnosticStatus:
    """A robot's core status as `<node_name>: <robot>`, its hardware id the robot."""
    return status_msg(f'{node_name}: {status.robot}', status.robot, status.level,
                      status.message, status.values)


class CycleTimes:
    """Wall-clock and thread CPU time of a node's last `history` control cycles, reported as one
    diagnostic status (p50 and p99 of each): what a cycle costs, and how much of it other
    processes competing for the cores add."""

    def __init__(self, name: str, history: int = 200):
        self._name, self._history = name, history
        self._wall_ms: List[float] = []
        self._cpu_ms: List[float] = []

    @staticmethod
    def start() -> Tuple[float, float]:
        return time.perf_counter(), time.thread_time()

    def record(self, started: Tuple[float, float]) -> None:
        """One cycle that began at `start()` has ended."""
        self._wall_ms.append(1e3 * (time.perf_counter() - started[0]))
        self._cpu_ms.append(1e3 * (time.thread_time() - started[1]))
        for history in (self._wall_ms, self._cpu_ms):
            del history[:max(0, len(history) - self._history)]

    def recent_wall_s(self, cycles: int = 20) -> float:
        """The longest wall-clock duration of the last `cycles` cycles (s; 0 before the first)."""
        return 1e-3 * max(self._wall_ms[-cycles:], default=0.0)

    def status(self) -> DiagnosticStatus:
        values = {f'cycle{kind}_p{q}_ms': f'{np.percentile(times, q):.3f}'
                  for kind, times in (('', self._wall_ms), ('_cpu', self._cpu_ms)) if times
                  for q in (50, 99)}
        if self._wall_ms:
            values['cycles'] = str(len(self._wall_ms))
        return status_msg(self._name, '', Level.OK, f'last {len(self._wall_ms)} cycles', values)


class FleetDiagnostics:
    """A FleetController's robots on /diagnostics: each commanded robot's status once per
    1/rate s, in parts of at most _STATUSES_PER_MESSAGE evenly spread over that period, the
    control cycle's timing (CycleTimes) with the first part. Diagnostic aggregators keep the
    latest status per name, so parts read as one report."""

    def __init__(self, node, fleet, publisher, cycle_times: CycleTimes, rate: float):
        self._node, self._fleet, self._pub, self._cycle_times = node, fleet, publisher, cycle_times
        commanded = np.flatnonzero(fleet.commanded)
        count = max(1, math.ceil(len(commanded) / _STATUSES_PER_MESSAGE))
        self._parts = np.array_split(commanded, count)
        self._next = 0
        node.create_timer(1.0 / (rate * count), self._publish_next_part)

    def _publish_next_part(self) -> None:
        part = self._next
        self._next = (part + 1) % len(self._parts)
        self.publish(self._parts[part], with_cycle_times=part == 0)

    def publish(self, rows, with_cycle_times: bool = False) -> None:
        """The statuses of the commanded robots among `rows` (fleet indices), now."""
        msg = DiagnosticArray()
        msg.header.stamp = self._node.get_clock().now().to_msg()
        msg.status = [robot_status_msg('orca_node', s)
                      for s in self._fleet.status(node_now(self._node), rows)]
        if with_cycle_times:
            msg.status.append(self._cycle_times.status())
        self._pub.publish(msg)
