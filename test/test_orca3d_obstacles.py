"""3-D ORCA with static voxel obstacles: closed-loop runs in which drones are pushed toward
walls, through a window and between columns; over every step each drone keeps at least its
radius from every occupied voxel (the voxel's cube, not its centre)."""
import numpy as np
import pytest
from scipy.spatial import cKDTree

from orca_nav.core import (
    OccupancyGrid,
    OrcaParams,
    compute_velocities,
    prepare_voxel_obstacles,
    solve,
)

from conftest import SHARED

RES = 0.1


class Clearance:
    """Distance from points to the nearest occupied voxel cube (exact box distance)."""

    def __init__(self, grid):
        cells = np.argwhere(grid.occupied)[:, ::-1]
        self.centres = grid.origin + (cells + 0.5) * grid.resolution
        self.half = grid.resolution / 2.0
        self.tree = cKDTree(self.centres)

    def __call__(self, points, within):
        """Per point: the distance to the nearest voxel, or inf when none is within `within`."""
        out = np.full(len(points), np.inf)
        reach = within + 2.0 * self.half * np.sqrt(3.0)
        for i, near in enumerate(self.tree.query_ball_point(points, reach)):
            if near:
                gap = np.maximum(np.abs(points[i] - self.centres[near]) - self.half, 0.0)
                out[i] = np.linalg.norm(gap, axis=1).min()
        return out


def fly(grid, starts, goals, params, steps, obstacles=None):
    """Closed loop: preferred velocity toward the goal (capped at max_speed), ORCA with the
    voxel obstacles, position += velocity * time_step. Returns the final positions, the
    smallest clearance over all steps and the number of fallback (infeasible) agent-steps."""
    obstacles = prepare_voxel_obstacles(grid) if obstacles is None else obstacles
    clearance = Clearance(grid)
    pos = np.asarray(starts, dtype=float).copy()
    vel = np.zeros_like(pos)
    speed = np.broadcast_to(params.max_speed, len(pos))[:, None]
    assert clearance(pos, params.radius).min() >= params.radius  # starts are clear
    worst = np.inf
    fallbacks = 0
    for _ in range(steps):
        to_goal = goals - pos
        dist = np.linalg.norm(to_goal, axis=1, keepdims=True)
        pref = np.where(dist > speed, to_goal / np.maximum(dist, 1e-12) * speed, to_goal)
        solution = solve(pos, vel, pref, params, obstacles)
        vel = solution.velocities
        fallbacks += int(solution.infeasible.sum())
        pos = pos + vel * params.time_step
        worst = min(worst, clearance(pos, params.radius + 0.5).min())
    return pos, worst, fallbacks


def wall_with_window():
    """A 0.2 m wall across x = 3.0..3.2 (y -3..3, z 0..4) with a 1.6 m square window at z = 2."""
    occupied = np.zeros((40, 60, 60), dtype=bool)
    origin = np.array([0.0, -3.0, 0.0])
    y = origin[1] + (np.arange(60) + 0.5) * RES
    z = (np.arange(40) + 0.5) * RES
    window = (np.abs(y)[None, :] < 0.8) & (np.abs(z - 2.0)[:, None] < 0.8)
    occupied[:, :, 30:32] = ~window[:, :, None]
    return OccupancyGrid(occupied, RES, origin)


def test_drones_pushed_into_a_wall_stop_clear_of_it():
    occupied = np.zeros((50, 80, 40), dtype=bool)
    occupied[:, :, 25:] = True                        # solid from x = 2.5 on, 8 m x 5 m
    grid = OccupancyGrid(occupied, RES, [0.0, -4.0, 0.0])
    y, z = np.meshgrid(np.linspace(-1.5, 1.5, 4), np.linspace(1.5, 3.5, 3))
    starts = np.column_stack([np.full(y.size, 0.5), y.ravel(), z.ravel()])
    goals = starts + [2.7, 0.0, 0.0]                  # inside the wall (x = 3.2)
    params = OrcaParams(time_step=0.1, neighbor_dist=3.0, max_neighbors=8, time_horizon=2.0,
                        time_horizon_obst=1.0, radius=0.3, max_speed=2.0)
    pos, worst, _ = fly(grid, starts, goals, params, 100)
    print(f'wall: min clearance {worst:.4f} (radius 0.3), '
          f'final x {pos[:, 0].min():.3f}..{pos[:, 0].max():.3f}')
    assert worst >= 0.3
    assert (pos[:, 0] > 2.5 - 0.3 - 0.1).all()       # they did press against the wall
    assert (pos[:, 0] < 2.5 - 0.3).all()


