"""The safety layer: the last word on every robot's command, with a guarantee per pair.

ORCA is collision-free only when every agent runs ORCA, takes its new velocity at once and sees
fresh data. This layer does not rest on that. For each robot it asks what happens if the robot
executes the command until the next one can take effect (`hold`: a control period, or the
longer intervals the controller has measured lately, plus the command latency and the age of
the state) and then brakes at its deceleration (`max_decel`) until it stands, along the path
the robot's own kinematic model drives (`kinematics.limit_twist`, `integrate_pose`; drones:
`limit_velocity_3d`). That braking path must be safe:

* **static** (map cells, voxels, sensed scan edges): the robot stands before it gets closer than
  `static_margin` to any of them (or, where it already is that close, it does not get closer);
* **passive** (tracked people, robots of other fleets: non-cooperative agents whose speed is
  bounded by `person_max_speed`): the robot stands before such an agent, walking at that bound
  straight at it from where it is now, could reach it. So if a contact happens, the robot is
  at rest (`rest_speed`);
* **reciprocal** (fleet robots this controller commands): the braking paths of both robots of
  a pair, under the commands chosen for both, keep `robot_margin` between them at every
  instant. A robot this controller does not command (another node's, per_robot mode) is
  assumed to keep its measured velocity until it brakes too; a stale one to brake now.

A command whose braking path is unsafe is scaled down, twist and climb rate by one factor, so
a diff-drive or car robot stays on the same arc (never swung sideways into something else),
trying the factors `SCALES` from the largest; none safe: the robot brakes (factor 0), which is
safe whenever the previous cycle's command was: its braking path is the one that command was
checked with. Pairs in conflict lower both robots' factors one step at a time.

The paths are sampled every `h` s (about half a control period); a sample spacing of h hides
at most `speed * h / 2` of travel and the sampled braking is shorter than the continuous one by
at most that much again, so each check keeps `speed * h` more. Time is passed in; numpy only.

One file: the braking paths, the three checks (static, passive, reciprocal) and the choice of
factors share one closed-form braking model and one stated guarantee (docs/safety.md); they are
read together.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional

import numpy as np
from scipy.spatial import cKDTree

from orca_nav.core.avoidance import NonCooperative
from orca_nav.core.fleet.kinematics import CAR, QUADROTOR, RobotLimits
from orca_nav.core.geometry import axis_norms, body_to_world, row_norms, world_to_body
from orca_nav.core.obstacle_distance import ObstacleDistance

SCALES = np.array([1.0, 0.8, 0.6, 0.45, 0.3, 0.2, 0.12, 0.06, 0.0])
_MAX_SAMPLES = 120      # braking-path samples at the most (longer paths are sampled coarser)
_DENSE_PAIRS = 24       # robots up to which near pairs come from the full distance matrix
# Why a robot's command was scaled (`SafetyResult.reason`; 0: not scaled).
FREE, STATIC, PERSON, ROBOT, STALE = 0, 1, 2, 3, 4
REASONS = ('free', 'static obstacle', 'person', 'robot', 'old state')


@dataclass(frozen=True)
class SafetyParams:
    """The safety layer's bounds (SI units)."""

    enabled: bool = True
    person_max_speed: float = 1.5      # m/s: what non-cooperative agents may walk at, at most
    person_height: float = 2.0         # m: a drone flying higher is above people
    static_margin: float = 0.02        # m kept from the map, voxels and sensed edges
    robot_margin: float = 0.02         # m kept between fleet robots
    person_margin: float = 0.02        # m kept from a non-cooperative agent's reach
    rest_speed: float = 0.05           # m/s: at or below this a robot is at rest

    def __post_init__(self):
        for name in ('person_max_speed', 'person_height', 'static_margin', 'robot_margin',
                     'person_margin', 'rest_speed'):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0.0):
                raise ValueError(f'safety.{name} must be finite and >= 0, got {value}')


class SafetyResult(NamedTuple):
    twists: np.ndarray        # (N, 3) body twists after the layer
    climb_rates: np.ndarray   # (N,) drones' vz after the layer
    scale: np.ndarray         # (N,) the factor applied (1: unchanged)
    reason: np.ndarray        # (N,) int: FREE, or what made the layer scale the command


