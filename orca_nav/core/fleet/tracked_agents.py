"""Non-cooperative agents as a tracker reports them (people, forklifts, robots of another fleet):
the latest state of each, by id, turned into ORCA's `NonCooperative` at a cycle's time.

Each agent's state counts at its stamp and is projected to the cycle time at its velocity (at
most `max_extrapolation` s, as the fleet's own states: `state_estimate`); its radius is the
configured one plus its position uncertainty margin. An agent not heard of for `timeout` s is
dropped: a track the tracker lost must not stand in the aisle forever.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from orca_nav.core.avoidance import NonCooperative
from orca_nav.core.fleet.state_estimate import (covariance_problem, project_positions,
                                                uncertainty_margins)


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
