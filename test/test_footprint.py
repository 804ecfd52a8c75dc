"""Footprint collision checks: the clearance shortcut agrees with the full sample test."""
import math

import numpy as np
import pytest
from scipy.spatial import cKDTree

from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.planning.footprint import Footprint, FootprintChecker

from conftest import SHARED

CAR = Footprint(length=4.5, width=2.0, rear_overhang=0.9)


@pytest.fixture(scope='module')
def parking_grid():
    m = np.load(SHARED / 'refdata' / 'planners' / 'parking_2d.npz')
    return OccupancyGrid(m['grid'] > 50, float(m['resolution']), m['origin'])


def _rect_points(pose, length, width, rear, spacing):
    """Independent reference: a dense lattice over the rectangle, in world coordinates."""
    xs = np.linspace(-rear, length - rear, int(math.ceil(length / spacing)) + 1)
    ys = np.linspace(-width / 2, width / 2, int(math.ceil(width / spacing)) + 1)
    gx, gy = np.meshgrid(xs, ys)
    c, s = math.cos(pose[2]), math.sin(pose[2])
    gx, gy = gx.ravel(), gy.ravel()
    return np.column_stack([pose[0] + c * gx - s * gy, pose[1] + s * gx + c * gy])


def test_shortcut_agrees_with_sample_test_on_random_poses(parking_grid):
    checker = FootprintChecker(parking_grid, CAR)
    rng = np.random.default_rng(0)
    poses = np.column_stack([rng.uniform(0, 60, 5000), rng.uniform(0, 40, 5000),
                             rng.uniform(-4, 4, 5000)])
    fast = checker.free(poses)
    assert np.array_equal(fast, checker.free_by_samples(poses))
    assert checker.tier_counts.sum() == len(poses) and checker.tier_counts[2] < 0.2 * len(poses)
    assert 0.2 < fast.mean() < 0.8       # the sample mixes free and colliding poses
    # An independent 2 cm lattice finds no occupied cell under any pose called free.
    for pose in poses[fast][:100]:
        assert not parking_grid.occupied_at(_rect_points(pose, 4.5, 2.0, 0.9, 0.02)).any()


def test_known_poses(parking_grid):
    checker = FootprintChecker(parking_grid, CAR)
    poses = np.array([
        [20.0, 30.0, 0.0],            # open aisle
        [5.0, 30.0, 0.0],             # nose over the pillar at (7, 30)
        [30.9, 1.6, 0.0],             # parked in the parallel slot
        [30.9, 1.6, -0.3],            # same spot, turned into the curb wall
        [58.0, 20.0, 0.0],            # front sticks out of the map
        [3.0, 30.0, math.pi / 2],     # clear of the pillar, beside it
    ])
    assert checker.free(poses).tolist() == [True, False, True, False, False, True]


def test_margin_grows_the_footprint(parking_grid):
    # Q3 goal: 0.2 m from the north wall. Free as is, in collision with a 0.3 m margin.
    pose = np.array([[29.2, 35.9, math.pi / 2]])
    assert FootprintChecker(parking_grid, CAR).free(pose)[0]
    assert FootprintChecker(parking_grid, CAR, margin=0.1).free(pose)[0]
    assert not FootprintChecker(parking_grid, CAR, margin=0.3).free(pose)[0]


def test_a_disc_is_free_exactly_when_no_occupied_square_is_within_its_radius(parking_grid):
    """Against the exact distance from each point to every occupied square, on random points
    (many of them grazing an obstacle): the clearance bounds alone called a disc up to a cell
    diagonal clear of every square in collision, so a car the controller had stopped a few
    centimetres clear of a pillar could never be planned from where it stood."""
    checker = FootprintChecker(parking_grid, Footprint(radius=0.5))
    rng = np.random.default_rng(1)
    points = rng.uniform((1.0, 1.0), (59.0, 39.0), (3000, 2))
    half = 0.5 * parking_grid.resolution
    centres = parking_grid.origin[:2] + (np.argwhere(parking_grid.occupied)[:, ::-1] + 0.5) \
        * parking_grid.resolution
    near = cKDTree(centres).query_ball_point(points, 0.5 + half * math.sqrt(2.0) + 0.1)
    exact = np.array([np.inf if not rows else np.hypot(
        *np.maximum(np.abs(centres[rows] - p) - half, 0.0).T).min()
        for p, rows in zip(points, near)])
    free = checker.free(np.column_stack([points, np.zeros(len(points))]))
    np.testing.assert_array_equal(free, exact > 0.5)
    assert ((exact > 0.5) & (exact < 0.6)).sum() > 20      # the band the bounds left open


def test_disc_footprint_uses_clearance():
    occ = np.zeros((50, 50), dtype=bool)
    occ[25, 25] = True                          # one cell at x, y in [2.5, 2.6)
    grid = OccupancyGrid(occ, 0.1, (0.0, 0.0))
    checker = FootprintChecker(grid, Footprint(radius=0.5))
    # 1.0 m from the cell's square: free; 0.4 m: not; on it: not; 0.3 m from the map edge: sticks
    # out.
    pts = np.array([[2.55, 1.5, 0.0], [2.55, 2.1, 0.0], [2.55, 2.55, 0.0], [0.3, 2.5, 1.0]])
    assert checker.free(pts).tolist() == [True, False, False, False]
    # Exact at the edge: 0.51 m from the square is free, 0.49 m is not.
    assert checker.free(np.array([[2.55, 1.99, 0.0], [2.55, 2.01, 0.0]])).tolist() == [True, False]


def test_bad_input():
    grid = OccupancyGrid(np.zeros((10, 10), dtype=bool), 0.1, (0.0, 0.0))
    with pytest.raises(ValueError, match='footprint_width'):
        Footprint(length=1.0, width=-1.0, rear_overhang=0.2)
    with pytest.raises(ValueError, match='rear_overhang'):
        Footprint(length=1.0, width=1.0, rear_overhang=2.0)
    with pytest.raises(ValueError, match='radius'):
        Footprint(radius=float('nan'))
    with pytest.raises(ValueError, match=r'poses\[1\]'):
        FootprintChecker(grid, CAR).free([[0.5, 0.5, 0.0], [0.5, float('inf'), 0.0]])
    with pytest.raises(ValueError, match='margin'):
        FootprintChecker(grid, CAR, margin=-0.1)
