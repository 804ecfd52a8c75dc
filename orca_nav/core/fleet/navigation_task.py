"""A robot's navigation task, as Nav2's navigation actions define it, on the planner's goals.

A task is a goal sequence (`orca_nav.core.fleet.goal_sequence.GoalSequence`) that the
`FleetPlanner` executes one goal at a time; the planner's `GoalEnd` of the current goal steps it:

* ``to_pose`` (NavigateToPose): one goal; the task ends as the goal does.
* ``through_poses`` (NavigateThroughPoses): the poses in turn without stopping at the
  intermediate ones: an intermediate pose counts as passed once the robot is within
  `pass_radius` of it (Nav2's RemovePassedGoals), and the planner is given the next one at
  once. The task succeeds when the last pose is reached; any failure ends it.
* ``waypoints`` (FollowWaypoints): each pose reached in turn (the robot stops at every one),
  from `start` on, then `loops` more rounds from the first. A waypoint the planner fails to
  reach is missed: with `stop_on_failure` (Nav2's waypoint_follower default) the task ends
  there, failed; without, it goes on with the next waypoint and succeeds at the end. Either way
  the result lists every missed waypoint with the reason.

Poses are (x, y, z, yaw); distances count in the robot's planning dimension (x, y for a ground
robot, x, y, z for a drone). Times are passed in.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional, Sequence, Tuple

from orca_nav.core.fleet.fleet_planner import GoalEnd, Progress
from orca_nav.core.fleet.goal_sequence import GoalSequence, Missed, Pose
from orca_nav.core.validation import finite_at_least_zero

KINDS = ('to_pose', 'through_poses', 'waypoints')


@dataclass(frozen=True)
class TaskOutcome:
    """How a task ended: succeeded, or why not (the `GoalEnd` reason and message of the goal
    that ended it), and the waypoints missed on the way."""

    succeeded: bool
    reason: str
    message: str
    missed: Tuple[Missed, ...] = ()


class NavigationTask:
    """One robot's task (see the module docstring). `goal()` is what the planner should be
    heading for; `moved` and `ended` step the task and return the next goal to plan to when it
    changed; `outcome` is set once the task is over."""

    def __init__(self, kind: str, goals: Sequence[Sequence[float]], dim: int,
                 pass_radius: float = 0.7, start: int = 0, loops: int = 0,
                 stop_on_failure: bool = True):
        if kind not in KINDS:
            raise ValueError(f'kind {kind!r} is not one of {", ".join(KINDS)}')
        if not goals:
            raise ValueError('no goals given')
        finite_at_least_zero('pass_radius', pass_radius, positive=True)
        self.kind, self.dim = kind, dim
        self.pass_radius, self.stop_on_failure = pass_radius, stop_on_failure
        self.sequence = GoalSequence(goals, start, loops)
        self.outcome: Optional[TaskOutcome] = None

    def goal(self) -> Optional[Pose]:
        return None if self.outcome is not None else self.sequence.current()

    def moved(self, position: Sequence[float], now: float) -> Optional[Pose]:
        """The robot is at `position`: passes the intermediate poses of a through_poses task
        it is within `pass_radius` of. Returns the new goal when the goal changed."""
        if self.kind != 'through_poses' or self.outcome is not None:
            return None
        passed = False
        while self.sequence.ahead() and self.sequence.near(position[:self.dim],
                                                            self.pass_radius):
            self.sequence.reached(now)
            passed = True
        return self.sequence.current() if passed else None

    def ended(self, end: GoalEnd, now: float) -> Optional[Pose]:
        """The planner ended the current goal. Returns the next goal to plan to, or None when
        the task is over (`outcome`)."""
        if self.outcome is not None:
            return None
        if end.reached:
            self.sequence.reached(now)
        elif self.kind == 'waypoints':
            self.sequence.miss(end.reason, end.message)
            if self.stop_on_failure:
                return self._finish(False, end.reason, end.message)
        else:
            return self._finish(False, end.reason, end.message)
        if self.sequence.done():
            missed = len(self.sequence.missed)
            return self._finish(True, 'reached', f'{len(self.sequence.goals)} goals done'
                                + (f', {missed} missed' if missed else ''))
        return self.sequence.current()

    def remaining(self) -> int:
        """The goals still to go, the current one included (this round)."""
        return 0 if self.goal() is None else 1 + len(self.sequence.ahead())

    def progress(self, current: Progress, speed: float) -> Progress:
        """The planner's progress toward the current goal extended to the task's last goal of
        this round: straight lines between the goals after the current one, at `speed`."""
        goals = [self.sequence.current()] + self.sequence.ahead() if self.goal() else []
        beyond = sum(math.dist(a[:self.dim], b[:self.dim]) for a, b in zip(goals, goals[1:]))
        return replace(current, distance_remaining=current.distance_remaining + beyond,
                       time_remaining=current.time_remaining + beyond / speed)

    def _finish(self, succeeded: bool, reason: str, message: str) -> None:
        self.outcome = TaskOutcome(succeeded, reason, message, tuple(self.sequence.missed))
        return None
