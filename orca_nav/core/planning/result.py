"""Result types shared by every global planner (kinodynamic A*, hybrid A*)."""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import Any, Optional


class PlanStatus(enum.Enum):
    SUCCESS = 'success'
    NO_PATH = 'no_path'
    TIMEOUT = 'timeout'
    START_IN_COLLISION = 'start_in_collision'
    GOAL_IN_COLLISION = 'goal_in_collision'
    OUT_OF_MAP = 'out_of_map'
    INTERNAL_ERROR = 'internal_error'     # the planner raised: a bug, reported as a failure


@dataclass
class PlanStats:
    expanded_nodes: int = 0
    plan_time: float = 0.0          # wall-clock seconds spent in plan()
    analytic_attempts: int = 0
    analytic_success: bool = False


@dataclass
class PlanResult:
    status: PlanStatus
    message: str
    stats: PlanStats = field(default_factory=PlanStats)
    trajectory: Optional[Any] = None   # kinodynamic A*: a time-parametrised trajectory
    path: Optional[Any] = None         # hybrid A*: a path with per-pose driving direction

    @property
    def success(self) -> bool:
        return self.status is PlanStatus.SUCCESS


class PlanClock:
    """Times one plan() call and fills its stats; `finish` builds the PlanResult."""

    def __init__(self):
        self.start = time.perf_counter()
        self.stats = PlanStats()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def finish(self, status: PlanStatus, message: str, **result) -> PlanResult:
        self.stats.plan_time = self.elapsed()
        return PlanResult(status, message, self.stats, **result)
