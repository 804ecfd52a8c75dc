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
* `lookup_late`: the policy for late TF (not tf2's; what Nav2's transform_tolerance allows): a
  time at most a tolerance after the newest data gets the newest transform.
* `observe_time` clears the dynamic history when time jumps back (tf2_ros does on a /clock jump).
* Thread-safe: every public method holds the buffer's lock.

`lookup_many` for 100 robots (map -> odom at 100 stamps) takes about 0.5 ms on one core, against
about 35 ms for 100 `lookup` calls (`python -m bench.bench_transforms`).

Differences, on purpose: a second sample at an existing stamp replaces it (tf2 keeps both and
reads the first), and an edge whose child gets a new parent starts a new history (tf2 keeps
the parent per sample). Times are float seconds; no clock is read here.

One file: tf2's semantics (interpolation, extrapolation limits, static frames, chains) are one
contract, tested as one.
"""
from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

DEFAULT_CACHE_TIME_S = 10.0
_QUATERNION_NORM_TOLERANCE = 1e-2   # tf2 refuses |q|^2 further than this from 1
_IDENTITY_ROTATION = np.array([0.0, 0.0, 0.0, 1.0])
_FIRST_COLUMNS = 16         # samples an edge's first row holds (it moves on when it needs more)


class TransformError(Exception):
    """A lookup that cannot be answered; the message names the frames and times."""


class FrameNotFoundError(TransformError):
    """A frame no transform mentions (tf2's LookupException)."""


class ConnectivityError(TransformError):
    """Two frames in different trees, or a tree with a loop (tf2's ConnectivityException)."""


class ExtrapolationError(TransformError):
    """A time outside an edge's buffered samples (tf2's ExtrapolationException)."""


# Quaternions are (x, y, z, w), as in geometry_msgs, on the last axis.

def _components(a) -> Tuple[np.ndarray, ...]:
    a = np.asarray(a, float)
    return tuple(a[..., i] for i in range(a.shape[-1]))


def _cross(u, v) -> np.ndarray:
    ux, uy, uz = _components(u)
    vx, vy, vz = _components(v)
    return np.stack([uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx], axis=-1)


def quaternion_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ax, ay, az, aw = _components(a)
    bx, by, bz, bw = _components(b)
    return np.stack([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz], axis=-1)


def quaternion_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotates the vectors `v` (..., 3) by the unit quaternions `q` (..., 4)."""
    q = np.asarray(q, float)
    u, w = q[..., :3], q[..., 3:4]
    t = 2.0 * _cross(u, v)
    return v + w * t + _cross(u, t)


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
    x, y, z, w = _components(q)
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


@dataclass
class _Edge:
    """child -> parent, its samples in row `row` of the buffer's `_Samples` of `columns`."""
    parent: str
    static: bool
    columns: int
    row: int


class _Samples:
    """The samples of the edges that need at most `columns` of them, one row per edge in shared
    arrays, so that the samples around many query times on many edges are found in one
    vectorised operation. (The buffer keeps one per power of two of columns: an edge that
    outgrows its row moves to the next, so memory follows each edge's own rate.)

    In row e the valid samples are columns lo[e]:hi[e], oldest first; the columns before hold
    -inf and those after +inf, so the number of stamps <= t in the whole row is the column of
    the first sample after t. Appending the newest sample and dropping the oldest are O(1); a
    full row is compacted."""

    def __init__(self, columns: int, rows: int = 8):
        self.t = np.full((rows, columns), np.inf)
        self.translation = np.zeros((rows, columns, 3))
        self.rotation = np.zeros((rows, columns, 4))
        self.lo = np.zeros(rows, dtype=np.intp)
        self.hi = np.zeros(rows, dtype=np.intp)
        self._free = list(range(rows - 1, -1, -1))

    def allocate(self) -> int:
        if not self._free:
            rows = len(self.t)
            self._resize(2 * rows, self.t.shape[1])
            self._free = list(range(2 * rows - 1, rows - 1, -1))
        return self._free.pop()

    def release(self, e: int) -> None:
        self.t[e] = np.inf
        self.lo[e] = self.hi[e] = 0
        self._free.append(e)

    def _resize(self, rows: int, columns: int) -> None:
        old_rows, old_columns = self.t.shape
        for name, fill in (('t', np.inf), ('translation', 0.0), ('rotation', 0.0)):
            old = getattr(self, name)
            grown = np.full((rows, columns) + old.shape[2:], fill)
            grown[:old_rows, :old_columns] = old
            setattr(self, name, grown)
        self.lo = np.concatenate([self.lo, np.zeros(rows - old_rows, dtype=np.intp)])
        self.hi = np.concatenate([self.hi, np.zeros(rows - old_rows, dtype=np.intp)])

    def stamps(self, e: int) -> np.ndarray:
        return self.t[e, self.lo[e]:self.hi[e]]

    def set_static(self, e: int, stamp, translation, rotation) -> None:
        self.t[e, 0], self.translation[e, 0], self.rotation[e, 0] = stamp, translation, rotation
        self.lo[e], self.hi[e] = 0, 1

    def full(self, e: int) -> bool:
        return self.hi[e] - self.lo[e] == self.t.shape[1]

    def take(self, other: '_Samples', row: int, e: int) -> None:
        """Copies row `row` of `other` (with fewer columns) into row `e`."""
        lo, hi = other.lo[row], other.hi[row]
        n = hi - lo
        self.t[e, :n] = other.t[row, lo:hi]
        self.translation[e, :n] = other.translation[row, lo:hi]
        self.rotation[e, :n] = other.rotation[row, lo:hi]
        self.lo[e], self.hi[e] = 0, n

    def insert(self, e: int, stamp, translation, rotation, cache_time) -> bool:
        """Adds a dynamic sample (room is there: not `full`); False for one older than the
        cache keeps."""
        lo, hi = self.lo[e], self.hi[e]
        if hi > lo and stamp < self.t[e, hi - 1] - cache_time:
            return False
        if hi == self.t.shape[1]:
            lo, hi = self._compact(e)
        if hi == lo or stamp > self.t[e, hi - 1]:
            i = hi                                          # the usual case: the newest
        else:
            i = lo + int(self.t[e, lo:hi].searchsorted(stamp))
            if self.t[e, i] == stamp:                       # replaces the sample at that stamp
                self.translation[e, i], self.rotation[e, i] = translation, rotation
                return True
            for column in (self.t, self.translation, self.rotation):
                column[e, i + 1:hi + 1] = column[e, i:hi].copy()
        self.t[e, i], self.translation[e, i], self.rotation[e, i] = stamp, translation, rotation
        hi += 1
        oldest_kept = self.t[e, hi - 1] - cache_time
        if self.t[e, lo] < oldest_kept:
            dropped = lo + int(self.t[e, lo:hi].searchsorted(oldest_kept, side='left'))
            self.t[e, lo:dropped] = -np.inf
            lo = dropped
        self.lo[e], self.hi[e] = lo, hi
        return True

    def _compact(self, e: int):
        lo, hi = self.lo[e], self.hi[e]
        n = hi - lo
        for column, fill in ((self.t, np.inf), (self.translation, 0.0), (self.rotation, 0.0)):
            column[e, :n] = column[e, lo:hi].copy()
            column[e, n:] = fill
        self.lo[e], self.hi[e] = 0, n
        return 0, n

    def bracket(self, rows: np.ndarray, times: np.ndarray, static: np.ndarray):
        """For edge rows `rows` at `times`: the columns of the samples just before and after
        each time, and the first and last stamp the edge answers (static: any time)."""
        lo, hi = self.lo[rows], self.hi[rows]
        after = np.count_nonzero(self.t[rows] <= times[:, None], axis=1)
        above = np.minimum(np.maximum(after, lo + 1), hi - 1)
        below = np.maximum(above - 1, lo)
        first = np.where(static, -np.inf, self.t[rows, lo])
        last = np.where(static, np.inf, self.t[rows, hi - 1])
        return below, above, first, last

    def extrapolation(self, e: int, time: float, where: str) -> str:
        stamps = self.stamps(e)
        if len(stamps) == 1:
            return (f'Lookup would require extrapolation at time {time:.9f}, but only time '
                    f'{stamps[0]:.9f} is in the buffer, {where}')
        if time > stamps[-1]:
            return (f'Lookup would require extrapolation into the future. Requested time '
                    f'{time:.9f} but the latest data is at time {stamps[-1]:.9f}, {where}')
        return (f'Lookup would require extrapolation into the past. Requested time {time:.9f} '
                f'but the earliest data is at time {stamps[0]:.9f}, {where}')


def _locked(method):
    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)
    return locked


