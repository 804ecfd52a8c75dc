"""One cycle's ORCA, layer by layer: robots on the ground in the plane, drones in 3-D.

A robot's kinematics put it in a layer. Ground robots (holonomic, diff-drive, car) avoid each
other in the plane; drones (``quadrotor``) avoid each other and the 3-D map in 3-D. The layers
meet by the layer rule (`drones`): the plane's ORCA sees low drones as discs, the drones' 3-D
ORCA sees every ground robot as the sphere around it. A fleet without drones has the one layer,
and so does filter mode (each robot's incoming twist filtered, the ground chain of a Nav2 stack).

Each layer, for the agents of the cycle: preferred velocities (`steering`), ORCA
(`avoidance.solve`), and body commands within each drive's limits. Agents not commanded here
keep their measured velocity as preferred velocity; stale ones are static agents at their last
pose. The air layer leaves three things of the plane's out, on purpose: sensed scan edges (2-D
points: obstacles in the plane), the acceleration-aware ORCA and its reachable velocities (the
3-D solver has neither; `limit_velocity_3d` bounds the change afterwards), and the heading
controller (a quadrotor moves in any direction at any heading).
"""
from __future__ import annotations

from typing import NamedTuple, Optional, Tuple

import numpy as np

from orca_nav.core.avoidance import NonCooperative, OrcaParams, prepare_obstacles, solve
from orca_nav.core.avoidance.neighbors import AgentNeighborList
from orca_nav.core.fleet.bodies import FleetBodies
from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.drones import (
    Map3dModel,
    ground_robot_spheres,
    keep_right,
    low_flying,
    people_as_spheres,
)
from orca_nav.core.fleet.fleet_state import FleetState
from orca_nav.core.fleet.kinematics import RobotLimits, limit_twist, limit_velocity_3d
from orca_nav.core.fleet.map_model import MapModel
from orca_nav.core.fleet.safety import SafetyParams
from orca_nav.core.fleet.sensed_obstacles import SensedObstacles
from orca_nav.core.fleet.steering import Steering
from orca_nav.core.fleet.tracking import tracking_twist
from orca_nav.core.fleet.velocity_filter import filtered_twists, preferred_from_twists
from orca_nav.core.geometry import body_to_world, world_to_body


class Cycle(NamedTuple):
    """What one cycle's layers read; rows over the whole fleet."""

    now: float
    dt: float                       # s since the last cycle: the acceleration limits' step
    params: ControllerParams
    bodies: FleetBodies
    state: FleetState
    steering: Steering
    positions: np.ndarray           # (N, 2) states projected to the cycle time; NaN: none yet
    xy: np.ndarray                  # (N, 2) the same, 0 before a robot's first state
    last_twist: np.ndarray          # (N, 3) the last commanded body twists
    last_climb: np.ndarray          # (N,) the drones' last commanded climb rates
    commanded: np.ndarray           # (N,) bool: robots this controller commands (and guides)
    others: NonCooperative          # at the cycle time: avoided with full responsibility
    sensed: SensedObstacles
    map: Optional[MapModel]
    map_3d: Optional[Map3dModel]
    input_twist: np.ndarray         # (N, 3) filter mode: each robot's latest incoming twist ...
    input_stamp: np.ndarray         # (N,) ... and when it came


