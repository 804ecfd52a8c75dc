"""Scripted pedestrians for the fleet simulator: people who avoid no one.

Two kinds, both at a constant walking speed:

* line walkers go back and forth between two points (a person crossing an aisle, walking its
  length, a picker between two shelves);
* random walkers keep a heading that drifts (a seeded random walk, `turn_std` rad per
  sqrt(s)) inside a rectangular area; at its border, or where the map's clearance is below the
  pedestrian's radius, they turn back (a new heading pointing away from where they came).

They ignore robots and each other: the fleet has to take all of the avoidance. Time is passed
in (`step(dt)`); everything random comes from one seeded generator.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from orca_nav.core.grid import OccupancyGrid


@dataclass(frozen=True)
class PedestrianParams:
    speed: float = 0.6              # m/s
    radius: float = 0.25            # m
    turn_std: float = 0.8           # random walkers: heading diffusion, rad / sqrt(s)
    area: tuple = (-np.inf, -np.inf, np.inf, np.inf)   # random walkers stay in (x0, y0, x1, y1)

    def __post_init__(self):
        for name in ('speed', 'radius', 'turn_std'):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0.0):
                raise ValueError(f'pedestrians.{name} must be finite and >= 0, got {value}')
        x0, y0, x1, y1 = self.area
        if not (x0 < x1 and y0 < y1):
            raise ValueError(f'pedestrians.area must be (x0, y0, x1, y1) with x0 < x1 and '
                             f'y0 < y1, got {tuple(self.area)}')


class Pedestrians:
    """P pedestrians: `lines` (L, 4) rows x0, y0, x1, y1 (start, turning point) and `walkers`
    (R, 2) random walkers' starts. Rows 0..L-1 are the line walkers."""

    def __init__(self, lines, walkers, params: PedestrianParams = PedestrianParams(),
                 grid: Optional[OccupancyGrid] = None, seed: int = 0):
        lines = np.asarray(lines, dtype=float).reshape(-1, 4)
        walkers = np.asarray(walkers, dtype=float).reshape(-1, 2)
        for name, array in (('lines', lines), ('walkers', walkers)):
            bad = np.flatnonzero(~np.isfinite(array).all(axis=1))
            if bad.size:
                raise ValueError(f'pedestrians.{name}[{bad[0]}] is not finite: '
                                 f'{array[bad[0]].tolist()}')
        self.params = params
        self.grid = grid
        self._rng = np.random.default_rng([seed, 7])
        self._ends = lines.reshape(-1, 2, 2)
        self._target = np.ones(len(lines), dtype=int)       # index of the end walked toward
        self.positions = np.vstack([lines[:, :2], walkers]) if len(walkers) or len(lines) \
            else np.zeros((0, 2))
        self._heading = self._rng.uniform(-np.pi, np.pi, len(walkers))
        self.velocities = np.zeros_like(self.positions)
        self._aim()

    def __len__(self) -> int:
        return len(self.positions)

    @property
    def radius(self) -> float:
        return self.params.radius

    def _aim(self) -> None:
        """Velocities toward the line walkers' targets and along the random walkers' headings."""
        count = len(self._ends)
        if count:
            to_target = self._ends[np.arange(count), self._target] - self.positions[:count]
            length = np.hypot(*to_target.T)[:, None]
            self.velocities[:count] = self.params.speed * np.divide(
                to_target, length, out=np.zeros_like(to_target), where=length > 0.0)
        self.velocities[count:] = self.params.speed * np.column_stack(
            [np.cos(self._heading), np.sin(self._heading)])

    def step(self, dt: float) -> None:
        """Walks for dt seconds."""
        count = len(self._ends)
        if count:
            to_target = self._ends[np.arange(count), self._target] - self.positions[:count]
            remaining = np.hypot(*to_target.T)
            arrive = remaining <= self.params.speed * dt
            moved = self.positions[:count] + self.velocities[:count] * dt
            self.positions[:count] = np.where(arrive[:, None],
                                              self._ends[np.arange(count), self._target], moved)
            self._target[arrive] = 1 - self._target[arrive]
        if len(self._heading):
            self._walk(dt, count)
        self._aim()

    def _walk(self, dt: float, first: int) -> None:
        p = self.params
        self._heading += p.turn_std * np.sqrt(dt) * self._rng.standard_normal(len(self._heading))
        direction = np.column_stack([np.cos(self._heading), np.sin(self._heading)])
        proposed = self.positions[first:] + p.speed * dt * direction
        x0, y0, x1, y1 = p.area
        blocked = ((proposed[:, 0] < x0 + p.radius) | (proposed[:, 0] > x1 - p.radius)
                   | (proposed[:, 1] < y0 + p.radius) | (proposed[:, 1] > y1 - p.radius))
        if self.grid is not None:
            blocked |= self.grid.clearance_near(proposed, p.radius) <= p.radius
        # Blocked: stay, and turn back within +-60 degrees of the reverse heading.
        turn = np.pi + self._rng.uniform(-np.pi / 3.0, np.pi / 3.0, int(blocked.sum()))
        self._heading[blocked] += turn
        self.positions[first:][~blocked] = proposed[~blocked]
        self._heading = np.arctan2(np.sin(self._heading), np.cos(self._heading))