class TransformBuffer:
    """The transforms of one or more trees, with tf2's lookup semantics (see the module doc)."""

    def __init__(self, cache_time: float = DEFAULT_CACHE_TIME_S):
        if not (np.isfinite(cache_time) and cache_time > 0.0):
            raise ValueError(f'cache_time must be a positive number of seconds, got {cache_time!r}')
        self.cache_time = float(cache_time)
        self._edges: Dict[str, _Edge] = {}      # by child frame
        self._arenas: Dict[int, _Samples] = {}     # columns -> the edges' samples
        self._children_of: Dict[str, int] = {}  # parent frame -> number of child edges
        self._chains: Dict[Tuple[str, str], object] = {}   # (target, source) -> factors or error
        self._last_time: Optional[float] = None
        # A listener's callbacks fill the buffer while a control loop reads it, maybe on
        # another thread: every public method holds the lock.
        self._lock = threading.RLock()

    # --- filling --------------------------------------------------------------------------
    @_locked
    def set_transform(self, parent: str, child: str, stamp: float, translation: Sequence[float],
                      rotation: Sequence[float], static: bool = False) -> bool:
        """Adds parent<-child at `stamp` (s). Returns False for a dynamic sample older than the
        cache keeps (tf2 ignores it too); raises ValueError for a transform tf2 rejects."""
        for role, name in (('parent', parent), ('child', child)):
            _check_frame(name, f'{role} frame')
        if parent == child:
            raise ValueError(f'transform from frame {child!r} to itself')
        # Plain floats: this runs for every transform of every TF message.
        translation = tuple(float(v) for v in translation)
        rotation = tuple(float(v) for v in rotation)
        if len(translation) != 3 or len(rotation) != 4:
            raise ValueError(f'transform {parent} -> {child}: expected 3 translation and 4 '
                             f'rotation values, got {translation} and {rotation}')
        if not all(math.isfinite(v) for v in (float(stamp),) + translation + rotation):
            raise ValueError(f'transform {parent} -> {child} has non-finite values '
                             f'(stamp {stamp!r}, translation {list(translation)}, '
                             f'rotation {list(rotation)})')
        norm2 = sum(v * v for v in rotation)
        if abs(norm2 - 1.0) > _QUATERNION_NORM_TOLERANCE:
            raise ValueError(f'transform {parent} -> {child} has a non-unit rotation quaternion '
                             f'{list(rotation)} (squared norm {norm2:.6g})')
        edge = self._edges.get(child)
        if edge is None or edge.parent != parent or edge.static != bool(static):
            edge = self._replace_edge(child, _Edge(parent, bool(static), _FIRST_COLUMNS,
                                                   self._arena(_FIRST_COLUMNS).allocate()))
        norm = math.sqrt(norm2)
        rotation = tuple(v / norm for v in rotation)
        samples = self._arenas[edge.columns]
        if edge.static:
            samples.set_static(edge.row, float(stamp), translation, rotation)
            return True
        if samples.full(edge.row):          # the edge needs more samples: a bigger row
            bigger = self._arena(2 * edge.columns)
            row = bigger.allocate()
            bigger.take(samples, edge.row, row)
            samples.release(edge.row)
            edge.columns, edge.row, samples = 2 * edge.columns, row, bigger
        return samples.insert(edge.row, float(stamp), translation, rotation, self.cache_time)

    def _arena(self, columns: int) -> _Samples:
        if columns not in self._arenas:
            self._arenas[columns] = _Samples(columns)
        return self._arenas[columns]

    def _replace_edge(self, child: str, edge: Optional[_Edge]) -> Optional[_Edge]:
        old = self._edges.pop(child, None)
        if old is not None:
            self._arenas[old.columns].release(old.row)
            self._children_of[old.parent] -= 1
            if not self._children_of[old.parent]:
                del self._children_of[old.parent]
        if edge is not None:
            self._edges[child] = edge
            self._children_of[edge.parent] = self._children_of.get(edge.parent, 0) + 1
        self._chains.clear()            # the tree changed: chains are walked again
        return edge

    @_locked
    def observe_time(self, now: float) -> bool:
        """Tells the buffer the current time; when it went back (a simulation restarted, a bag
        looped) the dynamic history is dropped, as tf2_ros does. Returns whether it was."""
        jumped = self._last_time is not None and now < self._last_time
        self._last_time = float(now)
        if jumped:
            self.clear()
        return jumped

    @_locked
    def clear(self) -> None:
        """Drops every dynamic transform; static ones stay (as in tf2)."""
        for child in [c for c, e in self._edges.items() if not e.static]:
            self._replace_edge(child, None)

    # --- queries --------------------------------------------------------------------------
    @_locked
    def frames(self) -> List[str]:
        return sorted(set(self._edges) | set(self._children_of))

    @_locked
    def parent_of(self, frame: str) -> Optional[str]:
        edge = self._edges.get(frame)
        return edge.parent if edge else None

    @_locked
    def lookup(self, target: str, source: str, time: float) -> Transform:
        """target<-source at `time` (0: the latest common time). Raises a TransformError."""
        translation, rotation, stamps, errors = self._lookup_rows([target], [source],
                                                                  np.array([float(time)]))
        if errors[0] is not None:
            raise errors[0]
        return Transform(translation[0], rotation[0], float(stamps[0]))

    @_locked
    def lookup_late(self, target: str, source: str, time: float, tolerance: float) -> Transform:
        """`lookup`, except that a `time` at most `tolerance` s after the newest data of the chain
        (the latest common time) gets the newest transform: the policy for late TF, as Nav2's
        transform_tolerance allows (localization publishes map -> odom slower than odometry and
        later than its stamps). A time further ahead, or before the oldest data, still raises
        the ExtrapolationError naming the frames, the edge and the times."""
        try:
            return self.lookup(target, source, time)
        except ExtrapolationError:
            newest = self.latest_common_time(target, source)
            if not time - tolerance <= newest < time:
                raise
            return self.lookup(target, source, newest)

    @_locked
    def latest_common_time(self, target: str, source: str) -> float:
        factors = self._chain(target, source)
        if isinstance(factors, TransformError):
            raise factors
        return self._common_time(factors)

    @_locked
    def lookup_many(self, targets: Sequence[str], sources: Sequence[str],
                    times: Sequence[float]) -> Lookups:
        """`lookup` for N queries at once (e.g. map<-odom of every robot at its odometry's
        stamp), vectorised over the queries: each frame pair's chain is walked once (and kept
        until the tree changes); the samples around every (query, edge) time are found, and
        interpolated and composed, in whole-array operations on all queries together (every
        edge is a row of shared arrays). A failing query fails alone (its error message, NaN
        values)."""
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
        rows, levels, children = [], [], []
        for r, factors in enumerate(factors_of):
            if errors[r] is None:
                for k, (child, invert_it) in enumerate(factors):
                    rows.append(r)
                    levels.append(k)
                    children.append(child)
                    inverted[r, k] = invert_it
        if rows:
            # Every (query, edge) sample at once (one operation per size of edge history): the
            # samples around each time, then one interpolation for everything.
            rows, levels = np.array(rows), np.array(levels)
            edges = [self._edges[child] for child in children]
            edge_rows = np.array([e.row for e in edges])
            static = np.array([e.static for e in edges])
            columns = np.array([e.columns for e in edges])
            when = at[rows]
            m = len(rows)
            first, last, s0, s1 = (np.empty(m) for _ in range(4))
            t0, t1, q0, q1 = np.empty((m, 3)), np.empty((m, 3)), np.empty((m, 4)), np.empty((m, 4))
            for size in np.unique(columns):
                part = np.flatnonzero(columns == size)
                samples, e = self._arenas[int(size)], edge_rows[part]
                below, above, first[part], last[part] = samples.bracket(e, when[part],
                                                                        static[part])
                s0[part], s1[part] = samples.t[e, below], samples.t[e, above]
                t0[part], t1[part] = samples.translation[e, below], samples.translation[e, above]
                q0[part], q1[part] = samples.rotation[e, below], samples.rotation[e, above]
            for j in np.flatnonzero((when < first) | (when > last)):
                r = rows[j]
                if errors[r] is None:
                    where = (f'when looking up transform from frame [{sources[r]}] to frame '
                             f'[{targets[r]}] (edge [{edges[j].parent}] -> [{children[j]}])')
                    errors[r] = ExtrapolationError(self._arenas[edges[j].columns].extrapolation(
                        edges[j].row, at[r], where))
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
        latest = [self._arenas[e.columns].t[e.row, self._arenas[e.columns].hi[e.row] - 1]
                  for e in (self._edges[child] for child, _ in factors) if not e.static]
        return float(min(latest)) if latest else 0.0


def _check_frame(name, role, error=ValueError):
    if not isinstance(name, str) or not name:
        raise error(f'{role} must be a non-empty frame name, got {name!r}')
    if name.startswith('/'):
        raise error(f'{role} {name!r}: frame names do not start with "/" (tf2 rejects them)')
