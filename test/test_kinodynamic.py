"""Kinodynamic A*: trajectory validity in 2-D and 3-D, every failure status, heuristic bound, bad
input."""
import numpy as np
import pytest

from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.planning.kinodynamic_astar import KinodynamicAStar, KinodynamicParams
from orca_nav.core.planning.obvp import cubic_coefficients, obvp_cost, obvp_min_cost
from orca_nav.core.planning.result import PlanStatus

from conftest import SHARED

PLANNERS = SHARED / 'refdata' / 'planners'


def check_trajectory(planner, result, start_pos, start_vel, goal_pos, goal_vel):
    """Every property issue 3 asks of a returned trajectory."""
    assert result.status is PlanStatus.SUCCESS, result.message
    traj = result.trajectory
    p = planner.params
    t, pos, vel, acc = traj.sample(0.02)
    assert t[0] == 0.0 and t[-1] == pytest.approx(traj.duration)
    assert np.all(np.diff(t) > 0) and np.all(np.diff(t) <= 0.02 + 1e-12)
    # Boundary states.
    assert np.linalg.norm(pos[0] - start_pos) <= 0.05
    assert np.linalg.norm(vel[0] - start_vel) <= 0.1
    assert np.linalg.norm(pos[-1] - goal_pos) <= 0.1
    assert np.linalg.norm(vel[-1] - goal_vel) <= 0.1
    # Continuity of position and velocity across every segment joint.
    joints = traj.segment_start_times[1:]
    if joints.size:
        left = traj.evaluate(joints - 1e-9)
        right = traj.evaluate(joints + 1e-9)
        np.testing.assert_allclose(left[0], right[0], atol=1e-6)
        np.testing.assert_allclose(left[1], right[1], atol=1e-6)
    # Limits.
    tol = 1e-6
    assert np.abs(vel).max() <= p.max_vel + tol
    assert np.abs(acc).max() <= p.max_acc + tol
    if p.max_speed is not None:
        assert np.linalg.norm(vel, axis=1).max() <= p.max_speed + tol
    if p.max_acc_norm is not None:
        assert np.linalg.norm(acc, axis=1).max() <= p.max_acc_norm + tol
    # Collision-free against the map inflated by the robot radius, at 0.02 s.
    inflated = planner.grid.inflated(p.robot_radius) if p.robot_radius > 0 else planner.grid
    assert not inflated.occupied_at(pos).any()
    assert result.stats.expanded_nodes >= 1 and result.stats.plan_time > 0
    return traj


def room_2d():
    """12 m x 8 m room at 0.1 m with two walls forming an S-shaped route."""
    occ = np.zeros((80, 120), dtype=bool)
    occ[:55, 38:41] = True       # wall from the bottom at x 3.8-4.1 m
    occ[25:, 78:81] = True       # wall from the top at x 7.8-8.1 m
    return OccupancyGrid(occ, 0.1, (0.0, 0.0))


@pytest.mark.parametrize('max_vel, max_acc', [(1.5, 1.5), (0.5, 0.5)])
def test_2d_holonomic_s_route(max_vel, max_acc):
    planner = KinodynamicAStar(room_2d(), KinodynamicParams(max_vel=max_vel, max_acc=max_acc,
                                                            robot_radius=0.3, max_speed=max_vel,
                                                            max_time=20.0))
    start, goal = np.array([1.0, 1.0]), np.array([11.0, 1.0])
    result = planner.plan(start, [0, 0], goal, [0, 0])
    traj = check_trajectory(planner, result, start, [0, 0], goal, [0, 0])
    # The route must pass the first wall's gap (y > 5.5) and the second's (y < 2.5).
    _, pos, _, _ = traj.sample(0.05)
    assert pos[np.abs(pos[:, 0] - 3.95) < 0.1, 1].min() > 5.5
    assert pos[np.abs(pos[:, 0] - 7.95) < 0.1, 1].max() < 2.5


def test_start_and_goal_velocities_are_honoured():
    planner = KinodynamicAStar(room_2d(), KinodynamicParams(max_vel=1.0, max_acc=1.0,
                                                            robot_radius=0.2, max_time=20.0))
    start, goal = np.array([1.0, 6.0]), np.array([6.0, 4.0])
    v0, v1 = np.array([0.8, -0.3]), np.array([0.0, -0.7])
    result = planner.plan(start, v0, goal, v1)
    check_trajectory(planner, result, start, v0, goal, v1)


