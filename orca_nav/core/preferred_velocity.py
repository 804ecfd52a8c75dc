"""Preferred velocities for a fleet: goal seeking plus deadlock breaking, batched over robots.

ORCA only ever picks the allowed velocity closest to each robot's *preferred* velocity, so
everything a fleet layer wants from it (go to a goal, brake in time, get out of a stall) is
expressed here, and `orca.compute_velocities` stays RVO2's algorithm untouched.

Goal seeking (`goal_velocities`): head straight for the goal at
``min(max_speed, sqrt(2 * max_accel * distance), distance / time_step)``: full speed far away,
the braking profile inside the stopping distance ``max_speed**2 / (2 * max_accel)``, and never
more than one step's worth of distance so a discrete controller does not overshoot. Within
``goal_tolerance`` the preferred velocity is zero and the robot counts as arrived.

Deadlock breaking (`DeadlockBreaker`): symmetric encounters stall plain ORCA. Two robots
meeting head-on, or a ring of robots swapping across a circle, get mirror-image half-planes;
each slows down by the same amount, nobody steps aside, and all speeds decay to zero short of
the goals (RVO2's circle_16_tight ends as a jammed ring this way). Once jammed, no choice of
*direction* alone helps: every robot's half-planes forbid moving toward its touching
neighbours, so a ring cannot even rotate. Someone has to wait. The breaker therefore:

1. detects stalls from progress: a robot not at its goal whose distance to the goal shrank by
   less than ``min_progress`` (a fraction of what ``max_speed`` allows) over the last
   ``stall_time`` seconds is stalled;
2. gives a stalled robot one of two recoveries for ``recovery_time`` seconds:
   - *yield* (zero preferred velocity) when a stuck (stalled or recovering) robot of higher
     priority (lower index in the fleet) is near: centres closer than ``yield_factor`` times
     the sum of both radii (with the default 2, less than one combined radius of free space
     between them), and that robot
     still has more than ``yield_factor`` times its own diameter to go. ORCA's reciprocity then
     makes the yielding robot step aside for it;
   - otherwise *detour* by the right-hand rule: the goal direction rotated clockwise by
     ``detour_angle`` minus a deterministic per-robot offset (a golden-ratio sequence over the
     index, up to ``detour_spread``). Turning right is a convention every robot shares, so two
     robots facing each other sidestep in opposite directions; the offset removes the exact
     symmetry a ring would otherwise keep.
3. ends a recovery early when the robot arrives, and re-checks progress after it.

Robots close to their own goal claim no priority, so a lower-priority robot parked on (or next
to) someone's goal is never told to wait for that someone. Collision avoidance is never
touched: ORCA still filters every preferred velocity, so recoveries are as safe as any motion,
and `compute_velocities` keeps its RVO2 parity.
"""
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

__all__ = ['goal_velocities', 'DeadlockParams', 'DeadlockBreaker']

_GOLDEN = 0.5 * (np.sqrt(5.0) - 1.0)


def _per_robot(name, value, n, allow_zero=False):
    arr = np.broadcast_to(np.asarray(value, dtype=float), (n,)).astype(float)
    bad = np.flatnonzero(~np.isfinite(arr) | ((arr < 0.0) if allow_zero else (arr <= 0.0)))
    if bad.size:
        i = int(bad[0])
        bound = '>= 0' if allow_zero else '> 0'
        raise ValueError(f'{name}[{i}] must be finite and {bound}, got {arr[i]}')
    return arr


def _points(name, value, n=None):
    arr = np.asarray(value, dtype=float)
    if arr.ndim != 2 or arr.shape[1] != 2 or (n is not None and arr.shape[0] != n):
        expected = f'({n}, 2)' if n is not None else '(N, 2)'
        raise ValueError(f'{name} must have shape {expected}, got {arr.shape}')
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f'{name}[{bad[0][0]}] is not finite: {arr[bad[0][0]].tolist()}')
    return arr


