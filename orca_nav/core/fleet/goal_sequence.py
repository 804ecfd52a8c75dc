"""Missions: each robot visits its goals in turn.

A robot's current goal counts as reached once a reported position is within `tolerance` of it;
then the next goal becomes current. The mission node sends that goal; the demo's recorder,
seeing the same odometry, records the same reach times. Times are passed in.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

Pose = Tuple[float, float, float]


class GoalSequences:
    """Every robot's goal sequence and how far along it is."""

    def __init__(self, goals: Dict[str, Sequence[Pose]], tolerance: float):
        if not (math.isfinite(tolerance) and tolerance > 0.0):
            raise ValueError(f'goal_tolerance: must be finite and > 0, got {tolerance}')
        self.tolerance = tolerance
        self.goals = {robot: [tuple(map(float, g)) for g in seq] for robot, seq in goals.items()}
        self.index = {robot: 0 for robot in goals}
        self.reach_times: Dict[str, List[Optional[float]]] = {
            robot: [None] * len(seq) for robot, seq in goals.items()}

    def current(self, robot: str) -> Optional[Pose]:
        k = self.index[robot]
        return self.goals[robot][k] if k < len(self.goals[robot]) else None

    def update(self, robot: str, t: float, x: float, y: float) -> Optional[Pose]:
        """Robot `robot` is at (x, y) at time t. Returns its next goal when this position
        reached the current one and another follows, else None."""
        goal = self.current(robot)
        if goal is None or math.hypot(x - goal[0], y - goal[1]) > self.tolerance:
            return None
        self.reach_times[robot][self.index[robot]] = t
        self.index[robot] += 1
        return self.current(robot)

    def done(self, robot: str) -> bool:
        return self.index[robot] >= len(self.goals[robot])

    def all_done(self) -> bool:
        return all(self.done(robot) for robot in self.goals)