def test_moves_along_a_wall_inside_the_one_cell_band():
    """Start and goal 0.1 m from the inflated wall (inside the one-cell band the swept check
    refines), goal velocity along the wall: the robot may pass close to the wall, never into it."""
    planner = KinodynamicAStar(room_2d(), KinodynamicParams(max_vel=1.0, max_acc=1.0,
                                                            robot_radius=0.3, max_time=20.0))
    start, goal = np.array([3.45, 1.0]), np.array([3.45, 4.0])
    assert planner.grid.clearance_at(np.stack([start, goal])).max() <= 0.4 + 1e-6
    result = planner.plan(start, [0, 0], goal, [0, 0.5])
    check_trajectory(planner, result, start, [0, 0], goal, [0, 0.5])


def test_low_speed_ground_robot_on_parking_map():
    """Fast-Planner users report failures at low speed on 2-D robots: 0.5 m/s, 0.3 m round robot."""
    data = np.load(PLANNERS / 'parking_2d.npz')
    grid = OccupancyGrid(data['grid'] >= 50, float(data['resolution']), data['origin'])
    planner = KinodynamicAStar(grid, KinodynamicParams(max_vel=0.5, max_acc=0.5, robot_radius=0.3,
                                                       max_speed=0.5, max_time=20.0))
    for query in data['queries'][[2, 3]]:           # into the perpendicular and parallel slots
        start, goal = query[:2], query[3:5]
        result = planner.plan(start, [0, 0], goal, [0, 0])
        check_trajectory(planner, result, start, [0, 0], goal, [0, 0])


def forest():
    data = np.load(PLANNERS / 'forest_3d.npz')
    shape = tuple(data['shape'])
    occ = np.unpackbits(data['occ_packed'])[:np.prod(shape)].reshape(shape).astype(bool)
    return OccupancyGrid(occ, float(data['resolution']), data['origin']), data['queries']


def test_3d_quadrotor_forest():
    grid, queries = forest()
    params = KinodynamicParams(max_vel=3.0, max_acc=3.0, robot_radius=0.3, max_speed=3.0,
                               max_acc_norm=3.0, max_time=20.0)
    planner = KinodynamicAStar(grid, params)
    for query in queries[[1, 4]]:
        start, goal = query[:3], query[3:]
        result = planner.plan(start, [0, 0, 0], goal, [0, 0, 0])
        traj = check_trajectory(planner, result, start, [0, 0, 0], goal, [0, 0, 0])
        # Not a crawl: within 1.5x the straight-line time bound (the benchmark reports 1.3x).
        assert traj.duration <= 1.5 * np.linalg.norm(goal - start) / 3.0


def test_3d_small_map_per_axis_limits_only():
    occ = np.zeros((20, 40, 40), dtype=bool)
    occ[:, 15:25, 15:25] = True                        # a block in the middle, full height
    grid = OccupancyGrid(occ, 0.25, (-5.0, -5.0, 0.0))
    planner = KinodynamicAStar(grid, KinodynamicParams(max_vel=2.0, max_acc=2.0, robot_radius=0.4,
                                                       max_time=20.0))
    start, goal = np.array([-3.0, -3.0, 2.0]), np.array([3.5, 3.0, 3.0])
    check_trajectory(planner, planner.plan(start, [0, 0, 0], goal, [0.5, 0, 0]),
                     start, [0, 0, 0], goal, [0.5, 0, 0])


# ---------------------------------------------------------------------- failure statuses
def small_planner(**overrides):
    params = dict(max_vel=1.0, max_acc=1.0, robot_radius=0.3)
    params.update(overrides)
    return KinodynamicAStar(room_2d(), KinodynamicParams(**params))


def test_start_in_collision():
    result = small_planner().plan([3.9, 1.0], [0, 0], [11.0, 1.0], [0, 0])
    assert result.status is PlanStatus.START_IN_COLLISION and result.trajectory is None
    # Free cell, but the robot's disc overlaps the wall.
    result = small_planner().plan([3.6, 1.0], [0, 0], [11.0, 1.0], [0, 0])
    assert result.status is PlanStatus.START_IN_COLLISION, result.message


def test_goal_in_collision():
    result = small_planner().plan([1.0, 1.0], [0, 0], [8.3, 6.0], [0, 0])
    assert result.status is PlanStatus.GOAL_IN_COLLISION, result.message


def test_out_of_map():
    # Inside the grid and clear of obstacles, but the 0.3 m disc sticks out of the map.
    result = small_planner().plan([0.15, 4.0], [0, 0], [11.0, 1.0], [0, 0])
    assert result.status is PlanStatus.OUT_OF_MAP, result.message
    result = small_planner().plan([1.0, 1.0], [0, 0], [11.0, 7.9], [0, 0])
    assert result.status is PlanStatus.OUT_OF_MAP, result.message