@dataclass
class SafetyInput:
    """One cycle's view of the fleet for the safety layer; rows over all N robots."""

    poses: np.ndarray           # (N, 3) x, y, yaw at the cycle time
    altitudes: np.ndarray       # (N,) z (0 on the ground)
    velocities: np.ndarray      # (N, 3) measured world velocity (vx, vy, vz)
    yaw_rates: np.ndarray       # (N,) current yaw rate (the last command's)
    commands: np.ndarray        # (N, 3) body twists chosen this cycle
    climb_rates: np.ndarray     # (N,) drones' vz chosen this cycle
    hold: np.ndarray            # (N,) s each command is executed before the next can act
    adjustable: np.ndarray      # (N,) bool: commanded here this cycle (the others are fixed)
    known: np.ndarray           # (N,) bool: a state exists (the others are ignored)
    stale: np.ndarray           # (N,) bool: known but stale: assumed to brake now
    speed_cap: np.ndarray       # (N,) in [0, 1]: the largest factor allowed (stale data)


class SafetyLayer:
    """Scales commands so that every braking path is safe; see the module docstring."""

    def __init__(self, limits: RobotLimits, radius: np.ndarray, decel: np.ndarray,
                 params: SafetyParams = SafetyParams(), ground_clearance: float = 1.0):
        self.limits = limits
        self.radius = np.asarray(radius, dtype=float)
        self.decel = np.asarray(decel, dtype=float)
        self.params = params
        self.ground_clearance = ground_clearance
        self.flying = limits.model == QUADROTOR
        self._planar_holonomic = limits.planar_holonomic
        self._turns_on_the_spot = (limits.model != CAR) & ~self.flying
        self.static: Optional[ObstacleDistance] = None       # the 2-D map's cells
        self.static_3d: Optional[ObstacleDistance] = None    # the 3-D map's voxels

    def apply(self, state: SafetyInput, step: float, people: NonCooperative,
              sensed: Optional[Callable[[np.ndarray], np.ndarray]] = None) -> SafetyResult:
        """The commands of `state` made safe. `step`: the sampling interval of the braking
        paths (s); `people`: the non-cooperative agents at the cycle time; `sensed`: distance
        from (K, 2) points to the recent sensor edges, or None."""
        n = len(self.radius)
        commands = np.where(state.adjustable[:, None], state.commands, 0.0)
        climb = np.where(state.adjustable, state.climb_rates, 0.0)
        if not self.params.enabled or not state.adjustable.any():
            return SafetyResult(commands, climb, np.ones(n), np.zeros(n, dtype=int))
        # An old state: slower however free the way looks (its position is less sure).
        cap = np.where(state.adjustable, state.speed_cap, 1.0)
        scale = cap.copy()
        reason = np.where(cap < 1.0, STALE, FREE)
        # What each robot does until it can brake: the chosen command (adjustable), its measured
        # velocity (another controller's robot), nothing (stale: it brakes now).
        fixed = state.known & ~state.adjustable & ~state.stale
        if state.adjustable.all():      # the usual cycle: every robot commanded here
            held, held_climb = commands, climb
        else:
            body = world_to_body(state.velocities[:, :2], state.poses[:, 2])
            current = np.concatenate([body, state.yaw_rates[:, None]], axis=1)
            held = np.where(state.adjustable[:, None], commands,
                            np.where(fixed[:, None], current, 0.0))
            held_climb = np.where(state.adjustable, climb,
                                  np.where(fixed, state.velocities[:, 2], 0.0))
        hold = np.where(state.stale, 0.0, state.hold)
        speed_now = np.hypot(np.hypot(state.velocities[:, 0], state.velocities[:, 1]),
                             state.velocities[:, 2])
        speed_cmd = np.hypot(np.hypot(held[:, 0], held[:, 1]), held_climb)
        peak = np.maximum(speed_now, speed_cmd)
        stop_time = hold + peak / self.decel
        travel = peak * hold + peak * peak / (2.0 * self.decel)
        involved = state.known & (state.adjustable | fixed | state.stale)
        horizon = float(stop_time[involved].max(initial=0.0))
        if horizon <= 0.0:
            return SafetyResult(commands * scale[:, None], climb * scale, scale, reason)
        samples = int(min(_MAX_SAMPLES, np.ceil(horizon / step))) + 1
        h = horizon / (samples - 1)
        slack = peak * h            # sampling (see the module docstring)
        check = state.adjustable & state.known
        static_need, static_check = self._static_needs(state, check, travel, slack, sensed)
        person_check = self._near_people(state, check, travel, stop_time, people)
        pairs = self._near_pairs(state, involved, travel, slack)
        in_pair = np.zeros(n, dtype=bool)
        in_pair[pairs.ravel()] = True
        rolled = ((check & (static_check | person_check | in_pair))
                  | (in_pair & involved)).nonzero()[0]
        if rolled.size == 0:
            return SafetyResult(commands * scale[:, None], climb * scale, scale, reason)
        factors = np.where(state.adjustable[rolled, None], cap[rolled, None] * SCALES[None, :],
                           1.0)
        paths = _Rollouts(self, state, rolled, held[rolled], held_climb[rolled], hold[rolled],
                          factors, samples, h)
        # Each robot's largest factor first; the others only where that one is unsafe, or
        # where a pair lowers it (`_resolve_pairs`): a factor's path and its checks do not
        # depend on which others are rolled out with it.
        everyone, largest = np.arange(len(rolled)), np.zeros(len(rolled), dtype=int)
        paths.get(everyone, largest)        # one batch: every check and pair needs these
        ok, why = self._checks(paths, everyone, largest, static_check,
                               static_need, person_check, slack, h, people, sensed)
        unsafe = (~ok & state.adjustable[rolled]).nonzero()[0]
        choice = np.zeros(len(rolled), dtype=int)
        reason_of = np.full(len(rolled), FREE)
        if unsafe.size:
            k = len(SCALES)
            lower = np.repeat(unsafe, k - 1)
            scale_index = np.tile(np.arange(1, k), unsafe.size)
            ok_lower, why_lower = self._checks(paths, lower, scale_index, static_check,
                                               static_need, person_check, slack, h, people,
                                               sensed)
            ok_all = np.column_stack([np.zeros(unsafe.size, dtype=bool),
                                      ok_lower.reshape(unsafe.size, k - 1)])
            why_all = np.column_stack([why[unsafe], why_lower.reshape(unsafe.size, k - 1)])
            ok_all[:, -1] = True      # braking now: the last resort, safe if the last command was
            choice[unsafe] = np.argmax(ok_all, axis=1)
            reason_of[unsafe] = why_all[np.arange(unsafe.size), choice[unsafe] - 1]
        if len(pairs):
            choice, robot_bound = self._resolve_pairs(paths, pairs, choice, state, rolled, slack)
            reason_of = np.where(robot_bound, ROBOT, reason_of)
        chosen = factors[np.arange(len(rolled)), choice]
        adjustable = state.adjustable[rolled]
        scale[rolled[adjustable]] = chosen[adjustable]
        bound = adjustable & (choice > 0)
        reason[rolled[bound]] = reason_of[bound]
        yaw_rates = commands[:, 2].copy()
        commands = commands * scale[:, None]
        climb = climb * scale
        # A round robot that must stand may still turn on the spot once at rest: its footprint
        # does not move, so every braking path stays as it was. Without it a diff-drive robot
        # facing a wall closely could never turn toward the way out. Still moving, it brakes
        # straight: a turn would bend its braking path off the one checked. Cars cannot turn
        # standing; stale states stop.
        turning = (scale == 0.0) & (cap > 0.0) & self._turns_on_the_spot & \
            (speed_now <= self.params.rest_speed)
        commands[turning, 2] = yaw_rates[turning]
        return SafetyResult(commands, climb, scale, reason)

    def _checks(self, paths: '_Rollouts', robots, scale_index, static_check, static_need,
                person_check, slack, h, people, sensed):
        """(ok, why) of the braking paths of rolled robots `robots` (local indices, M,) at
        factors `scale_index` (M,): the static and the passive checks of the robots that need
        them; why is STATIC or PERSON where a check failed (STATIC first), else FREE."""
        ok = np.ones(len(robots), dtype=bool)
        why = np.full(len(robots), FREE)
        rolled = paths.rolled
        for check, reason in ((static_check, STATIC), (person_check, PERSON)):
            rows = check[rolled[robots]].nonzero()[0]
            if not rows.size:
                continue
            robot, index = robots[rows], scale_index[rows]
            path, moving = paths.get(robot, index)
            owner = rolled[robot]
            if reason == STATIC:
                good = self._static_ok(path, owner, static_need[owner], sensed)
            else:
                good = self._passive_ok(path, moving, owner, slack[owner], h, people)
            why[rows] = np.where(~good & (why[rows] == FREE), reason, why[rows])
            ok[rows] &= good
        return ok, why

    # ------------------------------------------------------------------ who is near what
    def _static_needs(self, state: SafetyInput, check, travel, slack, sensed):
        """(distance each robot must keep from static obstacles, robots near enough to check)."""
        wanted = self.radius + self.params.static_margin + slack
        if self.static is None and self.static_3d is None and sensed is None:
            return wanted, np.zeros(len(self.radius), dtype=bool)   # nothing static to meet
        reach = wanted + travel
        rows = check.nonzero()[0]
        now = np.full(len(self.radius), np.inf)
        now[rows] = self._clearance(self._points(state.poses[rows], state.altitudes[rows]), rows,
                                    reach[rows], sensed)
        # Already closer than wanted: it may not get closer than it is.
        need = np.where(now >= wanted, wanted, now)
        return need, check & (now < reach)

    @staticmethod
    def _points(poses, altitudes) -> np.ndarray:
        return np.concatenate([poses[:, :2], altitudes[:, None]], axis=1)

    def _clearance(self, points, robots, reach, sensed) -> np.ndarray:
        """(K,) lower bound of the distance from points (K, 3) of `robots` (K,) to the static
        obstacles they can meet: the 2-D map and the sensed edges for ground robots; the voxels,
        and the sensed edges while low, for drones. Only compared with `reach` ((K,)): values
        at or beyond it (inf where the map's `lower_bound_near` is sure of that) all mean
        "far"; below it, exact as the lower bounds are."""
        out = np.full(len(points), np.inf)
        flying = self.flying[robots]
        if self.static is not None and (~flying).any():
            ground = (~flying).nonzero()[0]
            out[ground] = self.static.lower_bound_near(points[ground, :2], reach[ground])
        if self.static_3d is not None and flying.any():
            out[flying] = self.static_3d.lower_bound(points[flying], float(reach[flying].max()))
        if sensed is not None:
            low = ~flying | (points[:, 2] - self.radius[robots] < self.ground_clearance)
            if low.any():
                out[low] = np.minimum(out[low], sensed(points[low, :2]))
        return out

    def _near_people(self, state: SafetyInput, check, travel, stop_time, people):
        if not len(people.positions):
            return np.zeros(len(self.radius), dtype=bool)
        reach = (travel + self.radius + self.params.person_max_speed * stop_time
                 + self.params.person_margin)
        gap = np.linalg.norm(state.poses[:, None, :2] - people.positions[None], axis=2) \
            - people.radii[None, :]
        return check & (gap < reach[:, None]).any(axis=1)

    def _near_pairs(self, state: SafetyInput, involved, travel, slack) -> np.ndarray:
        """(P, 2) pairs of involved robots, one of them adjustable, whose braking paths could
        meet."""
        rows = involved.nonzero()[0]
        if len(rows) < 2:
            return np.zeros((0, 2), dtype=int)
        xy = state.poses[rows, :2]
        reach = travel[rows] + self.radius[rows] + slack[rows]
        margin = self.params.robot_margin
        if len(rows) <= _DENSE_PAIRS:
            i, j = _upper_pairs(len(rows))
        else:
            # The pairs within the largest reach (a kd-tree: all pairs grow as N^2), in the
            # same (row-major) order.
            bound = 2.0 * float(reach.max()) + margin
            i, j = cKDTree(xy).query_pairs(bound * (1.0 + 1e-9) + 1e-9, output_type='ndarray').T
            order = np.argsort(i * len(rows) + j)
            i, j = i[order], j[order]
        # Each pair's own test, as np.linalg.norm measures the gap.
        gap = np.sqrt((xy[i, 0] - xy[j, 0]) ** 2 + (xy[i, 1] - xy[j, 1]) ** 2)
        near = gap < reach[i] + reach[j] + margin
        i, j = i[near], j[near]
        pairs = np.empty((len(i), 2), dtype=rows.dtype)
        pairs[:, 0], pairs[:, 1] = rows[i], rows[j]
        return pairs[state.adjustable[pairs].any(axis=1)]

    # ------------------------------------------------------------------ braking paths
    def braking_paths(self, state: SafetyInput, rows, commands, climb, hold, samples, h):
        """(S, M, 3) positions x, y, z every h s of robots `rows` executing `commands` (M, 3)
        (and climb (M,)) for `hold` (M,) s, then braking to a stand; (S, M) bool: moving
        faster than rest_speed during the step that ends at each sample.

        The steps are those of the kinematic model (`kinematics.limit_twist` and
        `integrate_pose`, drones `limit_velocity_3d`), written for all steps at once: the
        velocity moves in a straight line toward the command by accel * h a step, then toward
        zero by decel * h, so step k's velocity is known without walking there."""
        m = len(rows)
        model = self.limits.model[rows]
        flying = self.flying[rows]
        drones = flying.any()
        yaw0 = state.poses[rows, 2]
        velocity = state.velocities[rows]                 # world (vx, vy, vz)
        # Vectors axis-major (axes, ...), x, y(, z) rows, so that the steps and robots are the
        # long axes numpy loops over (not a last axis of 3); the same values element for
        # element. Drones ramp their world velocity, ground robots their body twist: one
        # 3-vector each; without drones z stays 0 (adds +0 to every norm): x and y only.
        axes = 3 if drones else 2
        start = np.zeros((axes, m))
        start[:2] = world_to_body(velocity[:, :2], yaw0).T
        start[1, ~self._planar_holonomic[rows]] = 0.0
        target = np.zeros((axes, m))
        target[:2] = commands[:, :2].T
        if drones:
            target[:2, flying] = body_to_world(commands[flying, :2], yaw0[flying]).T
            target[2, flying] = climb[flying]
            start[:, flying] = velocity[flying].T
        steps = np.arange(1, samples)[:, None]                               # (S-1, 1)
        held_steps = np.ceil(hold / h - 1e-9)                                # (M,)
        holding = steps <= held_steps[None, :]                               # (S-1, M)
        change = target - start
        gap = axis_norms(change)
        reach = np.minimum(steps * (self.limits.max_accel[rows] * h)[None, :], gap[None, :])
        ramp = start[:, None] + change[:, None] * (reach / np.maximum(gap, 1e-300)[None, :])
        last_held = np.minimum(held_steps, samples - 1).astype(int)
        end = np.where(last_held > 0, ramp[:, np.maximum(last_held - 1, 0), np.arange(m)], start)
        end_speed = axis_norms(end)
        braked = np.maximum(0.0, 1.0 - (steps - held_steps[None, :])
                            * (self.decel[rows] * h)[None, :]
                            / np.maximum(end_speed, 1e-300)[None, :])
        linear = np.where(holding, ramp, end[:, None] * braked)             # (axes, S-1, M)
        curvature = np.divide(commands[:, 2], commands[:, 0], out=np.zeros(m),
                              where=commands[:, 0] != 0.0)
        yaw_rate = np.where(model == CAR, curvature[None, :] * linear[0], commands[None, :, 2])
        yaw_rate = np.where(holding & ~flying[None, :] if drones else holding, yaw_rate, 0.0)
        # Each step's arc, exactly (the SE(2) exponential of `integrate_pose`).
        theta = yaw_rate * h
        turned = np.zeros((samples - 1, m))      # yaw change before each step
        np.cumsum(theta[:-1], axis=0, out=turned[1:])
        heading = yaw0[None, :] + turned
        # Once every hold is over nobody turns (theta +0 from step max(held_steps) on), so the
        # steps from one after that share their arc factors and heading (the sum has then
        # taken a +0, which it keeps): the sines are taken up to that step and repeated.
        turning = int(min(samples - 1, held_steps.max(initial=0.0) + 2.0))
        arc = theta[:turning]
        a, b, c, s = (np.empty((samples - 1, m)) for _ in range(4))
        a[:turning] = h * np.sinc(arc / np.pi)
        b[:turning] = h * np.sin(0.5 * arc) * np.sinc(0.5 * arc / np.pi)
        c[:turning], s[:turning] = np.cos(heading[:turning]), np.sin(heading[:turning])
        for factor in (a, b, c, s):
            factor[turning:] = factor[turning - 1]
        body_x = linear[0] * a - linear[1] * b
        body_y = linear[0] * b + linear[1] * a
        moves = np.zeros((axes, samples - 1, m))       # world displacement of each step
        moves[0] = c * body_x - s * body_y
        moves[1] = s * body_x + c * body_y
        if drones:
            moves[:, :, flying] = linear[:, :, flying] * h
        path = np.empty((3, samples, m))
        path[:2, 0] = state.poses[rows, :2].T
        path[2] = state.altitudes[rows]     # ground robots keep theirs, drones climb (below)
        path[:axes, 1:] = path[:axes, :1] + np.cumsum(moves, axis=1)
        moving = np.zeros((samples, m), dtype=bool)
        moving[1:] = axis_norms(linear) > self.params.rest_speed
        return path.transpose(1, 2, 0), moving     # (S, M, 3) and (S, M)

    # ------------------------------------------------------------------ the checks
    def _static_ok(self, path, robots, need, sensed):
        """(M,) bool: the braking paths (S, M, 3) of `robots` (M,) keep `need` (M,) from static
        obstacles."""
        samples, count, _ = path.shape
        owner = robots[None, :].repeat(samples, axis=0).ravel()
        clearance = self._clearance(path.reshape(-1, 3), owner,
                                    need[None, :].repeat(samples, axis=0).ravel(), sensed)
        return (clearance.reshape(samples, count) >= need[None, :] - 1e-9).all(axis=0)

    def _passive_ok(self, path, moving, robots, slack, h, people):
        """(M,) bool: wherever the robot moves along its braking path (S, M, 3), no
        non-cooperative agent walking at person_max_speed from where it is now can have
        reached it."""
        p = self.params
        samples = path.shape[0]
        t = (np.arange(samples) * h)[:, None, None]
        reach = people.radii[None, None, :] + p.person_max_speed * t
        gap = np.linalg.norm(path[..., None, :2] - people.positions[None, None], axis=-1)
        need = self.radius[robots][None, :, None] + reach + p.person_margin \
            + slack[None, :, None]
        touched = gap < need                                          # (S, M, P)
        flying = self.flying[robots]
        if flying.any():
            above = path[..., 2] - self.radius[robots][None, :] >= p.person_height
            touched &= ~above[..., None]
        # The robot at rest may be reached: that is the passive guarantee.
        return ~(touched.any(axis=-1) & moving).any(axis=0)

    def _resolve_pairs(self, paths: '_Rollouts', pairs, choice, state, rolled, slack):
        """Lowers the factors of robots whose chosen braking paths come too close to another's
        until no pair does or both brake; returns (choice, robots bound by a pair)."""
        p = self.params
        a, b = np.searchsorted(rolled, pairs.T)     # local indices (rolled is sorted)
        need = self.radius[pairs[:, 0]] + self.radius[pairs[:, 1]] + p.robot_margin \
            + slack[pairs[:, 0]] + slack[pairs[:, 1]]
        first = row_norms(paths.start[a] - paths.start[b])   # factor-independent
        need = np.where(first >= need, need, first)          # already closer: not closer
        flying_a, flying_b = self.flying[pairs[:, 0]], self.flying[pairs[:, 1]]
        adjustable = state.adjustable[rolled]
        bound = np.zeros(len(rolled), dtype=bool)
        last = len(SCALES) - 1
        for _ in range(len(SCALES)):
            pa = paths.get(a, choice[a])[0]                                # (S, P, 3)
            pb = paths.get(b, choice[b])[0]
            gap = _pair_gap(pa, pb, flying_a, flying_b, self.radius[pairs[:, 0]],
                            self.radius[pairs[:, 1]], self.ground_clearance)
            conflict = (gap < need[None] - 1e-9).any(axis=0)
            if not conflict.any():
                break
            lower = np.zeros(len(rolled), dtype=bool)
            lower[a[conflict]] = True
            lower[b[conflict]] = True
            lower &= adjustable & (choice < last)
            if not lower.any():
                break
            choice = np.where(lower, choice + 1, choice)
            bound |= lower
        return choice, bound


