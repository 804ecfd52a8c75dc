"""Shortest curvature-bounded paths: Reeds-Shepp (forward and reverse) and Dubins (forward only).

Both are computed in closed form, vectorised over many (start, goal) pairs at once:

* Reeds-Shepp: the 48 candidate words of Reeds & Shepp (1990), reached from the base formulas
  8.1-8.11 of the paper through its time-flip / reflection / backwards symmetries (the same
  enumeration as OMPL's ``ReedsSheppStateSpace``, with the paper's typos in 8.3 and 8.11
  corrected). Signed segment lengths: a negative length drives backwards.
* Dubins: the six words LSL, RSR, LSR, RSL, RLR, LRL.

A path is a :class:`CurvePath`: a start pose and a list of segments, each a signed arc length
with a signed curvature (+1/r left, -1/r right, 0 straight) and, for robots that can rotate on
the spot, an in-place yaw change. :meth:`CurvePath.sample` returns poses and the driving
direction along it, all samples at once. Poses are ``(x, y, yaw)``; yaw is never assumed to be
wrapped on input.

:class:`DistanceTable` tabulates a distance once per (kind, radius) over relative goal poses so a
search heuristic costs one array lookup per state.

One file: the 48 Reeds-Shepp words and Dubins' six are evaluated the same way (vectorised over
(start, goal) pairs, then the shortest word sampled by one routine); split, each family would
restate that.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Tuple

import numpy as np

from orca_nav.core.geometry import wrap_angle
from orca_nav.core.validation import finite_at_least_zero

TWO_PI = 2.0 * math.pi
_ZERO = 10.0 * np.finfo(float).eps
_HALF_PI = 0.5 * math.pi


def _mod2pi(a):
    # Reeds-Shepp formulas want angles in [-pi, pi] (the sign of an arc is its direction).
    return wrap_angle(a)


def _polar(x, y):
    return np.hypot(x, y), np.arctan2(y, x)


def _tau_omega(u, v, xi, eta, phi):
    delta = _mod2pi(u - v)
    a = np.sin(u) - np.sin(delta)
    b = np.cos(u) - np.cos(delta) - 1.0
    t1 = np.arctan2(eta * a - xi * b, xi * a + eta * b)
    t2 = 2.0 * (np.cos(delta) - np.cos(v) - np.cos(u)) + 3.0
    tau = np.where(t2 < 0.0, _mod2pi(t1 + math.pi), _mod2pi(t1))
    omega = _mod2pi(tau - u + v - phi)
    return tau, omega


# Base formulas. Each takes the goal in the start frame, scaled to a unit turning radius, and
# returns (valid mask, tuple of segment lengths in the order of its word).
def _lp_sp_lp(x, y, phi):                     # 8.1  L+ S+ L+
    u, t = _polar(x - np.sin(phi), y - 1.0 + np.cos(phi))
    v = _mod2pi(phi - t)
    return (t >= -_ZERO) & (v >= -_ZERO), (t, u, v)


def _lp_sp_rp(x, y, phi):                     # 8.2  L+ S+ R+
    rho, t1 = _polar(x + np.sin(phi), y - 1.0 - np.cos(phi))
    u1 = rho * rho
    u = np.sqrt(np.maximum(u1 - 4.0, 0.0))
    t = _mod2pi(t1 + np.arctan2(2.0, u))
    v = _mod2pi(t - phi)
    return (u1 >= 4.0) & (t >= -_ZERO) & (v >= -_ZERO), (t, u, v)


def _lp_rm_l(x, y, phi):                      # 8.3  L+ R- L
    xi = x - np.sin(phi)
    eta = y - 1.0 + np.cos(phi)
    u1, theta = _polar(xi, eta)
    u = -2.0 * np.arcsin(np.minimum(0.25 * u1, 1.0))
    t = _mod2pi(theta + 0.5 * u + math.pi)
    v = _mod2pi(phi - t + u)
    return (u1 <= 4.0) & (t >= -_ZERO) & (u <= _ZERO), (t, u, v)


def _lp_rup_lum_rm(x, y, phi):                # 8.7  L+ R+ L- R-  (u, -u)
    xi = x + np.sin(phi)
    eta = y - 1.0 - np.cos(phi)
    rho = 0.25 * (2.0 + np.sqrt(xi * xi + eta * eta))
    u = np.arccos(np.minimum(rho, 1.0))
    t, v = _tau_omega(u, -u, xi, eta, phi)
    return (rho <= 1.0) & (t >= -_ZERO) & (v <= _ZERO), (t, u, -u, v)


def _lp_rum_lum_rp(x, y, phi):                # 8.8  L+ R- L- R+  (u, u)
    xi = x + np.sin(phi)
    eta = y - 1.0 - np.cos(phi)
    rho = (20.0 - xi * xi - eta * eta) / 16.0
    u = -np.arccos(np.clip(rho, -1.0, 1.0))
    t, v = _tau_omega(u, u, xi, eta, phi)
    ok = (rho >= 0.0) & (rho <= 1.0) & (u >= -_HALF_PI) & (t >= -_ZERO) & (v >= -_ZERO)
    return ok, (t, u, u, v)


def _lp_rm_sm_lm(x, y, phi):                  # 8.9  L+ R-(pi/2) S- L-
    xi = x - np.sin(phi)
    eta = y - 1.0 + np.cos(phi)
    rho, theta = _polar(xi, eta)
    r = np.sqrt(np.maximum(rho * rho - 4.0, 0.0))
    u = 2.0 - r
    t = _mod2pi(theta + np.arctan2(r, -2.0))
    v = _mod2pi(phi - _HALF_PI - t)
    ok = (rho >= 2.0) & (t >= -_ZERO) & (u <= _ZERO) & (v <= _ZERO)
    return ok, (t, np.full_like(t, -_HALF_PI), u, v)


def _lp_rm_sm_rm(x, y, phi):                  # 8.10 L+ R-(pi/2) S- R-
    xi = x + np.sin(phi)
    eta = y - 1.0 - np.cos(phi)
    rho, theta = _polar(-eta, xi)
    t = theta
    u = 2.0 - rho
    v = _mod2pi(t + _HALF_PI - phi)
    ok = (rho >= 2.0) & (t >= -_ZERO) & (u <= _ZERO) & (v <= _ZERO)
    return ok, (t, np.full_like(t, -_HALF_PI), u, v)


def _lp_rm_s_lm_rp(x, y, phi):                # 8.11 L+ R-(pi/2) S- L-(pi/2) R+
    xi = x + np.sin(phi)
    eta = y - 1.0 - np.cos(phi)
    rho, theta = _polar(xi, eta)
    u = 4.0 - np.sqrt(np.maximum(rho * rho - 4.0, 0.0))
    t = _mod2pi(np.arctan2((4.0 - u) * xi - 2.0 * eta, -2.0 * xi + (u - 4.0) * eta))
    v = _mod2pi(t - phi)
    ok = (rho >= 2.0) & (u <= _ZERO) & (t >= -_ZERO) & (v >= -_ZERO)
    half = np.full_like(t, -_HALF_PI)
    return ok, (t, half, u, half, v)


# (formula, word, also use the 'backwards' symmetry)
_RS_BASES = (
    (_lp_sp_lp, 'LSL', False),
    (_lp_sp_rp, 'LSR', False),
    (_lp_rm_l, 'LRL', True),
    (_lp_rup_lum_rm, 'LRLR', False),
    (_lp_rum_lum_rp, 'LRLR', False),
    (_lp_rm_sm_lm, 'LRSL', True),
    (_lp_rm_sm_rm, 'LRSR', True),
    (_lp_rm_s_lm_rp, 'LRSLR', False),
)
_SWAP = str.maketrans('LR', 'RL')
_MAX_SEGMENTS = 5


def _rs_candidates():
    """Every (formula, word, transform) combination: 48 in all, grouped by base formula.

    Returns the groups as (formula, first row, last row) and per candidate row: its word, whether
    it uses the backwards symmetry, the signs applied to x, y and phi, the sign of its segment
    lengths, and the gather index that puts its segments in the order of its word."""
    groups, words, back, sx, sy, sphi, order = [], [], [], [], [], [], []
    for func, word, backwards in _RS_BASES:
        variants = [(False, False, False), (True, False, False), (False, True, False),
                    (True, True, False)]
        if backwards:
            variants += [(flip, refl, True) for flip, refl, _ in variants]
        groups.append((func, len(words), len(words) + len(variants)))
        k = len(word)
        for flip, reflect, bk in variants:
            w = word.translate(_SWAP) if reflect else word
            words.append(w[::-1] if bk else w)
            back.append(bk)
            sx.append(-1.0 if flip else 1.0)
            sy.append(-1.0 if reflect else 1.0)
            sphi.append(-1.0 if flip != reflect else 1.0)
            idx = list(range(k))[::-1] if bk else list(range(k))
            order.append(idx + list(range(k, _MAX_SEGMENTS)))
    return (groups, words, np.array(back), np.array(sx), np.array(sy), np.array(sphi),
            np.array(order))


_RS_GROUPS, _RS_WORDS, _RS_BACK, _RS_SX, _RS_SY, _RS_SPHI, _RS_ORDER = _rs_candidates()


def _local_goal(start, goal, radius):
    """Goal in the start frame, scaled by 1/radius: arrays x, y, phi of shape (N,)."""
    dx = goal[:, 0] - start[:, 0]
    dy = goal[:, 1] - start[:, 1]
    c, s = np.cos(start[:, 2]), np.sin(start[:, 2])
    x = (c * dx + s * dy) / radius
    y = (-s * dx + c * dy) / radius
    phi = wrap_angle(goal[:, 2] - start[:, 2])
    return x, y, phi


def _rs_all(x, y, phi, need_segments):
    """Total length (N, C) of each candidate (inf where invalid) and, if asked, segments (N, C, 5).

    Each base formula runs once on all its symmetric variants of all pairs stacked together."""
    n = x.shape[0]
    c, s = np.cos(phi), np.sin(phi)
    # (C, N) inputs of every candidate: the goal, or its 'backwards' image, reflected/flipped.
    px = np.where(_RS_BACK[:, None], x * c + y * s, x) * _RS_SX[:, None]
    py = np.where(_RS_BACK[:, None], x * s - y * c, y) * _RS_SY[:, None]
    pphi = phi * _RS_SPHI[:, None]
    segs = np.zeros((len(_RS_WORDS), n, _MAX_SEGMENTS))
    ok = np.empty((len(_RS_WORDS), n), dtype=bool)
    with np.errstate(invalid='ignore', divide='ignore'):
        for func, lo, hi in _RS_GROUPS:
            valid, lengths = func(px[lo:hi].ravel(), py[lo:hi].ravel(), pphi[lo:hi].ravel())
            ok[lo:hi] = valid.reshape(hi - lo, n)
            segs[lo:hi, :, :len(lengths)] = np.stack(lengths, axis=-1).reshape(hi - lo, n, -1)
    # Time flip negates the lengths; 'backwards' reverses the segment order.
    segs *= _RS_SX[:, None, None]
    segs = np.take_along_axis(segs, _RS_ORDER[:, None, :], axis=2)
    total = np.abs(segs).sum(axis=2)
    total = np.where(ok & np.isfinite(total), total, np.inf).T
    return total, (segs.transpose(1, 0, 2) if need_segments else None)


def _as_pose_array(poses, name):
    arr = np.asarray(poses, dtype=float)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f'{name} must have shape (N, 3) (x, y, yaw), got {np.shape(poses)}')
    if not np.all(np.isfinite(arr)):
        bad = int(np.argwhere(~np.isfinite(arr))[0][0])
        raise ValueError(f'{name}[{bad}] is not finite: {arr[bad].tolist()}')
    return arr


def _pairs(starts, goals):
    a = _as_pose_array(starts, 'starts')
    b = _as_pose_array(goals, 'goals')
    if a.shape[0] == 1 and b.shape[0] > 1:
        a = np.broadcast_to(a, b.shape)
    if b.shape[0] == 1 and a.shape[0] > 1:
        b = np.broadcast_to(b, a.shape)
    if a.shape != b.shape:
        raise ValueError(f'starts and goals must pair up, got {a.shape[0]} and {b.shape[0]} poses')
    return a, b


def reeds_shepp_distance(starts, goals, radius: float) -> np.ndarray:
    """(N,) shortest Reeds-Shepp length in metres between pose pairs (one side may be a single
    pose)."""
    r = finite_at_least_zero('radius', radius, positive=True)
    a, b = _pairs(starts, goals)
    totals, _ = _rs_all(*_local_goal(a, b, r), need_segments=False)
    return totals.min(axis=1) * r


# Dubins words: curvature signs of the three segments.
_DUBINS_WORDS = ('LSL', 'RSR', 'LSR', 'RSL', 'RLR', 'LRL')


def _dubins_all(x, y, phi):
    """Segment lengths (N, 6, 3) of every Dubins word (nan where infeasible), unit radius."""
    d, th = _polar(x, y)
    alpha = _mod2pi(-th) % TWO_PI
    beta = _mod2pi(phi - th) % TWO_PI
    sa, ca, sb, cb = np.sin(alpha), np.cos(alpha), np.sin(beta), np.cos(beta)
    cab = ca * cb + sa * sb

    def m(v):
        # Dubins arcs are forward only: [0, 2 pi); round-off just below 2 pi is a zero-length arc.
        v = v % TWO_PI
        return np.where(v > TWO_PI - 1e-6, 0.0, v)

    def one_arc(tmp, p, t, q, turn):
        # p ~ 0: the two turns are one arc, and atan2 of two round-off zeros gave no angle.
        single = tmp < 1e-12
        return np.where(single, 0.0, p), np.where(single, m(turn), t), np.where(single, 0.0, q)

    out = np.full((x.shape[0], 6, 3), np.nan)
    with np.errstate(invalid='ignore'):
        tmp = 2.0 + d * d - 2.0 * (cab - d * (sa - sb))                      # LSL
        theta = np.arctan2(cb - ca, d + sa - sb)
        p, t, q = one_arc(tmp, np.sqrt(tmp), m(theta - alpha), m(beta - theta), beta - alpha)
        out[:, 0] = np.stack([t, p, q], 1)
        tmp = 2.0 + d * d - 2.0 * (cab - d * (sb - sa))                      # RSR
        theta = np.arctan2(ca - cb, d - sa + sb)
        p, t, q = one_arc(tmp, np.sqrt(tmp), m(alpha - theta), m(theta - beta), alpha - beta)
        out[:, 1] = np.stack([t, p, q], 1)
        tmp = -2.0 + d * d + 2.0 * (cab + d * (sa + sb))                     # LSR
        p = np.sqrt(tmp)
        theta = np.arctan2(-ca - cb, d + sa + sb) - np.arctan2(-2.0, p)
        out[:, 2] = np.stack([m(theta - alpha), p, m(theta - beta)], 1)
        tmp = d * d - 2.0 + 2.0 * (cab - d * (sa + sb))                      # RSL
        p = np.sqrt(tmp)
        theta = np.arctan2(ca + cb, d - sa - sb) - np.arctan2(2.0, p)
        out[:, 3] = np.stack([m(alpha - theta), p, m(beta - theta)], 1)
        tmp = 0.125 * (6.0 - d * d + 2.0 * (cab + d * (sa - sb)))            # RLR
        p = m(TWO_PI - np.arccos(tmp))
        theta = np.arctan2(ca - cb, d - sa + sb)
        t = m(alpha - theta + 0.5 * p)
        out[:, 4] = np.stack([t, p, m(alpha - beta - t + p)], 1)
        tmp = 0.125 * (6.0 - d * d + 2.0 * (cab - d * (sa - sb)))            # LRL
        p = m(TWO_PI - np.arccos(tmp))
        theta = np.arctan2(cb - ca, d + sa - sb)
        t = m(theta - alpha + 0.5 * p)
        out[:, 5] = np.stack([t, p, m(beta - alpha - t + p)], 1)
    return out


def dubins_distance(starts, goals, radius: float) -> np.ndarray:
    """(N,) shortest forward-only (Dubins) length in metres between pose pairs."""
    r = finite_at_least_zero('radius', radius, positive=True)
    a, b = _pairs(starts, goals)
    segs = _dubins_all(*_local_goal(a, b, r))
    return np.nanmin(segs.sum(axis=2), axis=1) * r


_CURVATURE_SIGN = {'L': 1.0, 'R': -1.0, 'S': 0.0}


@dataclass(frozen=True)
class CurvePath:
    """A path of constant-curvature segments and in-place rotations from ``start``.

    ``lengths[k]`` is the signed arc length of segment k (negative: reverse), ``curvatures[k]`` its
    signed curvature (1/m, + = left), ``spins[k]`` an in-place yaw change (only where length is 0).
    ``word`` names the segment types, e.g. ``'LSR'`` ('T' for an in-place turn).
    """
    start: np.ndarray
    lengths: np.ndarray
    curvatures: np.ndarray
    spins: np.ndarray
    word: str = ''

    @property
    def length(self) -> float:
        return float(np.abs(self.lengths).sum())

    @property
    def direction_switches(self) -> int:
        signs = np.sign(self.lengths[self.lengths != 0.0])
        return int(np.count_nonzero(signs[1:] != signs[:-1]))

    def segment_starts(self) -> np.ndarray:
        """(k + 1, 3) pose at the start of every segment, and the end pose last."""
        turn = self.curvatures * self.lengths
        yaw_after = self.start[2] + np.cumsum(turn + self.spins)
        # Each arc moves along its chord, at the mean of its start and end heading (spins come
        # last).
        heading = yaw_after - self.spins - 0.5 * turn
        chord = self.lengths * np.sinc(0.5 * turn / math.pi)
        poses = np.empty((len(self.lengths) + 1, 3))
        poses[0] = self.start
        poses[1:, 0] = self.start[0] + np.cumsum(chord * np.cos(heading))
        poses[1:, 1] = self.start[1] + np.cumsum(chord * np.sin(heading))
        poses[1:, 2] = yaw_after
        return poses

    def end(self) -> np.ndarray:
        return self.segment_starts()[-1]

    def sample(self, step: float) -> Tuple[np.ndarray, np.ndarray]:
        """Poses (M, 3) at most ``step`` apart along the path (arc length for arcs, ``step`` rad for
        in-place turns), both ends included, and the driving direction (M,) of each (+1 forward,
        -1 reverse; an in-place turn and the end pose take the direction of their segment)."""
        poses, direction, _ = sample_curves([self], step)
        return poses, direction


def sample_curves(curves, step: float):
    """Sample many :class:`CurvePath` at once: poses (M, 3), direction (M,) and owner (M,), the
    index of the curve each pose belongs to. Each curve's samples come in order; the end poses of
    all curves follow at the end, in curve order."""
    step = float(step)
    if not step > 0.0:
        raise ValueError(f'step must be > 0, got {step}')
    n_seg = np.array([len(c.lengths) for c in curves], dtype=np.int64)
    starts = np.array([c.start for c in curves], dtype=float).reshape(-1, 3)
    ends = starts.copy()
    end_dir = np.ones(len(curves))
    total = int(n_seg.sum())
    if total == 0:
        return ends, end_dir, np.arange(len(curves))
    lengths = np.concatenate([c.lengths for c in curves])
    curv = np.concatenate([c.curvatures for c in curves])
    spins = np.concatenate([c.spins for c in curves])
    owner_seg = np.repeat(np.arange(len(curves)), n_seg)
    first_seg = np.minimum(np.concatenate(([0], np.cumsum(n_seg)[:-1])), total - 1)

    def grouped_cumsum(v):
        cs = np.cumsum(v)
        return cs - np.repeat(cs[first_seg] - v[first_seg], n_seg)

    turn = curv * lengths
    dyaw = turn + spins
    yaw_after = starts[owner_seg, 2] + grouped_cumsum(dyaw)
    # Each arc moves along its chord, at the mean of its start and end heading (spins come last).
    heading = yaw_after - spins - 0.5 * turn
    chord = lengths * np.sinc(0.5 * turn / math.pi)
    dx, dy = chord * np.cos(heading), chord * np.sin(heading)
    x_after = starts[owner_seg, 0] + grouped_cumsum(dx)
    y_after = starts[owner_seg, 1] + grouped_cumsum(dy)
    last = np.cumsum(n_seg)[n_seg > 0] - 1
    has = n_seg > 0
    ends[has] = np.column_stack([x_after[last], y_after[last], yaw_after[last]])
    end_dir[has] = np.where(lengths[last] < 0.0, -1.0, 1.0)
    seg_start = np.column_stack([x_after - dx, y_after - dy, yaw_after - dyaw])
    extent = np.where(lengths != 0.0, np.abs(lengths), np.abs(spins))
    counts = np.ceil(extent / step - 1e-9).astype(np.int64)
    seg = np.repeat(np.arange(total), counts)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    frac = (np.arange(seg.size) - first[seg]) / counts[seg]
    poses = _advance(seg_start[seg], lengths[seg] * frac, curv[seg], spins[seg] * frac)
    direction = np.where(lengths[seg] < 0.0, -1.0, 1.0)
    return (np.vstack([poses, ends]), np.concatenate([direction, end_dir]),
            np.concatenate([owner_seg[seg], np.arange(len(curves))]))


def _advance(pose, s, kappa, spin):
    """Poses after driving signed arc length ``s`` at curvature ``kappa`` (then turning
    ``spin``)."""
    half = 0.5 * kappa * s
    chord = s * np.sinc(half / math.pi)          # sin(half)/half * s, exact for kappa = 0
    heading = pose[:, 2] + half
    out = np.empty_like(pose)
    out[:, 0] = pose[:, 0] + chord * np.cos(heading)
    out[:, 1] = pose[:, 1] + chord * np.sin(heading)
    out[:, 2] = pose[:, 2] + kappa * s + spin
    return out


def _word_path(start, word, unit_lengths, radius):
    k = len(word)
    lengths = np.asarray(unit_lengths[:k], dtype=float) * radius
    curv = np.array([_CURVATURE_SIGN[c] for c in word]) / radius
    keep = lengths != 0.0
    return CurvePath(np.array(start, dtype=float), lengths[keep], curv[keep],
                     np.zeros(int(keep.sum())), ''.join(c for c, kp in zip(word, keep) if kp))


def _ranked(start, words, totals, segs, radius, count):
    """Up to ``count`` valid candidates of one pair, shortest first, duplicates (same length)
    dropped."""
    out, seen = [], set()
    for k in np.argsort(totals, kind='stable'):
        if not np.isfinite(totals[k]) or len(out) == count:
            break
        key = round(float(totals[k]), 9)
        if key not in seen:
            seen.add(key)
            out.append(_word_path(start, words[k], segs[k], radius))
    return out


def reeds_shepp_candidates(starts, goals, radius: float, count: int) -> list:
    """For every pose pair, the ``count`` shortest distinct Reeds-Shepp paths (list of lists of
    :class:`CurvePath`, shortest first): fallbacks when the shortest one hits an obstacle."""
    r = finite_at_least_zero('radius', radius, positive=True)
    a, b = _pairs(starts, goals)
    totals, segs = _rs_all(*_local_goal(a, b, r), need_segments=True)
    return [_ranked(a[i], _RS_WORDS, totals[i], segs[i], r, count) for i in range(a.shape[0])]


def dubins_candidates(starts, goals, radius: float, count: int) -> list:
    """For every pose pair, the ``count`` shortest distinct Dubins paths (see
    reeds_shepp_candidates)."""
    r = finite_at_least_zero('radius', radius, positive=True)
    a, b = _pairs(starts, goals)
    segs = _dubins_all(*_local_goal(a, b, r))
    totals = np.where(np.isnan(segs).any(axis=2), np.inf, segs.sum(axis=2))
    return [_ranked(a[i], _DUBINS_WORDS, totals[i], segs[i], r, count) for i in range(a.shape[0])]


def reeds_shepp_paths(starts, goals, radius: float) -> list:
    """Shortest Reeds-Shepp :class:`CurvePath` for every pose pair (vectorised over the pairs)."""
    return [c[0] for c in reeds_shepp_candidates(starts, goals, radius, 1)]


def dubins_paths(starts, goals, radius: float) -> list:
    """Shortest Dubins :class:`CurvePath` for every pose pair (vectorised over the pairs)."""
    return [c[0] for c in dubins_candidates(starts, goals, radius, 1)]


def reeds_shepp_path(start, goal, radius: float) -> CurvePath:
    return reeds_shepp_paths(start, goal, radius)[0]


def dubins_path(start, goal, radius: float) -> CurvePath:
    return dubins_paths(start, goal, radius)[0]


class DistanceTable:
    """Tabulated Reeds-Shepp or Dubins distance for goal-relative poses, for search heuristics.

    Near the goal (within ``extent`` radii) the table holds the unit-radius distance from a start
    (dx, dy, dyaw) in the *goal* frame to the goal, on a grid of ``spacing`` radii and
    ``yaw_bins`` headings. Farther away the distance is the straight-line distance plus a detour
    term that depends only on the bearing of the start seen from the goal and the start heading,
    tabulated on the circle of radius ``extent`` (capped by its value ten times farther out).
    Lookups take the
    nearest entry: the value can be off by about one cell (``spacing * radius`` plus the heading
    step times the radius) from the exact distance near the goal, and by the change of the detour
    term with distance far from it.
    """

    def __init__(self, kind: str, radius: float, extent: float = 3.0, spacing: float = 0.1,
                 yaw_bins: int = 72):
        if kind not in ('reeds_shepp', 'dubins'):
            raise ValueError(f"kind must be 'reeds_shepp' or 'dubins', got {kind!r}")
        self.kind = kind
        self.radius = finite_at_least_zero('radius', radius, positive=True)
        self.extent = float(extent)
        self.spacing = float(spacing)
        self.yaw_bins = int(yaw_bins)
        self._n = int(round(self.extent / self.spacing))
        self._table, self._detour = _unit_tables(kind, self._n, self.spacing, self.yaw_bins)

    def __call__(self, poses, goal) -> np.ndarray:
        """(N,) distance in metres from each pose (N, 3) to ``goal`` (3,). No input validation:
        the planner's hot path calls this with poses it produced itself."""
        gx, gy, gyaw = goal
        dx = poses[:, 0] - gx
        dy = poses[:, 1] - gy
        c, s = math.cos(gyaw), math.sin(gyaw)
        lx = (c * dx + s * dy) / self.radius
        ly = (-s * dx + c * dy) / self.radius
        dyaw = poses[:, 2] - gyaw
        # Mirror symmetry (y, yaw) -> (-y, -yaw) halves the tables.
        mirror = ly < 0.0
        ly = np.abs(ly)
        dyaw = np.where(mirror, -dyaw, dyaw)
        scale = self.yaw_bins / TWO_PI
        iyaw = np.rint(dyaw * scale).astype(np.int64) % self.yaw_bins
        rho = np.hypot(lx, ly)
        near = rho < self.extent
        # Far: straight line plus the detour for this bearing (0..pi) and heading.
        ibear = np.rint(np.arctan2(ly, lx) * scale).astype(np.int64)
        out = rho + self._detour[ibear, iyaw]
        ix = np.rint(lx[near] / self.spacing).astype(np.int64) + self._n
        iy = np.rint(ly[near] / self.spacing).astype(np.int64)
        out[near] = self._table[ix, iy, iyaw[near]]
        return out * self.radius


