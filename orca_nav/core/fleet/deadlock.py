"""Deadlock breaking for a fleet (`DeadlockBreaker`), on top of the goal-seeking preferred
velocities (`preferred_velocity`): symmetric encounters stall plain ORCA. Two robots
meeting head-on, or a ring of robots swapping across a circle, get mirror-image half-planes;
each slows down by the same amount, nobody steps aside, and all speeds decay to zero short of
the goals (RVO2's circle_16_tight ends as a jammed ring this way). Once jammed, no choice of
*direction* alone helps: every robot's half-planes forbid moving toward its touching
neighbours, so a ring cannot even rotate. Someone has to wait. The breaker therefore:

1. detects stalls from progress: a robot not at its goal whose distance to the goal shrank by
   less than ``min_progress`` (a fraction of what ``max_speed`` allows) over the last
   ``stall_time`` seconds is stalled;
2. gives a stalled robot one of two recoveries for ``recovery_time`` seconds:
   - *yield* when a stuck (stalled or recovering) robot of higher priority (lower index in
     the fleet) is near: centres closer than ``yield_factor`` times the sum of both radii
     (with the default 2, less than one combined radius of free space between them), and that
     robot still has more than ``yield_factor`` times its own diameter to go. The yielding
     robot backs away from it at ``give_way_speed`` (a fraction of its max_speed): standing
     still is not enough where the other needs the very place it stands on (a doorway, a
     robot pressed between a wall and the other). A robot standing at its goal yields to any
     stuck robot that way and returns to its goal after;
   - otherwise *detour* by the right-hand rule: the goal direction rotated clockwise by
     ``detour_angle`` minus a deterministic per-robot offset (a golden-ratio sequence over the
     index, up to ``detour_spread``). Turning right is a convention every robot shares, so two
     robots facing each other sidestep in opposite directions; the offset removes the exact
     symmetry a ring would otherwise keep. Given the clearance from obstacles (``room``: the
     map's and the sensed ones), a robot whose right-hand detour leads within two radii of an
     obstacle four radii ahead turns left instead when the left has more room: a robot held
     against a wall on its right (behind a person standing in its way, say), or facing an
     unmapped pallet with another robot on its right, would otherwise keep detouring into it.
3. ends a recovery early when the robot arrives, and re-checks progress after it.

Robots close to their own goal claim no priority, so a lower-priority robot parked on (or next
to) someone's goal is never told to wait for that someone. Collision avoidance is never
touched: ORCA still filters every preferred velocity, so recoveries are as safe as any motion,
and `compute_velocities` keeps its RVO2 parity.
"""
import math
from dataclasses import dataclass

import numpy as np

from orca_nav.core.validation import finite_vectors as points
from orca_nav.core.validation import per_robot_values

__all__ = ['DeadlockParams', 'DeadlockBreaker']

_GOLDEN = 0.5 * (np.sqrt(5.0) - 1.0)