@pytest.mark.parametrize('time_step, time_horizon_obst, max_speed', [
    (0.1, 1.0, 2.0), (0.25, 0.25, 2.0), (0.05, 2.0, 3.0)])
def test_drones_swapping_through_a_window_keep_clear(time_step, time_horizon_obst, max_speed):
    rng = np.random.default_rng(1)
    side = np.column_stack([rng.uniform(0.4, 2.5, 16), rng.uniform(-2.5, 2.5, 16),
                            rng.uniform(0.4, 3.6, 16)])
    other = side.copy()
    other[:, 0] = 6.2 - side[:, 0]
    starts, goals = np.vstack([side, other]), np.vstack([other, side])
    params = OrcaParams(time_step=time_step, neighbor_dist=3.0, max_neighbors=10, time_horizon=1.5,
                        time_horizon_obst=time_horizon_obst, radius=0.3, max_speed=max_speed)
    pos, worst, fallbacks = fly(wall_with_window(), starts, goals, params,
                                int(round(12 / time_step)))
    crossed = int(np.sum((pos[:, 0] > 3.2) == (goals[:, 0] > 3.2)))
    print(f'window dt={time_step}: min clearance {worst:.4f}, {crossed} of 32 on their goal side, '
          f'{fallbacks} fallback agent-steps')
    assert worst >= 0.3
    assert crossed >= 4          # some drones do fly through the window


def test_drones_crossing_between_columns_keep_clear_and_arrive():
    """Two groups swap through a 3 x 4 grid of columns (0.8 m gaps for 0.5 m drones); their
    lanes are 0.3 m off the gap centres, so the columns push them sideways."""
    occupied = np.zeros((30, 60, 100), dtype=bool)
    origin = np.array([-5.0, -3.0, 0.0])
    x = origin[0] + (np.arange(100) + 0.5) * RES
    y = origin[1] + (np.arange(60) + 0.5) * RES
    column_x, column_y = np.meshgrid([-1.5, 0.0, 1.5], [-2.1, -0.7, 0.7, 2.1])
    for cx, cy in zip(column_x.ravel(), column_y.ravel()):
        occupied[:, ((x[None, :] - cx) ** 2 + (y[:, None] - cy) ** 2) < 0.3 ** 2] = True
    grid = OccupancyGrid(occupied, RES, origin)
    y0, z0 = np.meshgrid(np.array([-1.4, 0.0, 1.4]) + 0.3, [0.8, 1.6])
    west = np.column_stack([np.full(y0.size, -4.2), y0.ravel(), z0.ravel()])
    east = west * [-1.0, 1.0, 1.0] + [0.0, -0.6, 0.4]
    starts, goals = np.vstack([west, east]), np.vstack([east, west])
    params = OrcaParams(time_step=0.1, neighbor_dist=3.0, max_neighbors=10, time_horizon=2.0,
                        time_horizon_obst=1.0, radius=0.25, max_speed=1.5)
    pos, worst, _ = fly(grid, starts, goals, params, 300)
    arrived = int(np.sum(np.linalg.norm(pos - goals, axis=1) < 0.3))
    print(f'columns: min clearance {worst:.4f} (radius 0.25), {arrived} of {len(pos)} arrived')
    assert worst >= 0.25
    assert arrived == len(pos)


