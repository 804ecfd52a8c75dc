"""The fleet controller: every robot's state, goal and trajectory in, every robot's command out.

One `FleetController` serves a fleet (or, in per-robot mode, commands one robot and sees the
others as reciprocal agents). Each control cycle, for all robots at once:

    states -> preferred velocities (trajectory tracking | toward the goal around the map's
              obstacles (guidance) + deadlock breaker | in filter mode, each robot's incoming
              twist: `velocity_filter`)
           -> ORCA (radius enlarged by the NH-ORCA tracking-error bound for diff-drive/car and
              by the pose uncertainty; states projected to the cycle time; non-cooperative
              agents (`set_others`) avoided with full responsibility; recent sensor points
              (`set_scan`) as short-lived obstacles next to the map's)
           -> body twists per kinematic model -> acceleration limits

Drones (kinematics ``quadrotor``) run the same cycle in their own layer, in 3-D: toward their
3-D goal, 3-D ORCA against each other, the 3-D map's voxels (`set_map_3d`) and the ground
robots, and a climb rate vz next to their twist (`ControlOutput.climb_rates`); the ground robots
keep 2-D ORCA and see low drones as discs (the layer rule: `drones`, docs/orca3d.md).

Time is passed in, never read: `now` and the state stamps are seconds on one clock (a ROS
node's clock, simulated or not). A robot is commanded from the first cycle in which it is
ready: its state is known, the map is prepared (`require_map`) and, with `trajectories_only`,
its first trajectory arrived; before that it gets no command at all (it has not been commanded,
so it stands), from then on every cycle (zero while it must hold still). A robot's state counts
at its stamp; a robot whose state is older than `odom_timeout` is stale: it gets a zero command
and the others see it as a static agent at its last pose. A robot commanded by nobody here
(per-robot mode) keeps its measured velocity as its preferred velocity; ORCA's answer for it is
not used.

The map arrives prepared (`map_model.prepare_map`, slow on big maps: a caller may run it on a
worker thread and hand the result to `set_map` on the controller's own thread). The controller
is not thread-safe: one thread calls all its methods.

Its parts, each in its own module: the robots' states (`fleet_state`), what the robots are
(`bodies`), the parameters (`controller_params`), the cycle's timing (`cycle_timing`),
preferred velocities from goals and trajectories (`steering`), ORCA layer by layer
(`avoidance_layers`), sensor edges (`sensed_obstacles`), the safety layer (`safety`) and the
status ladder (`control_status`). What stays here (about 500 lines, most of them the inputs'
contracts) is the cycle that joins them for every robot at once, and the inputs that must be
checked against the controller's own state (goals against its maps).
"""
from __future__ import annotations

from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
from scipy.spatial import cKDTree

from orca_nav.core.avoidance import NonCooperative, OrcaLines
from orca_nav.core.fleet.avoidance_layers import Avoidance, Cycle
from orca_nav.core.fleet.bodies import FleetBodies
from orca_nav.core.fleet.control_status import ControlFacts, control_status
from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.cycle_timing import CycleTiming
from orca_nav.core.fleet.drones import Map3dModel, goal_problem_3d
from orca_nav.core.fleet.fleet_state import FleetState
from orca_nav.core.fleet.map_model import MapModel
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.fleet.safety import SafetyInput, SafetyLayer, SafetyParams
from orca_nav.core.fleet.sensed_obstacles import SensedObstacles
from orca_nav.core.fleet.state_estimate import project_positions
from orca_nav.core.fleet.status import RobotStatus
from orca_nav.core.fleet.steering import Steering
from orca_nav.core.planning.reference import Reference

_SAFETY_STEP = 0.025     # s: the safety layer samples braking paths at least this often


class ControlOutput(NamedTuple):
    """One cycle's result, rows over all robots of the fleet."""

    twists: np.ndarray          # (N, 3) body twists vx, vy, wz; zero for robots not run
    ran: np.ndarray             # (N,) bool: commanded robots with live state (the others: zero)
    publish: np.ndarray         # (N,) bool: robots to send their twist (engaged, commanded)
    newly_stale: List[int]      # robots whose state went stale in this cycle
    climb_rates: Optional[np.ndarray] = None    # (N,) vz of drones (cmd_vel linear.z); else 0
    safety_reasons: Optional[np.ndarray] = None     # (N,) int: why the safety layer scaled