def enclosed_goal_grid(wall_cells):
    occ = np.zeros((40, 40), dtype=bool)
    occ[20:36, 20:36] = True
    occ[20 + wall_cells:36 - wall_cells, 20 + wall_cells:36 - wall_cells] = False  # hollow box
    return OccupancyGrid(occ, 0.1, (0.0, 0.0))


def test_no_path_found_before_searching():
    """A 0.6 m thick box: the coarse obstacle-aware distance already shows the goal unreachable."""
    planner = KinodynamicAStar(enclosed_goal_grid(6), KinodynamicParams(
        max_vel=1.0, max_acc=1.0, robot_radius=0.1))
    result = planner.plan([0.8, 0.8], [0, 0], [2.8, 2.8], [0, 0])
    assert result.status is PlanStatus.NO_PATH, result.message
    assert result.stats.expanded_nodes == 0


@pytest.mark.parametrize('geodesic', [True, False])
def test_no_path_open_list_exhausted(geodesic):
    """A one-cell wall: the coarse distance leaks through it, so the search must run dry."""
    planner = KinodynamicAStar(enclosed_goal_grid(1), KinodynamicParams(
        max_vel=1.0, max_acc=1.0, robot_radius=0.1, velocity_resolution=0.0,
        geodesic_heuristic=geodesic, max_time=60.0))
    result = planner.plan([0.8, 0.8], [0, 0], [2.8, 2.8], [0, 0])
    assert result.status is PlanStatus.NO_PATH, result.message
    assert result.stats.expanded_nodes > 10


def test_timeout_by_wall_time_cap_and_by_expansion_budget():
    result = small_planner(max_time=1e-9).plan([1.0, 1.0], [0, 0], [11.0, 1.0], [0, 0])
    assert result.status is PlanStatus.TIMEOUT and 'wall-time cap' in result.message
    result = small_planner(max_expansions=20).plan([1.0, 1.0], [0, 0], [11.0, 1.0], [0, 0])
    assert result.status is PlanStatus.TIMEOUT, result.message
    assert result.message.startswith('expansion budget 20 spent')
    assert result.stats.expanded_nodes == 20


def test_the_expansion_budget_gives_the_same_outcome_however_long_expansions_take(monkeypatch):
    """A clock that runs 1,000 times slower (a loaded machine) changes nothing but the time."""
    import time
    quick = small_planner(max_expansions=400, max_time=1e6).plan([1.0, 1.0], [0, 0],
                                                                [11.0, 1.0], [0, 0])
    clock = time.perf_counter
    monkeypatch.setattr(time, 'perf_counter', lambda: 1000.0 * clock())
    slow = small_planner(max_expansions=400, max_time=1e6).plan([1.0, 1.0], [0, 0],
                                                               [11.0, 1.0], [0, 0])
    assert (slow.status, slow.stats.expanded_nodes) == (quick.status, quick.stats.expanded_nodes)
    assert np.allclose(slow.trajectory.sample(0.1)[1], quick.trajectory.sample(0.1)[1])


# ---------------------------------------------------------------------- heuristic
def test_obvp_heuristic_never_exceeds_the_true_obvp_cost():
    rng = np.random.default_rng(11)
    rho = 7.0
    for ndim in (2, 3):
        dp = rng.uniform(-10, 10, size=(300, ndim))
        v1 = rng.uniform(-3, 3, size=(300, ndim))
        v2 = rng.uniform(-3, 3, size=(300, ndim))
        t_lower = np.abs(dp).max(axis=1) / rng.uniform(0.3, 5.0, size=300)  # incl. slow robots
        h, t_best = obvp_min_cost(dp, v1, v2, rho, t_lower)
        assert np.all(np.isfinite(h)) and np.all(t_best >= t_lower - 1e-12)
        # True cost of the OBVP trajectory (the min-energy cubic), integrated numerically, at
        # many admissible durations: the heuristic is never above it.
        durations = t_lower[:, None] * np.linspace(1.0, 6.0, 200)[None, :]
        for k in range(300):
            coef = cubic_coefficients(np.zeros(ndim), v1[k], dp[k], v2[k], durations[k])
            tt = np.linspace(0.0, 1.0, 201)[None, :, None] * durations[k][:, None, None]
            acc = 2 * coef[:, None, 2] + 6 * coef[:, None, 3] * tt
            energy = np.trapezoid((acc ** 2).sum(axis=2), tt[..., 0], axis=1)
            true_cost = energy + rho * durations[k]
            assert np.all(h[k] <= true_cost * (1 + 1e-4) + 1e-9)
            np.testing.assert_allclose(obvp_cost(durations[k][None], dp[k:k + 1], v1[k:k + 1],
                                                 v2[k:k + 1], rho)[0], true_cost, rtol=1e-3)
        # And it is the minimum: no duration on a wide log grid does better (tight bound).
        wide = t_lower[:, None] * np.logspace(0, 3, 4000)[None, :]
        brute = obvp_cost(wide, dp, v1, v2, rho).min(axis=1)
        assert np.all(h <= brute + 1e-9)
        assert np.all(h >= brute * (1 - 1e-3))
        np.testing.assert_allclose(obvp_cost(t_best, dp, v1, v2, rho), h, rtol=1e-9)


