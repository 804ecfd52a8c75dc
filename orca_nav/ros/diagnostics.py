"""Core statuses -> diagnostic_msgs: the one place that knows the message's level encoding."""
from __future__ import annotations

from typing import Dict

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

# The core's levels are plain ints in diagnostic_msgs' order (OK 0, WARN 1, ERROR 2).
_LEVELS = (DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR)


def status_msg(name: str, hardware_id: str, level: int, message: str,
               values: Dict[str, str]) -> DiagnosticStatus:
    return DiagnosticStatus(level=_LEVELS[level], name=name, hardware_id=hardware_id,
                            message=message,
                            values=[KeyValue(key=k, value=v) for k, v in values.items()])
