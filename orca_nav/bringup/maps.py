"""The maps a fleet names, read once per process.

The fleet file's checks, a scenario's placement, the node graph (the voxel size), the RViz
config and the demo's report all need a fleet's maps; each asks here and gets the same grid, with
its clearance field computed once, for as long as neither the map's YAML nor the image or voxel
file it names has changed on disk.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Tuple

import yaml

from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.map_image import PathLike
from orca_nav.core.voxel_map import load_voxel_map


def load_map(path: PathLike) -> OccupancyGrid:
    """A map_server map (YAML + image), as `OccupancyGrid.from_map_yaml` reads it."""
    return _load('image', Path(path).resolve(), _stamps(path, 'image'))


def load_map_3d(path: PathLike) -> OccupancyGrid:
    """A voxel map (YAML + .npz), as `voxel_map.load_voxel_map` reads it."""
    return _load('voxels', Path(path).resolve(), _stamps(path, 'voxels'))


def _stamps(path: PathLike, data_key: str) -> Tuple:
    """When the map's YAML and the data file it names last changed (and their sizes); the
    loaders report a file that is missing or unreadable."""
    path = Path(path)
    try:
        files = [path]
        meta = yaml.safe_load(path.read_text(encoding='utf-8'))
        if isinstance(meta, dict) and isinstance(meta.get(data_key), str):
            files.append(path.parent / meta[data_key])
        return tuple((s.st_mtime_ns, s.st_size) for s in (f.stat() for f in files))
    except (OSError, yaml.YAMLError):
        return ()


@functools.lru_cache(maxsize=8)
def _load(data_key: str, path: Path, stamps: Tuple) -> OccupancyGrid:
    return OccupancyGrid.from_map_yaml(path) if data_key == 'image' else load_voxel_map(path)
