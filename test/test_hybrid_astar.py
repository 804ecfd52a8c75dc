"""Hybrid A*: parking_2d queries, path validity, reverse / diff-drive behaviour, failure
statuses."""
import math

import numpy as np
import pytest

from orca_nav.core.geometry import wrap_angle
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.planning.hybrid_astar import HybridAStar, HybridParams
from orca_nav.core.planning.result import PlanStatus

from conftest import SHARED

CAR = dict(wheelbase=2.7, min_turning_radius=5.0, footprint_length=4.5, footprint_width=2.0,
           rear_overhang=0.9)
# Wall-clock budget for plans that must succeed: generous, the CI machine may be busy.
SLOW_OK = 120.0


@pytest.fixture(scope='module')
def parking():
    m = np.load(SHARED / 'refdata' / 'planners' / 'parking_2d.npz')
    grid = OccupancyGrid(m['grid'] > 50, float(m['resolution']), m['origin'])
    return grid, dict(zip([str(n) for n in m['query_names']], m['queries']))


@pytest.fixture(scope='module')
def car_planner(parking):
    return HybridAStar(parking[0], HybridParams(**CAR, allow_reverse=True, timeout=SLOW_OK))


def _footprint_points(poses, length, width, rear):
    """Independent check: rectangle edges every 0.05 m and interior every 0.1 m, world frame."""
    xs = np.linspace(-rear, length - rear, int(round(length / 0.05)) + 1)
    ys = np.linspace(-width / 2, width / 2, int(round(width / 0.05)) + 1)
    edge = np.concatenate([np.column_stack([xs, np.full_like(xs, ys[0])]),
                           np.column_stack([xs, np.full_like(xs, ys[-1])]),
                           np.column_stack([np.full_like(ys, xs[0]), ys]),
                           np.column_stack([np.full_like(ys, xs[-1]), ys])])
    gx, gy = np.meshgrid(xs[::2], ys[::2])
    local = np.concatenate([edge, np.column_stack([gx.ravel(), gy.ravel()])])
    c, s = np.cos(poses[:, 2])[:, None], np.sin(poses[:, 2])[:, None]
    wx = poses[:, 0:1] + c * local[:, 0] - s * local[:, 1]
    wy = poses[:, 1:2] + s * local[:, 0] + c * local[:, 1]
    return np.column_stack([wx.ravel(), wy.ravel()])


def _check_path(grid, result, start, goal, radius, footprint=(4.5, 2.0, 0.9)):
    assert result.status is PlanStatus.SUCCESS, result.message
    path = result.path
    n = len(path.x)
    assert len(path.y) == len(path.yaw) == len(path.direction) == n
    assert set(np.unique(path.direction)) <= {-1.0, 1.0}
    assert np.all((path.yaw >= -math.pi) & (path.yaw < math.pi))
    poses, direction = path.sample(0.05)
    # Starts at the start, ends at the goal.
    assert np.hypot(*(poses[0, :2] - start[:2])) < 1e-6
    assert abs(wrap_angle(poses[0, 2] - start[2])) < 1e-6
    assert np.hypot(*(poses[-1, :2] - goal[:2])) < 0.1
    assert abs(wrap_angle(poses[-1, 2] - goal[2])) < 0.05
    # Footprint collision-free along the whole path densified to 0.05 m.
    assert not grid.occupied_at(_footprint_points(poses, *footprint)).any()
    # Curvature within 1 / R_min (finite differences over 0.05 m; chord vs arc: tiny tolerance).
    ds = np.hypot(*np.diff(poses[:, :2], axis=0).T)
    dyaw = np.abs(wrap_angle(np.diff(poses[:, 2])))
    moving = ds > 1e-4
    assert np.all(dyaw[moving] <= ds[moving] / radius * 1.01 + 1e-9)
    # Length and direction switches agree with the samples.
    assert path.length == pytest.approx(ds.sum(), rel=0.01)
    assert path.direction_switches == np.count_nonzero(np.diff(direction[:-1][moving]) != 0)
    return path


