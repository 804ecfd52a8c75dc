"""A transform buffer with tf2's semantics, in numpy, for the trees of a whole fleet.

tf2_ros and its C++ buffer are not on PyPI, and a fleet of namespaced robots has one tree per
robot (`/<robot>/tf`, plain frame names): the nodes keep every tree in one `TransformBuffer`, each
robot's frames qualified by `orca_nav.core.fleet.names.RobotNames.buffer_frame`, and look up all
robots in one call (`lookup_many`). What tf2 does, this does:

* Static transforms (from `tf_static`) hold at every time; a new one replaces the old.
* Dynamic transforms keep a time-ordered history per edge, `cache_time` (10 s, tf2's default)
  behind the newest sample; older samples are dropped and older inserts refused.
* A lookup composes the chain between two frames of a tree (through their closest common
  ancestor) at one time, interpolating each dynamic edge between the samples around that time
  (linear translation, slerp rotation). Outside an edge's samples it refuses to extrapolate, and
  the error names the frames, the edge and the times. Time 0 means the latest time at which every
  edge of the chain has data (tf2's latest common time).
* `observe_time` clears the dynamic history when time jumps back (tf2_ros does on a /clock jump).

Differences, on purpose: a second sample at an existing stamp replaces it (tf2 keeps both and
reads the first), and an edge whose child gets a new parent starts a new history (tf2 keeps
the parent per sample). Times are float seconds; no clock is read here.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

DEFAULT_CACHE_TIME_S = 10.0
_QUATERNION_NORM_TOLERANCE = 1e-2   # tf2 refuses |q|^2 further than this from 1
_IDENTITY_ROTATION = np.array([0.0, 0.0, 0.0, 1.0])


class TransformError(Exception):
    """A lookup that cannot be answered; the message names the frames and times."""


class FrameNotFoundError(TransformError):
    """A frame no transform mentions (tf2's LookupException)."""


class ConnectivityError(TransformError):
    """Two frames in different trees, or a tree with a loop (tf2's ConnectivityException)."""


class ExtrapolationError(TransformError):
    """A time outside an edge's buffered samples (tf2's ExtrapolationException)."""


# Quaternions are (x, y, z, w), as in geometry_msgs, on the last axis.

def quaternion_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ax, ay, az, aw = np.moveaxis(np.asarray(a, float), -1, 0)
    bx, by, bz, bw = np.moveaxis(np.asarray(b, float), -1, 0)
    return np.stack([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz], axis=-1)


def quaternion_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotates the vectors `v` (..., 3) by the unit quaternions `q` (..., 4)."""
    q = np.asarray(q, float)
    u, w = q[..., :3], q[..., 3:4]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def quaternion_conjugate(q: np.ndarray) -> np.ndarray:
    return np.asarray(q, float) * np.array([-1.0, -1.0, -1.0, 1.0])


def slerp(q0: np.ndarray, q1: np.ndarray, ratio: np.ndarray) -> np.ndarray:
    """Spherical interpolation along the shorter arc, `ratio` in [0, 1] (..., broadcast)."""
    q0, q1 = np.asarray(q0, float), np.asarray(q1, float)
    ratio = np.asarray(ratio, float)[..., None]
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(dot < 0.0, -q1, q1)
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin_theta = np.sin(theta)
    close = sin_theta < 1e-9
    safe = np.where(close, 1.0, sin_theta)
    w0 = np.where(close, 1.0 - ratio, np.sin((1.0 - ratio) * theta) / safe)
    w1 = np.where(close, ratio, np.sin(ratio * theta) / safe)
    out = w0 * q0 + w1 * q1
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


def compose(t_ab, q_ab, t_bc, q_bc) -> Tuple[np.ndarray, np.ndarray]:
    """(a<-b) composed with (b<-c) = (a<-c): a point p in c is at q_ab (q_bc p + t_bc) + t_ab."""
    return (quaternion_rotate(q_ab, t_bc) + t_ab,
            quaternion_multiply(q_ab, q_bc))


def invert(t_ab, q_ab) -> Tuple[np.ndarray, np.ndarray]:
    q_ba = quaternion_conjugate(q_ab)
    return -quaternion_rotate(q_ba, t_ab), q_ba


def yaw_of(q: np.ndarray) -> np.ndarray:
    """Rotation about z (REP-103) of quaternions (..., 4)."""
    x, y, z, w = np.moveaxis(np.asarray(q, float), -1, 0)
    return np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def transform_planar_poses(translation, rotation, poses) -> np.ndarray:
    """Planar poses (..., 3: x, y, yaw) of a source frame, expressed in the target frame of the
    transforms (target<-source: `translation` (..., 3), `rotation` (..., 4))."""
    poses = np.asarray(poses, float)
    points = np.concatenate([poses[..., :2], np.zeros(poses.shape[:-1] + (1,))], axis=-1)
    moved = quaternion_rotate(rotation, points) + translation
    half = 0.5 * poses[..., 2]
    heading = np.stack([np.zeros_like(half), np.zeros_like(half), np.sin(half), np.cos(half)], -1)
    yaw = yaw_of(quaternion_multiply(rotation, heading))
    return np.concatenate([moved[..., :2], yaw[..., None]], axis=-1)


@dataclass(frozen=True)
class Transform:
    """target<-source at `stamp`: a point p of the source frame is at rotation p + translation."""
    translation: np.ndarray     # (3,)
    rotation: np.ndarray        # (4,) x, y, z, w
    stamp: float


@dataclass
class Lookups:
    """Results of `lookup_many`, one row per query; a failed query has its error message and
    NaN in its row."""
    translation: np.ndarray     # (N, 3)
    rotation: np.ndarray        # (N, 4)
    stamp: np.ndarray           # (N,)
    errors: List[Optional[str]]

    @property
    def ok(self) -> np.ndarray:
        return np.array([e is None for e in self.errors], dtype=bool)


class _Edge:
    """child -> parent: the static transform, or the history of dynamic samples, kept in numpy
    arrays with spare capacity (valid rows lo:hi, oldest first) so that appending the newest
    sample and dropping the oldest are O(1)."""

    def __init__(self, parent: str, static: bool, capacity: int = 16):
        self.parent, self.static = parent, static
        self.t = np.empty(capacity)
        self.translation = np.empty((capacity, 3))
        self.rotation = np.empty((capacity, 4))
        self.lo = self.hi = 0

    @property
    def stamps(self) -> np.ndarray:
        return self.t[self.lo:self.hi]

    @property
    def latest(self) -> float:
        return float(self.t[self.hi - 1])

    def insert(self, stamp, translation, rotation, cache_time) -> bool:
        if self.static:
            self.lo, self.hi = 0, 1
            self.t[0], self.translation[0], self.rotation[0] = stamp, translation, rotation
            return True
        if self.hi > self.lo and stamp < self.t[self.hi - 1] - cache_time:
            return False
        self._make_room()
        if self.hi == self.lo or stamp > self.t[self.hi - 1]:
            i = self.hi                                     # the usual case: the newest
        else:
            i = self.lo + int(np.searchsorted(self.stamps, stamp))
            if self.t[i] == stamp:                          # replaces the sample at that stamp
                self.translation[i], self.rotation[i] = translation, rotation
                return True
            for column in (self.t, self.translation, self.rotation):
                column[i + 1:self.hi + 1] = column[i:self.hi].copy()
        self.hi += 1
        self.t[i], self.translation[i], self.rotation[i] = stamp, translation, rotation
        oldest_kept = self.t[self.hi - 1] - cache_time
        if self.t[self.lo] < oldest_kept:
            self.lo += int(np.searchsorted(self.stamps, oldest_kept, side='left'))
        return True

    def _make_room(self) -> None:
        if self.hi < len(self.t):
            return
        n = self.hi - self.lo
        capacity = len(self.t) if 2 * n <= len(self.t) else 2 * len(self.t)
        for name in ('t', 'translation', 'rotation'):
            old = getattr(self, name)
            grown = np.empty((capacity,) + old.shape[1:])
            grown[:n] = old[self.lo:self.hi]
            setattr(self, name, grown)
        self.lo, self.hi = 0, n

    def bracket(self, times: np.ndarray):
        """For each time, the rows of the samples just before and after it (row 0 for a static
        edge) and the time span the edge answers: (lo, hi, first, last)."""
        if self.static:
            zeros = np.zeros(len(times), dtype=np.intp)
            return zeros, zeros, -np.inf, np.inf
        n = self.hi - self.lo
        if n == 1:
            rows = np.full(len(times), self.lo)
            return rows, rows, self.t[self.lo], self.t[self.lo]
        hi = self.t[self.lo:self.hi].searchsorted(times, side='right')
        np.minimum(hi, n - 1, out=hi)
        np.maximum(hi, 1, out=hi)
        hi += self.lo
        return hi - 1, hi, self.t[self.lo], self.t[self.hi - 1]

    def extrapolation(self, time: float, child: str, source: str, target: str) -> str:
        stamps = self.stamps
        where = (f'when looking up transform from frame [{source}] to frame [{target}] (edge '
                 f'[{self.parent}] -> [{child}])')
        if len(stamps) == 1:
            return (f'Lookup would require extrapolation at time {time:.9f}, but only time '
                    f'{stamps[0]:.9f} is in the buffer, {where}')
        if time > stamps[-1]:
            return (f'Lookup would require extrapolation into the future. Requested time '
                    f'{time:.9f} but the latest data is at time {stamps[-1]:.9f}, {where}')
        return (f'Lookup would require extrapolation into the past. Requested time {time:.9f} '
                f'but the earliest data is at time {stamps[0]:.9f}, {where}')


class TransformBuffer:
    """The transforms of one or more trees, with tf2's lookup semantics (see the module doc)."""

    def __init__(self, cache_time: float = DEFAULT_CACHE_TIME_S):
        if not (np.isfinite(cache_time) and cache_time > 0.0):
            raise ValueError(f'cache_time must be a positive number of seconds, got {cache_time!r}')
        self.cache_time = float(cache_time)
        self._edges: Dict[str, _Edge] = {}      # by child frame
        self._children_of: Dict[str, int] = {}  # parent frame -> number of child edges
        self._chains: Dict[Tuple[str, str], object] = {}   # (target, source) -> factors or error
        self._last_time: Optional[float] = None

    # --- filling --------------------------------------------------------------------------
    def set_transform(self, parent: str, child: str, stamp: float, translation: Sequence[float],
                      rotation: Sequence[float], static: bool = False) -> bool:
        """Adds parent<-child at `stamp` (s). Returns False for a dynamic sample older than the
        cache keeps (tf2 ignores it too); raises ValueError for a transform tf2 rejects."""
        for role, name in (('parent', parent), ('child', child)):
            _check_frame(name, f'{role} frame')
        if parent == child:
            raise ValueError(f'transform from frame {child!r} to itself')
        translation = np.asarray(translation, float).reshape(3)
        rotation = np.asarray(rotation, float).reshape(4)
        if not (np.all(np.isfinite(translation)) and np.all(np.isfinite(rotation))
                and np.isfinite(stamp)):
            raise ValueError(f'transform {parent} -> {child} has non-finite values '
                             f'(stamp {stamp!r}, translation {translation.tolist()}, '
                             f'rotation {rotation.tolist()})')
        norm2 = float(rotation @ rotation)
        if abs(norm2 - 1.0) > _QUATERNION_NORM_TOLERANCE:
            raise ValueError(f'transform {parent} -> {child} has a non-unit rotation quaternion '
                             f'{rotation.tolist()} (squared norm {norm2:.6g})')
        edge = self._edges.get(child)
        if edge is None or edge.parent != parent or edge.static != bool(static):
            edge = self._replace_edge(child, _Edge(parent, bool(static)))
        return edge.insert(float(stamp), translation, rotation / np.sqrt(norm2), self.cache_time)

    def _replace_edge(self, child: str, edge: Optional[_Edge]) -> Optional[_Edge]:
        old = self._edges.pop(child, None)
        if old is not None:
            self._children_of[old.parent] -= 1
            if not self._children_of[old.parent]:
                del self._children_of[old.parent]
        if edge is not None:
            self._edges[child] = edge
            self._children_of[edge.parent] = self._children_of.get(edge.parent, 0) + 1
        self._chains.clear()            # the tree changed: chains are walked again
        return edge

    def observe_time(self, now: float) -> bool:
        """Tells the buffer the current time; when it went back (a simulation restarted, a bag
        looped) the dynamic history is dropped, as tf2_ros does. Returns whether it was."""
        jumped = self._last_time is not None and now < self._last_time
        self._last_time = float(now)
        if jumped:
            self.clear()
        return jumped

    def clear(self) -> None:
        """Drops every dynamic transform; static ones stay (as in tf2)."""
        for child in [c for c, e in self._edges.items() if not e.static]:
            self._replace_edge(child, None)

    # --- queries --------------------------------------------------------------------------
    def frames(self) -> List[str]:
        return sorted(set(self._edges) | set(self._children_of))

    def parent_of(self, frame: str) -> Optional[str]:
        edge = self._edges.get(frame)
        return edge.parent if edge else None

    def lookup(self, target: str, source: str, time: float) -> Transform:
        """target<-source at `time` (0: the latest common time). Raises a TransformError."""
        translation, rotation, stamps, errors = self._lookup_rows([target], [source],
                                                                  np.array([float(time)]))
        if errors[0] is not None:
            raise errors[0]
        return Transform(translation[0], rotation[0], float(stamps[0]))

    def latest_common_time(self, target: str, source: str) -> float:
        factors = self._chain(target, source)
        if isinstance(factors, TransformError):
            raise factors
        return self._common_time(factors)

    def lookup_many(self, targets: Sequence[str], sources: Sequence[str],
                    times: Sequence[float]) -> Lookups:
        """`lookup` for N queries at once (e.g. map<-odom of every robot at its odometry's
        stamp), vectorised over the queries: each frame pair's chain is walked once (and kept
        until the tree changes), each edge finds the samples around all its queries' times in
        one search, and the interpolation and composition run on all queries together. A
        failing query fails alone (its error message, NaN values)."""
        times = np.asarray(times, float).reshape(-1)
        if not (len(targets) == len(sources) == len(times)):
            raise ValueError(f'lookup_many: {len(targets)} targets, {len(sources)} sources and '
                             f'{len(times)} times')
        translation, rotation, stamps, errors = self._lookup_rows(targets, sources, times)
        return Lookups(translation, rotation, stamps,
                       [None if e is None else str(e) for e in errors])

    # --- internals ------------------------------------------------------------------------
    def _lookup_rows(self, targets, sources, times):
        n = len(times)
        errors: List[Optional[TransformError]] = [None] * n
        at = times.copy()
        factors_of: List[list] = [[]] * n
        for i, pair in enumerate(zip(targets, sources)):
            factors = self._chain(*pair)
            if isinstance(factors, TransformError):
                errors[i] = factors
                continue
            factors_of[i] = factors
            if at[i] == 0:
                at[i] = self._common_time(factors)
        depth = max((len(f) for f in factors_of), default=0)
        # Factor k of row r: the transform of edge factors_of[r][k], inverted on the target's
        # side; rows with shorter chains are padded with the identity.
        factor_t = np.zeros((n, depth, 3))
        factor_q = np.zeros((n, depth, 4))
        factor_q[..., 3] = 1.0
        inverted = np.zeros((n, depth), dtype=bool)
        uses: Dict[str, Tuple[List[int], List[int]]] = {}
        for r, factors in enumerate(factors_of):
            if errors[r] is None:
                for k, (child, invert_it) in enumerate(factors):
                    rows, levels = uses.setdefault(child, ([], []))
                    rows.append(r)
                    levels.append(k)
                    inverted[r, k] = invert_it
        # Per edge, one search for all its times; then one interpolation for everything.
        gathered, spans = [], []
        for child, (rows, levels) in uses.items():
            edge = self._edges[child]
            rows = np.array(rows)
            lo, hi, first, last = edge.bracket(at[rows])
            gathered.append((rows, np.array(levels), edge.t[lo], edge.t[hi],
                             edge.translation[lo], edge.translation[hi],
                             edge.rotation[lo], edge.rotation[hi]))
            spans.append((first, last, len(rows)))
        if gathered:
            rows, levels, s0, s1, t0, t1, q0, q1 = (np.concatenate(parts)
                                                    for parts in zip(*gathered))
            first, last, counts = zip(*spans)
            when = at[rows]
            outside = (when < np.repeat(first, counts)) | (when > np.repeat(last, counts))
            for r, level in zip(rows[outside], levels[outside]):
                if errors[r] is None:
                    child = factors_of[r][level][0]
                    errors[r] = ExtrapolationError(self._edges[child].extrapolation(
                        at[r], child, sources[r], targets[r]))
            span = s1 - s0
            ratio = np.divide(when - s0, span, out=np.zeros_like(span), where=span > 0.0)
            np.clip(ratio, 0.0, 1.0, out=ratio)
            factor_t[rows, levels] = t0 + ratio[:, None] * (t1 - t0)
            factor_q[rows, levels] = slerp(q0, q1, ratio)
        factor_t[inverted], factor_q[inverted] = invert(factor_t[inverted], factor_q[inverted])
        translation = np.zeros((n, 3))
        rotation = np.tile(_IDENTITY_ROTATION, (n, 1))
        for k in range(depth):
            translation, rotation = compose(translation, rotation, factor_t[:, k], factor_q[:, k])
        failed = [r for r in range(n) if errors[r] is not None]
        translation[failed], rotation[failed] = np.nan, np.nan
        return translation, rotation, at, errors

    def _chain(self, target: str, source: str):
        """The factors (child frame, inverted) whose product is target<-source, left to right:
        the target's edges up to the common ancestor inverted, then the source's down from it;
        or the TransformError that prevents it. Kept until the tree changes."""
        key = (target, source)
        if key not in self._chains:
            try:
                up_source, up_target = self._path(target, source)
                self._chains[key] = ([(c, True) for c in up_target]
                                     + [(c, False) for c in reversed(up_source)])
            except TransformError as err:
                self._chains[key] = err
        return self._chains[key]

    def _ancestors(self, frame: str) -> List[str]:
        chain = [frame]
        while frame in self._edges:
            frame = self._edges[frame].parent
            if frame in chain:
                raise ConnectivityError(f'the transform tree of frame [{chain[0]}] contains a '
                                        f'loop through [{frame}]')
            chain.append(frame)
        return chain

    def _path(self, target: str, source: str):
        """(edges from source up to the common ancestor, edges from target up to it)."""
        for role, name in (('target_frame', target), ('source_frame', source)):
            _check_frame(name, role, FrameNotFoundError)
            if name not in self._edges and name not in self._children_of:
                raise FrameNotFoundError(f'frame [{name}] passed to lookup as {role} does not '
                                         f'exist')
        up_source, up_target = self._ancestors(source), self._ancestors(target)
        on_target = set(up_target)
        common = next((f for f in up_source if f in on_target), None)
        if common is None:
            raise ConnectivityError(f'Could not find a connection between [{target}] and '
                                    f'[{source}] because they are not part of the same tree')
        return (up_source[:up_source.index(common)], up_target[:up_target.index(common)])

    def _common_time(self, factors) -> float:
        latest = [self._edges[child].latest for child, _ in factors
                  if not self._edges[child].static]
        return min(latest) if latest else 0.0


def _check_frame(name, role, error=ValueError):
    if not isinstance(name, str) or not name:
        raise error(f'{role} must be a non-empty frame name, got {name!r}')
    if name.startswith('/'):
        raise error(f'{role} {name!r}: frame names do not start with "/" (tf2 rejects them)')