@dataclass(frozen=True)
class DeadlockParams:
    """When a robot counts as stalled and how it gets out (seconds, metres, radians)."""

    stall_time: float = 1.5       # window over which progress is measured
    min_progress: float = 0.3     # required fraction of the progress max_speed allows in the window
    recovery_time: float = 1.0    # how long a stalled robot yields or detours
    yield_factor: float = 2.0     # yield range, in multiples of the two robots' summed radii
    give_way_speed: float = 0.3   # fraction of max_speed a yielding robot backs away at
    detour_angle: float = np.radians(40.0)  # clockwise rotation of a detouring robot's velocity
    detour_spread: float = np.radians(10.0)  # per-robot offset range subtracted from detour_angle

    def __post_init__(self):
        for name in ('stall_time', 'recovery_time', 'yield_factor'):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0.0):
                raise ValueError(f'{name} must be finite and > 0, got {value}')
        if not (np.isfinite(self.give_way_speed) and 0.0 <= self.give_way_speed <= 1.0):
            raise ValueError(f'give_way_speed must be in [0, 1], got {self.give_way_speed}')
        if not (np.isfinite(self.min_progress) and 0.0 < self.min_progress < 1.0):
            raise ValueError(f'min_progress must be in (0, 1), got {self.min_progress}')
        if not (np.isfinite(self.detour_angle) and 0.0 < self.detour_angle < np.pi / 2):
            raise ValueError(f'detour_angle must be in (0, pi/2), got {self.detour_angle}')
        if not (np.isfinite(self.detour_spread) and 0.0 <= self.detour_spread <= self.detour_angle):
            raise ValueError('detour_spread must be in [0, detour_angle], '
                             f'got {self.detour_spread}')


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
        self._away = np.zeros((n, 2))

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
               distances=None, room=None, parked=None, checked=False):
        """Preferred velocities (N, 2) with stalled robots yielding or detouring.

        distances: optional (N,) distance to the goal along the route around obstacles
        (progress is judged on it; default: the straight distance to `goals`). room: optional
        function from (K, 2) points to their (K,) clearance from obstacles (m), which decides
        the side of a detour next to one. parked: optional (N,) bool, robots standing at their
        goals (among `arrived`) that give way to a stalled robot next to them as a
        lower-priority one would; they return to their goals after. checked: the arguments
        are (N,) and (N, 2) arrays already known to be valid, distances and parked given (the
        fleet controller's own, every cycle), so they are not checked again."""
        if not checked:
            positions, pref_velocities, arrived, goals, max_speed, radius, distances, parked = \
                self._checked(now, positions, pref_velocities, arrived, goals, max_speed, radius,
                              distances, parked)
        pref = pref_velocities
        if not np.isfinite(distances).all():
            distances = np.nan_to_num(distances, nan=0.0, posinf=0.0)
        distance = np.where(arrived, 0.0, distances)
        p = self.params
        # A new reference whenever the robot made enough progress (or has none yet / arrived).
        required = p.min_progress * np.minimum(max_speed * p.stall_time, self._reference_distance)
        progressed = (self._reference_distance - distance >= required) | arrived
        fresh = progressed | np.isnan(self._reference_time)
        self._reference_distance[fresh] = distance[fresh]
        self._reference_time[fresh] = now
        stalled = (~arrived & ~fresh & (now - self._reference_time >= p.stall_time)
                   & (self._recover_until <= now))  # a running recovery is not re-judged
        if stalled.any():
            self._reference_time[stalled] = now  # judge the recovery by the next window
            self._reference_distance[stalled] = distance[stalled]
            self._recover_until[stalled] = now + p.recovery_time
            stuck = self._recover_until > now  # stalled now or still recovering
            outranked, away = self._outranked(positions, radius, distance, stuck & ~arrived,
                                              parked)
            giving_way = stalled | (parked & outranked)
            self._recover_until[parked & outranked] = now + p.recovery_time
            self._yielding[giving_way] = outranked[giving_way]
            self._away[giving_way] = away[giving_way]
        self._recover_until[arrived & ~(parked & self._yielding)] = -np.inf
        recovering = self._recover_until > now
        if not recovering.any():    # the usual cycle: nobody yields or detours
            return pref.copy()
        turn = np.where(recovering & ~self._yielding, self._angle, 0.0)
        if room is not None:
            turn = self._toward_room(turn, positions, pref, radius, room)
        c, s = np.cos(turn), np.sin(turn)
        out = np.empty_like(pref)
        out[:, 0] = c * pref[:, 0] - s * pref[:, 1]
        out[:, 1] = s * pref[:, 0] + c * pref[:, 1]
        giving_way = recovering & self._yielding
        out[giving_way] = (p.give_way_speed * max_speed[giving_way, None]
                           * self._away[giving_way])
        return out

    def _checked(self, now, positions, pref_velocities, arrived, goals, max_speed, radius,
                 distances, parked):
        """update's arguments as arrays (distances and parked filled in); ValueError naming
        the first that is not valid."""
        n = len(self._angle)
        positions = points('positions', positions, n)
        pref = points('pref_velocities', pref_velocities, n)
        arrived = np.asarray(arrived, dtype=bool)
        goals = np.asarray(goals, dtype=float)
        if arrived.shape != (n,) or goals.shape != (n, 2):
            raise ValueError(f'arrived must have shape ({n},) and goals ({n}, 2), '
                             f'got {arrived.shape} and {goals.shape}')
        if not math.isfinite(now):
            raise ValueError(f'now must be finite, got {now}')
        max_speed = per_robot_values('max_speed', max_speed, n)
        radius = per_robot_values('radius', radius, n)
        if distances is None:
            distances = np.hypot(*(goals - positions).T)
        elif np.shape(distances) != (n,):
            raise ValueError(f'distances must have shape ({n},), got {np.shape(distances)}')
        distances = np.asarray(distances, dtype=float)
        parked = np.zeros(n, dtype=bool) if parked is None else np.asarray(parked, dtype=bool)
        return positions, pref, arrived, goals, max_speed, radius, distances, parked

    @staticmethod
    def _toward_room(turn, positions, pref, radius, room):
        """`turn` with the detours mirrored whose right-hand turn leads within two radii of an
        obstacle four radii ahead, where the left has more room."""
        rows = ((turn != 0.0) & np.any(pref != 0.0, axis=1)).nonzero()[0]
        if not rows.size:
            return turn
        # The right-hand probes, then the left-hand ones: one question to `room`.
        both = np.concatenate([rows, rows])
        angle = (np.arctan2(pref[both, 1], pref[both, 0])
                 + np.concatenate([turn[rows], -turn[rows]]))
        direction = np.column_stack([np.cos(angle), np.sin(angle)])
        probes = positions[both] + 4.0 * radius[both, None] * direction
        right, left = np.asarray(room(probes), dtype=float).reshape(2, -1)
        mirrored = turn.copy()
        flip = rows[(right < 2.0 * radius[rows]) & (left > right)]
        mirrored[flip] = -turn[flip]
        return mirrored

    def _outranked(self, positions, radius, distance, stuck, parked):
        """(N,) bool: whether a stuck robot that outranks the robot, with a long way to go, is
        near; and (N, 2) the unit direction away from those robots, in which it gives way.

        Only stuck robots (stalled or recovering) claim priority: in a crowd that still flows
        nobody needs to wait. Among stuck robots the lower index outranks; a parked robot is
        outranked by every stuck one (standing at its goal, it has nothing to lose). Robots
        within yield_factor diameters of their own goal claim none: whoever stands on or near
        that goal must not be made to wait for them, or neither ever moves.
        """
        factor = self.params.yield_factor
        involved = np.flatnonzero(stuck | parked)
        outranked = np.zeros(len(positions), dtype=bool)
        away = np.zeros((len(positions), 2))
        if not stuck.any() or len(involved) < 2:
            return outranked, away
        reach = factor * 2.0 * radius[involved].max()
        # Imported here: scipy.spatial takes longer to load than the rest of orca_nav's
        # parameters, whose specs take DeadlockParams' defaults from this module.
        from scipy.spatial import cKDTree
        pairs = cKDTree(positions[involved]).query_pairs(reach, output_type='ndarray')
        if not len(pairs):
            return outranked, away
        pairs = involved[pairs]                  # (i, j) with i < j
        pairs = np.concatenate([pairs, pairs[:, ::-1]])     # (claimant, the other), both ways
        i, j = pairs[:, 0], pairs[:, 1]
        gap = np.hypot(*(positions[i] - positions[j]).T)
        claims = stuck[i] & (distance[i] > factor * 2.0 * radius[i])
        ranks = parked[j] | (stuck[j] & (i < j))
        yields = claims & ranks & (gap < factor * (radius[i] + radius[j]))
        outranked[j[yields]] = True
        push = (positions[j] - positions[i])[yields] / np.maximum(gap[yields], 1e-9)[:, None]
        np.add.at(away, j[yields], push)
        norm = np.hypot(away[:, 0], away[:, 1])
        away = np.divide(away, norm[:, None], out=np.zeros_like(away), where=norm[:, None] > 0.0)
        return outranked, away