@pytest.mark.parametrize('name', ['Q1_cross', 'Q2_uturn', 'Q3_perp_slot', 'Q4_parallel_park',
                                  'Q5_garage_exit'])
def test_parking_queries(parking, car_planner, name):
    grid, queries = parking
    q = queries[name]
    result = car_planner.plan(q[:3], q[3:])
    path = _check_path(grid, result, q[:3], q[3:], 5.0)
    assert path.length < 80.0
    assert result.stats.expanded_nodes > 0 and result.stats.analytic_success


def test_parallel_parking_needs_reverse(parking, car_planner):
    grid, queries = parking
    q = queries['Q4_parallel_park']
    path = _check_path(grid, car_planner.plan(q[:3], q[3:]), q[:3], q[3:], 5.0)
    assert np.any(path.direction < 0) and path.direction_switches >= 1
    forward_only = HybridAStar(grid, HybridParams(**CAR, allow_reverse=False, timeout=2.0))
    result = forward_only.plan(q[:3], q[3:])
    assert result.status in (PlanStatus.NO_PATH, PlanStatus.TIMEOUT)
    assert result.path is None


def test_forward_only_paths_never_reverse(parking):
    grid, queries = parking
    q = queries['Q1_cross']
    planner = HybridAStar(grid, HybridParams(**CAR, allow_reverse=False, timeout=SLOW_OK))
    path = _check_path(grid, planner.plan(q[:3], q[3:]), q[:3], q[3:], 5.0)
    assert np.all(path.direction == 1) and path.direction_switches == 0


def _corridor():
    """12 m x 4 m, a 2 m wide corridor (y 1-3) closed at both ends."""
    occ = np.zeros((40, 120), dtype=bool)
    occ[:10, :] = occ[30:, :] = True
    occ[:, :3] = occ[:, 117:] = True
    return OccupancyGrid(occ, 0.1, (0.0, 0.0))


def test_diff_drive_turns_in_place_where_a_car_cannot():
    grid = _corridor()
    robot = dict(wheelbase=0.5, min_turning_radius=2.0, footprint_length=1.0, footprint_width=0.6,
                 rear_overhang=0.5, allow_reverse=False, timeout=SLOW_OK)
    start, goal = (6.0, 2.0, 0.0), (6.0, 2.0, math.pi)
    car = HybridAStar(grid, HybridParams(**robot, model='car')).plan(start, goal)
    assert car.status is PlanStatus.NO_PATH, car.message
    result = HybridAStar(grid, HybridParams(**robot, model='diff_drive')).plan(start, goal)
    assert result.status is PlanStatus.SUCCESS, result.message
    poses, _ = result.path.sample(0.05)
    assert not grid.occupied_at(_footprint_points(poses, 1.0, 0.6, 0.5)).any()
    spins = result.path.curve.spins
    # The heading change comes from turning on the spot, not from driving around.
    assert np.abs(spins).sum() > 0.9 * math.pi
    assert result.path.length < 1.0
    assert abs(wrap_angle(poses[-1, 2] - math.pi)) < 0.05


def test_disc_footprint_keeps_its_radius_clear(parking):
    grid, queries = parking
    q = queries['Q2_uturn']
    planner = HybridAStar(grid, HybridParams(wheelbase=0.4, min_turning_radius=1.0,
                                             robot_radius=0.8, model='diff_drive',
                                             timeout=SLOW_OK))
    result = planner.plan(q[:3], q[3:])
    assert result.status is PlanStatus.SUCCESS, result.message
    poses, _ = result.path.sample(0.05)
    # True distance to the nearest occupied square >= clearance - one cell diagonal.
    assert np.all(grid.clearance_at(poses[:, :2]) - 0.1 * math.sqrt(2) > 0.8)


def test_yaw_is_wrapped_and_pi_equals_minus_pi(parking, car_planner):
    grid, queries = parking
    q = queries['Q2_uturn']
    a = car_planner.plan(q[:3], (q[3], q[4], math.pi))
    b = car_planner.plan(q[:3] + (0, 0, 2 * math.pi), (q[3], q[4], -math.pi))
    c = car_planner.plan(q[:3], (q[3], q[4], 5 * math.pi))
    for r in (a, b, c):
        _check_path(grid, r, q[:3], (q[3], q[4], math.pi), 5.0)
    assert a.path.length == pytest.approx(b.path.length, abs=1e-6)
    assert a.path.length == pytest.approx(c.path.length, abs=1e-6)