class Avoidance:
    """The layers' ORCA for a fleet, and what it did per robot (status and markers read it)."""

    def __init__(self, count: int):
        self.velocity = np.zeros((count, 2))    # each robot's last ORCA velocity (x, y)
        # Per robot, since the last status report: cycles it was commanded in, and those in which
        # its ORCA constraints were infeasible (linearProgram3 picked the least-bad velocity).
        self.cycles = np.zeros(count, dtype=np.int64)
        self.infeasible = np.zeros(count, dtype=np.int64)
        self.lines = None       # (rows, OrcaLines) of the plane's last solve
        self._neighbor_list = AgentNeighborList()    # kept over cycles: robots move little
        self._no_obstacles = prepare_obstacles([])

    def restart_counts(self, rows: np.ndarray) -> None:
        self.cycles[rows] = 0
        self.infeasible[rows] = 0

    def command(self, c: Cycle, rows: np.ndarray, live: np.ndarray,
                run: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Body twists (K, 3) and climb rates (K,) for the agents `rows` (sorted); `live` and
        `run` (commanded) are theirs. Rows not run get zeros."""
        climb = np.zeros(len(rows))
        if c.params.filter_mode:
            return self._filtered(c, rows, live, run), climb
        flying = c.bodies.flying[rows]
        if not flying.any():
            return self._planar(c, rows, live, run), climb
        twist = np.zeros((len(rows), 3))
        planar = ~flying | low_flying(c.state.altitude[rows], c.bodies.radius[rows],
                                      c.params.ground_clearance)
        if (run & ~flying).any():
            twist[planar] = self._planar(c, rows[planar], live[planar], (run & ~flying)[planar])
        drive = flying & run
        if drive.any():     # else per-robot mode on a ground robot: the drones are not ours
            twist[drive], climb[drive] = self._air(c, rows, live, drive)
        return twist, climb

    # ------------------------------------------------------------------ the plane
    def _planar(self, c: Cycle, rows: np.ndarray, live: np.ndarray,
                run: np.ndarray) -> np.ndarray:
        positions = c.positions[rows]
        velocities = np.where(live[:, None], c.state.velocity[rows], 0.0)
        everyone = len(rows) == len(c.xy)     # rows are sorted: then they are 0..N-1
        limits = c.bodies.limits if everyone else c.bodies.limits.subset(rows)
        guidance = c.map.guidance if c.map is not None else None
        pref, tracking = c.steering.ground(
            c.params, c.now, rows, everyone, live, positions, limits, c.xy, c.state.yaw,
            c.bodies.limits, guidance, c.commanded, c.bodies.orca_radius, c.bodies.radius,
            # Without a map or sensor points all room is infinite: the breaker need not ask.
            None if c.map is None and not c.sensed.point_count()
            else lambda points: _room(c, points))
        pref = np.where(run[:, None], pref, velocities)
        velocity = self._solve_planar(c, rows, run, positions, velocities, pref, limits,
                                      c.params.acceleration_aware)
        command = tracking_twist(velocity, c.state.yaw[rows], limits, tracking)
        twist = limit_twist(command, c.last_twist[rows], limits, c.dt)
        return np.where(run[:, None], twist, 0.0)

    def _filtered(self, c: Cycle, rows: np.ndarray, live: np.ndarray,
                  run: np.ndarray) -> np.ndarray:
        """Filter mode: each robot's incoming twist is its preferred velocity; the chain's
        velocity smoother limits acceleration upstream."""
        positions = c.positions[rows]
        velocities = np.where(live[:, None], c.state.velocity[rows], 0.0)
        limits = c.bodies.limits if len(rows) == len(c.xy) else c.bodies.limits.subset(rows)
        fed = c.now - c.input_stamp[rows] <= c.params.source_timeout
        inputs = np.where(fed[:, None], c.input_twist[rows], 0.0)
        pref = preferred_from_twists(inputs, c.state.yaw[rows], limits)
        pref = np.where(run[:, None], pref, velocities)
        velocity = self._solve_planar(c, rows, run, positions, velocities, pref, limits, False)
        twist = filtered_twists(velocity, pref, inputs, c.state.yaw[rows], limits)
        return np.where((run & fed)[:, None], twist, 0.0)   # no input, no motion

    def _solve_planar(self, c: Cycle, rows, run, positions, velocities, pref,
                      limits: RobotLimits, acceleration_aware: bool) -> np.ndarray:
        p = c.params
        orca = OrcaParams(time_step=p.period, neighbor_dist=p.neighbor_dist,
                          max_neighbors=p.max_neighbors, time_horizon=p.time_horizon,
                          time_horizon_obst=p.time_horizon_obst,
                          radius=c.bodies.orca_radius[rows] + c.state.margins(
                              rows, c.now, p.uncertainty_gain, p.max_uncertainty_margin),
                          max_speed=limits.max_speed,
                          max_velocity_change=_velocity_change(limits, c.dt)
                          if acceleration_aware else None)
        # A drive follows its commands within max_accel: reachable from the last command.
        commanded = np.where(run[:, None], body_to_world(c.last_twist[rows, :2],
                                                         c.state.yaw[rows]), velocities)
        solution = solve(positions, velocities, pref, orca,
                         c.map.obstacles if c.map is not None else self._no_obstacles,
                         responsibility=c.bodies.responsibility[rows],
                         # Checked by set_others; none (the usual cycle) is not checked again.
                         others=c.others if len(c.others.positions) else None,
                         extra_obstacles=c.sensed.obstacles(c.now),
                         neighbor_list=self._neighbor_list, reach_from=commanded)
        self.velocity[rows] = solution.velocities
        self.cycles[rows] += run
        self.infeasible[rows] += run & solution.infeasible
        self.lines = (rows, solution.lines)
        return solution.velocities

    # ------------------------------------------------------------------ the air
    def _air(self, c: Cycle, rows: np.ndarray, live: np.ndarray,
             drive: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """The drones among `rows` in 3-D, with the ground robots among them as enclosing
        spheres: body twists (D, 3) and climb rates (D,) of the drones to `drive`."""
        p, state, bodies = c.params, c.state, c.bodies
        flying = bodies.flying[rows]
        centre_z, spheres = ground_robot_spheres(bodies.radius[rows], p.ground_clearance)
        positions = np.column_stack([c.positions[rows],
                                     np.where(flying, state.altitude[rows], centre_z)])
        velocities = np.where(live[:, None], np.column_stack(
            [state.velocity[rows], np.where(flying, state.climb[rows], 0.0)]), 0.0)
        pref = velocities.copy()
        pref[drive] = keep_right(c.steering.drones(
            p, c.now, rows[drive], positions[drive], bodies.limits.subset(rows[drive]), c.xy,
            state.altitude, state.yaw, bodies.limits))
        limits = bodies.limits.subset(rows)
        margin = state.margins(rows, c.now, p.uncertainty_gain, p.max_uncertainty_margin)
        orca = OrcaParams(time_step=p.period, neighbor_dist=p.neighbor_dist,
                          max_neighbors=p.max_neighbors, time_horizon=p.time_horizon,
                          time_horizon_obst=p.time_horizon_obst,
                          radius=np.where(flying, bodies.orca_radius[rows],
                                          spheres + p.safety_margin) + margin,
                          max_speed=limits.max_speed)
        solution = solve(positions, velocities, pref, orca,
                         c.map_3d.obstacles if c.map_3d is not None else None,
                         responsibility=bodies.responsibility[rows], others=people_as_spheres(
                             c.others, (p.safety or SafetyParams()).person_height))
        drones = rows[flying]
        self.velocity[drones] = solution.velocities[flying, :2]
        self.cycles[drones] += drive[flying]
        self.infeasible[drones] += (drive & solution.infeasible)[flying]
        moving = rows[drive]
        wanted = np.column_stack([world_to_body(solution.velocities[drive, :2],
                                                state.yaw[moving]),
                                  solution.velocities[drive, 2]])
        held = np.column_stack([c.last_twist[moving, :2], c.last_climb[moving]])
        linear = limit_velocity_3d(wanted, held, limits.max_speed[drive],
                                   limits.max_accel[drive], c.dt)
        return np.column_stack([linear[:, :2], np.zeros(len(moving))]), linear[:, 2]


def _velocity_change(limits: RobotLimits, dt: float) -> np.ndarray:
    """(K,) how far each robot's velocity can change within a cycle of dt: max_accel * dt for
    holonomic robots; inf (RVO2's choice) for diff-drive and car robots, whose ORCA velocity is
    a reference their heading controller tracks within NH-ORCA's error bound
    (`kinematics.tracking_error_bound`): limiting it too made a car lag its trajectory."""
    return np.where(limits.planar_holonomic, limits.max_accel * dt, np.inf)


def _room(c: Cycle, points) -> np.ndarray:
    """Clearance at points (K, 2) from the recent sensor edges and the map's obstacles (exact
    up to two of the largest radius: what the deadlock breaker compares)."""
    sensed = c.sensed.distance(points, c.now)
    if c.map is None:
        return sensed
    return np.minimum(c.map.grid.clearance_near(points, 2.0 * float(c.bodies.radius.max())),
                      sensed)
