"""A robot's status, as the controller and the planning supervisor report it: how bad (Level),
what for people (message), and the figures behind it (values).

The levels are diagnostic_msgs/DiagnosticStatus's numbers; `orca_nav.ros.diagnostics` is the one
place that turns a status into a message.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Mapping


class Level(enum.IntEnum):
    """Severity of a robot's status."""

    OK = 0
    WARN = 1
    ERROR = 2


@dataclass(frozen=True)
class RobotStatus:
    robot: str
    level: Level
    message: str
    values: Mapping[str, str] = field(default_factory=dict)
