"""Goal-seeking preferred velocities for a fleet, batched over robots (the deadlock breaker
rotates or zeroes them afterwards: `deadlock`).

ORCA only ever picks the allowed velocity closest to each robot's *preferred* velocity, so
everything a fleet layer wants from it (go to a goal, brake in time, get out of a stall) is
expressed here, and `avoidance.compute_velocities` stays RVO2's algorithm untouched.

Goal seeking (`goal_velocities`): head straight for the goal at
``min(max_speed, sqrt(2 * max_accel * distance), distance / time_step)``: full speed far away,
the braking profile inside the stopping distance ``max_speed**2 / (2 * max_accel)``, and never
more than one step's worth of distance so a discrete controller does not overshoot. Within
``goal_tolerance`` the preferred velocity is zero and the robot counts as arrived.
"""
import numpy as np

from orca_nav.core.geometry import row_norms
from orca_nav.core.validation import finite_at_least_zero, finite_vectors, per_robot_values

__all__ = ['goal_velocities']


def goal_velocities(positions, goals, max_speed, max_accel, goal_tolerance, time_step=None,
                    headings=None, route_lengths=None, checked=False):
    """Goal-seeking preferred velocities with a braking profile.

    positions, goals: (N, 2), or (N, 3) for drones flying straight to 3-D goals; a goal row of
    NaN means "no goal" (zero preferred velocity).
    headings, route_lengths: optional (N, 2) unit directions and (N,) path lengths to the goal
    around obstacles (`guidance.GeodesicGuidance.directions`); without them the robot
    heads straight for the goal and brakes on the straight distance.
    max_speed, max_accel: scalars or (N,) (> 0). goal_tolerance: scalar or (N,) (>= 0).
    time_step: the control period; caps the speed at distance / time_step (None = no cap).
    checked: the arguments are arrays already known to be valid (the fleet controller's own,
    every cycle), so they are not checked again.
    Returns (pref_velocities (N, 2), arrived (N,) bool; robots without a goal count as arrived).
    """
    if not checked:
        positions, goals, max_speed, max_accel, goal_tolerance = _checked(
            positions, goals, max_speed, max_accel, goal_tolerance, time_step)
    n, dim = positions.shape
    has_goal = ~np.isnan(goals[:, 0])
    offset = np.where(has_goal[:, None], goals - positions, 0.0)
    distance = row_norms(offset)
    arrived = ~has_goal | (distance <= goal_tolerance)
    speed = np.minimum(max_speed, np.sqrt(2.0 * max_accel * distance))
    if time_step is not None:
        speed = np.minimum(speed, distance / time_step)
    if headings is None:
        scale = np.divide(speed, distance, out=np.zeros(n), where=distance > 0.0)
        return offset * np.where(arrived, 0.0, scale)[:, None], arrived
    headings = np.asarray(headings, dtype=float)
    route = np.asarray(route_lengths, dtype=float)
    if headings.shape != (n, dim) or route.shape != (n,):
        raise ValueError(f'headings and route_lengths must have shapes ({n}, {dim}) and ({n},), '
                         f'got {headings.shape} and {route.shape}')
    # Brake on the route length (never shorter than the straight distance).
    # (NaN and -inf lose to the distance in fmax: only +inf needs replacing.)
    route = np.fmax(np.where(route == np.inf, 0.0, route), distance)
    speed = np.minimum(max_speed, np.sqrt(2.0 * max_accel * route))
    if time_step is not None:
        speed = np.minimum(speed, route / time_step)
    if not np.isfinite(headings).all():
        headings = np.nan_to_num(headings)
    pref = headings * np.where(arrived, 0.0, speed)[:, None]
    return pref, arrived


def _checked(positions, goals, max_speed, max_accel, goal_tolerance, time_step):
    """goal_velocities' arguments as arrays; ValueError naming the first that is not valid."""
    positions = finite_vectors('positions', positions, dims=(2, 3))
    n, dim = positions.shape
    goals = np.asarray(goals, dtype=float)
    if goals.shape != (n, dim):
        raise ValueError(f'goals must have shape ({n}, {dim}), got {goals.shape}')
    if not np.isfinite(goals).all():      # robots without a goal, or a bad goal
        partial = np.flatnonzero(np.isnan(goals).any(axis=1) & ~np.isnan(goals).all(axis=1))
        infinite = np.flatnonzero(np.isinf(goals).any(axis=1))
        if partial.size or infinite.size:
            i = int(np.concatenate([partial, infinite])[0])
            raise ValueError(f'goals[{i}] must be finite (or all NaN for no goal), got '
                             f'{goals[i].tolist()}')
    max_speed = per_robot_values('max_speed', max_speed, n)
    max_accel = per_robot_values('max_accel', max_accel, n)
    goal_tolerance = per_robot_values('goal_tolerance', goal_tolerance, n, bound='>= 0')
    if time_step is not None:
        finite_at_least_zero('time_step', time_step, positive=True)
    return positions, goals, max_speed, max_accel, goal_tolerance