def test_heuristic_finite_when_speed_bound_exceeds_every_root():
    """Fast-Planner's version returns infinity here (all quartic roots below T_lower)."""
    dp = np.array([[10.0, 0.0]])
    h, t = obvp_min_cost(dp, np.zeros((1, 2)), np.zeros(2), 10.0, 100.0)
    assert np.isfinite(h[0]) and t[0] == pytest.approx(100.0)
    assert h[0] == pytest.approx(
        obvp_cost(np.array([100.0]), dp, np.zeros((1, 2)), np.zeros(2), 10.0)[0])


def test_cubic_reaches_boundary_states():
    coef = cubic_coefficients(np.array([1.0, 2.0]), np.array([0.5, -1.0]), np.array([4.0, -1.0]),
                              np.array([0.0, 0.3]), np.array([2.5]))[0]
    T = 2.5
    pos = coef[0] + coef[1] * T + coef[2] * T ** 2 + coef[3] * T ** 3
    vel = coef[1] + 2 * coef[2] * T + 3 * coef[3] * T ** 2
    np.testing.assert_allclose(pos, [4.0, -1.0])
    np.testing.assert_allclose(vel, [0.0, 0.3], atol=1e-12)


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize('field, value', [
    ('max_vel', 0.0), ('max_vel', -1.0), ('max_acc', 0.0), ('max_acc', float('nan')),
    ('robot_radius', -0.1), ('tau', 0.0), ('rho', 0.0), ('max_speed', 0.0), ('max_time', 0.0),
    ('acc_resolution', 1.5), ('max_expansions', 0), ('check_dt', float('inf')),
    ('max_expansions_per_cell', 0), ('heuristic_weight', 0.0), ('safety_margin', -0.1),
])
def test_bad_params(field, value):
    params = dict(max_vel=1.0, max_acc=1.0)
    params[field] = value
    with pytest.raises(ValueError, match=field):
        KinodynamicParams(**params)


@pytest.mark.parametrize('args, field', [
    (([np.nan, 1.0], [0, 0], [11.0, 1.0], [0, 0]), 'start_pos'),
    (([1.0, 1.0], [np.inf, 0], [11.0, 1.0], [0, 0]), 'start_vel'),
    (([1.0, 1.0], [0, 0], [11.0, np.nan], [0, 0]), 'goal_pos'),
    (([1.0, 1.0], [0, 0], [11.0, 1.0], [0, -np.inf]), 'goal_vel'),
    (([-1.0, 1.0], [0, 0], [11.0, 1.0], [0, 0]), 'start_pos'),
    (([1.0, 1.0], [0, 0], [12.5, 1.0], [0, 0]), 'goal_pos'),
    (([1.0, 1.0, 0.0], [0, 0], [11.0, 1.0], [0, 0]), 'start_pos'),
    (([1.0, 1.0], [0, 0], [11.0, 1.0], [2.0, 0]), 'goal_vel'),
])
def test_bad_plan_input(args, field):
    with pytest.raises(ValueError, match=field):
        small_planner().plan(*args)


@pytest.mark.parametrize('resolution, origin, field', [
    (0.0, (0.0, 0.0), 'resolution'), (-0.1, (0.0, 0.0), 'resolution'),
    (0.1, (0.0, 0.0, 0.0), 'origin'),
])
def test_bad_grid(resolution, origin, field):
    with pytest.raises(ValueError, match=field):
        KinodynamicAStar(OccupancyGrid(np.zeros((10, 10), bool), resolution, origin),
                         KinodynamicParams(max_vel=1.0, max_acc=1.0))