class _Rollouts:
    """The braking paths of the rolled robots (local indices into `rolled`) at each of their
    factors (`factors` (R, len(SCALES))), computed on first use: most robots are safe at their
    largest factor, and the others' paths do not change what it computes."""

    def __init__(self, layer: SafetyLayer, state: SafetyInput, rolled, held, held_climb, hold,
                 factors, samples: int, h: float):
        self.layer, self.state, self.rolled = layer, state, rolled
        self.held, self.held_climb, self.hold, self.factors = held, held_climb, hold, factors
        self.samples, self.h = samples, h
        self.start = np.concatenate([state.poses[rolled, :2], state.altitudes[rolled, None]],
                                    axis=1)
        count, k = factors.shape
        self._path = np.empty((samples, count, k, 3))
        self._moving = np.empty((samples, count, k), dtype=bool)
        self._done = np.zeros((count, k), dtype=bool)

    def get(self, robots, index):
        """(S, M, 3) braking paths and (S, M) moving of rolled robots `robots` (M,) at factors
        `index` (M,) (see `SafetyLayer.braking_paths`)."""
        missing = ~self._done[robots, index]
        if missing.any():
            k = self.factors.shape[1]
            key = robots[missing] * k + index[missing]
            if not (key[1:] > key[:-1]).all():   # usually ascending and distinct already
                key = np.unique(key)
            r, c = key // k, key % k
            factor = self.factors[r, c]
            path, moving = self.layer.braking_paths(
                self.state, self.rolled[r], self.held[r] * factor[:, None],
                self.held_climb[r] * factor, self.hold[r], self.samples, self.h)
            self._path[:, r, c] = path
            self._moving[:, r, c] = moving
            self._done[r, c] = True
        # One take along the flattened (robot, factor) axis: numpy's two-array indexing copies
        # each (x, y, z) on its own, at twice the cost.
        flat = robots * self.factors.shape[1] + index
        samples = self.samples
        return (self._path.reshape(samples, -1, 3).take(flat, axis=1),
                self._moving.reshape(samples, -1).take(flat, axis=1))


