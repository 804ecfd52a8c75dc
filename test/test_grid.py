"""OccupancyGrid: construction, conversions, map_server I/O, clearance and collision checks."""
import time

import numpy as np
import pytest

from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.map_image import read_pgm, write_pgm


def small_map():
    occ = np.zeros((4, 6), dtype=bool)  # 6 wide (x), 4 tall (y)
    occ[1, 4] = True                    # cell ix=4, iy=1
    return OccupancyGrid(occ, 0.5, (1.0, -2.0))


def test_properties_and_indexing_order():
    g = small_map()
    assert g.ndim == 2 and g.shape == (4, 6) and g.resolution == 0.5
    np.testing.assert_array_equal(g.origin, [1.0, -2.0])
    # cell (ix=4, iy=1) covers x in [3, 3.5), y in [-1.5, -1)
    np.testing.assert_array_equal(g.world_to_cell([[3.2, -1.2], [0.9, -2.0]]), [[4, 1], [-1, 0]])
    np.testing.assert_allclose(g.cell_centers([[4, 1]]), [[3.25, -1.25]])
    points = [[3.2, -1.2], [3.6, -1.2], [0.9, -1.0], [3.9, -0.5], [4.0, -0.5]]
    np.testing.assert_array_equal(g.occupied_at(points), [True, False, True, False, True])
    np.testing.assert_array_equal(g.in_bounds([[1.0, -2.0], [3.99, -0.01], [4.0, 0.0]]),
                                  [True, True, False])
    lo, hi = g.extent
    np.testing.assert_allclose(lo, [1.0, -2.0])
    np.testing.assert_allclose(hi, [4.0, 0.0])


def test_3d_indexing_order():
    occ = np.zeros((3, 4, 5), dtype=bool)
    occ[2, 1, 3] = True  # iz=2, iy=1, ix=3
    g = OccupancyGrid(occ, 0.1, (0, 0, 0))
    np.testing.assert_array_equal(g.world_to_cell([[0.35, 0.15, 0.25]]), [[3, 1, 2]])
    assert g.occupied_at([[0.35, 0.15, 0.25]])[0]
    assert not g.occupied_at([[0.35, 0.15, 0.15]])[0]


@pytest.mark.parametrize('kwargs, field', [
    (dict(occupied=np.zeros((3, 3)), resolution=0.0, origin=(0, 0)), 'resolution'),
    (dict(occupied=np.zeros((3, 3)), resolution=-1.0, origin=(0, 0)), 'resolution'),
    (dict(occupied=np.zeros((3, 3)), resolution=float('nan'), origin=(0, 0)), 'resolution'),
    (dict(occupied=np.zeros((3, 3)), resolution=0.1, origin=(0, 0, 0)), 'origin'),
    (dict(occupied=np.zeros((3, 3, 3)), resolution=0.1, origin=(0, 0)), 'origin'),
    (dict(occupied=np.zeros((3, 3)), resolution=0.1, origin=(0, float('inf'))), 'origin'),
    (dict(occupied=np.zeros(3), resolution=0.1, origin=(0,)), 'occupied'),
])
def test_bad_construction(kwargs, field):
    with pytest.raises(ValueError, match=field):
        OccupancyGrid(**kwargs)


