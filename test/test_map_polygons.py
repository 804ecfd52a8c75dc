"""Occupancy grid -> ORCA polygons: orientation, enclosures, simplification, bad input."""
import numpy as np
import pytest
from scipy import ndimage

from orca_nav.core.avoidance.map_polygons import grid_to_polygons, signed_area
from orca_nav.core.grid import OccupancyGrid


def winding_number(polygons, points):
    """Sum over all polygons of the winding number around each point (K,).

    With RVO2's convention (solid on the left of every edge) this is 1 inside material, 0 in free
    space: an island (CCW) counts +1 inside, an enclosure (CW) cancels its outer island. When the
    map border is a wall its outer rim is dropped (nothing can reach it), so every value is 1 less.
    """
    a = np.concatenate(polygons)
    b = np.concatenate([np.roll(p, -1, axis=0) for p in polygons])
    px, py = points[:, 0:1], points[:, 1:2]
    is_left = (b[:, 0] - a[:, 0]) * (py - a[:, 1]) - (px - a[:, 0]) * (b[:, 1] - a[:, 1])
    upward = (a[:, 1] <= py) & (b[:, 1] > py) & (is_left > 0)
    downward = (a[:, 1] > py) & (b[:, 1] <= py) & (is_left < 0)
    return upward.sum(axis=1) - downward.sum(axis=1)


def room_grid():
    """A 40 x 30 cell room (0.1 m cells) with one-cell walls, a pillar and an L-shaped block."""
    occ = np.zeros((30, 40), dtype=bool)
    occ[0, :] = occ[-1, :] = occ[:, 0] = occ[:, -1] = True
    occ[10:14, 8:12] = True  # pillar
    occ[18:26, 25:28] = True  # L: vertical bar
    occ[23:26, 28:34] = True  # L: foot
    return OccupancyGrid(occ, 0.1, (-1.0, 2.0))


def test_single_cell_is_counter_clockwise_square_in_world_coordinates():
    occ = np.zeros((5, 6), dtype=bool)
    occ[2, 3] = True
    polygons = grid_to_polygons(OccupancyGrid(occ, 0.5, (1.0, 2.0)), border_is_wall=False)
    assert len(polygons) == 1
    square = polygons[0]
    assert signed_area(square) == pytest.approx(0.25)
    # Cell (ix=3, iy=2) covers x in [2.5, 3.0], y in [3.0, 3.5].
    assert sorted(map(tuple, square.tolist())) == [(2.5, 3.0), (2.5, 3.5), (3.0, 3.0), (3.0, 3.5)]


def test_room_walls_enclose_free_space_clockwise_and_free_cells_are_outside_every_obstacle():
    grid = room_grid()
    polygons = grid_to_polygons(grid, tolerance=0.0, border_is_wall=False)
    areas = sorted(signed_area(p) for p in polygons)
    # Wall ring: outer island (CCW, 4.0 x 3.0 m) and the room inside it (CW, 3.8 x 2.8 m).
    assert areas[0] == pytest.approx(-3.8 * 2.8)
    assert areas[-1] == pytest.approx(4.0 * 3.0)
    assert sum(a > 0 for a in areas) == 3 and sum(a < 0 for a in areas) == 1
    # Exact topology: every cell centre is inside material iff the cell is occupied.
    iy, ix = np.nonzero(np.ones(grid.shape, dtype=bool))
    centres = grid.cell_centers(np.stack([ix, iy], axis=1))
    inside = winding_number(polygons, centres)
    np.testing.assert_array_equal(inside, grid.occupied[iy, ix].astype(int))


def test_map_border_becomes_a_wall_seen_from_inside():
    grid = OccupancyGrid(np.zeros((20, 30), dtype=bool), 0.1, (0.0, 0.0))
    polygons = grid_to_polygons(grid)
    assert len(polygons) == 1
    assert signed_area(polygons[0]) == pytest.approx(-3.0 * 2.0)  # clockwise: solid outside
    np.testing.assert_allclose(polygons[0].min(axis=0), [0.0, 0.0])
    np.testing.assert_allclose(polygons[0].max(axis=0), [3.0, 2.0])
    assert winding_number(polygons, np.array([[1.5, 1.0], [0.05, 1.95]])).tolist() == [-1, -1]
    # Without a border wall an empty map has no obstacles at all.
    assert grid_to_polygons(grid, border_is_wall=False) == []


