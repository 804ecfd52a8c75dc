"""Goal sequences: a robot visits its goals in turn.

`GoalSequence` is one robot's: its goals from a start index on, then `loops` more rounds from
the first goal (Nav2's FollowWaypoints `number_of_loops`); each goal ends reached (when, is
recorded) or missed (why, is recorded), and the next becomes current. Who decides that a goal
ended differs:

* `GoalSequences`, a fleet's missions: a goal counts as reached once a reported position is
  within `tolerance` of it. The mission node sends the next goal; the demo's recorder, seeing
  the same odometry, records the same reach times.
* the planner's navigation actions (`orca_nav.core.fleet.navigation_task`): the planner
  says when a goal was reached or failed.

Times are passed in.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

Pose = Tuple[float, ...]        # x, y, yaw (a mission's); x, y, z, yaw (a navigation action's)


@dataclass(frozen=True)
class Missed:
    """A goal that ended without being reached: its index, the goal, why (a planner reason such
    as 'goal_in_collision' or 'jammed') and a message for people."""

    index: int
    goal: Pose
    reason: str
    message: str


class GoalSequence:
    """One robot's goals in turn (see the module docstring)."""

    def __init__(self, goals: Sequence[Sequence[float]], start: int = 0, loops: int = 0):
        self.goals: List[Pose] = [tuple(float(v) for v in goal) for goal in goals]
        if self.goals and not 0 <= start < len(self.goals):
            raise ValueError(f'start index {start} is not one of the {len(self.goals)} goals '
                             f'(0..{len(self.goals) - 1})')
        if loops < 0:
            raise ValueError(f'loops must be >= 0, got {loops}')
        self.index = start if self.goals else 0
        self.loops_left = loops
        self.reach_times: List[Optional[float]] = [None] * len(self.goals)
        self.missed: List[Missed] = []

    def current(self) -> Optional[Pose]:
        return self.goals[self.index] if not self.done() else None

    def done(self) -> bool:
        return self.index >= len(self.goals)

    def ahead(self) -> List[Pose]:
        """The goals after the current one in this round."""
        return self.goals[self.index + 1:]

    def near(self, position: Sequence[float], radius: float) -> bool:
        """`position` (x, y, or x, y, z) is within `radius` of the current goal."""
        goal = self.current()
        return goal is not None and math.dist(position, goal[:len(position)]) <= radius

    def reached(self, t: float) -> Optional[Pose]:
        """The current goal was reached at time t; returns the next one (None: done)."""
        self.reach_times[self.index] = t
        return self._next()

    def miss(self, reason: str, message: str) -> Optional[Pose]:
        """The current goal ended unreached; returns the next one (None: done)."""
        self.missed.append(Missed(self.index, self.current(), reason, message))
        return self._next()

    def _next(self) -> Optional[Pose]:
        self.index += 1
        if self.done() and self.loops_left > 0:
            self.loops_left -= 1
            self.index = 0
        return self.current()


class GoalSequences:
    """Every robot's mission: its goal sequence, stepped by reported positions."""

    def __init__(self, goals: Dict[str, Sequence[Pose]], tolerance: float):
        if not (math.isfinite(tolerance) and tolerance > 0.0):
            raise ValueError(f'goal_tolerance: must be finite and > 0, got {tolerance}')
        self.tolerance = tolerance
        self.robots: Dict[str, GoalSequence] = {robot: GoalSequence(seq)
                                                for robot, seq in goals.items()}

    def __getitem__(self, robot: str) -> GoalSequence:
        return self.robots[robot]

    def update(self, robot: str, t: float, x: float, y: float) -> Optional[Pose]:
        """Robot `robot` is at (x, y) at time t. Returns its next goal when this position
        reached the current one and another follows, else None."""
        sequence = self.robots[robot]
        if not sequence.near((x, y), self.tolerance):
            return None
        return sequence.reached(t)

    def done(self, robot: str) -> bool:
        return self.robots[robot].done()

    def all_done(self) -> bool:
        return all(sequence.done() for sequence in self.robots.values())
