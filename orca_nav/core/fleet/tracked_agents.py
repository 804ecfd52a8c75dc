"""Non-cooperative agents as a tracker reports them (people, forklifts, robots of another fleet):
the latest state of each, by id, turned into ORCA's `NonCooperative` at a cycle's time.

Each agent's state counts at its stamp and is projected to the cycle time at its velocity (at
most `max_extrapolation` s, as the fleet's own states: `state_estimate`); its radius is the
configured one plus its position uncertainty margin. An agent not heard of for `timeout` s is
dropped: a track the tracker lost must not stand in the aisle forever. `DropReports` words the
drops for a log: an agent whose tracker keeps losing it is reported once, then at most once per
period with a count, not at every drop.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from orca_nav.core.avoidance import NonCooperative
from orca_nav.core.fleet.state_estimate import (
    covariance_problem,
    project_positions,
    uncertainty_margins,
)


class TrackedAgents:
    """The latest state per agent id; `at(now)` gives the agents to avoid at `now`."""

    def __init__(self, radius: float, timeout: float):
        self.radius = radius
        self.timeout = timeout
        self._states: Dict[str, Tuple[float, np.ndarray, np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self._states)

    def update(self, agent: str, stamp: float, position, velocity,
               covariance: Optional[np.ndarray] = None) -> None:
        """Agent `agent`'s state at `stamp` (global frame x, y); an older one than held is
        ignored. ValueError (nothing changes) for a non-finite state or unusable covariance."""
        position = np.asarray(position, dtype=float)[:2]
        velocity = np.asarray(velocity, dtype=float)[:2]
        if not (np.all(np.isfinite(position)) and np.all(np.isfinite(velocity))
                and np.isfinite(stamp)):
            raise ValueError(f'agent {agent!r}: state is not finite (stamp {stamp}, position '
                             f'{position.tolist()}, velocity {velocity.tolist()})')
        covariance = np.zeros((2, 2)) if covariance is None else np.asarray(covariance, float)
        problem = covariance_problem(covariance)
        if problem is not None:
            raise ValueError(f'agent {agent!r}: {problem}')
        held = self._states.get(agent)
        if held is not None and stamp < held[0]:
            return
        self._states[agent] = (float(stamp), position, velocity, covariance)

    def drop_stale(self, now: float) -> List[Tuple[str, float]]:
        """Forgets the agents older than `timeout` at `now`; returns (id, age) of each."""
        stale = [(agent, now - state[0]) for agent, state in self._states.items()
                 if now - state[0] > self.timeout]
        for agent, _ in stale:
            del self._states[agent]
        return stale

    def at(self, now: float, gain: float, max_margin: float,
           max_extrapolation: float) -> NonCooperative:
        """The agents at `now`: projected positions, velocities, radii with uncertainty margin."""
        if not self._states:
            return NonCooperative.empty()
        stamps, positions, velocities, covariances = (np.array(column) for column in
                                                      zip(*self._states.values()))
        return NonCooperative(
            project_positions(positions, velocities, stamps, now, max_extrapolation), velocities,
            self.radius + uncertainty_margins(covariances, gain, max_margin))

    def ids(self) -> List[str]:
        return list(self._states)


class DropReports:
    """The log lines for dropped agents, at most one per agent per `period` s: its first drop,
    then, once the period has passed, how many more drops there were since its last line."""

    def __init__(self, period: float):
        self.period = period
        self._last: Dict[str, float] = {}       # agent -> time of its last line
        self._unreported: Dict[str, int] = {}   # agent -> drops since that line

    def lines(self, drops: List[Tuple[str, float]], now: float, timeout: float) -> List[str]:
        """The lines to log for `drops` ((id, age) from `TrackedAgents.drop_stale`) at `now`."""
        out = []
        for agent, age in drops:
            last = self._last.get(agent)
            if last is not None and now - last < self.period:
                self._unreported[agent] = self._unreported.get(agent, 0) + 1
                continue
            again = self._unreported.pop(agent, 0)
            self._last[agent] = now
            if last is None:
                out.append(f'agent {agent!r} not heard of for {age:.2f} s (tracked_agent_timeout '
                           f'{timeout:g} s): dropped (its next drops: at most one line per '
                           f'{self.period:g} s)')
            else:
                out.append(f'agent {agent!r} dropped again: not heard of for {age:.2f} s '
                           f'({again + 1} drops in the last {now - last:.0f} s)')
        return out