def test_start_at_goal_and_turn_on_the_spot_request(parking, car_planner):
    grid, _ = parking
    same = car_planner.plan((20.0, 30.0, 0.0), (20.0, 30.0, 2 * math.pi))
    path = _check_path(grid, same, (20.0, 30.0, 0.0), (20.0, 30.0, 0.0), 5.0)
    assert path.length == pytest.approx(0.0, abs=1e-9)
    # A car asked to turn around on the spot has to manoeuvre (it cannot rotate in place).
    turn = car_planner.plan((20.0, 30.0, 0.0), (20.0, 30.0, math.pi))
    path = _check_path(grid, turn, (20.0, 30.0, 0.0), (20.0, 30.0, math.pi), 5.0)
    assert path.length > 5.0 and path.direction_switches >= 1


def test_every_failure_status(parking, car_planner):
    grid, queries = parking
    q = queries['Q1_cross']
    on_the_island, on_a_pillar = (30.0, 19.0, 0.0), (7.0, 10.0, 0.0)
    nose_outside = (1.0, 20.0, math.pi)
    assert car_planner.plan(on_the_island, q[3:]).status is PlanStatus.START_IN_COLLISION
    assert car_planner.plan(q[:3], on_a_pillar).status is PlanStatus.GOAL_IN_COLLISION
    assert car_planner.plan(nose_outside, q[3:]).status is PlanStatus.OUT_OF_MAP
    assert car_planner.plan(q[:3], (59.5, 20.0, 0.0)).status is PlanStatus.OUT_OF_MAP
    timeout = HybridAStar(grid, HybridParams(**CAR, max_expansions=2)).plan(q[:3], q[3:])
    assert timeout.status is PlanStatus.TIMEOUT and timeout.path is None
    # A wall across the map: the goal side is unreachable.
    occ = grid.occupied.copy()
    occ[:, 295:305] = True
    walled = HybridAStar(OccupancyGrid(occ, grid.resolution, grid.origin),
                         HybridParams(**CAR, timeout=SLOW_OK))
    result = walled.plan(q[:3], q[3:])
    assert result.status is PlanStatus.NO_PATH and 'reachable' in result.message
    for r in (timeout, result):
        assert r.stats.plan_time > 0.0 and r.message


def test_bad_input_raises_naming_the_field(parking, car_planner):
    grid, queries = parking
    q = queries['Q1_cross']
    with pytest.raises(ValueError, match='start'):
        car_planner.plan((float('nan'), 6.0, 0.0), q[3:])
    with pytest.raises(ValueError, match='goal'):
        car_planner.plan(q[:3], (55.0, 30.0, float('inf')))
    with pytest.raises(ValueError, match='goal'):
        car_planner.plan(q[:3], (75.0, 30.0, 0.0))              # reference point outside the map
    with pytest.raises(ValueError, match='start'):
        car_planner.plan((1.0, 2.0), q[3:])
    bad = [dict(min_turning_radius=0.0), dict(wheelbase=float('nan')), dict(model='boat'),
           dict(footprint_width=-2.0), dict(rear_overhang=None), dict(yaw_bins=0),
           dict(reverse_penalty=0.5), dict(collision_margin=0.0), dict(allow_reverse='yes')]
    names = ['min_turning_radius', 'wheelbase', 'model', 'footprint_width', 'rear_overhang',
             'yaw_bins', 'reverse_penalty', 'collision_margin', 'allow_reverse']
    for change, name in zip(bad, names):
        with pytest.raises(ValueError, match=name):
            HybridParams(**{**CAR, **change})
    with pytest.raises(ValueError, match='grid'):
        HybridAStar(OccupancyGrid(np.zeros((2, 3, 4), dtype=bool), 0.1, (0, 0, 0)),
                    HybridParams(**CAR))