def test_bad_points():
    g = small_map()
    with pytest.raises(ValueError, match='points'):
        g.occupied_at([[np.nan, 0.0]])
    with pytest.raises(ValueError, match='points'):
        g.occupied_at([[0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match='p1'):
        g.segment_free([[1.5, -1.5]], [[np.inf, -1.5]])


def test_from_int8_policies():
    data = np.array([0, 100, -1, 50,
                     65, 64, 0, 0], dtype=np.int8)
    g = OccupancyGrid.from_int8(data, 4, 2, 0.1, (0.0, 0.0))
    np.testing.assert_array_equal(g.occupied,
                                  [[False, True, True, False], [True, False, False, False]])
    g2 = OccupancyGrid.from_int8(data, 4, 2, 0.1, (0.0, 0.0), unknown_occupied=False,
                                 occupied_threshold=50)
    np.testing.assert_array_equal(g2.occupied,
                                  [[False, True, False, True], [True, True, False, False]])
    with pytest.raises(ValueError, match='data'):
        OccupancyGrid.from_int8(data, 3, 2, 0.1, (0.0, 0.0))
    with pytest.raises(ValueError, match=r'data\[1\]'):
        OccupancyGrid.from_int8(np.array([0, 101]), 2, 1, 0.1, (0.0, 0.0))
    with pytest.raises(ValueError, match='origin'):
        OccupancyGrid.from_int8(data, 4, 2, 0.1, (0.0, 0.0, 0.0))
    np.testing.assert_array_equal(g.to_int8(), np.where(g.occupied.ravel(), 100, 0))


def test_map_yaml_roundtrip(tmp_path):
    rng = np.random.default_rng(0)
    occ = rng.random((37, 53)) < 0.3
    g = OccupancyGrid(occ, 0.05, (-3.25, 7.1))
    yaml_path, pgm_path = g.save_map_yaml(tmp_path / 'm')
    back = OccupancyGrid.from_map_yaml(yaml_path)
    np.testing.assert_array_equal(back.occupied, g.occupied)
    assert back.resolution == g.resolution
    np.testing.assert_array_equal(back.origin, g.origin)
    # The image's top row is the map's top (max y) row.
    pixels, maxval = read_pgm(pgm_path)
    assert maxval == 255
    np.testing.assert_array_equal(pixels[0] == 0, occ[-1])


def write_yaml(path, image, **fields):
    meta = dict(image=image, resolution=0.1, origin=[1.0, 2.0, 0.0], occupied_thresh=0.65,
                free_thresh=0.196, negate=0)
    meta.update(fields)
    path.write_text(''.join(f'{k}: {v}\n' for k, v in meta.items()))
    return path


def test_map_yaml_trinary_thresholds_negate_and_p2(tmp_path):
    # One image row, values chosen around the thresholds: occ = 1 - v/255.
    # 0 -> occ 1 (occupied), 254 -> free, 128 -> occ 0.498 (unknown), 89 -> occ 0.651 (occupied),
    # 90 -> occ 0.647 (unknown), 205 -> occ 0.196 (unknown: free needs occ < free_thresh).
    values = [0, 254, 128, 89, 90, 206]
    (tmp_path / 'a.pgm').write_text('P2\n# comment line\n6 1\n255\n'
                                    + ' '.join(map(str, values)) + '\n')
    y = write_yaml(tmp_path / 'a.yaml', 'a.pgm')
    g = OccupancyGrid.from_map_yaml(y, unknown_occupied=False)
    np.testing.assert_array_equal(g.occupied[0], [True, False, False, True, False, False])
    g_unknown = OccupancyGrid.from_map_yaml(y, unknown_occupied=True)
    np.testing.assert_array_equal(g_unknown.occupied[0], [True, False, True, True, True, False])
    np.testing.assert_array_equal(g.origin, [1.0, 2.0])
    # negate: bright is occupied.
    y2 = write_yaml(tmp_path / 'b.yaml', 'a.pgm', negate=1)
    gn = OccupancyGrid.from_map_yaml(y2, unknown_occupied=False)
    np.testing.assert_array_equal(gn.occupied[0], [False, True, False, False, False, True])


def test_map_yaml_rows_flipped_and_png(tmp_path):
    pixels = np.full((3, 2), 254, dtype=np.uint8)
    pixels[0, 1] = 0  # top-right pixel occupied -> cell ix=1, iy=2
    write_pgm(tmp_path / 'c.pgm', pixels)
    g = OccupancyGrid.from_map_yaml(write_yaml(tmp_path / 'c.yaml', 'c.pgm'))
    assert g.shape == (3, 2)
    np.testing.assert_array_equal(np.argwhere(g.occupied), [[2, 1]])
    matplotlib_image = pytest.importorskip('matplotlib.image')
    rgb = np.repeat(pixels[:, :, None], 3, axis=2)
    matplotlib_image.imsave(tmp_path / 'c.png', rgb)
    gp = OccupancyGrid.from_map_yaml(write_yaml(tmp_path / 'd.yaml', 'c.png'))
    np.testing.assert_array_equal(gp.occupied, g.occupied)


def test_map_yaml_bad_fields(tmp_path):
    write_pgm(tmp_path / 'e.pgm', np.zeros((2, 2), dtype=np.uint8))
    with pytest.raises(ValueError, match='yaw'):
        OccupancyGrid.from_map_yaml(write_yaml(tmp_path / 'e.yaml', 'e.pgm', origin=[0, 0, 0.5]))
    with pytest.raises(ValueError, match='resolution'):
        OccupancyGrid.from_map_yaml(write_yaml(tmp_path / 'f.yaml', 'e.pgm', resolution=0))
    with pytest.raises(ValueError, match='mode'):
        OccupancyGrid.from_map_yaml(write_yaml(tmp_path / 'g.yaml', 'e.pgm', mode='fancy'))


def test_clearance_and_inflation_match_brute_force():
    rng = np.random.default_rng(3)
    occ = rng.random((20, 30)) < 0.05
    g = OccupancyGrid(occ, 0.2, (0.0, 0.0))
    clear = g.clearance()
    assert clear.dtype == np.float32 and clear.shape == occ.shape
    iy, ix = np.indices(occ.shape)
    centres = np.stack([ix.ravel(), iy.ravel()], axis=1)
    # Occupied cells plus the ring just outside the map.
    ring = [(x, y) for x in range(-1, 31) for y in range(-1, 21) if x in (-1, 30) or y in (-1, 20)]
    obstacles = np.concatenate([np.argwhere(occ)[:, ::-1], np.array(ring)])
    brute = 0.2 * np.min(np.linalg.norm(centres[:, None, :] - obstacles[None, :, :], axis=2),
                         axis=1)
    np.testing.assert_allclose(clear.ravel(), brute, rtol=1e-6)
    assert g.clearance() is clear  # cached
    inf = g.inflated(0.45)
    np.testing.assert_array_equal(inf.occupied, clear <= np.float32(0.45))
    pts = rng.uniform([0, 0], [6, 4], size=(500, 2))
    np.testing.assert_array_equal(inf.occupied_at(pts), g.clearance_at(pts) <= np.float32(0.45))
    np.testing.assert_array_equal(g.points_free(pts, 0.45), ~inf.occupied_at(pts))


def test_segment_free_sweeps_thin_walls():
    occ = np.zeros((10, 10), dtype=bool)
    occ[:, 5] = True  # one-cell wall at x in [0.5, 0.6)
    g = OccupancyGrid(occ, 0.1, (0.0, 0.0))
    p0 = np.array([[0.15, 0.5], [0.15, 0.5], [0.15, 0.15], [0.15, 0.15]])
    p1 = np.array([[0.95, 0.5], [0.45, 0.5], [0.45, 0.85], [0.15, 0.15]])
    np.testing.assert_array_equal(g.segment_free(p0, p1), [False, True, True, True])
    # Radius: the segment ending at x=0.45 comes within 0.1 m of the wall's cell centres.
    np.testing.assert_array_equal(g.segment_free(p0[1:2], p1[1:2], radius=0.05), [True])
    np.testing.assert_array_equal(g.segment_free(p0[1:2], p1[1:2], radius=0.1), [False])
    # Random segments against dense point sampling.
    rng = np.random.default_rng(1)
    a = rng.uniform(0, 1, size=(300, 2))
    b = rng.uniform(0, 1, size=(300, 2))
    dense = a[:, None, :] + (b - a)[:, None, :] * np.linspace(0, 1, 2001)[None, :, None]
    expect = ~g.occupied_at(dense.reshape(-1, 2)).reshape(300, -1).any(axis=1)
    np.testing.assert_array_equal(g.segment_free(a, b), expect)


def _every_sample_free(g, a, b, radius):
    """segment_free's samples (spacing <= resolution / 2, both ends), each asked of points_free."""
    counts = np.ceil(np.linalg.norm(b - a, axis=1) / (0.5 * g.resolution)).astype(int) + 1
    return np.array([g.points_free(p + (q - p) * (np.arange(c)[:, None] / max(c - 1, 1)),
                                   radius).all() for p, q, c in zip(a, b, counts)])


@pytest.mark.parametrize('shape', [(40, 60), (12, 30, 40)])
def test_segment_free_answers_as_its_samples_also_when_it_skips_them(shape, monkeypatch):
    """Read from the clearance field, with and without skipping the samples it vouches for:
    the answer of every sample, near obstacles, the border and outside the map, radius 0
    included."""
    import orca_nav.core.grid as grid_module
    rng = np.random.default_rng(7)
    answers = []
    for occupied_fraction in (0.0005, 0.003, 0.03):
        g = OccupancyGrid(rng.random(shape) < occupied_fraction, 0.1,
                          rng.uniform(-3, 3, len(shape)))
        low, high = g.extent
        a = rng.uniform(low - 0.2, high + 0.2, (150, len(shape)))
        b = rng.uniform(low - 0.2, high + 0.2, (150, len(shape)))
        for radius in (0.0, 0.05, 0.3, 0.8):
            every = _every_sample_free(g, a, b, radius)
            g.clearance()       # radius 0 reads the field once there is one
            for skipping_from in (1 << 60, 0):
                monkeypatch.setattr(grid_module, '_SKIPPING_SAMPLES', skipping_from)
                np.testing.assert_array_equal(g.segment_free(a, b, radius), every)
            answers.append(every)
    assert 0.1 < np.concatenate(answers).mean() < 0.9     # both answers, often


def test_large_grid_about_a_byte_per_cell():
    """1e8 cells: the constructor keeps the caller's bool array (no copy) and point checks are
    vectorised lookups. The clearance field is not built by these calls."""
    occ = np.zeros((100, 1000, 1000), dtype=bool)  # 1e8 cells, 100 MB
    occ[50, 500, 500] = True
    start = time.perf_counter()
    g = OccupancyGrid(occ, 0.1, (0.0, 0.0, 0.0))
    assert np.shares_memory(g.occupied, occ)
    pts = np.random.default_rng(0).uniform(0, [100, 100, 10], size=(100_000, 3))
    hits = g.occupied_at(np.vstack([pts, [[50.05, 50.05, 5.05]]]))
    assert hits[-1] and not hits[:-1].any()
    assert g._clearance is None
    print(f'1e8-cell grid + 1e5 point checks: {time.perf_counter() - start:.2f} s')


def test_border_distance_and_uncached_inflation():
    occ = np.zeros((10, 20), dtype=bool)
    g = OccupancyGrid(occ, 0.1, (0.0, 0.0))
    inf = g.inflated(0.25)
    assert g._clearance is None  # inflation alone does not cache the float field
    # Only the border band (cells within 0.25 m of the outside ring) is inflated.
    np.testing.assert_array_equal(inf.occupied[:, 2:-2][2:-2], False)
    assert inf.occupied[0].all() and inf.occupied[:, 1].all()
    np.testing.assert_allclose(g.border_distance_at([[0.05, 0.55], [1.05, 0.45], [3.0, 0.5]]),
                               [0.1, 0.5, 0.0])


def test_coarse_geodesic_goes_around_walls():
    from orca_nav.core.coarse_geodesic import CoarseGeodesic
    occ = np.zeros((100, 100), dtype=bool)
    occ[:80, 48:52] = True                      # wall x 4.8-5.2 m from y = 0 to 8 m; gap above
    g = OccupancyGrid(occ, 0.1, (0.0, 0.0))
    goal, start = np.array([[8.0, 1.0]]), np.array([[2.0, 1.0]])
    detour = np.hypot(3.0, 8.0) + np.hypot(3.0, 8.0)  # over the wall's end at (5, 9)
    lattice = CoarseGeodesic(g, 5, optimistic=False)
    field = lattice.from_goal(goal)
    d = lattice.lookup(field, start)[0]
    # Close to the detour (minus the one-block-diagonal slack), far above the straight 6 m.
    assert detour - 2.0 < d < detour + 1.0
    assert lattice.lookup(field, goal)[0] == 0.0
    # The optimistic graph leaks through a wall thinner than a block (documented), never
    # overestimates the lattice, and still sees a detour around a thick wall.
    optimistic = CoarseGeodesic(g, 5, optimistic=True)
    assert optimistic.lookup(optimistic.from_goal(goal), start)[0] <= d
    thick = occ.copy()
    thick[:80, 40:60] = True
    optimistic = CoarseGeodesic(OccupancyGrid(thick, 0.1, (0.0, 0.0)), 5, optimistic=True)
    assert optimistic.lookup(optimistic.from_goal(goal), start)[0] > 12.0
    # Closing the thick wall's gap: the optimistic graph proves the goal unreachable.
    thick[80:, 40:60] = True
    geo = CoarseGeodesic(OccupancyGrid(thick, 0.1, (0.0, 0.0)), 5, optimistic=True)
    assert np.isinf(geo.lookup(geo.from_goal(goal), start)[0])
    with pytest.raises(ValueError, match='factor'):
        CoarseGeodesic(g, 0)


def test_coarse_geodesic_connected_components():
    from orca_nav.core.coarse_geodesic import CoarseGeodesic
    occ = np.zeros((60, 60), dtype=bool)
    occ[:, 25:35] = True                            # a 1 m thick wall splits the map
    geo = CoarseGeodesic(OccupancyGrid(occ, 0.1, (0.0, 0.0)), 4, optimistic=True)
    assert geo.connected([1.0, 1.0], [2.0, 5.0])
    assert not geo.connected([1.0, 1.0], [5.0, 1.0])
    assert not geo.connected([1.0, 1.0], [3.0, 3.0])   # inside the wall


@pytest.mark.parametrize('shape', [(37, 53), (9, 11, 13)])
def test_clearance_near_agrees_with_the_field_within_reach(shape):
    """A local read of the clearance gives the field's value wherever that is within reach,
    and more than reach elsewhere, without building the field."""
    rng = np.random.default_rng(4)
    occupied = rng.random(shape) < 0.02
    grid = OccupancyGrid(occupied, 0.1, np.zeros(len(shape)))
    lower, upper = grid.extent
    points = rng.uniform(lower - 0.2, upper + 0.2, size=(400, len(shape)))
    for reach in (0.0, 0.15, 0.35, 0.8):
        near = grid.clearance_near(points, reach)
        assert grid._clearance is None             # no field was built
        full = OccupancyGrid(occupied, 0.1, np.zeros(len(shape))).clearance_at(points)
        within = full <= reach
        assert np.array_equal(near[within], full[within])
        assert np.all(near[~within] > reach)
        assert near.dtype == np.float32
