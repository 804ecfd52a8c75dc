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
    """child -> parent: the static transform, or the history of dynamic samples."""

    def __init__(self, parent: str, static: bool):
        self.parent, self.static = parent, static
        self.stamps: List[float] = []
        self._translations: List[np.ndarray] = []
        self._rotations: List[np.ndarray] = []
        self._arrays: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = None

    def insert(self, stamp, translation, rotation, cache_time) -> bool:
        if self.static:
            self.stamps, self._translations, self._rotations = [stamp], [translation], [rotation]
        else:
            if self.stamps and stamp < self.stamps[-1] - cache_time:
                return False
            i = bisect.bisect_left(self.stamps, stamp)
            if i < len(self.stamps) and self.stamps[i] == stamp:
                self._translations[i], self._rotations[i] = translation, rotation
            else:
                self.stamps.insert(i, stamp)
                self._translations.insert(i, translation)
                self._rotations.insert(i, rotation)
            drop = bisect.bisect_left(self.stamps, self.stamps[-1] - cache_time)
            if drop:
                del self.stamps[:drop], self._translations[:drop], self._rotations[:drop]
        self._arrays = None
        return True

    def arrays(self):
        if self._arrays is None:
            self._arrays = (np.array(self.stamps), np.array(self._translations),
                            np.array(self._rotations))
        return self._arrays

    def sample(self, times: np.ndarray, describe) -> Tuple[np.ndarray, np.ndarray, List]:
        """(translations (k, 3), rotations (k, 4), error or None per time) at `times` (k,)."""
        stamps, translations, rotations = self.arrays()
        k = len(times)
        if self.static:
            return (np.broadcast_to(translations[0], (k, 3)),
                    np.broadcast_to(rotations[0], (k, 4)), [None] * k)
        errors: List[Optional[str]] = [None] * k
        if len(stamps) == 1:
            for j in np.flatnonzero(times != stamps[0]):
                errors[j] = (f'Lookup would require extrapolation at time {times[j]:.9f}, but '
                             f'only time {stamps[0]:.9f} is in the buffer, {describe()}')
            return (np.broadcast_to(translations[0], (k, 3)),
                    np.broadcast_to(rotations[0], (k, 4)), errors)
        for j in np.flatnonzero(times > stamps[-1]):
            errors[j] = (f'Lookup would require extrapolation into the future. Requested time '
                         f'{times[j]:.9f} but the latest data is at time {stamps[-1]:.9f}, '
                         f'{describe()}')
        for j in np.flatnonzero(times < stamps[0]):
            errors[j] = (f'Lookup would require extrapolation into the past. Requested time '
                         f'{times[j]:.9f} but the earliest data is at time {stamps[0]:.9f}, '
                         f'{describe()}')
        hi = np.clip(np.searchsorted(stamps, times, side='right'), 1, len(stamps) - 1)
        lo = hi - 1
        ratio = np.clip((times - stamps[lo]) / (stamps[hi] - stamps[lo]), 0.0, 1.0)
        translation = translations[lo] + ratio[:, None] * (translations[hi] - translations[lo])
        return translation, slerp(rotations[lo], rotations[hi], ratio), errors


