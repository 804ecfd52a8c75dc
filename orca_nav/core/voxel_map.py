"""3-D maps: voxel map files and the occupied-voxel point list they travel as on ROS.

A voxel map file is a small YAML naming an ``.npz`` occupancy grid next to it (the format of
`OccupancyGrid.save_npz` / `from_npz`: packed ``[iz, iy, ix]`` occupancy, shape, resolution and
the origin, the corner of voxel 0), so the voxels stay binary and compressed:

    voxels: forest_3d.npz      # relative to the YAML file

On ROS the map is the list of its occupied voxel centres (a ``sensor_msgs/PointCloud2``, the
form Fast-Planner and EGO-Planner take a global map in). A point list carries no extent, so the
map's extent is the bounding box of its voxels: the shipped maps have a floor below z = 0 (and a
ceiling where nothing else reaches the top) spanning the whole map, so the box is the map, and
everything outside it counts as occupied (`OccupancyGrid`'s rule).
"""
from __future__ import annotations

from pathlib import Path
from typing import Tuple

import numpy as np

from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.map_image import PathLike
from orca_nav.core.validation import finite_at_least_zero

# A point further than this (in voxels) from the voxel grid of the given resolution means the
# resolution is not the map's.
OFF_GRID_TOLERANCE = 0.25
MAX_VOXELS = 1 << 27      # a bounding box bigger than this (128 MiB of bools) is refused


def load_voxel_map(path: PathLike) -> OccupancyGrid:
    """The 3-D grid of a voxel map YAML; ValueError naming the file and field if unusable."""
    import yaml

    path = Path(path)
    try:
        meta = yaml.safe_load(path.read_text(encoding='utf-8'))
    except OSError as err:
        raise ValueError(f'{path}: cannot read the voxel map file: {err}') from None
    except yaml.YAMLError as err:
        raise ValueError(f'{path}: not valid YAML: {err}') from None
    if not isinstance(meta, dict) or not isinstance(meta.get('voxels'), str):
        raise ValueError(f'{path}: a voxel map YAML needs `voxels: <file>.npz`, got {meta!r}')
    voxels = path.parent / meta['voxels']
    if not voxels.is_file():
        raise ValueError(f'{path}: voxels: {str(voxels)!r} does not exist')
    try:
        grid = OccupancyGrid.from_npz(voxels)
    except (OSError, ValueError, KeyError) as err:
        raise ValueError(f'{path}: voxels: cannot load {str(voxels)!r}: {err}') from None
    if grid.ndim != 3:
        raise ValueError(f'{path}: voxels: {str(voxels)!r} holds a {grid.ndim}-D grid, '
                         'a voxel map is 3-D')
    return grid


def save_voxel_map(grid: OccupancyGrid, path_stem: PathLike) -> Tuple[Path, Path]:
    """Write ``<stem>.yaml`` + ``<stem>.npz`` that `load_voxel_map` reads back to `grid`."""
    if grid.ndim != 3:
        raise ValueError(f'save_voxel_map needs a 3-D grid, this one is {grid.ndim}-D')
    stem = Path(path_stem).with_suffix('')
    npz = grid.save_npz(stem.with_name(stem.name + '.npz'))
    yaml_path = stem.with_name(stem.name + '.yaml')
    yaml_path.write_text(f'voxels: {npz.name}\n', encoding='utf-8')
    return yaml_path, npz


def occupied_centres(grid: OccupancyGrid) -> np.ndarray:
    """(K, 3) float32 centres x, y, z of the occupied voxels of a 3-D grid."""
    if grid.ndim != 3:
        raise ValueError(f'occupied_centres needs a 3-D grid, this one is {grid.ndim}-D')
    iz, iy, ix = np.nonzero(grid.occupied)
    centres = grid.origin + (np.stack([ix, iy, iz], axis=1) + 0.5) * grid.resolution
    return centres.astype(np.float32)


def grid_from_centres(points, resolution: float) -> OccupancyGrid:
    """The 3-D grid whose occupied voxels are those holding `points` (K, 3), the voxel centres of
    a map of `resolution`; its extent is their bounding box (a voxel more on no side).

    ValueError when there are no points, a point is not finite, or the points do not sit on one
    voxel grid of that resolution (the resolution is not the map's)."""
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f'points must have shape (K, 3), got {pts.shape}')
    finite_at_least_zero('resolution', resolution, positive=True)
    if len(pts) == 0:
        raise ValueError('no points: a 3-D map needs at least one occupied voxel')
    bad = np.flatnonzero(~np.isfinite(pts).all(axis=1))
    if bad.size:
        raise ValueError(f'points[{int(bad[0])}] is not finite: {pts[bad[0]].tolist()}')
    lowest = pts.min(axis=0)
    steps = (pts - lowest) / resolution
    cells = np.rint(steps).astype(np.int64)
    off = np.abs(steps - cells).max(axis=1)
    worst = int(np.argmax(off))
    if off[worst] > OFF_GRID_TOLERANCE:
        raise ValueError(f'points[{worst}] {pts[worst].tolist()} is {off[worst]:.2f} voxels off '
                         f'the grid of resolution {resolution:g} m through the lowest point: '
                         'is the resolution the map\'s?')
    shape_xyz = cells.max(axis=0) + 1
    if int(np.prod(shape_xyz)) > MAX_VOXELS:
        raise ValueError(f'the points span {shape_xyz.tolist()} voxels of {resolution:g} m '
                         f'(more than {MAX_VOXELS}): is the resolution the map\'s?')
    occupied = np.zeros(tuple(shape_xyz[::-1]), dtype=bool)
    occupied[cells[:, 2], cells[:, 1], cells[:, 0]] = True
    # Centres travel as float32 (about 1e-7 relative): the origin is rounded to a micrometre.
    return OccupancyGrid(occupied, resolution, np.round(lowest - 0.5 * resolution, 6) + 0.0)
