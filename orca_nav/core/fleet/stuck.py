"""Stuck detection and the escalation ladder of one robot with a goal.

A robot is *stuck* when the distance it still has to go has not shrunk by ``min_progress``
within ``stuck_time``, except while it waits its turn by design (`waiting`): then the clock does
not run, and what it waits for is said in its status (the fleet supervisor counts a wait behind
a robot that is on the ladder itself as being stuck). Waiting is by design for
``WAIT_BOUND`` stuck_times at the most (15 s by default), counted from the first wait since the
robot's last progress: turns that change hands among robots standing on each other's paths can
hold a robot at its gate for minutes, or give it the go and take it back every second (two
cars nose to nose, each on the other's path, neither able to move on its go), and after that
bound its clock runs like any other's (so a wait without progress reaches the ladder's second
rung, backing out, at 35 s). Each further ``stuck_time`` without
progress climbs one rung of ``LADDER`` and puts the robot last in the order of turns (the
robots waiting for it go first); getting closer to the goal in a straight line than ever before
steps back to the bottom (progress along a new path only stops the clock: a car whose every
replanned manoeuvre ends where it stood makes progress along each, and would replan forever):

1. ``replan_around``: plan again from where it stands, with the other robots' current places
   as obstacles (a robot pushed off its path, a car short of its goal or nosed into a corner
   gets a new manoeuvre, reversing where it must; a robot behind a standing one goes around);
   a car standing on its trajectory first backs straight off the way it was driving (what the
   safety layer holds it from: a plan from where it stands may start toward it); robots parked
   or waiting their turn beside its way just ahead, nearer than ORCA's distance plus the
   coordination clearance, make way or back out of it (ORCA keeps more off the map than the
   plan: a pass the plan found may not be drivable);
2. ``back_out``: leave for the nearest place off the other robots' way (the one-lane aisle, the
   door), then plan to the goal again and wait there for its turn;
3. ``blocked``: nothing helped; the robot says so (its status, at WARN) and the ladder starts
   again after another ``stuck_time``. A navigate_to_pose goal ends at its ``jam_timeout``.

Time is passed in; no numpy needed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

LADDER = ('replan_around', 'back_out', 'blocked')
WAIT_BOUND = 1.5        # stuck_times one wait counts as waiting by design, at the most


@dataclass
class StuckWatch:
    """One robot's progress toward its goal and its rung on the ladder."""

    min_progress: float = 0.1       # m the distance to go must shrink by ...
    closest: float = float('inf')   # ... below the least distance so far
    closer_at: float = 0.0          # when it last did (or the goal was set)
    rung: int = 0                   # rungs climbed since the last progress
    nearest: float = float('inf')   # least straight-line distance to the goal so far
    rung_at_progress: int = 0       # the rung when closer_at last moved
    rebased: bool = False           # a new path: its first distance is the new baseline
    waiting_since: Optional[float] = None   # the first wait for a turn since the last progress

    def reset(self, now: float) -> None:
        """A new goal: no progress owed yet."""
        self.closest, self.closer_at, self.rung, self.rebased = float('inf'), now, 0, False
        self.nearest, self.rung_at_progress, self.waiting_since = float('inf'), 0, None

    def rebase(self) -> None:
        """A new path to the same goal (a detour is longer): progress is counted along it from
        the next observation on, without counting the change itself as progress."""
        self.rebased = self.closest < float('inf')

    def observe(self, now: float, distance: float, waiting: bool = False,
                stuck_time: float = float('inf'), straight: Optional[float] = None) -> None:
        """The distance still to go at `now` (along the path) and `straight` to the goal (None:
        the same); `waiting`: the robot waits its turn by design, which is not being stuck for
        WAIT_BOUND * `stuck_time` from its first wait since its last progress."""
        straight = distance if straight is None else straight
        if straight <= self.nearest - self.min_progress:
            self.nearest, self.rung, self.rung_at_progress = straight, 0, 0
        if waiting and self.waiting_since is None:
            self.waiting_since = now
        elif waiting and now - self.waiting_since > WAIT_BOUND * stuck_time:
            waiting = False
        if self.rebased:
            self.closest, self.rebased = distance, False
        elif distance <= self.closest - self.min_progress:
            self.closest, self.closer_at, self.rung_at_progress = distance, now, self.rung
            self.waiting_since = now if waiting else None
        elif waiting:
            self.closer_at = now
            self.rung = self.rung_at_progress = 0

    def stalled_for(self, now: float) -> float:
        """Seconds since the last progress."""
        return now - self.closer_at

    def climb(self, now: float, stuck_time: float) -> Optional[str]:
        """The next rung of LADDER when another `stuck_time` passed without progress, else
        None. After the last rung the ladder starts again."""
        climbed = self.rung - self.rung_at_progress
        if stuck_time <= 0.0 or self.stalled_for(now) < (climbed + 1) * stuck_time:
            return None
        step = LADDER[self.rung % len(LADDER)]
        self.rung += 1
        return step