class TransformBuffer:
    """The transforms of one or more trees, with tf2's lookup semantics (see the module doc)."""

    def __init__(self, cache_time: float = DEFAULT_CACHE_TIME_S):
        if not (np.isfinite(cache_time) and cache_time > 0.0):
            raise ValueError(f'cache_time must be a positive number of seconds, got {cache_time!r}')
        self.cache_time = float(cache_time)
        self._edges: Dict[str, _Edge] = {}      # by child frame
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
            edge = self._edges[child] = _Edge(parent, bool(static))
        return edge.insert(float(stamp), translation, rotation / np.sqrt(norm2), self.cache_time)

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
        self._edges = {child: e for child, e in self._edges.items() if e.static}

    # --- queries --------------------------------------------------------------------------
    def frames(self) -> List[str]:
        known = set(self._edges) | {e.parent for e in self._edges.values()}
        return sorted(known)

    def parent_of(self, frame: str) -> Optional[str]:
        edge = self._edges.get(frame)
        return edge.parent if edge else None

    def lookup(self, target: str, source: str, time: float) -> Transform:
        """target<-source at `time` (0: the latest common time). Raises a TransformError."""
        path = self._path(target, source)
        when = self._common_time(path, target, source) if time == 0 else float(time)
        t, q, errors = self._chain(path, target, source, np.array([when]))
        if errors[0] is not None:
            raise ExtrapolationError(errors[0])
        return Transform(t[0], q[0], when)

    def latest_common_time(self, target: str, source: str) -> float:
        return self._common_time(self._path(target, source), target, source)

    def lookup_many(self, targets: Sequence[str], sources: Sequence[str],
                    times: Sequence[float]) -> Lookups:
        """`lookup` for N queries at once (e.g. map<-odom of every robot at its odometry's
        stamp): the chain of each frame pair is walked once and every edge is interpolated at
        all its queries' times together. A failing query fails alone."""
        times = np.asarray(times, float).reshape(-1)
        n = len(times)
        if not (len(targets) == len(sources) == n):
            raise ValueError(f'lookup_many: {len(targets)} targets, {len(sources)} sources and '
                             f'{n} times')
        translation = np.full((n, 3), np.nan)
        rotation = np.full((n, 4), np.nan)
        stamps = times.copy()
        errors: List[Optional[str]] = [None] * n
        groups: Dict[Tuple[str, str], List[int]] = {}
        for i, pair in enumerate(zip(targets, sources)):
            groups.setdefault(pair, []).append(i)
        for (target, source), rows in groups.items():
            rows = np.array(rows)
            try:
                path = self._path(target, source)
                latest = (self._common_time(path, target, source)
                          if np.any(times[rows] == 0) else 0.0)
            except TransformError as err:
                for i in rows:
                    errors[i] = str(err)
                continue
            at = np.where(times[rows] == 0, latest, times[rows])
            t, q, errs = self._chain(path, target, source, at)
            translation[rows], rotation[rows], stamps[rows] = t, q, at
            for i, err in zip(rows, errs):
                if err is not None:
                    errors[i] = err
                    translation[i], rotation[i] = np.nan, np.nan
        return Lookups(translation, rotation, stamps, errors)

    # --- internals ------------------------------------------------------------------------
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
        known = set(self.frames())
        for role, name in (('target_frame', target), ('source_frame', source)):
            _check_frame(name, role, FrameNotFoundError)
            if name not in known:
                raise FrameNotFoundError(f'frame [{name}] passed to lookup as {role} does not '
                                         f'exist')
        up_source, up_target = self._ancestors(source), self._ancestors(target)
        on_target = set(up_target)
        common = next((f for f in up_source if f in on_target), None)
        if common is None:
            raise ConnectivityError(f'Could not find a connection between [{target}] and '
                                    f'[{source}] because they are not part of the same tree')
        return (up_source[:up_source.index(common)], up_target[:up_target.index(common)])

    def _common_time(self, path, target, source) -> float:
        latest = [self._edges[child].stamps[-1] for child in path[0] + path[1]
                  if not self._edges[child].static]
        return min(latest) if latest else 0.0

    def _chain(self, path, target, source, times):
        errors: List[Optional[str]] = [None] * len(times)
        results = []
        for children in path:
            t = np.zeros((len(times), 3))
            q = np.broadcast_to(_IDENTITY_ROTATION, (len(times), 4))
            for child in children:                 # bottom-up: ancestor<-child accumulates
                edge = self._edges[child]

                def describe(edge=edge, child=child):
                    return (f'when looking up transform from frame [{source}] to frame '
                            f'[{target}] (edge [{edge.parent}] -> [{child}])')
                et, eq, errs = edge.sample(times, describe)
                t, q = compose(et, eq, t, q)
                errors = [e if e is not None else f for e, f in zip(errors, errs)]
            results.append((t, q))
        (t_src, q_src), (t_tgt, q_tgt) = results
        t, q = compose(*invert(t_tgt, q_tgt), t_src, q_src)
        return t, q, errors


def _check_frame(name, role, error=ValueError):
    if not isinstance(name, str) or not name:
        raise error(f'{role} must be a non-empty frame name, got {name!r}')
    if name.startswith('/'):
        raise error(f'{role} {name!r}: frame names do not start with "/" (tf2 rejects them)')