def test_forest_map_from_npz():
    """Drones fly across a corner of the 3-D forest (loaded with OccupancyGrid.from_npz)."""
    forest = OccupancyGrid.from_npz(SHARED / 'refdata' / 'planners' / 'forest_3d.npz')
    grid = OccupancyGrid(forest.occupied[:, :120, :120], forest.resolution, forest.origin)
    clear = Clearance(grid)
    rng = np.random.default_rng(5)
    candidates = np.column_stack([rng.uniform(0.6, 2.0, 200), rng.uniform(0.6, 11.4, 200),
                                  rng.uniform(0.6, 4.4, 200)])
    starts = candidates[clear(candidates, 0.6) > 0.6][:10]
    goals = starts + [9.5, 0.0, 0.0]
    params = OrcaParams(time_step=0.1, neighbor_dist=3.0, max_neighbors=8, time_horizon=2.0,
                        time_horizon_obst=1.0, radius=0.3, max_speed=2.0)
    pos, worst, _ = fly(grid, starts, goals, params, 120)
    print(f'forest: min clearance {worst:.4f} (radius 0.3), mean progress '
          f'{np.mean(pos[:, 0] - starts[:, 0]):.2f} m')
    assert worst >= 0.3
    assert np.mean(pos[:, 0] - starts[:, 0]) > 3.0


def test_obstacle_cap_never_drops_the_voxels_within_one_step():
    """With max_obstacles=1 every voxel within one step's reach is still a plane."""
    grid = wall_with_window()
    obstacles = prepare_voxel_obstacles(grid, max_obstacles=1)
    starts = np.column_stack([np.full(6, 1.0), np.linspace(-2.0, 2.0, 6), np.full(6, 0.8)])
    params = OrcaParams(time_step=0.1, neighbor_dist=3.0, max_neighbors=8, time_horizon=2.0,
                        time_horizon_obst=1.0, radius=0.3, max_speed=2.0)
    _, worst, _ = fly(grid, starts, starts + [4.0, 0.0, 0.0], params, 60, obstacles)
    assert worst >= 0.3
    solution = solve(starts + [1.65, 0.0, 0.0], np.zeros((6, 3)), np.full((6, 3), [2.0, 0, 0]),
                     params, obstacles)
    assert solution.planes.num_obstacle > 1


def test_voxel_obstacles_bad_input():
    params = OrcaParams(time_step=0.1, neighbor_dist=3.0, max_neighbors=8, time_horizon=2.0,
                        time_horizon_obst=1.0, radius=0.3, max_speed=1.0)
    flat = OccupancyGrid(np.zeros((10, 10), dtype=bool), RES, [0.0, 0.0])
    with pytest.raises(ValueError, match='3-D occupancy grid'):
        prepare_voxel_obstacles(flat)
    with pytest.raises(ValueError, match='max_obstacles'):
        prepare_voxel_obstacles(wall_with_window(), max_obstacles=0)
    with pytest.raises(ValueError, match='obstacles'):
        compute_velocities(np.zeros((1, 3)), np.zeros((1, 3)), np.zeros((1, 3)), params,
                           [np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])])
    # An empty map is no obstacle at all; a 3-D grid may be passed unprepared.
    empty = OccupancyGrid(np.zeros((4, 4, 4), dtype=bool), RES, [0.0, 0.0, 0.0])
    out = compute_velocities([[0.2, 0.2, 0.2]], [[0, 0, 0]], [[0.5, 0, 0]], params, empty)
    np.testing.assert_allclose(out, [[0.5, 0.0, 0.0]])


def test_voxel_grid_npz_round_trip(tmp_path):
    grid = wall_with_window()
    path = grid.save_npz(tmp_path / 'wall.npz')
    back = OccupancyGrid.from_npz(path)
    np.testing.assert_array_equal(back.occupied, grid.occupied)
    assert back.resolution == grid.resolution
    np.testing.assert_array_equal(back.origin, grid.origin)
    np.savez(tmp_path / 'bad.npz', resolution=0.1)
    with pytest.raises(ValueError, match='origin'):
        OccupancyGrid.from_npz(tmp_path / 'bad.npz')
