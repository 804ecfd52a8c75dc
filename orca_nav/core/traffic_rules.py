"""Traffic rules annotated beside a map: one-way lanes and one-robot zones.

A fleet's map says where robots can be; it does not say which way they should drive down an
aisle or that a door lets one robot through at a time. Open-RMF's navigation graphs carry that
as lanes (each directed unless marked bidirectional) and mutex groups; Nav2's Route Server as a
route graph with lane lock-outs. orca_nav plans on the occupancy grid, not on a graph, so the
rules are areas on the map instead (REP-103 metres, in the map's frame):

* a **lane** is a rectangle around the segment ``from`` -> ``to``, ``width`` wide. Inside it,
  robots travel only towards ``to``: a motion more than 120 degrees off the lane's direction is
  *against* it (crossing the lane or turning in it is not). Where lanes overlap, a motion must
  not be against any of them;
* a **zone** is a polygon that holds one robot at a time (a door, a narrow passage, a lift).

The planners keep lanes (`against`); the coordinator lets one robot at a time into a zone
(`in_zones`). The file (YAML, beside the map like Nav2's filter masks)::

    frame_id: map
    lanes:
      - {name: aisle_1, from: [4.0, 4.5], to: [26.0, 4.5], width: 1.4}
    zones:
      - {name: door_a, polygon: [[1.0, 2.0], [2.0, 2.0], [2.0, 3.0], [1.0, 3.0]]}

numpy only; no clock.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence, Tuple

import numpy as np

from orca_nav.core.validation import finite_at_least_zero

# Travel whose direction makes a cosine below this with the lane's is against the lane: more
# than 120 degrees off, so crossing a lane (90 degrees) and turning inside it are allowed.
AGAINST_COSINE = -0.5

_TOP_KEYS = {'frame_id', 'lanes', 'zones'}
_LANE_KEYS = {'name', 'from', 'to', 'width'}
_ZONE_KEYS = {'name', 'polygon'}


@dataclass(frozen=True)
class Lane:
    """A one-way lane: robots inside the rectangle around start -> end travel towards end."""

    name: str
    start: Tuple[float, float]
    end: Tuple[float, float]
    width: float

    @property
    def length(self) -> float:
        return math.hypot(self.end[0] - self.start[0], self.end[1] - self.start[1])

    @property
    def heading(self) -> float:
        return math.atan2(self.end[1] - self.start[1], self.end[0] - self.start[0])

    @property
    def corners(self) -> np.ndarray:
        """(4, 2) the rectangle's corners in order: start and end on one side, end and start
        on the other."""
        start, end = np.array(self.start), np.array(self.end)
        side = 0.5 * self.width * np.array([-math.sin(self.heading), math.cos(self.heading)])
        return np.array([start + side, end + side, end - side, start - side])


@dataclass(frozen=True)
class Zone:
    """A one-robot zone: a simple polygon (vertices in order, not closed)."""

    name: str
    polygon: Tuple[Tuple[float, float], ...]


class TrafficRules:
    """The lanes and zones of one map, with vectorised queries over points."""

    def __init__(self, lanes: Sequence[Lane] = (), zones: Sequence[Zone] = (),
                 frame_id: str = 'map'):
        self.lanes = tuple(lanes)
        self.zones = tuple(zones)
        self.frame_id = frame_id
        names = [item.name for item in self.lanes + self.zones]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f'traffic rules: names must be unique, {repeated[0]!r} is repeated')
        # Per lane: start, unit direction, length, half width.
        self._start = np.array([lane.start for lane in self.lanes], dtype=float).reshape(-1, 2)
        self._dir = np.array([[math.cos(lane.heading), math.sin(lane.heading)]
                              for lane in self.lanes]).reshape(-1, 2)
        self._length = np.array([lane.length for lane in self.lanes])
        self._half_width = 0.5 * np.array([lane.width for lane in self.lanes])
        # Bounding box (x_min, y_min, x_max, y_max) of every lane's rectangle.
        corners = np.vstack([lane.corners for lane in self.lanes]) if self.lanes else \
            np.zeros((1, 2))
        self._box = np.concatenate([corners.min(axis=0), corners.max(axis=0)])

    @property
    def empty(self) -> bool:
        return not (self.lanes or self.zones)

    # ------------------------------------------------------------------ queries
    def in_lanes(self, points, inset: float = 0.0) -> np.ndarray:
        """(N, L) bool: point n lies inside lane l's rectangle (at least `inset` metres from its
        edges)."""
        p = np.asarray(points, dtype=float).reshape(-1, 2)
        rel = p[:, None, :] - self._start[None]
        along = (rel * self._dir[None]).sum(axis=2)
        across = rel[..., 0] * self._dir[None, :, 1] - rel[..., 1] * self._dir[None, :, 0]
        return ((along >= inset) & (along <= self._length[None] - inset)
                & (np.abs(across) <= self._half_width[None] - inset))

    def against(self, x, y, heading, slack: float = 0.0) -> np.ndarray:
        """(N,) bool: travelling in direction `heading` (rad) at (x, y) goes against a lane the
        point lies in. A NaN heading (turning in place, standing) is against nothing. `slack`
        (rad) counts headings that much closer to the lane's direction as against too: a planner
        that checks samples of a path whose heading turns between them keeps the rule between
        them as well."""
        x, y, heading = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (x, y, heading)))
        shape = x.shape
        out = np.zeros(x.size, dtype=bool)
        if not self.lanes:
            return out.reshape(shape)
        x, y, h = x.ravel(), y.ravel(), heading.ravel()
        # Most points of a map lie far from every lane: only those near one are looked at.
        near = np.flatnonzero((x >= self._box[0]) & (x <= self._box[2])
                              & (y >= self._box[1]) & (y <= self._box[3]))
        if near.size == 0:
            return out.reshape(shape)
        inside = self.in_lanes(np.column_stack([x[near], y[near]]))
        h = h[near]
        cosine = (np.cos(h)[:, None] * self._dir[None, :, 0]
                  + np.sin(h)[:, None] * self._dir[None, :, 1])
        threshold = math.cos(math.acos(AGAINST_COSINE) - slack) if slack > 0.0 else AGAINST_COSINE
        out[near] = (inside & (cosine < threshold)).any(axis=1)
        return out.reshape(shape)

    def against_between(self, a, b, inset: float = 0.0) -> np.ndarray:
        """(N,) bool: going straight from points `a` to points `b` (N, 2) is against a lane that
        holds both ends at least `inset` metres inside it. A coarse graph's edge between blocks
        (inset: half a block) is then against the lanes only where both blocks lie in the lane,
        so a planner's way just outside a lane's border is not ruled out."""
        a = np.asarray(a, dtype=float).reshape(-1, 2)
        b = np.asarray(b, dtype=float).reshape(-1, 2)
        if not self.lanes or not len(a):
            return np.zeros(len(a), dtype=bool)
        step = b - a
        length = np.maximum(np.hypot(step[:, 0], step[:, 1]), 1e-12)
        cosine = (step @ self._dir.T) / length[:, None]
        return (self.in_lanes(a, inset) & self.in_lanes(b, inset)
                & (cosine < AGAINST_COSINE)).any(axis=1)

    def reversed_edges(self, a_ids, b_ids, a, b, inset: float):
        """A graph's undirected edges a_ids - b_ids (their nodes at `a`, `b`) as the directed
        edges that keep the lanes (`against_between` with `inset`), each stored reversed (head,
        tail), so that a Dijkstra from a goal gives every node's distance *to* the goal:
        (from ids, to ids, the index of each one's undirected edge)."""
        forward = ~self.against_between(a, b, inset)        # a -> b, stored b -> a
        backward = ~self.against_between(b, a, inset)
        edge = np.arange(len(a_ids))
        return (np.concatenate([b_ids[forward], a_ids[backward]]),
                np.concatenate([a_ids[forward], b_ids[backward]]),
                np.concatenate([edge[forward], edge[backward]]))

    def against_motion(self, points, steps) -> np.ndarray:
        """(N,) bool: moving by `steps` (N, 2) from `points` (N, 2) goes against a lane the point
        lies in; a zero step is against nothing."""
        p = np.asarray(points, dtype=float).reshape(-1, 2)
        d = np.asarray(steps, dtype=float).reshape(-1, 2)
        moving = (d != 0.0).any(axis=1)
        heading = np.where(moving, np.arctan2(d[:, 1], d[:, 0]), np.nan)
        return self.against(p[:, 0], p[:, 1], heading)

    def in_zones(self, points) -> np.ndarray:
        """(N, Z) bool: point n lies inside zone z (even-odd rule; a point on an edge may count
        either way)."""
        p = np.asarray(points, dtype=float).reshape(-1, 2)
        out = np.zeros((len(p), len(self.zones)), dtype=bool)
        for z, zone in enumerate(self.zones):
            poly = np.asarray(zone.polygon)
            a, b = poly, np.roll(poly, -1, axis=0)
            # Edges that straddle the point's horizontal line, crossed to the point's right.
            straddle = (a[None, :, 1] > p[:, None, 1]) != (b[None, :, 1] > p[:, None, 1])
            with np.errstate(divide='ignore', invalid='ignore'):
                t = (p[:, None, 1] - a[None, :, 1]) / (b[None, :, 1] - a[None, :, 1])
            x_cross = a[None, :, 0] + t * (b[None, :, 0] - a[None, :, 0])
            out[:, z] = (straddle & (x_cross > p[:, None, 0])).sum(axis=1) % 2 == 1
        return out

    # ------------------------------------------------------------------ files
    @classmethod
    def from_dict(cls, data: Mapping, source: str = 'traffic rules') -> 'TrafficRules':
        """Rules from the file's mapping; ValueError naming `source`, the entry and the field
        otherwise."""
        if not isinstance(data, Mapping):
            raise ValueError(f'{source}: must be a mapping with lanes and/or zones, '
                             f'got {type(data).__name__}')
        unknown = sorted(set(data) - _TOP_KEYS)
        if unknown:
            raise ValueError(f'{source}: unknown field {unknown[0]!r} '
                             f'(expected {sorted(_TOP_KEYS)})')
        frame_id = data.get('frame_id', 'map')
        if not isinstance(frame_id, str) or not frame_id:
            raise ValueError(f'{source}: frame_id must be a non-empty string, got {frame_id!r}')
        lanes = [_lane(entry, f'{source}: lanes[{k}]')
                 for k, entry in enumerate(_entries(data, 'lanes', source))]
        zones = [_zone(entry, f'{source}: zones[{k}]')
                 for k, entry in enumerate(_entries(data, 'zones', source))]
        try:
            return cls(lanes, zones, frame_id)
        except ValueError as err:
            raise ValueError(f'{source}: {err}') from None

    @classmethod
    def from_yaml(cls, path) -> 'TrafficRules':
        """Rules from a file; ValueError naming the file (and the entry and field) otherwise."""
        import yaml  # PyYAML: only needed for files

        path = Path(path)
        try:
            with open(path, 'r', encoding='utf-8') as stream:
                data = yaml.safe_load(stream)
        except OSError as err:
            raise ValueError(f'{path}: cannot read the file: {err.strerror or err}') from None
        except yaml.YAMLError as err:
            raise ValueError(f'{path}: not valid YAML: {err}') from None
        return cls.from_dict({} if data is None else data, str(path))

    def to_dict(self) -> dict:
        return {'frame_id': self.frame_id,
                'lanes': [{'name': lane.name, 'from': list(lane.start), 'to': list(lane.end),
                           'width': lane.width} for lane in self.lanes],
                'zones': [{'name': zone.name, 'polygon': [list(v) for v in zone.polygon]}
                          for zone in self.zones]}

    def __repr__(self) -> str:
        return f'TrafficRules({len(self.lanes)} lanes, {len(self.zones)} zones, {self.frame_id!r})'


def _entries(data: Mapping, key: str, source: str) -> list:
    entries = data.get(key, [])
    if entries is None:
        return []
    if not isinstance(entries, (list, tuple)):
        raise ValueError(f'{source}: {key} must be a list, got {type(entries).__name__}')
    return list(entries)


def _fields(entry, where: str, keys: set) -> Mapping:
    if not isinstance(entry, Mapping):
        raise ValueError(f'{where} must be a mapping, got {entry!r}')
    missing = sorted(keys - set(entry))
    if missing:
        raise ValueError(f'{where} is missing field {missing[0]!r}')
    unknown = sorted(set(entry) - keys)
    if unknown:
        raise ValueError(f'{where}: unknown field {unknown[0]!r} (expected {sorted(keys)})')
    name = entry['name']
    if not isinstance(name, str) or not name:
        raise ValueError(f'{where}.name must be a non-empty string, got {name!r}')
    return entry


def _numbers(entry: Mapping, key: str, where: str, expected: str) -> np.ndarray:
    """entry[key] as a finite float array; ValueError naming the field and the value otherwise."""
    value = entry[key]
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        arr = np.full(1, np.nan)
    if isinstance(value, (str, bytes)) or not np.isfinite(arr).all():
        raise ValueError(f'{where}.{key} must be {expected} of finite numbers, got {value!r}')
    return arr


def _point(entry: Mapping, key: str, where: str) -> Tuple[float, float]:
    xy = _numbers(entry, key, where, '[x, y]')
    if xy.shape != (2,):
        raise ValueError(f'{where}.{key} must be [x, y], got {entry[key]!r}')
    return float(xy[0]), float(xy[1])


def _lane(entry, where: str) -> Lane:
    entry = _fields(entry, where, _LANE_KEYS)
    start, end = _point(entry, 'from', where), _point(entry, 'to', where)
    if start == end:
        raise ValueError(f'{where}: from and to are the same point {list(start)}: '
                         'a lane needs a direction')
    width = finite_at_least_zero(f'{where}.width', entry['width'], positive=True)
    return Lane(entry['name'], start, end, width)


def _zone(entry, where: str) -> Zone:
    entry = _fields(entry, where, _ZONE_KEYS)
    poly = _numbers(entry, 'polygon', where, 'a list of [x, y]')
    if poly.ndim != 2 or poly.shape[1] != 2 or len(poly) < 3:
        raise ValueError(f'{where}.polygon must be 3 or more [x, y] vertices, '
                         f'got {entry["polygon"]!r}')
    a, b = poly, np.roll(poly, -1, axis=0)
    if abs(float((a[:, 0] * b[:, 1] - b[:, 0] * a[:, 1]).sum())) < 1e-12:
        raise ValueError(f'{where}.polygon encloses no area: {entry["polygon"]!r}')
    return Zone(entry['name'], tuple((float(x), float(y)) for x, y in poly))
