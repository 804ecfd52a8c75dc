"""Scripted pedestrians for the fleet simulator: people who avoid no one, or who at most stop
short of walking into a robot.

Two kinds, both at a constant walking speed:

* line walkers go back and forth between two points (a person crossing an aisle, walking its
  length, a picker between two shelves);
* random walkers keep a heading that drifts (a seeded random walk, `turn_std` rad per
  sqrt(s)) inside a rectangular area; at its border, or where the map's clearance is below the
  pedestrian's radius, they turn back (a new heading pointing away from where they came).

Random walkers behave as HuNavSim's agents do toward robots (`BEHAVIOURS`, per walker):
*impassive* ones ignore robots (the random walk above); *threatening* ones walk straight at the
nearest robot; *curious* ones walk toward the nearest robot until they are `curious_distance`
from it, then wander there; *scared* ones walk away from a robot closer than
`scared_distance`.

They ignore each other, and none of them steps aside for a robot: the fleet has to take all of
the avoidance. With
`stop_gap` > 0 a person stands still for a step rather than walk to within that gap of a robot
it is closing on, as people do when something is right in front of them; they never step aside,
so a robot that drives into a standing person is in contact. Who has stood for `patience`
seconds turns back (a line walker heads for its other end, a random walker turns around), as a
person whose way stays blocked does: without it a person and a robot can wait for each other
forever. Time is passed in (`step(dt)`); everything random comes from one seeded generator.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.validation import finite_at_least_zero

BEHAVIOURS = ('impassive', 'threatening', 'curious', 'scared')


@dataclass(frozen=True)
class PedestrianParams:
    speed: float = 0.6              # m/s
    radius: float = 0.25            # m
    turn_std: float = 0.8           # random walkers: heading diffusion, rad / sqrt(s)
    stop_gap: float = 0.0           # m: stand still rather than close to within this of a robot
    patience: float = 2.0           # s: who stood this long turns back
    area: tuple = (-np.inf, -np.inf, np.inf, np.inf)   # random walkers stay in (x0, y0, x1, y1)
    height: float = 1.8             # m: a drone flying higher passes over them
    curious_distance: float = 1.0   # m: curious walkers close in on a robot to this gap
    scared_distance: float = 2.5    # m: scared walkers flee a robot within this gap

    def __post_init__(self):
        for name in ('speed', 'radius', 'turn_std', 'stop_gap', 'patience', 'height',
                     'curious_distance', 'scared_distance'):
            finite_at_least_zero(f'pedestrians.{name}', getattr(self, name))
        x0, y0, x1, y1 = self.area
        if not (x0 < x1 and y0 < y1):
            raise ValueError(f'pedestrians.area must be (x0, y0, x1, y1) with x0 < x1 and '
                             f'y0 < y1, got {tuple(self.area)}')


class Pedestrians:
    """P pedestrians: `lines` (L, 4) rows x0, y0, x1, y1 (start, turning point) and `walkers`
    (R, 2) random walkers' starts. Rows 0..L-1 are the line walkers."""

    def __init__(self, lines, walkers, params: PedestrianParams = PedestrianParams(),
                 grid: Optional[OccupancyGrid] = None, seed: int = 0, behaviours=None):
        lines = np.asarray(lines, dtype=float).reshape(-1, 4)
        walkers = np.asarray(walkers, dtype=float).reshape(-1, 2)
        for name, array in (('lines', lines), ('walkers', walkers)):
            bad = np.flatnonzero(~np.isfinite(array).all(axis=1))
            if bad.size:
                raise ValueError(f'pedestrians.{name}[{bad[0]}] is not finite: '
                                 f'{array[bad[0]].tolist()}')
        behaviours = ['impassive'] * len(walkers) if behaviours is None else list(behaviours)
        if len(behaviours) != len(walkers):
            raise ValueError(f'pedestrians.behaviours: {len(behaviours)} for {len(walkers)} '
                             'walkers')
        unknown = [b for b in behaviours if b not in BEHAVIOURS]
        if unknown:
            raise ValueError(f'pedestrians.behaviours: {unknown[0]!r} is not one of '
                             f'{", ".join(BEHAVIOURS)}')
        self._behaviour = np.array([BEHAVIOURS.index(b) for b in behaviours], dtype=int)
        self.params = params
        self.grid = grid
        self._rng = np.random.default_rng([seed, 7])
        self._ends = lines.reshape(-1, 2, 2)
        self._target = np.ones(len(lines), dtype=int)       # index of the end walked toward
        self.positions = np.vstack([lines[:, :2], walkers]) if len(walkers) or len(lines) \
            else np.zeros((0, 2))
        self._heading = self._rng.uniform(-np.pi, np.pi, len(walkers))
        self.velocities = np.zeros_like(self.positions)
        self._standing = np.zeros(len(self.positions), dtype=bool)   # stopped short this step
        self._stood = np.zeros(len(self.positions))                 # s standing without a break
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
        self.velocities[self._standing] = 0.0

    def step(self, dt: float, robot_positions=None, robot_radii=None) -> None:
        """Walks for dt seconds. robot_positions (N, 2) and robot_radii (N,): the robots that
        people with a stop_gap stop short of."""
        if self._standing.any():     # who stood last step walks again unless still closing in
            self._standing[:] = False
            self._aim()
        before = self.positions.copy()
        self._react(robot_positions, robot_radii)
        self._advance(dt)
        if self.params.stop_gap > 0.0 and robot_positions is not None and len(robot_positions):
            self._standing = self._closing_in(before, robot_positions, robot_radii)
            self.positions[self._standing] = before[self._standing]
            self._stood = np.where(self._standing, self._stood + dt, 0.0)
            self._turn_back(self._stood >= self.params.patience)
        self._aim()

    def _react(self, robot_positions, robot_radii) -> None:
        """Random walkers who react to robots turn toward or away from the nearest one."""
        reacting = self._behaviour != 0
        if not reacting.any() or robot_positions is None or not len(robot_positions):
            return
        first = len(self._ends)
        robots = np.asarray(robot_positions, dtype=float)[:, :2]
        walkers = self.positions[first:]
        offset = robots[None, :, :] - walkers[:, None, :]
        distance = np.hypot(offset[..., 0], offset[..., 1])
        gap = distance - np.asarray(robot_radii, dtype=float)[None, :] - self.params.radius
        nearest = np.argmin(gap, axis=1)
        rows = np.arange(len(walkers))
        toward = np.arctan2(offset[rows, nearest, 1], offset[rows, nearest, 0])
        gap = gap[rows, nearest]
        b = self._behaviour
        chase = (b == 1) | ((b == 2) & (gap > self.params.curious_distance))
        flee = (b == 3) & (gap < self.params.scared_distance)
        self._heading = np.where(chase, toward, np.where(flee, toward + np.pi, self._heading))

    def _turn_back(self, who: np.ndarray) -> None:
        """People who waited long enough turn around."""
        count = len(self._ends)
        lines = np.flatnonzero(who[:count])
        self._target[lines] = 1 - self._target[lines]
        self._heading[who[count:]] += np.pi
        self._stood[who] = 0.0

    def _closing_in(self, before: np.ndarray, robot_positions, robot_radii) -> np.ndarray:
        """(P,) bool: the person's step from `before` closes on a robot to within stop_gap."""
        robots = np.asarray(robot_positions, dtype=float)[None, :, :2]
        reach = np.asarray(robot_radii, dtype=float)[None, :] + self.params.radius
        gap_after = np.linalg.norm(self.positions[:, None] - robots, axis=2) - reach
        gap_before = np.linalg.norm(before[:, None] - robots, axis=2) - reach
        return ((gap_after < self.params.stop_gap) & (gap_after < gap_before)).any(axis=1)

    def _advance(self, dt: float) -> None:
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
