"""Generates the example maps in config/maps/ (map_server YAML + binary PGM), reproducibly.

    .venv/bin/python tools/make_maps.py [--out DIR] [--shared DIR] [--check]

Every map except the two reference ones is a list of axis-aligned rectangles; a cell is occupied
when its centre lies inside a rectangle (the convention of ../shared/refdata/planners), and the
rectangle edges are chosen to fall between cell centres. `--check` regenerates into a temporary
folder and fails if any committed file differs. Geometry of each map: config/maps/README.md.
"""
from __future__ import annotations

import argparse
import filecmp
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from orca_nav.core.grid import OccupancyGrid  # noqa: E402  (needs the repository on sys.path)
from orca_nav.core.voxel_map import load_voxel_map, save_voxel_map  # noqa: E402

Rect = Tuple[float, float, float, float]       # xmin, ymin, xmax, ymax (m)


def rasterise(extent: Rect, resolution: float, rects: Sequence[Rect],
              wall: float = 0.0) -> OccupancyGrid:
    """Grid covering `extent` whose cells are occupied when their centre lies in a rectangle;
    `wall` > 0 adds an outer wall of that thickness inside the extent."""
    return OccupancyGrid.from_rectangles(extent, resolution, rects, wall)


def open_40x40() -> OccupancyGrid:
    """40 m x 40 m centred on the origin, only a 0.4 m outer wall."""
    return rasterise((-20.0, -20.0, 20.0, 20.0), 0.2, [], wall=0.4)


def corridor() -> OccupancyGrid:
    """Two 10 m x ~10 m rooms (x -14..-4 and 4..14) joined by a corridor 8 m long and 2.5 m wide
    (y -1.25..1.25), centred on the origin; 0.3 m outer wall."""
    ymax = 5.05                        # puts the corridor edges +-1.25 between cell centres
    return rasterise((-14.0, -ymax, 14.0, ymax), 0.1,
                     [(-4.0, 1.25, 4.0, ymax), (-4.0, -ymax, 4.0, -1.25)], wall=0.3)


BLOCKS_SCALE = 0.2


def blocks() -> OccupancyGrid:
    """RVO2's examples/Blocks.cc scaled by 0.2: four 6 m square blocks at |x|, |y| in 2..8
    (RVO2: 30 m blocks at 10..40), agents' start/goal squares at |x|, |y| in 11..19
    (RVO2: 55..95); world 42 m x 42 m centred on the origin with a 0.4 m outer wall."""
    lo, hi = 10.0 * BLOCKS_SCALE, 40.0 * BLOCKS_SCALE
    rects = [(sx * lo if sx > 0 else -hi, sy * lo if sy > 0 else -hi,
              sx * hi if sx > 0 else -lo, sy * hi if sy > 0 else -lo)
             for sx in (1, -1) for sy in (1, -1)]
    return rasterise((-21.0, -21.0, 21.0, 21.0), 0.2, rects, wall=0.4)


def warehouse() -> OccupancyGrid:
    """30 m x 20 m (origin at the lower-left corner), 0.3 m outer wall. Two banks of shelves
    (x 5..14 and 16..25, 1 m deep) in five rows at y 3, 6, 9, 12, 15 (each row y..y+1), so the
    aisles between rows are 2 m wide (two 0.3 m robots pass with 0.8 m to spare), a 2 m
    cross-aisle at x 14..16, and open areas at both ends (x < 5, x > 25) and along y < 3, y > 16."""
    rows = (3.0, 6.0, 9.0, 12.0, 15.0)
    rects = [(x0, y, x1, y + 1.0) for y in rows for x0, x1 in ((5.0, 14.0), (16.0, 25.0))]
    return rasterise((0.0, 0.0, 30.0, 20.0), 0.1, rects, wall=0.3)


def parking_2d(shared: Path) -> OccupancyGrid:
    """Exactly ../shared/refdata/planners/parking_2d.npz (0.1 m cells, origin 0, 0)."""
    data = np.load(shared / 'refdata' / 'planners' / 'parking_2d.npz')
    return OccupancyGrid(data['grid'] >= 100, float(data['resolution']),
                         tuple(float(v) for v in data['origin'][:2]))


