"""Where each robot wants to go this cycle: its preferred velocity.

A robot with a trajectory tracks it (`tracking`; a drone's 3-D plan in 3-D); a robot without
one heads for its goal with the braking profile (`preferred_velocity`), around the map's
obstacles once a map with goal guidance is known (`guidance`), with the deadlock breaker on
top (`deadlock`). `Steering` keeps what this needs across cycles: goals, trajectories, the
trackers, the breaker's history and who has arrived; not the parameters, which are the
controller's and come with each call. It checks nothing against maps: the controller refuses
goals before they get here.
"""
from __future__ import annotations

from dataclasses import fields
from typing import Callable, Optional, Sequence, Tuple

import numpy as np

from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.deadlock import DeadlockBreaker
from orca_nav.core.fleet.guidance import GeodesicGuidance
from orca_nav.core.fleet.kinematics import RobotLimits
from orca_nav.core.fleet.preferred_velocity import goal_velocities
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.fleet.tracking import FleetTracker, TrackingCommand, TrackingParams
from orca_nav.core.planning.reference import Reference


class Steering:
    """Goals, trajectories and the deadlock breaker of a fleet; rows over all its robots."""

    def __init__(self, robots: Sequence[RobotSpec], params: ControllerParams):
        n = len(robots)
        self.goal = np.full((n, 2), np.nan)
        self.goal_z = np.full(n, np.nan)        # drones' goal altitude; NaN: keep flying level
        self.arrived = np.zeros(n, dtype=bool)
        self.has_trajectory = np.zeros(n, dtype=bool)
        self.breaker = _new_breaker(n, params)
        self._new_trackers(robots, params)
        self._tracked_at: Optional[float] = None    # the cycle `_tracking` was computed for
        self._tracking: Optional[TrackingCommand] = None

    def configure(self, old: ControllerParams, new: ControllerParams,
                  robots: Optional[Sequence[RobotSpec]]) -> None:
        """Parameters `old` -> `new`; with `robots`, new kinematics: the trajectories are dropped
        (a tracker is per model). New deadlock parameters restart stall detection."""
        self._tracked_at = None     # new trackers or tolerances: the cycle's step is taken anew
        if robots is not None:
            self._new_trackers(robots, new)
        if new.deadlock != old.deadlock:
            self.breaker = _new_breaker(len(self.goal), new)
        if new.goal_tolerance != old.goal_tolerance:
            self._tracker.params = self._flight_tracker.params = _tracking_params(new)

    def _new_trackers(self, robots: Sequence[RobotSpec], params: ControllerParams) -> None:
        self._tracker = FleetTracker([r.non_holonomic for r in robots], dim=2,
                                     params=_tracking_params(params),
                                     steered=[r.steered for r in robots])
        self.tracked = np.full(len(robots), params.trajectories_only)
        # Drones' 3-D plans (x, y, z references) are tracked in 3-D; 2-D ones in the plane.
        self._flight_tracker = FleetTracker(np.zeros(len(robots), dtype=bool), dim=3,
                                            params=_tracking_params(params))

    # ------------------------------------------------------------------ inputs
    def same_goal(self, i: int, xy: np.ndarray, goal_z: float) -> bool:
        return bool(np.array_equal(xy, self.goal[i])
                    and np.array_equal(goal_z, self.goal_z[i], equal_nan=True))

    def set_goal(self, i: int, xy: Optional[np.ndarray], goal_z: float) -> None:
        self.goal[i] = xy if xy is not None else np.nan
        self.goal_z[i] = goal_z
        self.arrived[i] = False
        if self.breaker is not None:
            self.breaker.reset(i)

    def set_trajectory(self, i: int, reference: Optional[Reference], start_time: float) -> None:
        self.tracked[i] = True
        self.has_trajectory[i] = True
        flight = reference is not None and reference.dim == 3
        self._tracker.set_reference(i, None if flight else reference, start_time)
        self._flight_tracker.set_reference(i, reference if flight else None, start_time)
        self._tracked_at = None

    def reference(self, i: int) -> Optional[Reference]:
        return self._flight_tracker.reference(i) or self._tracker.reference(i)

    # ------------------------------------------------------------------ the cycle
    def _track(self, now: float, fleet_xy: np.ndarray, yaw: np.ndarray,
               fleet_limits: RobotLimits) -> TrackingCommand:
        """The 2-D trackers' step for the cycle at `now`, taken once whoever asks first (the
        ground robots, or drones on 2-D plans): a tracker's step advances its progress."""
        if self._tracked_at != now:
            self._tracking = self._tracker.update(now, fleet_xy, yaw, fleet_limits.max_speed,
                                                  fleet_limits.max_yaw_rate)
            self._tracked_at = now
        return self._tracking

    def ground(self, p: ControllerParams, now: float, rows: np.ndarray, everyone: bool,
               live: np.ndarray, positions: np.ndarray, limits: RobotLimits, fleet_xy: np.ndarray,
               yaw: np.ndarray, fleet_limits: RobotLimits, guidance: Optional[GeodesicGuidance],
               guided: np.ndarray, orca_radius: np.ndarray, radius: np.ndarray,
               room: Optional[Callable[[np.ndarray], np.ndarray]]
               ) -> Tuple[np.ndarray, Optional[TrackingCommand]]:
        """Preferred velocities (len(rows), 2) of the ground agents `rows` under the controller's
        parameters `p` (positions and limits theirs; fleet_xy, yaw, fleet_limits, orca_radius
        and radius the whole fleet's): trajectory tracking where a robot is tracked, else toward
        the goal (down `guidance` for the robots marked `guided` (N,)) with the deadlock
        breaker on top, which asks `room(points)` for the clearance there (None: room
        everywhere). Also the tracking command for the rows (None while no robot of the fleet
        is tracked: then none has a reference, the trackers idle and have nothing to step)."""
        tracking = None
        if self.tracked.any():
            track = self._track(now, fleet_xy, yaw, fleet_limits)
            tracking = track if everyone else TrackingCommand(
                **{f.name: getattr(track, f.name)[rows] for f in fields(TrackingCommand)})
        tracked = self.tracked[rows]
        goals = self.goal[rows]
        route = np.hypot(*(goals - positions).T)
        headings = None
        if guidance is not None:
            steer = guided[rows] & ~tracked & np.isfinite(goals[:, 0])
            if steer.all():     # the usual cycle: every robot down the map's routes
                headings, route = guidance.directions(positions, goals, orca_radius[rows])
            else:
                headings = np.zeros_like(positions)
                headings[steer], route[steer] = guidance.directions(
                    positions[steer], goals[steer], orca_radius[rows[steer]])
                # Robots not guided here keep the straight heading.
                straight = goals[~steer] - positions[~steer]
                norm = np.hypot(*straight.T)[:, None]
                headings[~steer] = np.divide(straight, norm, out=np.zeros_like(straight),
                                             where=norm > 0.0)
        pref, arrived = goal_velocities(positions, goals, limits.max_speed, limits.max_accel,
                                        p.goal_tolerance, time_step=p.period, headings=headings,
                                        route_lengths=None if headings is None else route,
                                        checked=True)
        self.arrived[rows] = arrived if tracking is None else np.where(tracked, tracking.reached,
                                                                       arrived)
        if self.breaker is not None:
            def fleet_rows(values, fill):
                """(N, ...) over the whole fleet: `values` at rows, `fill` elsewhere."""
                if everyone:
                    return values
                out = np.full((len(self.goal),) + values.shape[1:], fill, dtype=values.dtype)
                out[rows] = values
                return out
            # Robots outside this cycle, stale, tracked or arrived neither stall nor outrank ...
            exempt = fleet_rows(arrived | tracked | ~live, True)
            # ... but a robot standing at its goal steps aside for a stalled one.
            parked = fleet_rows(arrived & ~tracked & live & np.isfinite(goals[:, 0]), False)
            # (With the distances given, the breaker does not read the goals.)
            out = self.breaker.update(now, fleet_xy, fleet_rows(pref, 0.0), exempt, self.goal,
                                      fleet_limits.max_speed, radius,
                                      distances=fleet_rows(route, 0.0), room=room, parked=parked,
                                      checked=True)
            pref = out if everyone else out[rows]
        if tracking is None:
            return pref, None
        return np.where(tracked[:, None], tracking.pref_velocity, pref), tracking

    def drones(self, p: ControllerParams, now: float, drones: np.ndarray, positions: np.ndarray,
               limits: RobotLimits, fleet_xy: np.ndarray, fleet_z: np.ndarray, yaw: np.ndarray,
               fleet_limits: RobotLimits) -> np.ndarray:
        """(K, 3) preferred velocities of `drones` at `positions` (K, 3) under the controller's
        parameters `p`: straight to the 3-D
        goal with the braking profile (a NaN goal altitude: level flight); a drone with a
        trajectory follows it in 3-D (a 3-D plan), or in x, y (a 2-D one) climbing to its goal
        altitude. fleet_xy, fleet_z, yaw and fleet_limits are the whole fleet's."""
        goals = np.column_stack([self.goal[drones], np.where(
            np.isnan(self.goal_z[drones]), positions[:, 2], self.goal_z[drones])])
        goals[np.isnan(goals[:, 0]), 2] = np.nan
        pref, arrived = goal_velocities(positions, goals, limits.max_speed, limits.max_accel,
                                        p.goal_tolerance, time_step=p.period)
        self.arrived[drones] = arrived
        tracked = self.tracked[drones]
        if tracked.any():
            track = self._track(now, fleet_xy, yaw, fleet_limits)
            pref[tracked, :2] = track.pref_velocity[drones[tracked]]
            self.arrived[drones[tracked]] = track.reached[drones[tracked]]
            flying_plan = tracked & self._flight_tracker.has_reference[drones]
            if flying_plan.any():
                flight = self._flight_tracker.update(
                    now, np.column_stack([fleet_xy, fleet_z]), yaw, fleet_limits.max_speed)
                pref[flying_plan] = flight.pref_velocity[drones[flying_plan]]
                self.arrived[drones[flying_plan]] = flight.reached[drones[flying_plan]]
        return pref


def _new_breaker(count: int, params: ControllerParams) -> Optional[DeadlockBreaker]:
    return None if params.deadlock is None else DeadlockBreaker(count, params.deadlock)


def _tracking_params(params: ControllerParams) -> TrackingParams:
    return TrackingParams(position_tolerance=params.goal_tolerance)