def goal_velocities(positions, goals, max_speed, max_accel, goal_tolerance, time_step=None,
                    headings=None, route_lengths=None):
    """Goal-seeking preferred velocities with a braking profile.

    positions, goals: (N, 2); a goal row of NaN means "no goal" (zero preferred velocity).
    headings, route_lengths: optional (N, 2) unit directions and (N,) path lengths to the goal
    around obstacles (`geodesic_guidance.GeodesicGuidance.directions`); without them the robot
    heads straight for the goal and brakes on the straight distance.
    max_speed, max_accel: scalars or (N,) (> 0). goal_tolerance: scalar or (N,) (>= 0).
    time_step: the control period; caps the speed at distance / time_step (None = no cap).
    Returns (pref_velocities (N, 2), arrived (N,) bool; robots without a goal count as arrived).
    """
    positions = _points('positions', positions)
    n = len(positions)
    goals = np.asarray(goals, dtype=float)
    if goals.shape != (n, 2):
        raise ValueError(f'goals must have shape ({n}, 2), got {goals.shape}')
    partial = np.flatnonzero(np.isnan(goals).any(axis=1) & ~np.isnan(goals).all(axis=1))
    infinite = np.flatnonzero(np.isinf(goals).any(axis=1))
    if partial.size or infinite.size:
        i = int(np.concatenate([partial, infinite])[0])
        raise ValueError(f'goals[{i}] must be finite (or all NaN for no goal), got {goals[i].tolist()}')
    max_speed = _per_robot('max_speed', max_speed, n)
    max_accel = _per_robot('max_accel', max_accel, n)
    goal_tolerance = _per_robot('goal_tolerance', goal_tolerance, n, allow_zero=True)
    has_goal = ~np.isnan(goals[:, 0])
    offset = np.where(has_goal[:, None], goals - positions, 0.0)
    distance = np.hypot(offset[:, 0], offset[:, 1])
    arrived = ~has_goal | (distance <= goal_tolerance)
    speed = np.minimum(max_speed, np.sqrt(2.0 * max_accel * distance))
    if time_step is not None:
        if not (np.isfinite(time_step) and time_step > 0.0):
            raise ValueError(f'time_step must be finite and > 0, got {time_step}')
        speed = np.minimum(speed, distance / time_step)
    if headings is None:
        scale = np.divide(speed, distance, out=np.zeros(n), where=distance > 0.0)
        return offset * np.where(arrived, 0.0, scale)[:, None], arrived
    headings = np.asarray(headings, dtype=float)
    route = np.asarray(route_lengths, dtype=float)
    if headings.shape != (n, 2) or route.shape != (n,):
        raise ValueError(f'headings and route_lengths must have shapes ({n}, 2) and ({n},), '
                         f'got {headings.shape} and {route.shape}')
    # Brake on the route length (never shorter than the straight distance).
    route = np.fmax(np.nan_to_num(route, nan=0.0, posinf=0.0), distance)
    speed = np.minimum(max_speed, np.sqrt(2.0 * max_accel * route))
    if time_step is not None:
        speed = np.minimum(speed, route / time_step)
    pref = np.nan_to_num(headings) * np.where(arrived, 0.0, speed)[:, None]
    return pref, arrived


@dataclass(frozen=True)
class DeadlockParams:
    """When a robot counts as stalled and how it gets out (seconds, metres, radians)."""

    stall_time: float = 1.5       # window over which progress is measured
    min_progress: float = 0.3     # required fraction of the progress max_speed allows in the window
    recovery_time: float = 1.0    # how long a stalled robot yields or detours
    yield_factor: float = 2.0     # yield range, in multiples of the two robots' summed radii
    detour_angle: float = np.radians(40.0)  # clockwise rotation of a detouring robot's velocity
    detour_spread: float = np.radians(10.0)  # per-robot offset range subtracted from detour_angle

    def __post_init__(self):
        for name in ('stall_time', 'recovery_time', 'yield_factor'):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0.0):
                raise ValueError(f'{name} must be finite and > 0, got {value}')
        if not (np.isfinite(self.min_progress) and 0.0 < self.min_progress < 1.0):
            raise ValueError(f'min_progress must be in (0, 1), got {self.min_progress}')
        if not (np.isfinite(self.detour_angle) and 0.0 < self.detour_angle < np.pi / 2):
            raise ValueError(f'detour_angle must be in (0, pi/2), got {self.detour_angle}')
        if not (np.isfinite(self.detour_spread) and 0.0 <= self.detour_spread <= self.detour_angle):
            raise ValueError(f'detour_spread must be in [0, detour_angle], got {self.detour_spread}')


