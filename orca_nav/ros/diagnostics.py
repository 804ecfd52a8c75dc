"""Core statuses -> diagnostic_msgs (the one place that knows the message's level encoding), and
the control cycle's own timing."""
from __future__ import annotations

import time
from typing import Dict, List, Tuple

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

# The core's levels are plain ints in diagnostic_msgs' order (OK 0, WARN 1, ERROR 2).
_LEVELS = (DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR)


def status_msg(name: str, hardware_id: str, level: int, message: str,
               values: Dict[str, str]) -> DiagnosticStatus:
    return DiagnosticStatus(level=_LEVELS[level], name=name, hardware_id=hardware_id,
                            message=message,
                            values=[KeyValue(key=k, value=v) for k, v in values.items()])


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

    def status(self) -> DiagnosticStatus:
        values = {f'cycle{kind}_p{q}_ms': f'{np.percentile(times, q):.3f}'
                  for kind, times in (('', self._wall_ms), ('_cpu', self._cpu_ms)) if times
                  for q in (50, 99)}
        if self._wall_ms:
            values['cycles'] = str(len(self._wall_ms))
        return status_msg(self._name, '', 0, f'last {len(self._wall_ms)} cycles', values)
