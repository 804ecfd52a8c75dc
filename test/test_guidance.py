"""Geodesic guidance: goals behind obstacles are reached through the real ORCA simulator."""
from pathlib import Path

import numpy as np
import pytest

from orca_nav.bringup.scenarios import blocks
from orca_nav.core.avoidance import OrcaParams, OrcaSimulator, prepare_obstacles
from orca_nav.core.avoidance.map_polygons import grid_to_polygons
from orca_nav.core.fleet.deadlock import DeadlockBreaker
from orca_nav.core.fleet.guidance import GeodesicGuidance
from orca_nav.core.fleet.preferred_velocity import goal_velocities
from orca_nav.core.grid import OccupancyGrid

RESOLUTION = 0.2
RADIUS = 0.4


def _block_map():
    """20 m x 20 m room (origin -10, -10) with a 4 m x 10 m block (x x y) in the middle."""
    occupied = np.zeros((100, 100), dtype=bool)
    occupied[25:75, 40:60] = True
    return OccupancyGrid(occupied, RESOLUTION, (-10.0, -10.0))


# Agents straight behind the block from their goals, swapping sides.
STARTS = np.array([[-6.0, 0.0], [6.0, 0.3], [-6.0, -2.0], [6.0, 2.5]])
GOALS = -STARTS


def _run(grid, guided, starts=STARTS, goals=GOALS, time_step=0.1, max_time=40.0):
    """Closed loop through OrcaSimulator with the map's polygons and the deadlock breaker.

    Returns (arrived (N,), min clearance to the map, min centre distance between agents)."""
    params = OrcaParams(time_step=time_step, neighbor_dist=5.0, max_neighbors=10,
                        time_horizon=3.0, time_horizon_obst=2.0, radius=RADIUS + 0.05,
                        max_speed=1.5)
    sim = OrcaSimulator(params)
    for start in starts:
        sim.add_agent(start)
    sim.set_obstacles(prepare_obstacles(grid_to_polygons(grid)))
    guidance = GeodesicGuidance(grid)
    breaker = DeadlockBreaker(len(starts))
    min_clearance = min_gap = np.inf
    arrived = np.zeros(len(starts), dtype=bool)
    while sim.global_time < max_time:
        positions = sim.positions
        min_clearance = min(min_clearance, float(grid.clearance_at(positions).min()))
        gaps = np.linalg.norm(positions[:, None] - positions[None], axis=2)
        min_gap = min(min_gap, (gaps + 1e9 * np.eye(len(positions))).min())
        headings = distances = None
        if guided:
            headings, distances = guidance.directions(positions, goals, RADIUS + 0.05)
        pref, arrived = goal_velocities(positions, goals, 1.5, 2.0, 0.1, time_step=time_step,
                                        headings=headings, route_lengths=distances)
        if arrived.all():
            break
        pref = breaker.update(sim.global_time, positions, pref, arrived, goals, 1.5, RADIUS,
                              distances=distances)
        sim.set_pref_velocities(pref)
        sim.step()
    return arrived, min_clearance, min_gap


def test_straight_line_preferred_velocity_gets_stuck_behind_a_block():
    arrived, _, _ = _run(_block_map(), guided=False)
    assert not arrived.any()


def test_geodesic_guidance_reaches_goals_behind_a_block_without_touching_it():
    arrived, min_clearance, min_gap = _run(_block_map(), guided=True)
    assert arrived.all() and min_gap > 2.0 * RADIUS
    assert min_clearance > RADIUS - 0.5 * RESOLUTION   # cell-centre clearance: half-cell slack


def test_visible_goal_gives_the_straight_direction_and_distance():
    guidance = GeodesicGuidance(_block_map())
    positions = np.array([[-6.0, -6.0], [-6.0, 7.0]])
    goals = np.array([[6.0, -6.0], [np.nan, np.nan]])
    heading, length = guidance.directions(positions, goals, RADIUS)
    np.testing.assert_allclose(heading, [[1.0, 0.0], [0.0, 0.0]])
    assert length[0] == pytest.approx(12.0) and np.isnan(length[1])


def test_hidden_goal_heads_around_the_block_with_a_route_longer_than_straight():
    guidance = GeodesicGuidance(_block_map())
    positions = np.array([[-5.0, 0.5], [-5.0, -0.5]])
    heading, length = guidance.directions(positions, np.array([[5.0, 0.5], [5.0, -0.5]]), RADIUS)
    # Each goes round the nearer corner: up for the upper robot, down for the lower one.
    assert heading[0, 1] > 0.3 and heading[1, 1] < -0.3
    assert np.all(length > 16.0) and np.all(length < 17.5)   # straight 10 m; round ~16.2 m