@functools.lru_cache(maxsize=8)
def _upper_pairs(count: int):
    """(i, j) of every pair i < j of `count` robots, row-major (read-only, kept)."""
    i, j = np.triu_indices(count, 1)
    i.flags.writeable = j.flags.writeable = False
    return i, j


def _pair_gap(pa, pb, flying_a, flying_b, ra, rb, ground_clearance):
    """(S, P) distance between two robots' centres as their contact rule measures it: in the
    plane for ground robots, in 3-D for two drones, in the plane for a drone low enough to meet
    a ground robot's cylinder (inf above it)."""
    planar = row_norms(pa[..., :2] - pb[..., :2])
    both = flying_a & flying_b
    one = flying_a ^ flying_b
    gap = planar
    if both.any():
        gap = np.where(both[None], row_norms(pa - pb), gap)
    if one.any():
        drone_z = np.where(flying_a[None], pa[..., 2], pb[..., 2])
        drone_r = np.where(flying_a, ra, rb)[None]
        low = drone_z - drone_r < ground_clearance
        gap = np.where(one[None] & ~low, np.inf, gap)
    return gap


def _clip(vectors: np.ndarray, limit: np.ndarray) -> np.ndarray:
    norm = np.sqrt(np.sum(vectors * vectors, axis=1))
    return vectors * np.minimum(1.0, limit / np.maximum(norm, 1e-300))[:, None]
