"""When a simulator driver sends its outputs and advances: `PeriodicSchedule` (odometry and
diagnostics due on a stepped time line) and `Lockstep` (the exchange of odometry and commands
with the robots' controllers). Times are passed in."""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from orca_nav.core.validation import finite_at_least_zero


class PeriodicSchedule:
    """When an output sent every `period` (odometry, diagnostics) is due on a stepped time line.

    The first call is due; later calls are due once `now` reaches the next due time within
    `tolerance` (half an integration step, so an output at the step rate goes out at every step
    despite rounding). Due times advance by `period`; periods missed by a stall are dropped, not
    caught up in a burst.
    """

    def __init__(self, period: float, tolerance: float = 0.0):
        self.period = finite_at_least_zero('period', period, positive=True)
        self.tolerance = finite_at_least_zero('tolerance', tolerance)
        self._next: Optional[float] = None

    def due(self, now: float) -> bool:
        if self._next is not None and now < self._next - self.tolerance:
            return False
        self._next = now if self._next is None else self._next + self.period
        if now >= self._next - self.tolerance:
            self._next = now + self.period
        return True


class Lockstep:
    """The bookkeeping of a simulator that advances in lockstep with its robots' controllers.

    An exchange opens when the simulator publishes odometry for the current time (`open`); each
    robot answers it with a command (`answer`: any command received after the opening counts, once
    per robot); the simulator may advance one period (`ready`) when every robot answered or the
    exchange timed out, and not sooner than `pace_period` after the opening (real-time pacing; 0:
    as fast as the answers come). The first exchange waits up to `start_timeout` counted from
    construction, so controllers can start and discover the topics; the later ones `timeout` from
    their opening (or, if the first opened only when the start-up wait ran out, that one too).
    The first exchange waits for every robot; later ones only for the robots that have answered
    at least once (a robot nobody commands must not hold the fleet up every exchange), and a
    robot joins as soon as its first answer comes.

    The first exchange's odometry goes out again every `resend_period` to the robots that have
    not answered (`resend_due`): DDS can count a subscription as matched before the subscriber
    has matched the publisher, and a controller that started a moment before would lose it and
    hold the run up for the rest of `start_timeout`. Later exchanges end at `timeout` anyway.

    Times are seconds of the caller's wall clock (a steady one), passed in: they bound waits and
    pace the run, they never enter the simulation.
    """

    def __init__(self, n_robots: int, now: float, timeout: float, start_timeout: float,
                 pace_period: float = 0.0, resend_period: float = 0.5):
        if n_robots < 1:
            raise ValueError(f'n_robots must be >= 1, got {n_robots}')
        self.timeout = finite_at_least_zero('timeout', timeout, positive=True)
        self.start_timeout = finite_at_least_zero('start_timeout', start_timeout)
        self.pace_period = finite_at_least_zero('pace_period', pace_period)
        self.resend_period = finite_at_least_zero('resend_period', resend_period, positive=True)
        self.exchange = 0                   # exchanges opened; 0 while starting up
        self._answered = np.zeros(n_robots, dtype=bool)
        self._controlled = np.zeros(n_robots, dtype=bool)    # answered at least once
        self._started = float(now)
        self._opened = float(now)
        self._resent = float(now)

    def open(self, now: float) -> None:
        """Odometry for a new exchange went out at `now`: answers count from here."""
        self.exchange += 1
        self._answered[:] = False
        self._opened = self._resent = float(now)

    def resend_due(self, now: float) -> List[int]:
        """Robots whose odometry of the first exchange goes out again at `now` (every
        `resend_period` while it waits for them); none in later exchanges."""
        if self.exchange != 1 or now < self._resent + self.resend_period:
            return []
        self._resent = float(now)
        return self.missing

    def answer(self, robot: int) -> None:
        """`robot`'s command arrived (ignored before the first exchange opens)."""
        if self.exchange:
            self._answered[robot] = True
            self._controlled[robot] = True

    def _awaited(self) -> np.ndarray:
        return np.ones_like(self._answered) if self.exchange <= 1 else self._controlled

    @property
    def answered_all(self) -> bool:
        return bool(self.exchange and self._answered[self._awaited()].all())

    @property
    def missing(self) -> List[int]:
        """Robots the open exchange still waits for."""
        return np.flatnonzero(self._awaited() & ~self._answered).tolist()

    @property
    def deadline(self) -> float:
        """When the open exchange (or the start-up wait, before the first) times out."""
        start_deadline = self._started + self.start_timeout
        if self.exchange == 0:
            return start_deadline
        if self.exchange == 1:
            return max(start_deadline, self._opened + self.timeout)
        return self._opened + self.timeout

    def timed_out(self, now: float) -> bool:
        return now >= self.deadline

    def paced(self, now: float) -> bool:
        return now >= self._opened + self.pace_period

    def ready(self, now: float) -> bool:
        """The simulator may advance: an exchange is open, every robot answered it or it timed
        out, and the pacing allows it."""
        return bool(self.exchange) and self.paced(now) and (self.answered_all
                                                            or self.timed_out(now))