def test_a_door_narrower_than_the_margin_wants_is_still_the_route():
    """A 1.0 m door in a wall, for a robot of radius 0.35: inflated by radius + margin (0.5 m
    per side, in whole cells) the door is shut, by the radius alone it is open. The robot's
    route goes through the door (not straight into the wall), as long as it is the way."""
    occupied = np.zeros((60, 60), dtype=bool)
    occupied[:, 29:31] = True           # a wall at x = 2.9 - 3.1 m ...
    occupied[25:35, 29:31] = False      # ... with a door at y = 2.5 - 3.5 m
    guidance = GeodesicGuidance(OccupancyGrid(occupied, 0.1, (0.0, 0.0)), margin=0.1)
    heading, length = guidance.directions([[1.5, 0.5]], [[4.5, 0.5]], 0.35)
    assert heading[0, 1] > 0.5                      # up toward the door
    assert length[0] > np.hypot(1.5, 2.5) + np.hypot(1.5, 2.5) - 0.5


def test_unreachable_goal_falls_back_to_the_straight_heading():
    occupied = np.zeros((30, 40), dtype=bool)
    occupied[:, 20:22] = True   # a wall across the whole map
    guidance = GeodesicGuidance(OccupancyGrid(occupied, 0.1, (0.0, 0.0)))
    heading, length = guidance.directions([[1.0, 1.5]], [[3.5, 1.0]], RADIUS)
    np.testing.assert_allclose(heading[0], [2.5, -0.5] / np.hypot(2.5, 0.5))
    assert length[0] == pytest.approx(np.hypot(2.5, 0.5))


def test_field_is_built_once_per_goal_and_radius_class():
    guidance = GeodesicGuidance(_block_map())
    goals = np.array([[5.0, 0.0], [5.0, 0.0], [5.0, 1.0]])
    positions = np.array([[-5.0, 0.0], [-5.0, 1.0], [-5.0, 2.0]])
    guidance.directions(positions, goals, RADIUS)
    guidance.directions(positions + 0.1, goals, [RADIUS, RADIUS, 0.55])
    sizes = sorted(len(c.goal_rows) for c in guidance._classes.values())
    assert sizes == [1, 2]   # 0.4 m class: two goals; 0.55 m class: one


def test_remembered_route_ends_give_the_answer_of_a_fresh_guidance():
    # Hidden goals: each robot's route end comes from its goal and block alone, so a later
    # call from the same blocks (other points in them) reads it back; the answer must be the
    # one a guidance that never saw those robots gives, to the bit.
    goals = np.array([[5.0, 0.5], [5.0, -0.5], [5.0, 0.5]])
    positions = np.array([[-5.0, 0.5], [-5.0, -0.5], [-4.3, 2.1]])
    remembering = GeodesicGuidance(_block_map())
    remembering.directions(positions, goals, RADIUS)
    ends = next(iter(remembering._classes.values())).route_ends
    for shift, remembered in ((0.03, 3), (0.07, 3), (0.25, 6)):   # same blocks, then new ones
        moved = positions + shift
        heading, length = remembering.directions(moved, goals, RADIUS)
        assert len(ends) == remembered
        fresh_heading, fresh_length = GeodesicGuidance(_block_map()).directions(
            moved, goals, RADIUS)
        np.testing.assert_array_equal(heading, fresh_heading)
        np.testing.assert_array_equal(length, fresh_length)


def test_rejects_bad_input_naming_it():
    guidance = GeodesicGuidance(_block_map())
    with pytest.raises(ValueError, match=r'positions\[1\]'):
        guidance.directions([[0.0, 0.0], [np.nan, 0.0]], np.zeros((2, 2)), RADIUS)
    with pytest.raises(ValueError, match=r'radius\[0\]'):
        guidance.directions([[0.0, 0.0]], [[1.0, 1.0]], -1.0)
    with pytest.raises(ValueError, match='margin'):
        GeodesicGuidance(_block_map(), margin=-0.1)
    with pytest.raises(ValueError, match='lane_bias'):
        GeodesicGuidance(_block_map(), lane_bias=2.0)


@pytest.mark.slow
def test_hundred_robots_of_rvo2_blocks_all_arrive_through_orca():
    """RVO2's Blocks layout, all 100 agents: every route crosses the central cross, where
    straight-to-goal agents jam against the blocks and shortest routes alone jam head-on."""
    grid = OccupancyGrid.from_map_yaml(Path(__file__).parents[1] / 'config/maps/blocks.yaml')
    fleet = blocks(100).robots
    starts = np.array([r.start[:2] for r in fleet])
    goals = np.array([r.goals[0][:2] for r in fleet])
    arrived, _, min_gap = _run(grid, guided=True, starts=starts, goals=goals, time_step=0.05,
                               max_time=120.0)
    assert arrived.sum() == 100
    assert min_gap > 2.0 * RADIUS