def test_obstacle_touching_the_border_merges_into_the_enclosing_wall():
    occ = np.zeros((20, 20), dtype=bool)
    occ[0:8, 5:9] = True  # juts in from the bottom edge
    grid = OccupancyGrid(occ, 1.0, (0.0, 0.0))
    polygons = grid_to_polygons(grid, tolerance=0.0)
    assert len(polygons) == 1
    assert signed_area(polygons[0]) == pytest.approx(-(400 - 32))
    iy, ix = np.nonzero(np.ones(grid.shape, dtype=bool))
    centres = grid.cell_centers(np.stack([ix, iy], axis=1))
    np.testing.assert_array_equal(winding_number(polygons, centres), occ[iy, ix].astype(int) - 1)


def test_diagonal_touching_cells_give_two_simple_loops():
    occ = np.zeros((4, 4), dtype=bool)
    occ[1, 1] = occ[2, 2] = True
    polygons = grid_to_polygons(OccupancyGrid(occ, 1.0, (0.0, 0.0)), border_is_wall=False)
    assert len(polygons) == 2
    for square in polygons:
        assert len(square) == 4 and signed_area(square) == pytest.approx(1.0)


def test_douglas_peucker_simplifies_a_disc_within_tolerance():
    resolution = 0.05
    yy, xx = np.mgrid[:200, :200]
    occ = (xx - 100) ** 2 + (yy - 100) ** 2 < 60 ** 2
    grid = OccupancyGrid(occ, resolution, (0.0, 0.0))
    raw = grid_to_polygons(grid, tolerance=0.0, border_is_wall=False)[0]
    simple = grid_to_polygons(grid, border_is_wall=False)[0]
    assert signed_area(simple) > 0
    assert len(simple) < len(raw) / 2
    # Every staircase corner lies within the tolerance of the simplified outline.
    a, b = simple, np.roll(simple, -1, axis=0)
    ab = b - a
    t = np.clip(np.einsum('kej,ej->ke', raw[:, None, :] - a, ab) / np.einsum('ej,ej->e', ab, ab),
                0, 1)
    nearest = a + t[..., None] * ab
    distance = np.linalg.norm(raw[:, None, :] - nearest, axis=2).min(axis=1)
    assert distance.max() <= 0.75 * resolution + 1e-9
    assert signed_area(simple) == pytest.approx(signed_area(raw), rel=0.02)


def test_inflation_grows_the_obstacles():
    grid = room_grid()
    plain = grid_to_polygons(grid, border_is_wall=False)
    inflated = grid_to_polygons(grid, inflation=0.3, border_is_wall=False)
    assert sum(signed_area(p) for p in inflated) > sum(signed_area(p) for p in plain) + 1.0
    # A free point 0.2 m from the pillar (x in [-0.2, 0.2], y in [3.0, 3.4]) is now inside material.
    probe = np.array([[0.4, 3.2]])
    assert winding_number(plain, probe)[0] == 0
    assert winding_number(inflated, probe)[0] == 1


def test_large_random_map_topology_holds_after_simplification():
    rng = np.random.default_rng(3)
    occ = ndimage.binary_dilation(rng.random((300, 300)) < 0.004, iterations=2)
    grid = OccupancyGrid(occ, 0.05, (0.0, 0.0))
    polygons = grid_to_polygons(grid)
    # Cell centres at least two cells away from any boundary keep their side of it.
    clearance_free = ndimage.distance_transform_edt(~occ)
    clearance_occ = ndimage.distance_transform_edt(occ)
    far = (clearance_free > 2) | (clearance_occ > 2)
    far[:2, :] = far[-2:, :] = far[:, :2] = far[:, -2:] = False
    iy, ix = np.nonzero(far)
    pick = rng.choice(len(iy), size=400, replace=False)
    centres = grid.cell_centers(np.stack([ix[pick], iy[pick]], axis=1))
    np.testing.assert_array_equal(winding_number(polygons, centres),
                                  occ[iy[pick], ix[pick]].astype(int) - 1)


@pytest.mark.parametrize('kwargs, name', [
    ({'inflation': -0.1}, 'inflation'),
    ({'inflation': float('nan')}, 'inflation'),
    ({'tolerance': 0.2}, 'tolerance'),
])
def test_bad_arguments_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        grid_to_polygons(room_grid(), **kwargs)