def forest_2d(shared: Path) -> OccupancyGrid:
    """The z = 1 m slice of ../shared/refdata/planners/forest_3d.npz (its cylinders are full
    height), downsampled from 0.1 m to 0.2 m cells; a coarse cell is occupied if any of its four
    fine cells is (conservative)."""
    data = np.load(shared / 'refdata' / 'planners' / 'forest_3d.npz')
    nz, ny, nx = (int(v) for v in data['shape'])
    occ = np.unpackbits(data['occ_packed'])[:nz * ny * nx].reshape(nz, ny, nx).astype(bool)
    res = float(data['resolution'])
    iz = int(np.floor((1.0 - float(data['origin'][2])) / res))
    layer = occ[iz]
    coarse = layer.reshape(ny // 2, 2, nx // 2, 2).any(axis=(1, 3))
    return OccupancyGrid(coarse, 2.0 * res, tuple(float(v) for v in data['origin'][:2]))


def _with_floor(occupied: np.ndarray, ceiling: bool = False) -> np.ndarray:
    """`occupied` [iz, iy, ix] with a one-voxel floor below it (and a ceiling above it): the
    point list of the map then spans the whole map (`orca_nav.core.voxel_map`)."""
    layer = np.ones((1,) + occupied.shape[1:], dtype=bool)
    return np.concatenate([layer, occupied] + ([layer] if ceiling else []), axis=0)


def forest_3d(shared: Path) -> OccupancyGrid:
    """../shared/refdata/planners/forest_3d.npz (40 x 40 x 5 m) at 0.2 m voxels, a coarse
    voxel occupied if any of its eight 0.1 m voxels is (conservative), on a floor (z -0.2..0)."""
    fine = OccupancyGrid.from_npz(shared / 'refdata' / 'planners' / 'forest_3d.npz')
    nz, ny, nx = fine.shape
    coarse = fine.occupied.reshape(nz // 2, 2, ny // 2, 2, nx // 2, 2).any(axis=(1, 3, 5))
    res = 2.0 * fine.resolution
    return OccupancyGrid(_with_floor(coarse), res, fine.origin - np.array([0.0, 0.0, res]))


def open_3d() -> OccupancyGrid:
    """An empty 30 x 30 x 16 m volume (x, y -15..15, z 0..16), 0.2 m voxels, between a floor
    (z -0.2..0) and a ceiling (z 16..16.2): open space for drones."""
    res = 0.2
    empty = np.zeros((80, 150, 150), dtype=bool)
    return OccupancyGrid(_with_floor(empty, ceiling=True), res, (-15.0, -15.0, -res))


def all_maps(shared: Path) -> Dict[str, OccupancyGrid]:
    return {'open_40x40': open_40x40(), 'corridor': corridor(), 'blocks': blocks(),
            'warehouse': warehouse(), 'parking_2d': parking_2d(shared),
            'forest_2d': forest_2d(shared)}


def voxel_maps(shared: Path) -> Dict[str, OccupancyGrid]:
    return {'forest_3d': forest_3d(shared), 'open_3d': open_3d()}


def write_maps(out: Path, shared: Path) -> List[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, grid in all_maps(shared).items():
        written.extend(grid.save_map_yaml(out / name))
    for name, grid in voxel_maps(shared).items():
        written.extend(save_voxel_map(grid, out / name))
    return written


def _same(fresh: Path, committed: Path) -> bool:
    """Same file contents; an .npz (whose zip entries carry a time stamp) by its grid."""
    if not committed.is_file():
        return False
    if fresh.suffix != '.npz':
        return filecmp.cmp(fresh, committed, shallow=False)
    a = load_voxel_map(fresh.with_suffix('.yaml'))
    b = load_voxel_map(committed.with_suffix('.yaml'))
    return (a.resolution == b.resolution and np.array_equal(a.origin, b.origin)
            and np.array_equal(a.occupied, b.occupied))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', type=Path, default=REPO / 'config' / 'maps')
    parser.add_argument('--shared', type=Path, default=REPO.parent / 'shared',
                        help='the shared folder holding refdata/planners')
    parser.add_argument('--check', action='store_true',
                        help='fail if the files in --out differ from freshly generated ones')
    args = parser.parse_args(argv)
    if not args.check:
        for path in write_maps(args.out, args.shared):
            print(f'wrote {path} ({path.stat().st_size} bytes)')
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = write_maps(Path(tmp), args.shared)
        stale = [p.name for p in fresh if not _same(p, args.out / p.name)]
    if stale:
        print(f'out of date in {args.out}: {", ".join(stale)}', file=sys.stderr)
        return 1
    print(f'{len(fresh)} map files in {args.out} are up to date')
    return 0


if __name__ == '__main__':
    sys.exit(main())
