"""Noisy maps (thousands of one-cell specks): what is prepared for ORCA still covers every
occupied cell, the big-map obstacle structure finds every obstacle neighbour, and robots cross
such a map without touching a speck. (Timings: bench/bench_noisy_map.py.)"""
import numpy as np
import pytest
from test_map_polygons import winding_number

from orca_nav.core.avoidance.map_polygons import grid_to_polygons
from orca_nav.core.avoidance.obstacles import RVO2_TREE_MAX_VERTICES, prepare_obstacles
from orca_nav.core.fleet.controller import FleetController
from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.guidance import GeodesicGuidance
from orca_nav.core.fleet.kinematics import RobotLimits
from orca_nav.core.fleet.map_model import MapModel, prepare_map
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.obstacle_distance import ObstacleDistance
from orca_nav.core.sim.fleet_sim import FleetSim


def noisy_grid(size=400, specks=2000, seed=0, resolution=0.05):
    rng = np.random.default_rng(seed)
    occupied = np.zeros((size, size), dtype=bool)
    cells = rng.integers(0, size, size=(specks, 2))
    occupied[cells[:, 1], cells[:, 0]] = True
    return OccupancyGrid(occupied, resolution, (0.0, 0.0))


def test_a_noisy_map_gets_the_big_map_structure_and_every_speck_stays_covered():
    grid = noisy_grid()
    model = prepare_map(grid, 0.0, guided=False)
    assert model.vertex_count > RVO2_TREE_MAX_VERTICES and not model.obstacles.rvo2_tree
    polygons = model.obstacles.polygons
    iy, ix = np.nonzero(grid.occupied)
    centres = grid.cell_centers(np.stack([ix, iy], axis=1))
    # The map border is a wall here, so free space has winding number -1 and material 0.
    # A speck off the border is its own island, exactly its cell square.
    inner = (ix > 0) & (iy > 0) & (ix < grid.shape[1] - 1) & (iy < grid.shape[0] - 1)
    assert np.all(winding_number(polygons, centres[inner]) == 0)
    # One on the border is a notch of the border wall, which Douglas-Peucker may cut by its
    # tolerance (0.75 cell, inside the controller's safety margin): the centre stays within it.
    ring = centres[~inner]
    edges_a = np.concatenate(polygons)
    edges_b = np.concatenate([np.roll(p, -1, axis=0) for p in polygons])
    t = np.clip(((ring[:, None] - edges_a) * (edges_b - edges_a)).sum(axis=2)
                / ((edges_b - edges_a) ** 2).sum(axis=1), 0.0, 1.0)
    gap = np.linalg.norm(edges_a + t[..., None] * (edges_b - edges_a) - ring[:, None], axis=2)
    covered = winding_number(polygons, ring) == 0
    assert np.all(covered | (gap.min(axis=1) <= 0.75 * grid.resolution))
    # ...and every vertex of the structure is a polygon vertex: nothing moved, nothing cut.
    assert len(model.obstacles) == model.vertex_count


def exhaustive_neighbors(obstacles, positions, range_sq):
    """Every (agent, edge) with the agent strictly on the outer side and the edge within range,
    by brute force in float32 (RVO2's predicate)."""
    from orca_nav.core.avoidance.obstacles import _left_of, dist_sq_point_segment
    pos = positions.astype(np.float32)[:, None, :]
    a = obstacles.points32[None]
    b = obstacles.points32[obstacles.next_vertex][None]
    outside = _left_of(a[..., 0], a[..., 1], b[..., 0], b[..., 1], pos[..., 0], pos[..., 1]) < 0
    e = b - a
    dist = dist_sq_point_segment(a[..., 0], a[..., 1], b[..., 0], b[..., 1], pos[..., 0],
                                  pos[..., 1], e[..., 0] * e[..., 0] + e[..., 1] * e[..., 1])
    agent, edge = np.nonzero(outside & (dist < np.float32(range_sq)[:, None]))
    return set(zip(agent.tolist(), edge.tolist()))