class FleetView(NamedTuple):
    """What an operator sees of the fleet (markers): rows over all robots."""

    positions: np.ndarray       # (N, 2), NaN before the first state
    radii: np.ndarray           # (N,) physical radii
    velocities: np.ndarray      # (N, 2) ORCA's last velocities
    goals: np.ndarray           # (N, 2), NaN without a goal
    stale: np.ndarray           # (N,) bool
    commanded: np.ndarray       # (N,) bool
    max_speed: np.ndarray       # (N,)
    lines: Optional[Tuple[np.ndarray, OrcaLines]]   # (rows, lines) of the last cycle
    flying: np.ndarray          # (N,) bool: drones
    altitudes: np.ndarray       # (N,) z (0 for ground robots)
    goal_altitudes: np.ndarray  # (N,) z of the goal (a drone flying level: its altitude)


class FleetController:
    """Commands for a fleet; see the module docstring."""

    def __init__(self, robots: Sequence[RobotSpec], params: ControllerParams = ControllerParams(),
                 commanded: Optional[Sequence[str]] = None):
        self.names = [r.name for r in robots]
        if not self.names:
            raise ValueError('robots: must name at least one robot')
        if len(set(self.names)) != len(self.names):
            raise ValueError(f'robots: names must be unique, got {self.names}')
        self.index = {name: i for i, name in enumerate(self.names)}
        chosen = self.names if commanded is None else list(commanded)
        unknown = [r for r in chosen if r not in self.index]
        if unknown:
            raise ValueError(f'commanded: {unknown[0]!r} is not in robots {self.names}')
        n = len(self.names)
        self.commanded = np.isin(self.names, chosen)
        self._every_row = np.arange(n)
        self.params = params
        self.robots = list(robots)
        self.state = FleetState(n)
        self._cycle_position = self.state.position       # this cycle's: projected to its time
        self._cycle_xy = np.nan_to_num(self._cycle_position)   # ... 0 before a robot's first state
        self._others = NonCooperative.empty()       # non-cooperative agents, at the cycle time
        self._sensed = SensedObstacles(n, params.sensor_persistence, params.sensor_max_points)
        self._climb_out = np.zeros(n)               # drones: last commanded vz
        self._map_3d: Optional[Map3dModel] = None
        self._twist = np.zeros((n, 3))              # last commanded twist
        self._stale = np.zeros(n, dtype=bool)       # commanded, known and stale at the last cycle
        self._engaged = np.zeros(n, dtype=bool)     # commanded from the first cycle it was ready
        self._input_twist = np.zeros((n, 3))        # filter mode: the latest incoming twist
        self._input_stamp = np.full(n, -np.inf)
        self._timing = CycleTiming(params.period)
        self._avoidance = Avoidance(n)
        self._map: Optional[MapModel] = None
        self._safety_scale = np.ones(n)             # the safety layer's last factors ...
        self._safety_reason = np.zeros(n, dtype=int)    # ... and why (safety.REASONS)
        self.steering = Steering(self.robots, params)
        self._configure_robots()

    # ------------------------------------------------------------------ configuration
    @property
    def guided(self) -> bool:
        """Robots steer to goals by themselves (so a map needs goal guidance)."""
        return not self.params.trajectories_only

    @property
    def map(self) -> Optional[MapModel]:
        return self._map

    def configure(self, params: Optional[ControllerParams] = None,
                  robots: Optional[Sequence[RobotSpec]] = None) -> List[str]:
        """New parameters and/or robot specs (same names, same order) at run time. Returns what
        was reset: a kinematics change drops that robot's trajectory (its tracker is per model),
        new deadlock parameters restart stall detection."""
        notes = []
        if robots is not None:
            robots = list(robots)
            if [r.name for r in robots] != self.names:
                raise ValueError('robots: the fleet cannot change at run time '
                                 f'(have {self.names}, got {[r.name for r in robots]})')
            changed = [new.name for old, new in zip(self.robots, robots)
                       if old.kinematics != new.kinematics]
            self.robots = robots
            notes += [f'{name}: kinematics changed; current trajectories dropped'
                      for name in changed]
            robots = robots if changed else None
        self.steering.configure(self.params, params or self.params, robots)
        if params is not None:
            self.params = params
            self._sensed.persistence = params.sensor_persistence
            self._sensed.max_points = params.sensor_max_points
        self._configure_robots()
        return notes

    def _configure_robots(self) -> None:
        self._bodies = bodies = FleetBodies.create(self.robots, self.params)
        self._safety = SafetyLayer(bodies.limits, bodies.radius, bodies.braking_decel,
                                   self.params.safety or SafetyParams(enabled=False),
                                   self.params.ground_clearance)
        self._safety.static = self._map.distance if self._map is not None else None
        self._safety.static_3d = self._map_3d.distance if self._map_3d is not None else None

    def dim(self, i: int) -> int:
        """Robot i's trajectories are 3-D (a drone's) or 2-D."""
        return 3 if self._bodies.flying[i] else 2

    # ------------------------------------------------------------------ inputs
    def set_state(self, i: int, stamp: float, position, velocity, yaw: float,
                  covariance=None) -> Optional[str]:
        """Robot i's measured state at time `stamp`: position and velocity in the global frame
        (x, y; a drone's also z), heading yaw, optionally the (2, 2) xy position covariance (m^2;
        its largest eigenvalue, all that is used, is the same in every frame). Older than the
        state already held: ignored (late delivery). A covariance that is not finite, symmetric
        and positive semi-definite says nothing about the pose: the robot gets the largest
        margin (max_uncertainty_margin) and the reason is returned; else None.

        A position that jumped (further from where the last state's velocity leads than
        LOCALIZATION_JUMP_M) means the robot's localization is in doubt by that much: its ORCA
        radius grows by the jump for JUMP_MARGIN_HOLD_S, so everyone keeps that extra room."""
        return self.state.set_state(i, stamp, position, velocity, yaw, covariance)

    def set_states(self, rows, stamps, positions, velocities, yaws, covariances) -> None:
        """set_state for many robots at once, each with a usable covariance ((K, 2, 2); see
        `covariance_problem`) and (x, y, z) positions and velocities (z: altitude and climb).
        A robot listed more than once takes its last row."""
        self.state.set_states(rows, stamps, positions, velocities, yaws, covariances)

    def set_scan(self, i: int, stamp: float, points) -> Optional[str]:
        """Robot i's sensor points at `stamp`, (M, 2) in its body frame (x forward, m): placed
        by its latest state moved on to `stamp` (see `max_extrapolation`), they are obstacles
        for `sensor_persistence` s. Returns why they were not used (no state yet), else None."""
        if not np.isfinite(self.state.position[i, 0]):
            return 'no odometry yet to place the scan'
        points = np.asarray(points, dtype=float).reshape(-1, 2)
        age = np.clip(stamp - self.state.stamp[i], -self.params.max_extrapolation,
                      self.params.max_extrapolation)
        c, s = np.cos(self.state.yaw[i]), np.sin(self.state.yaw[i])
        world = (self.state.position[i] + self.state.velocity[i] * age
                 + points @ np.array([[c, s], [-s, c]]))
        self._sensed.add_scan(i, stamp, world, *self._clear_discs(stamp))
        return None

    def _clear_discs(self, stamp: float) -> Tuple[np.ndarray, np.ndarray]:
        """Centres (at `stamp`) and radii of the robots and the tracked agents: sensor points
        on them are not obstacles."""
        known = np.isfinite(self.state.position[:, 0])
        robots = project_positions(self.state.position[known], self.state.velocity[known],
                                   self.state.stamp[known], stamp, self.params.max_extrapolation)
        return (np.vstack([robots, self._others.positions]),
                np.concatenate([self._bodies.radius[known], self._others.radii]))

    def set_others(self, others: NonCooperative) -> None:
        """The non-cooperative agents (people, robots of other fleets) for the next cycles, in
        the global frame and already projected to the cycle time: every robot takes the whole
        avoidance toward them. Replaces the previous set; NonCooperative.empty() clears it."""
        self._others = others.checked()

    def note_input_problem(self, i: int, problem: str) -> None:
        """Robot i's latest state could not be used (e.g. no transform to the global frame):
        its status says why once it goes stale."""
        self.state.input_problem[i] = problem

    def set_goal(self, i: int, xy, altitude: Optional[float] = None) -> Optional[str]:
        """Sets (or clears, xy None) robot i's goal. Returns why it was refused (inside an
        obstacle of the current map; for a drone, of the 3-D map, or outside it), else None.
        Setting the goal it already has changes nothing. A drone's goal altitude is `altitude`;
        None or 0 (a goal pose from a 2-D tool) keeps the altitude it flies at."""
        goal_z = np.nan
        if altitude is not None and self._bodies.flying[i]:
            if not np.isfinite(altitude):
                return f'goal altitude {altitude} is not finite'
            goal_z = float(altitude) if altitude != 0.0 else np.nan
        if xy is not None:
            xy = np.asarray(xy, dtype=float)[:2]
            if not np.all(np.isfinite(xy)):
                return f'goal {xy.tolist()} is not finite'
            if self.steering.same_goal(i, xy, goal_z):
                return None
            reason = self._goal_problem(i, xy, goal_z)
            if reason is not None:
                return reason
        self.steering.set_goal(i, xy, goal_z)
        return None

    def _goal_problem(self, i: int, xy: np.ndarray, goal_z: float = np.nan) -> Optional[str]:
        if self._bodies.flying[i]:     # a drone's map is the 3-D one, its altitude its state's
            known = np.isfinite(self.state.position[i, 0])
            z = goal_z if np.isfinite(goal_z) else self.state.altitude[i] if known else np.nan
            return goal_problem_3d(self._map_3d.grid if self._map_3d is not None else None,
                                   (xy[0], xy[1], z), self._bodies.radius[i])
        if self._map is None:
            return None
        clearance = float(self._map.grid.clearance_near(xy[None, :], self._bodies.radius[i])[0])
        if clearance <= self._bodies.radius[i]:
            return (f'({xy[0]:.3f}, {xy[1]:.3f}) is inside an obstacle (clearance '
                    f'{clearance:.3f} m <= radius {self._bodies.radius[i]:.3f} m)')
        return None

    def set_input_twist(self, i: int, stamp: float, twist) -> None:
        """Filter mode: robot i's incoming body twist (vx, vy, wz), received at `stamp`; it is
        the robot's preferred velocity until `source_timeout` after that."""
        twist = np.asarray(twist, dtype=float)
        if twist.shape != (3,) or not np.all(np.isfinite(twist)):
            raise ValueError(f'twist: {twist.tolist()} is not three finite numbers')
        self._input_twist[i] = twist
        self._input_stamp[i] = stamp

    def set_trajectory(self, i: int, reference: Optional[Reference], start_time: float) -> None:
        """Robot i tracks `reference` whose t = 0 is `start_time`; None (an empty or refused
        trajectory) makes it hold still. From its first trajectory on a robot is tracked: it no
        longer heads for its goal by itself."""
        self.steering.set_trajectory(i, reference, start_time)

    def set_map(self, model: MapModel) -> List[Tuple[int, str]]:
        """Switches to a prepared map; goals now inside an obstacle are dropped: returns
        (robot index, reason) for each."""
        self._map = model
        self._safety.static = model.distance
        dropped = []
        goal = self.steering.goal
        for i in np.flatnonzero(np.isfinite(goal[:, 0])):
            reason = self._goal_problem(i, goal[i])
            if reason is not None:
                goal[i] = np.nan
                dropped.append((int(i), reason))
        return dropped

    def set_map_3d(self, model: Map3dModel) -> List[Tuple[int, str]]:
        """Switches the drones to a prepared 3-D map; drone goals now outside it or inside an
        obstacle are dropped: returns (robot index, reason) for each."""
        self._map_3d = model
        self._safety.static_3d = model.distance
        dropped = []
        goal = self.steering.goal
        for i in np.flatnonzero(self._bodies.flying & np.isfinite(goal[:, 0])):
            reason = self._goal_problem(i, goal[i], self.steering.goal_z[i])
            if reason is not None:
                goal[i] = np.nan
                dropped.append((int(i), reason))
        return dropped

    @property
    def map_3d(self) -> Optional[Map3dModel]:
        return self._map_3d

    def goals_to_prepare(self) -> Tuple[np.ndarray, np.ndarray]:
        """(goals (K, 2), radii (K,)) of the commanded robots with a goal: the distance fields
        `prepare_map` should build ahead of time."""
        known = np.isfinite(self.steering.goal[:, 0]) & self.commanded
        return self.steering.goal[known].copy(), self._bodies.orca_radius[known].copy()

    def _ready(self, now: float, live: Optional[np.ndarray] = None) -> np.ndarray:
        p = self.params
        ready = self.commanded & (self.live(now) if live is None else live)
        if p.require_map and self._map is None:
            ready = np.zeros_like(ready)
        if p.trajectories_only and not p.filter_mode:
            ready &= self.steering.has_trajectory
        if p.require_map_3d and self._map_3d is None:
            ready &= ~self._bodies.flying
        return ready

    def engage(self, now: float) -> np.ndarray:
        """Marks the robots that have become ready since the last cycle as commanded and returns
        them: they should get a zero command now, not at the next cycle (whose odometry a
        lockstep simulator holds back until every robot answered). Zero, because a robot never
        commanded stands, and no cycle state changes: the result does not depend on how many
        robots became ready in one go."""
        new = self._ready(now) & ~self._engaged
        self._engaged |= new
        return np.flatnonzero(new)

    # ------------------------------------------------------------------ cycle timing
    def live(self, now: float) -> np.ndarray:
        """(N,) bool: robots whose state is within odom_timeout of `now`."""
        return self.state.live(now, self.params.odom_timeout)

    def due(self, now: float) -> bool:
        """A cycle may run: its slot on the control-rate grid has come (`cycle_timing`)."""
        return self._timing.due(now, self.params.period)

    def states_complete(self, now: float) -> bool:
        """Every live robot has sent a new state since the last cycle (and one is due): the
        lowest-latency moment to run it."""
        live = self.live(now)
        return bool(live.any() and self.state.fresh[live].all() and self.due(now))

    def cycle_time(self, clock_now: float) -> float:
        """The time a cycle runs at: the clock, or the newest state's stamp where that is ahead
        of the clock by at most a control period. Under simulated time /clock and odometry
        travel on separate topics in no fixed order, so the state of time t can arrive before
        the clock says t, also a whole period ahead (the state of the clock's next tick, stamped
        with it, before that tick); a stamp further ahead is a clock problem and is not followed."""
        newest = self.state.newest_fresh_stamp()
        ahead = newest - clock_now
        return newest if 0.0 < ahead <= self.params.period * (1.0 + 1e-9) else clock_now

    # ------------------------------------------------------------------ the cycle
    def step(self, now: float, command_delay: float = 0.0) -> ControlOutput:
        """One control cycle at time `now` for every robot this controller commands.
        `command_delay`: s from `now` until this cycle's commands go out, as the caller measures
        its cycles (the core reads no clock): the safety layer counts it as reaction time."""
        p = self.params
        dt = self._timing.start(now, p.period, p.odom_timeout)
        self.state.fresh[:] = False
        n = len(self.names)
        live = self.live(now)
        known = self.state.known
        # Engagement already waits for the map (`_ready`), and a prepared map never goes away.
        self._engaged |= self._ready(now, live)
        run = self.commanded & live & self._engaged
        # Live states move on to the cycle time (latency); stale ones stay where they were seen.
        self._cycle_position = self.state.projected(now, live, p.max_extrapolation)
        known_everywhere = np.isfinite(self._cycle_position).all()
        self._cycle_xy = (self._cycle_position if known_everywhere
                          else np.nan_to_num(self._cycle_position))
        cycle = Cycle(now, dt, p, self._bodies, self.state, self.steering, self._cycle_position,
                      self._cycle_xy, self._twist, self._climb_out, self.commanded, self._others,
                      self._sensed, self._map, self._map_3d, self._input_twist,
                      self._input_stamp)
        if run.all():   # the usual cycle: every robot commanded here, and live
            twist, climb = self._avoidance.command(cycle, self._every_row, live, run)
        else:
            twist = np.zeros((n, 3))
            climb = np.zeros(n)
            if run.any():
                rows = self._agents(known, run)
                twist[rows], climb[rows] = self._avoidance.command(cycle, rows, live[rows],
                                                                   run[rows])
            twist[~run] = 0.0
            climb[~(run & self._bodies.flying)] = 0.0
        twist, climb = self._made_safe(now, twist, climb, run, live, known, command_delay)
        self._twist = twist
        self._climb_out = climb
        stale = self.commanded & known & ~live
        newly_stale = (stale & ~self._stale).nonzero()[0].tolist()
        self._stale = stale
        return ControlOutput(twist, run, self.commanded & self._engaged, newly_stale,
                             self._climb_out.copy(), self._safety_reason.copy())

    def _made_safe(self, now, twist, climb, run, live, known, command_delay):
        """The safety layer over this cycle's commands (`safety`); records its factors."""
        p = self.params
        if p.safety is None or not p.safety.enabled or not run.any():
            self._safety_scale = np.ones(len(self.names))
            self._safety_reason = np.zeros(len(self.names), dtype=int)
            return twist, climb
        age = np.minimum(np.maximum(self.state.age(now), 0.0), p.odom_timeout)
        # Older states, slower robots: full speed while a state is young enough to be projected
        # to the cycle time (max_extrapolation; at least two periods: one late message),
        # standing at odom_timeout.
        young = min(max(2.0 * p.period, p.max_extrapolation), 0.5 * p.odom_timeout)
        speed_cap = np.minimum(np.maximum((p.odom_timeout - age) / (p.odom_timeout - young),
                                          0.0), 1.0)
        n = len(self.names)
        poses = np.empty((n, 3))
        poses[:, :2] = self._cycle_xy
        poses[:, 2] = self.state.yaw
        velocities = np.zeros((n, 3))
        velocities[live, :2] = self.state.velocity[live]
        flying = self._bodies.flying
        if flying.any():
            velocities[live, 2] = np.where(flying, self.state.climb, 0.0)[live]
        state = SafetyInput(poses=poses, altitudes=np.where(flying, self.state.altitude, 0.0),
                            velocities=velocities,
                            yaw_rates=self._twist[:, 2], commands=twist, climb_rates=climb,
                            hold=self._timing.interval + p.command_latency + command_delay + age,
                            adjustable=run, known=known, stale=known & ~live,
                            speed_cap=speed_cap)
        sensed = None
        if self._sensed.point_count():
            def sensed(points):
                return self._sensed.distance(points, now)
        result = self._safety.apply(state, min(0.5 * p.period, _SAFETY_STEP), self._others,
                                    sensed)
        self._safety_scale, self._safety_reason = result.scale, result.reason
        return result.twists, result.climb_rates

    def _agents(self, known: np.ndarray, run: np.ndarray) -> np.ndarray:
        """Indices of the agents ORCA needs: the robots to command and every known robot within
        neighbor_dist of one of them (their output is discarded)."""
        candidates = np.flatnonzero(known)
        if run[candidates].all() or len(candidates) == 0:
            return candidates
        commanded = np.flatnonzero(run)
        nearest, _ = cKDTree(self.state.position[commanded]).query(
            self.state.position[candidates], k=1, distance_upper_bound=self.params.neighbor_dist)
        # inf: no commanded robot within range (commanded robots are kept even at range 0).
        return np.union1d(commanded, candidates[np.isfinite(nearest)])

    # ------------------------------------------------------------------ outputs
    def status(self, now: float, rows: Optional[np.ndarray] = None) -> List[RobotStatus]:
        """Every commanded robot's health (or that of the commanded ones among `rows`), and
        restarts their infeasibility counts."""
        rows = np.flatnonzero(self.commanded) if rows is None else \
            np.asarray(rows, dtype=np.intp)[self.commanded[rows]]
        breaker = self.steering.breaker
        yielding = breaker.yielding(now) if breaker is not None else np.zeros(len(self.names))
        detouring = breaker.detouring(now) if breaker is not None else np.zeros(len(self.names))
        p, steering, avoidance = self.params, self.steering, self._avoidance
        out = []
        for i in rows:
            waiting = ('the map' if p.require_map and self._map is None else
                       'the 3-D map' if self._bodies.flying[i] and p.require_map_3d and
                       self._map_3d is None else None)
            out.append(control_status(self.names[i], ControlFacts(
                odom_age=now - self.state.stamp[i], odom_timeout=p.odom_timeout,
                input_problem=self.state.input_problem.get(i), waiting_for=waiting,
                filtering=(now - self._input_stamp[i] <= p.source_timeout
                           if p.filter_mode else None),
                holding=bool(steering.tracked[i] and steering.reference(i) is None),
                goal=bool(steering.tracked[i] or np.isfinite(steering.goal[i, 0])),
                arrived=bool(steering.arrived[i]), orca_cycles=int(avoidance.cycles[i]),
                infeasible_cycles=int(avoidance.infeasible[i]), yielding=bool(yielding[i]),
                detouring=bool(detouring[i]),
                speed=float(np.hypot(*avoidance.velocity[i])),
                safety_scale=float(self._safety_scale[i]),
                safety_reason=int(self._safety_reason[i]))))
        avoidance.restart_counts(rows)
        return out

    def view(self, now: float) -> FleetView:
        flying = self._bodies.flying
        return FleetView(self.state.position.copy(), self._bodies.radius.copy(),
                         self._avoidance.velocity.copy(),
                         self.steering.goal.copy(), self.commanded & ~self.live(now),
                         self.commanded.copy(), self._bodies.limits.max_speed.copy(),
                         self._avoidance.lines,
                         flying.copy(), np.where(flying, self.state.altitude, 0.0),
                         np.where(np.isnan(self.steering.goal_z), self.state.altitude,
                                  self.steering.goal_z))

