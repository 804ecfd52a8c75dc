"""2-D and 3-D occupancy grids with a cached clearance (distance) field.

Conventions (every caller relies on these):

* ``occupied`` is a bool array indexed ``[iy, ix]`` (2-D) or ``[iz, iy, ix]`` (3-D): rows run
  along +y, like ``nav_msgs/OccupancyGrid`` data reshaped to ``(height, width)``.
* ``origin`` is the world position of the *corner* of cell 0 (x, y[, z]); cell ``(ix, iy[, iz])``
  covers ``origin + [i, i + 1) * resolution`` on every axis and its centre is
  ``origin + (i + 0.5) * resolution``.
* Points and cell indices are always given in ``(x, y[, z])`` / ``(ix, iy[, iz])`` order, shape
  ``(K, ndim)`` (a single ``(ndim,)`` point is accepted and treated as ``K = 1``).
* Everything outside the map counts as occupied.
* ``clearance()`` is, for every cell, the Euclidean distance in metres from its centre to the
  nearest occupied cell centre, where the cells just outside the map border count as occupied
  too. Occupied cells have clearance 0. It is computed once with
  ``scipy.ndimage.distance_transform_edt`` and cached as float32 (4 bytes per cell; the transform
  needs transient working memory of about 20 bytes per cell while it runs).
* A disc/ball of radius ``r`` centred at point ``p`` is *free* iff ``clearance_at(p) > r``.
  ``inflated(r)`` marks exactly the cells with ``clearance <= r``, so
  ``inflated(r).occupied_at(p) == (clearance_at(p) <= r)`` for points inside the map.
  The measure is cell centre to cell centre, so it can be off by up to one cell diagonal from
  the true geometry; add a margin to ``r`` if the map's cells only approximate the obstacles.
* ``segment_free`` samples each segment at spacing <= resolution / 2 (both end points included).

Also here: ``to_int8`` / ``save_map_yaml`` (nav_msgs data and map_server files out; the image
side is `map_image`), ``from_npz`` / ``save_npz`` (voxel grids as .npz, e.g. the 3-D forest) and
``border_distance_at`` (the border part of the clearance measure).

Memory: the grid itself stores one byte per cell (a bool array; a bool, C-contiguous input is
used without a copy and is exposed read-only). The clearance field is only built (and then
cached) when ``clearance()``, ``clearance_at`` or a radius > 0 check needs it; ``inflated``
reuses a cached field but does not create one, so planners on big maps can hold one inflated
bool copy instead of a 4-byte field.

One file: the 2-D and 3-D grids share one indexing convention and the clearance field every
query (segment checks, clearance, inflation) reads.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional, Sequence, Tuple

import numpy as np
from scipy import ndimage

from orca_nav.core.geometry import row_norms
from orca_nav.core.map_image import (
    OCC_FREE,
    OCC_OCCUPIED,
    OCC_UNKNOWN,
    PathLike,
    map_server_values,
    read_image_shade,
    write_pgm,
)
from orca_nav.core.validation import finite_at_least_zero, finite_number

_NEAR_CELLS = 1 << 22   # clearance_near reads at most this many window cells, else the field
# segment_free skips samples the clearance field vouches for from this many samples on, in
# blocks of these sizes (each level splits the blocks the one before could not vouch for).
# Two levels: a level costs some twenty numpy calls, more than the samples a middle one saves
# where goal guidance asks (100 robots between pillars: 24,000 samples, 2,000 blocks).
_SKIPPING_SAMPLES = 2048
_SKIP_LEVELS = (12, 1)


class OccupancyGrid:
    """Bool occupancy grid (2-D ``[iy, ix]`` or 3-D ``[iz, iy, ix]``) with resolution and origin."""

    def __init__(self, occupied, resolution: float, origin: Sequence[float]):
        occ = np.asarray(occupied)
        if occ.dtype != np.bool_:
            if not np.issubdtype(occ.dtype, np.number):
                raise ValueError(f'occupied must be a bool or numeric array, got dtype {occ.dtype}')
            occ = occ != 0
        if occ.ndim not in (2, 3):
            raise ValueError('occupied must be 2-D [iy, ix] or 3-D [iz, iy, ix], got shape '
                             f'{occ.shape}')
        if min(occ.shape) == 0:
            raise ValueError(f'occupied must not be empty, got shape {occ.shape}')
        occ = np.ascontiguousarray(occ).view()
        occ.flags.writeable = False
        resolution = finite_number('resolution', resolution)
        if resolution <= 0.0:
            raise ValueError(f'resolution must be > 0, got {resolution}')
        origin_arr = np.asarray(origin, dtype=float).reshape(-1)
        if origin_arr.size != occ.ndim:
            raise ValueError(f'origin must have {occ.ndim} values (one per map axis), '
                             f'got {origin_arr.size}')
        if not np.all(np.isfinite(origin_arr)):
            raise ValueError(f'origin must be finite, got {origin_arr.tolist()}')
        self._occupied = occ
        self._resolution = resolution
        self._origin = origin_arr
        self._origin.flags.writeable = False
        # Map size per axis in (x, y[, z]) order.
        self._size_xyz = np.array(occ.shape[::-1], dtype=np.int64)
        self._flat_strides = np.cumprod(np.concatenate(([1], self._size_xyz[:-1]))).astype(np.int64)
        self._clearance: Optional[np.ndarray] = None

    # ------------------------------------------------------------------ properties
    @property
    def occupied(self) -> np.ndarray:
        """Read-only bool array, ``[iy, ix]`` or ``[iz, iy, ix]``."""
        return self._occupied

    @property
    def ndim(self) -> int:
        return self._occupied.ndim

    @property
    def shape(self) -> Tuple[int, ...]:
        """Array shape: ``(ny, nx)`` or ``(nz, ny, nx)``."""
        return self._occupied.shape

    @property
    def resolution(self) -> float:
        return self._resolution

    @property
    def origin(self) -> np.ndarray:
        """World coordinates ``(x, y[, z])`` of the corner of cell 0."""
        return self._origin

    @property
    def size_cells(self) -> np.ndarray:
        """Number of cells per axis in ``(x, y[, z])`` order."""
        return self._size_xyz.copy()

    @property
    def extent(self) -> Tuple[np.ndarray, np.ndarray]:
        """World bounds ``(lower, upper)``, each ``(ndim,)`` in ``(x, y[, z])`` order."""
        return self._origin.copy(), self._origin + self._size_xyz * self._resolution

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_rectangles(cls, extent: Sequence[float], resolution: float, rects,
                        wall: float = 0.0) -> 'OccupancyGrid':
        """A 2-D grid covering `extent` (xmin, ymin, xmax, ymax) whose cells are occupied where
        their centre lies in one of `rects` (rows xmin, ymin, xmax, ymax, metres); `wall` > 0
        adds an outer wall of that thickness inside the extent."""
        xmin, ymin, xmax, ymax = (float(v) for v in extent)
        nx = int(round((xmax - xmin) / resolution))
        ny = int(round((ymax - ymin) / resolution))
        cx = xmin + (np.arange(nx) + 0.5) * resolution
        cy = ymin + (np.arange(ny) + 0.5) * resolution
        rects = [tuple(r) for r in rects]
        if wall > 0.0:
            rects += [(xmin, ymin, xmax, ymin + wall), (xmin, ymax - wall, xmax, ymax),
                      (xmin, ymin, xmin + wall, ymax), (xmax - wall, ymin, xmax, ymax)]
        occupied = np.zeros((ny, nx), dtype=bool)
        for x0, y0, x1, y1 in rects:
            occupied |= ((cy >= y0) & (cy <= y1))[:, None] & ((cx >= x0) & (cx <= x1))[None, :]
        return cls(occupied, resolution, (xmin, ymin))

    @classmethod
    def from_int8(cls, data, width: int, height: int, resolution: float, origin: Sequence[float],
                  unknown_occupied: bool = True, occupied_threshold: int = 65) -> 'OccupancyGrid':
        """Build a 2-D grid from ``nav_msgs/OccupancyGrid``-style data.

        ``data`` is flat, row-major, ``width * height`` long (row ``iy`` =
        ``data[iy*width:(iy+1)*width]``); 0 is free, 100 occupied, -1 unknown. A value in 1..99 is
        occupied when it is ``>= occupied_threshold``. Unknown cells are occupied iff
        ``unknown_occupied``. ``origin`` is ``(x, y)`` (the pose's position; a rotated map origin
        is not supported).
        """
        width = int(width)
        height = int(height)
        if width <= 0:
            raise ValueError(f'width must be > 0, got {width}')
        if height <= 0:
            raise ValueError(f'height must be > 0, got {height}')
        if not 0 < int(occupied_threshold) <= 100:
            raise ValueError(f'occupied_threshold must be in 1..100, got {occupied_threshold}')
        values = np.asarray(data).reshape(-1)
        if values.size != width * height:
            raise ValueError(f'data must have width*height = {width * height} values, got '
                             f'{values.size}')
        if not np.issubdtype(values.dtype, np.integer):
            raise ValueError(f'data must be integer (int8) values, got dtype {values.dtype}')
        bad = np.flatnonzero((values < OCC_UNKNOWN) | (values > OCC_OCCUPIED))
        if bad.size:
            raise ValueError(f'data[{bad[0]}] = {values[bad[0]]} is outside -1..100')
        values = values.reshape(height, width)
        occupied = values >= int(occupied_threshold)
        if unknown_occupied:
            occupied |= values == OCC_UNKNOWN
        return cls(occupied, resolution, origin)

    @classmethod
    def from_map_yaml(cls, path: PathLike, unknown_occupied: bool = True,
                      occupied_threshold: int = 65) -> 'OccupancyGrid':
        """Load a map_server map: YAML (image, resolution, origin, thresholds, negate, mode) +
        PGM/PNG.

        Pixels become -1/0/100 (or 0..100 in ``scale``/``raw`` mode) exactly as nav2_map_server
        does; those values then go through :meth:`from_int8`'s rules. The image's top row is the
        map's highest y. ``origin`` yaw must be 0.
        """
        import yaml  # PyYAML: only needed for this format

        path = Path(path)
        with open(path, 'r', encoding='utf-8') as stream:
            meta = yaml.safe_load(stream)
        if not isinstance(meta, dict):
            raise ValueError(f'{path}: map YAML must be a mapping')
        for key in ('image', 'resolution', 'origin'):
            if key not in meta:
                raise ValueError(f'{path}: map YAML is missing field {key!r}')
        origin = meta['origin']
        if not isinstance(origin, (list, tuple)) or len(origin) != 3:
            raise ValueError(f'{path}: origin must be [x, y, yaw], got {origin!r}')
        yaw = finite_number('origin yaw', origin[2])
        if yaw != 0.0:
            raise ValueError(f'{path}: origin yaw must be 0 (rotated maps are not supported), '
                             f'got {yaw}')
        mode = str(meta.get('mode', 'trinary')).lower()
        if mode not in ('trinary', 'scale', 'raw'):
            raise ValueError(f'{path}: mode must be trinary, scale or raw, got {mode!r}')
        occ_th = finite_number('occupied_thresh', meta.get('occupied_thresh', 0.65))
        free_th = finite_number('free_thresh', meta.get('free_thresh', 0.25))
        negate = meta.get('negate', 0)
        if isinstance(negate, str):
            negate = negate.strip().lower() in ('1', 'true', 'yes')
        image_path = Path(str(meta['image']))
        if not image_path.is_absolute():
            image_path = path.parent / image_path
        shade, opaque = read_image_shade(image_path)
        values = map_server_values(shade, opaque, mode, bool(negate), occ_th, free_th)
        height, width = values.shape
        # Image row 0 is the top (max y); grid row 0 is min y.
        return cls.from_int8(values[::-1].reshape(-1), width, height, meta['resolution'],
                             [origin[0], origin[1]], unknown_occupied, occupied_threshold)

    @classmethod
    def from_npz(cls, path: PathLike) -> 'OccupancyGrid':
        """Load a voxel (3-D) or cell (2-D) grid from an ``.npz`` written by :meth:`save_npz`
        or in the format of ``refdata/planners/forest_3d.npz``: ``resolution``, ``origin``
        (x, y[, z] of the corner of cell 0) and either ``occupied`` (bool, ``[iz, iy, ix]``)
        or ``occ_packed`` (``numpy.packbits`` of it, C order) with its ``shape``."""
        path = Path(path)
        with np.load(path) as data:
            for key in ('resolution', 'origin'):
                if key not in data:
                    raise ValueError(f'{path}: missing array {key!r}')
            if 'occupied' in data:
                occupied = data['occupied']
            elif 'occ_packed' in data and 'shape' in data:
                shape = tuple(int(n) for n in data['shape'])
                bits = np.unpackbits(data['occ_packed'])
                if bits.size < int(np.prod(shape)):
                    raise ValueError(f'{path}: occ_packed holds {bits.size} bits, shape {shape} '
                                     f'needs {int(np.prod(shape))}')
                occupied = bits[:int(np.prod(shape))].reshape(shape).astype(bool)
            else:
                raise ValueError(f'{path}: needs an array occupied, or occ_packed with shape')
            return cls(occupied, float(data['resolution']), data['origin'])

    # ------------------------------------------------------------------ writers
    def to_int8(self) -> np.ndarray:
        """Flat row-major int8 data (0 free, 100 occupied) for a ``nav_msgs/OccupancyGrid`` (2-D
        only)."""
        if self.ndim != 2:
            raise ValueError(f'to_int8 needs a 2-D grid, this one is {self.ndim}-D')
        return np.where(self._occupied, OCC_OCCUPIED, OCC_FREE).astype(np.int8).reshape(-1)

    def save_map_yaml(self, path_stem: PathLike) -> Tuple[Path, Path]:
        """Write ``<stem>.yaml`` + ``<stem>.pgm`` (trinary, P5) that map_server and
        :meth:`from_map_yaml` read back to this exact grid. 2-D only. Returns both paths."""
        if self.ndim != 2:
            raise ValueError(f'save_map_yaml needs a 2-D grid, this one is {self.ndim}-D')
        stem = Path(path_stem)
        if stem.suffix in ('.yaml', '.yml', '.pgm'):
            stem = stem.with_suffix('')
        yaml_path = stem.with_name(stem.name + '.yaml')
        pgm_path = stem.with_name(stem.name + '.pgm')
        # map_saver's convention: occupied black (0), free light grey (254); top row = max y.
        pixels = np.where(self._occupied[::-1], 0, 254).astype(np.uint8)
        write_pgm(pgm_path, pixels)
        x0, y0 = (repr(float(v)) for v in self._origin)
        yaml_path.write_text(
            f'image: {pgm_path.name}\n'
            f'mode: trinary\n'
            f'resolution: {self._resolution!r}\n'
            f'origin: [{x0}, {y0}, 0.0]\n'
            f'negate: 0\n'
            f'occupied_thresh: 0.65\n'
            f'free_thresh: 0.25\n', encoding='utf-8')
        return yaml_path, pgm_path

    def save_npz(self, path: PathLike) -> Path:
        """Write the grid as an ``.npz`` (packed occupancy, shape, resolution, origin) that
        :meth:`from_npz` reads back to this exact grid."""
        path = Path(path)
        np.savez_compressed(path, occ_packed=np.packbits(self._occupied.reshape(-1)),
                            shape=np.array(self.shape, dtype=np.int64),
                            resolution=np.float64(self._resolution), origin=self._origin.copy())
        return path if path.suffix == '.npz' else path.with_name(path.name + '.npz')

    # ------------------------------------------------------------------ conversions
    def _points(self, points, name: str = 'points') -> np.ndarray:
        pts = np.asarray(points, dtype=float)
        if pts.ndim == 1:
            pts = pts.reshape(1, -1)
        if pts.ndim != 2 or pts.shape[1] != self.ndim:
            raise ValueError(f'{name} must have shape (K, {self.ndim}), got {np.shape(points)}')
        if not np.isfinite(pts).all():
            bad = np.argwhere(~np.isfinite(pts))[0]
            raise ValueError(f'{name}[{bad[0]}] is not finite: {pts[bad[0]].tolist()}')
        return pts

    def world_to_cell(self, points) -> np.ndarray:
        """``(K, ndim)`` int64 cell indices ``(ix, iy[, iz])`` (floor); may lie outside the map."""
        pts = self._points(points)
        return np.floor((pts - self._origin) / self._resolution).astype(np.int64)

    def cell_centers(self, cells) -> np.ndarray:
        """World centres ``(K, ndim)`` of integer cells given as ``(ix, iy[, iz])`` rows."""
        idx = np.asarray(cells)
        if idx.ndim == 1:
            idx = idx.reshape(1, -1)
        if idx.ndim != 2 or idx.shape[1] != self.ndim:
            raise ValueError(f'cells must have shape (K, {self.ndim}), got {np.shape(cells)}')
        return self._origin + (idx.astype(float) + 0.5) * self._resolution

    def _cells_in_bounds(self, cells: np.ndarray) -> np.ndarray:
        # Viewed as unsigned, negative indices are huge: one compare per axis (column-wise is
        # several times faster than a reduction over the short last axis).
        unsigned = np.ascontiguousarray(cells, dtype=np.int64).view(np.uint64)
        inside = unsigned[:, 0] < self._size_xyz[0]
        for axis in range(1, unsigned.shape[1]):
            inside &= unsigned[:, axis] < self._size_xyz[axis]
        return inside

    def in_bounds(self, points) -> np.ndarray:
        """``(K,)`` bool: the point lies in a map cell."""
        return self._cells_in_bounds(self.world_to_cell(points))

    def values_at(self, array: np.ndarray, points, outside) -> np.ndarray:
        """A per-cell `array` (the grid's shape) at `points`; `outside` where a point lies
        outside the map."""
        cells = self.world_to_cell(points)
        inside = self._cells_in_bounds(cells)
        # Flat index of (ix, iy[, iz]) in the [..., iy, ix] array; outside points read cell 0
        # and are overwritten, which keeps this one gather with no boolean compaction.
        flat = np.where(inside, cells @ self._flat_strides, 0)
        return np.where(inside, array.reshape(-1)[flat], outside)

    # ------------------------------------------------------------------ queries
    def occupied_at(self, points) -> np.ndarray:
        """``(K,)`` bool: the cell holding each point is occupied, or the point is outside the
        map."""
        return self.values_at(self._occupied, points, True)

    def _compute_clearance(self) -> np.ndarray:
        res = self._resolution
        if self._occupied.any():
            field = ndimage.distance_transform_edt(~self._occupied).astype(np.float32)
        else:
            field = np.full(self.shape, np.inf, dtype=np.float32)
        field *= np.float32(res)
        # Distance to the outside ring along each array axis: min(i + 1, n - i) cells.
        for axis, n in enumerate(self.shape):
            idx = np.arange(n)
            border = (np.minimum(idx + 1, n - idx) * res).astype(np.float32)
            view_shape = [1] * self.ndim
            view_shape[axis] = n
            np.minimum(field, border.reshape(view_shape), out=field)
        field.flags.writeable = False
        return field

    @property
    def has_clearance(self) -> bool:
        """The clearance field is computed (cached): reading it costs no transform."""
        return self._clearance is not None

    def clearance(self) -> np.ndarray:
        """Cached float32 field (same shape as ``occupied``): metres from each cell centre to the
        nearest occupied cell centre, the ring of cells just outside the map counting as
        occupied."""
        if self._clearance is None:
            self._clearance = self._compute_clearance()
        return self._clearance

    def border_distance_at(self, points) -> np.ndarray:
        """``(K,)`` metres from the centre of each point's cell to the nearest cell just outside
        the map (the border part of the clearance measure); 0 outside the map."""
        cells = self.world_to_cell(points)
        inside = self._cells_in_bounds(cells)
        steps = np.minimum(cells + 1, self._size_xyz - cells).min(axis=1)
        return np.where(inside, steps * self._resolution, 0.0)

    def clearance_at(self, points) -> np.ndarray:
        """``(K,)`` float32 clearance of the cell holding each point; 0 outside the map."""
        return self.values_at(self.clearance(), points, 0.0)

    def clearance_near(self, points, reach: float) -> np.ndarray:
        """``(K,)`` float32: ``clearance_at(points)`` wherever that is ``<= reach``, and a value
        ``> reach`` elsewhere. Read from the cells within ``reach`` of each point, so a big map
        needs no clearance field for a few local questions (the cached field is used when there
        is one)."""
        reach = finite_number('reach', reach)
        pts = self._points(points)
        half = int(math.ceil(max(reach, 0.0) / self._resolution)) + 1
        if self._clearance is not None or len(pts) * (2 * half + 1) ** self.ndim > _NEAR_CELLS:
            return self.clearance_at(pts)       # the field is there, or cheaper than windows
        cells = self.world_to_cell(pts)
        axes = np.meshgrid(*[np.arange(-half, half + 1)] * self.ndim, indexing='ij')
        offsets = np.stack([a.reshape(-1) for a in axes], axis=1)            # (W, ndim)
        # As the field computes it: float32 centre distance in cells, times the resolution.
        steps = np.sqrt((offsets ** 2).sum(axis=1)).astype(np.float32)
        window = (cells[:, None, :] + offsets[None]).reshape(-1, self.ndim)
        in_map = self._cells_in_bounds(window)
        flat = np.where(in_map, window @ self._flat_strides, 0)
        blocked = in_map & self._occupied.reshape(-1)[flat]
        nearest = np.where(blocked.reshape(len(pts), -1), steps[None], np.float32(np.inf))
        out = nearest.min(axis=1) * np.float32(self._resolution)
        border = self.border_distance_at(pts).astype(np.float32)
        return np.where(self._cells_in_bounds(cells), np.minimum(out, border), np.float32(0.0))

    def inflated(self, radius: float) -> 'OccupancyGrid':
        """Grid whose occupied cells are those with ``clearance <= radius`` (radius 0: a copy).

        Uses the cached clearance field if there is one; otherwise the field is computed and
        dropped again, so a big map keeps costing one byte per cell (plus one for the result)."""
        radius = finite_number('radius', radius)
        if radius < 0.0:
            raise ValueError(f'radius must be >= 0, got {radius}')
        if radius == 0.0:
            return OccupancyGrid(self._occupied.copy(), self._resolution, self._origin)
        field = self._clearance if self._clearance is not None else self._compute_clearance()
        return OccupancyGrid(field <= np.float32(radius), self._resolution, self._origin)

    def points_free(self, points, radius: float = 0.0) -> np.ndarray:
        """``(K,)`` bool: a disc/ball of ``radius`` at each point is free (radius 0: cell not
        occupied)."""
        radius = finite_number('radius', radius)
        if radius < 0.0:
            raise ValueError(f'radius must be >= 0, got {radius}')
        if radius == 0.0:
            return ~self.occupied_at(points)
        return self.clearance_at(points) > np.float32(radius)

    def segment_free(self, p0, p1, radius: float = 0.0) -> np.ndarray:
        """``(K,)`` bool: every sample along segment ``p0[k] -> p1[k]`` (spacing <= resolution / 2,
        both ends included) is free for a disc/ball of ``radius``."""
        a = self._points(p0, 'p0')
        b = self._points(p1, 'p1')
        if a.shape != b.shape:
            raise ValueError(f'p0 and p1 must have the same shape, got {a.shape} and {b.shape}')
        if a.shape[0] == 0:
            return np.zeros(0, dtype=bool)
        lengths = row_norms(b - a)
        counts = np.ceil(lengths / (0.5 * self._resolution)).astype(np.int64) + 1
        radius = finite_at_least_zero('radius', radius)
        if radius > 0.0 or self._clearance is not None:
            levels = _SKIP_LEVELS if int(counts.sum()) >= _SKIPPING_SAMPLES else (1,)
            return self._segment_free_on_field(a, b, lengths, counts, radius, levels)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        seg = np.repeat(np.arange(a.shape[0]), counts)
        # Fraction along the segment of every sample, all segments at once.
        step = np.arange(seg.size) - starts[seg]
        frac = step / np.maximum(counts[seg] - 1, 1)
        samples = a[seg] + (b - a)[seg] * frac[:, None]
        ok = self.points_free(samples, radius)
        return np.logical_and.reduceat(ok, starts)

    def _segment_free_on_field(self, a, b, lengths, counts, radius: float, levels) -> np.ndarray:
        """`segment_free` read from the clearance field (a sample is free where its cell's
        clearance exceeds the radius; radius 0: where its cell is free). With
        `levels` (16, 4, 1) most samples are skipped: the field is 1-Lipschitz between cell
        centres, so a sample with clearance c makes every sample within c - radius - (two
        cells) of it free (also of the map: the border counts in the field). Blocks of
        levels[0] samples are judged by their first sample; blocks it cannot vouch for are
        split into smaller ones, down to single samples. Each sample is computed as the plain
        sampling computes it, so the answer is the same, bit for bit."""
        field = self.clearance().reshape(-1)
        threshold = np.float32(radius)
        last = np.maximum(counts - 1, 1)
        spacing = lengths / last * (1.0 + 1e-12)        # between neighbouring samples, at most
        # Axis-major (ndim, K), rows gathered by take: numpy's row indexing of an (M, 2) array
        # and its reductions over an axis of 2 cost ten times the arithmetic at these sizes.
        start, direction = a.T, (b - a).T
        origin, shape = self._origin[:, None], self._size_xyz[:, None]
        slack = 2.0 * self._resolution                  # a cell diagonal, and rounding
        blocked = np.zeros(len(a), dtype=bool)
        seg = np.arange(len(a))
        low, high = np.zeros(len(a), dtype=np.int64), counts
        # All axes at once and ndarray methods, not np.repeat's wrapper: this runs every control
        # cycle (goal guidance), where the calls' overhead outweighs the arithmetic.
        for size in levels:
            parts = -(-(high - low) // size)
            seg, base, top = seg.repeat(parts), low.repeat(parts), high.repeat(parts)
            low = base + size * (np.arange(seg.size) - (parts.cumsum() - parts).repeat(parts))
            high = np.minimum(low + size, top)
            frac = low / last.take(seg)
            cell = np.floor((start.take(seg, axis=1) + direction.take(seg, axis=1) * frac - origin)
                            / self._resolution).astype(np.int64)          # (ndim, M)
            inside = (cell.view(np.uint64) < shape).all(axis=0)
            flat = self._flat_strides @ cell
            value = np.where(inside, field.take(np.where(inside, flat, 0)), np.float32(0.0))
            free = value > threshold
            blocked[seg[~free]] = True
            if size == 1:
                break
            # The rest of a block lies within (its length - 1) spacings of its first sample.
            vouched = (value - (high - low - 1) * spacing.take(seg) - (slack + 1e-6 * value)
                       > radius)
            open_ = (free & ~vouched & (high - low > 1) & ~blocked.take(seg)).nonzero()[0]
            if open_.size == 0:
                break
            seg, low, high = seg.take(open_), low.take(open_), high.take(open_)
        return ~blocked

    def __repr__(self) -> str:
        return (f'OccupancyGrid(shape={self.shape}, resolution={self._resolution}, '
                f'origin={self._origin.tolist()})')