@pytest.mark.parametrize('agents', [1, 16, 300])
def test_the_big_map_structure_finds_every_obstacle_neighbour(agents):
    grid = noisy_grid(specks=3000, seed=1)
    obstacles = prepare_obstacles(grid_to_polygons(grid))
    assert not obstacles.rvo2_tree
    rng = np.random.default_rng(agents)
    positions = rng.uniform(-1.0, 21.0, size=(agents, 2))
    range_sq = rng.uniform(0.1, 2.5, size=agents) ** 2
    agent, edge = obstacles.neighbors(positions, range_sq)
    assert set(zip(agent.tolist(), edge.tolist())) == exhaustive_neighbors(obstacles, positions,
                                                                           range_sq)
    # sorted by agent, then by distance
    assert np.all(np.diff(agent) >= 0)


def test_the_big_map_structure_reuses_its_prefilter_only_while_that_is_exact():
    """The kd-tree's candidates of one query serve the next ones while the agents stay within
    its margin: every answer equals a fresh query's, order included; agents that move far, a
    larger reach or another agent count make it ask the kd-tree again."""
    obstacles = prepare_obstacles(grid_to_polygons(noisy_grid(specks=3000, seed=2)))
    rng = np.random.default_rng(3)
    positions = rng.uniform(2.0, 18.0, size=(16, 2))
    reused = 0
    for step in range(60):
        positions = positions + rng.normal(0.0, 0.3 if step % 10 == 9 else 0.03, positions.shape)
        count = 16 if step % 20 else 12
        range_sq = np.full(count, 1.5 if step % 15 == 14 else 1.0) ** 2
        before = obstacles._candidates
        agent, edge = obstacles.neighbors(positions[:count], range_sq)
        reused += obstacles._candidates is before
        kept, obstacles._candidates = obstacles._candidates, None
        fresh = obstacles.neighbors(positions[:count], range_sq)
        obstacles._candidates = kept
        np.testing.assert_array_equal(agent, fresh[0])
        np.testing.assert_array_equal(edge, fresh[1])
    assert 20 < reused < 60


def test_robots_cross_a_noisy_map_without_touching_a_speck():
    """Eight robots swap across a 20 m map with 200 specks (the density of the benchmark's
    map) on the big-map structure, driven by the controller in a simulator that reports every
    robot-map contact."""
    count = 8
    angle = 2.0 * np.pi * np.arange(count) / count
    start = 10.0 + 7.0 * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    goals = 20.0 - start
    # starts and goals clear of the specks (as the fleet file check requires)
    occupied = noisy_grid(size=400, specks=200, seed=2).occupied.copy()
    cy, cx = np.mgrid[0:400, 0:400]
    for x, y in start:
        occupied[np.hypot((cx + 0.5) * 0.05 - x, (cy + 0.5) * 0.05 - y) < 0.5] = False
    grid = OccupancyGrid(occupied, 0.05, (0.0, 0.0))
    polygons = grid_to_polygons(grid)
    obstacles = prepare_obstacles(polygons, rvo2_tree_max_vertices=0)
    # Goal guidance, as orca_node gives robots that steer by goal: straight to the goal, a
    # robot can stall behind a speck.
    model = MapModel(grid, obstacles, GeodesicGuidance(grid), len(polygons), len(obstacles),
                     ObstacleDistance(grid))
    robots = [RobotSpec(f'r{i}', radius=0.2, max_speed=1.0) for i in range(count)]
    controller = FleetController(robots, ControllerParams(require_map=True))
    controller.set_map(model)
    for i in range(count):
        assert controller.set_goal(i, goals[i]) is None
    limits = RobotLimits.create(['holonomic'] * count, max_speed=1.0, max_accel=2.0,
                                max_yaw_rate=2.0)
    sim = FleetSim(limits, 0.2, np.column_stack([start, np.zeros(count)]), grid=grid)
    period = controller.params.period
    events = []
    for cycle in range(int(30.0 / period)):
        now = cycle * period
        poses, twists = sim.odometry()
        for i in range(count):
            controller.set_state(i, now, poses[i, :2], twists[i, :2], poses[i, 2])
        events += sim.step(period, controller.step(now).twists)
    assert not events
    assert np.all(np.linalg.norm(sim.poses[:, :2] - goals, axis=1) < 0.5)