def test_three_dimensional_grid_is_rejected():
    grid = OccupancyGrid(np.zeros((2, 3, 4), dtype=bool), 0.1, (0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match='grid'):
        grid_to_polygons(grid)


def room_with_pillar_run(polygons, steps=150):
    """Five agents driven into the walls of an 8 x 6 m room through OrcaSimulator."""
    from orca_nav.core.avoidance import OrcaParams, OrcaSimulator, prepare_obstacles
    params = OrcaParams(time_step=0.1, neighbor_dist=3.0, max_neighbors=10, time_horizon=2.0,
                        time_horizon_obst=2.0, radius=0.2, max_speed=1.0)
    sim = OrcaSimulator(params)
    sim.set_obstacles(prepare_obstacles(polygons))  # enclosures allowed
    starts = np.array([[0.5, 3.0], [7.5, 3.0], [4.0, 0.5], [1.0, 1.0], [2.0, 3.7]])
    goals = np.array([[-5.0, 3.0], [15.0, 3.0], [4.0, -5.0], [-3.0, -3.0], [6.0, 3.7]])
    for start in starts:
        sim.add_agent(start)
    track = []
    for _ in range(steps):
        offset = goals - sim.positions
        sim.set_pref_velocities(
            offset / np.maximum(np.linalg.norm(offset, axis=1, keepdims=True), 1.0))
        sim.step()
        track.append(sim.positions)
    return np.array(track), params


def test_agents_inside_a_walled_room_stay_inside_and_pass_the_pillar():
    occ = np.zeros((60, 80), dtype=bool)
    occ[25:35, 35:45] = True  # pillar between x, y = (3.5, 2.5) and (4.5, 3.5)
    grid = OccupancyGrid(occ, 0.1, (0.0, 0.0))
    polygons = grid_to_polygons(grid)  # map border = wall
    track, params = room_with_pillar_run(polygons)
    # Pushed against the border by their goals, never through it (ORCA's slack: 1 cm).
    assert track[..., 0].min() >= params.radius - 0.01
    assert track[..., 1].min() >= params.radius - 0.01
    assert track[..., 0].max() <= 8.0 - params.radius + 0.01
    assert track[..., 1].max() <= 6.0 - params.radius + 0.01
    # Agent 4 skimmed past the pillar (its path clears it by exactly the radius) to x = 6.
    assert track[-1, 4, 0] > 5.5
    pillar_gap = np.maximum(np.abs(track[:, 4] - [4.0, 3.0]) - 0.5, 0.0)
    assert np.linalg.norm(pillar_gap, axis=1).min() >= params.radius - 0.01


def test_room_polygons_give_rvo2_the_same_velocities():
    pyrvo = pytest.importorskip('pyrvo')
    from orca_nav.core.avoidance import OrcaParams, compute_velocities, prepare_obstacles
    occ = np.zeros((60, 80), dtype=bool)
    occ[25:35, 35:45] = True
    polygons = grid_to_polygons(OccupancyGrid(occ, 0.1, (0.0, 0.0)))
    params = OrcaParams(time_step=0.1, neighbor_dist=3.0, max_neighbors=10, time_horizon=2.0,
                        time_horizon_obst=2.0, radius=0.2, max_speed=1.0)
    sim = pyrvo.RVOSimulator()
    sim.set_time_step(params.time_step)
    sim.set_agent_defaults(3.0, 10, 2.0, 2.0, 0.2, 1.0)
    for polygon in polygons:
        sim.add_obstacle([tuple(map(float, v)) for v in polygon])
    sim.process_obstacles()
    track, _ = room_with_pillar_run(polygons, steps=40)
    positions, velocities = track[-1], (track[-1] - track[-2]) / params.time_step
    pref = np.array([[1.0, 0.0], [0.0, -1.0], [-1.0, 0.3], [0.2, 1.0], [-0.7, -0.7]])
    for i, (p, v, w) in enumerate(zip(positions, velocities, pref)):
        sim.add_agent((float(p[0]), float(p[1])))
        sim.set_agent_velocity(i, (float(v[0]), float(v[1])))
        sim.set_agent_pref_velocity(i, (float(w[0]), float(w[1])))
    sim.do_step()
    expected = np.array([sim.get_agent_velocity(i).to_tuple() for i in range(len(positions))])
    ours = compute_velocities(positions, velocities, pref, params, prepare_obstacles(polygons))
    np.testing.assert_allclose(ours, expected, atol=1e-5)