@lru_cache(maxsize=8)
def _unit_tables(kind, n, spacing, yaw_bins):
    """Unit-radius distances to the origin pose: from the (x, y>=0, yaw) lattice, and the detour
    (distance minus straight line) from the half circle of radius n * spacing, per bearing and
    yaw."""
    def distances(starts):
        out = np.empty(starts.shape[0])
        chunk = 20000
        for i in range(0, starts.shape[0], chunk):  # chunks bound the (N, 48) working memory
            part = starts[i:i + chunk]
            x, y, phi = _local_goal(part, np.zeros_like(part), 1.0)
            if kind == 'reeds_shepp':
                out[i:i + chunk] = _rs_all(x, y, phi, need_segments=False)[0].min(axis=1)
            else:
                out[i:i + chunk] = np.nanmin(_dubins_all(x, y, phi).sum(axis=2), axis=1)
        return out

    step = TWO_PI / yaw_bins
    yaws = np.arange(yaw_bins) * step
    xs = np.arange(-n, n + 1) * spacing
    ys = np.arange(0, n + 1) * spacing
    gx, gy, gyaw = np.meshgrid(xs, ys, yaws, indexing='ij')
    table = distances(np.stack([gx.ravel(), gy.ravel(), gyaw.ravel()], axis=1)).reshape(gx.shape)
    bearings = np.arange(yaw_bins // 2 + 1) * step
    bb, yy = np.meshgrid(bearings, yaws, indexing='ij')
    detour = np.full(bb.shape, np.inf)
    # The detour on the rim, capped by the one far away: a forward-only car that must loop
    # near the goal can turn around more cheaply from farther out.
    for rho in (n * spacing, 10.0 * n * spacing):
        ring = np.stack([rho * np.cos(bb.ravel()), rho * np.sin(bb.ravel()), yy.ravel()], axis=1)
        detour = np.minimum(detour, distances(ring).reshape(bb.shape) - rho)
    table.flags.writeable = False
    detour.flags.writeable = False
    return table, detour
