"""When control cycles run: slots on the control-rate grid, and the interval the next command
may last (what the safety layer counts as reaction time).

Each cycle takes the next slot, so cycles come at the configured rate on average whatever
triggers them (odometry faster than the control rate does not round every cycle up to the next
odometry message); a cycle a period or more behind the grid (the first one, a pause) restarts
it from now rather than catching up in a burst. Time is passed in.
"""
from __future__ import annotations

import math

_EARLY = 0.1        # control periods: how early before its grid slot a cycle may run
_MIN_GAP = 0.5      # control periods: the least time between two cycles
_INTERVAL_MEMORY = 0.9   # per cycle: how slowly a late cycle's interval is forgotten


class CycleTiming:
    """The control-rate grid and the recent cycle interval (fast up, slow down)."""

    def __init__(self, period: float):
        self.last = -math.inf       # the last cycle's time
        self.next = -math.inf       # the grid's next slot
        self.interval = period      # s: the interval the next command may last

    def due(self, now: float, period: float) -> bool:
        """A cycle may run: its slot has come (a little early counts: odometry jitters)."""
        return now >= self.next - _EARLY * period

    def start(self, now: float, period: float, odom_timeout: float) -> float:
        """Records a cycle at `now`; returns the time step it integrates over (the interval
        since the last cycle, within 1 ms .. two periods)."""
        interval = now - self.last if math.isfinite(self.last) else period
        # A late cycle counts at once, and is forgotten slowly (a starved machine stays late).
        self.interval = max(min(interval, odom_timeout),
                            period + (self.interval - period) * _INTERVAL_MEMORY)
        self.last = now
        slot = self.next + period
        self.next = now + period if slot < now else max(slot, now + _MIN_GAP * period)
        return min(max(interval, 1e-3), 2.0 * period)