class DeadlockBreaker:
    """Stall detection, priority yielding and right-hand detours for N robots.

    Priority is the robot index: robot 0 outranks everyone. Call
    `update(now, positions, pref_velocities, arrived, goals, max_speed)` once per control cycle
    with the goal-seeking preferred velocities; it returns the preferred velocities for ORCA.
    """

    def __init__(self, num_robots, params=None):
        if int(num_robots) < 0:
            raise ValueError(f'num_robots must be >= 0, got {num_robots}')
        self.params = params if params is not None else DeadlockParams()
        n = int(num_robots)
        # Deterministic per-robot angle: golden-ratio sequence, well spread for any n.
        spread = (np.arange(n) * _GOLDEN) % 1.0
        self._angle = -(self.params.detour_angle - self.params.detour_spread * spread)
        self._reference_distance = np.full(n, np.inf)
        self._reference_time = np.full(n, np.nan)
        self._recover_until = np.full(n, -np.inf)
        self._yielding = np.zeros(n, dtype=bool)

    def yielding(self, now):
        """(N,) bool: robots waiting (zero preferred velocity) for a higher-priority robot."""
        return self._yielding & (self._recover_until > now)

    def detouring(self, now):
        """(N,) bool: robots following the right-hand rule at time `now`."""
        return ~self._yielding & (self._recover_until > now)

    def reset(self, index):
        """Forget the history of robot(s) `index` (e.g. after a new goal)."""
        self._reference_distance[index] = np.inf
        self._reference_time[index] = np.nan
        self._recover_until[index] = -np.inf
        self._yielding[index] = False

    def update(self, now, positions, pref_velocities, arrived, goals, max_speed, radius,
               distances=None):
        """Preferred velocities (N, 2) with stalled robots yielding or detouring.

        distances: optional (N,) distance to the goal along the route around obstacles
        (progress is judged on it; default: the straight distance to `goals`)."""
        n = len(self._angle)
        positions = _points('positions', positions, n)
        pref = _points('pref_velocities', pref_velocities, n)
        arrived = np.asarray(arrived, dtype=bool)
        goals = np.asarray(goals, dtype=float)
        if arrived.shape != (n,) or goals.shape != (n, 2):
            raise ValueError(f'arrived must have shape ({n},) and goals ({n}, 2), '
                             f'got {arrived.shape} and {goals.shape}')
        if not np.isfinite(now):
            raise ValueError(f'now must be finite, got {now}')
        p = self.params
        max_speed = _per_robot('max_speed', max_speed, n)
        radius = _per_robot('radius', radius, n)
        if distances is None:
            distances = np.hypot(*(goals - positions).T)
        elif np.shape(distances) != (n,):
            raise ValueError(f'distances must have shape ({n},), got {np.shape(distances)}')
        distance = np.where(arrived, 0.0, np.nan_to_num(np.asarray(distances, dtype=float),
                                                        nan=0.0, posinf=0.0))
        # A new reference whenever the robot made enough progress (or has none yet / arrived).
        required = p.min_progress * np.minimum(max_speed * p.stall_time, self._reference_distance)
        progressed = (self._reference_distance - distance >= required) | arrived
        fresh = progressed | np.isnan(self._reference_time)
        self._reference_distance[fresh] = distance[fresh]
        self._reference_time[fresh] = now
        stalled = (~arrived & ~fresh & (now - self._reference_time >= p.stall_time)
                   & (self._recover_until <= now))  # a running recovery is not re-judged
        if np.any(stalled):
            self._reference_time[stalled] = now  # judge the recovery by the next window
            self._reference_distance[stalled] = distance[stalled]
            self._recover_until[stalled] = now + p.recovery_time
            stuck = self._recover_until > now  # stalled now or still recovering
            self._yielding[stalled] = self._outranked(positions, radius, distance, stuck)[stalled]
        self._recover_until[arrived] = -np.inf
        recovering = self._recover_until > now
        turn = np.where(recovering & ~self._yielding, self._angle, 0.0)
        c, s = np.cos(turn), np.sin(turn)
        out = np.stack([c * pref[:, 0] - s * pref[:, 1], s * pref[:, 0] + c * pref[:, 1]], axis=1)
        out[recovering & self._yielding] = 0.0
        return out

    def _outranked(self, positions, radius, distance, stuck):
        """(N,) bool: a stuck higher-priority (lower index) robot with a long way to go is near.

        Only stuck robots (stalled or recovering) claim priority: in a crowd that still flows
        nobody needs to wait. Robots within yield_factor diameters of their own goal claim none
        either: whoever stands on or near that goal must not be made to wait for them, or
        neither ever moves.
        """
        factor = self.params.yield_factor
        waiting = np.flatnonzero(stuck)
        outranked = np.zeros(len(positions), dtype=bool)
        if len(waiting) > 1:
            reach = factor * 2.0 * radius[waiting].max()
            pairs = cKDTree(positions[waiting]).query_pairs(reach, output_type='ndarray')
            if len(pairs):
                pairs = waiting[pairs]  # (i, j) with i < j: i outranks j
                i, j = pairs[:, 0], pairs[:, 1]
                gap = np.hypot(*(positions[i] - positions[j]).T)
                near = gap < factor * (radius[i] + radius[j])
                claims = distance[i] > factor * 2.0 * radius[i]
                outranked[j[near & claims]] = True
        return outranked
