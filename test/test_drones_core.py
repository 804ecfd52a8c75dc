"""Drones in the core: quadrotor kinematics, the simulator in 3-D, the controller's two layers."""
from pathlib import Path

import numpy as np
import pytest

from orca_nav.core.fleet.controller import FleetController
from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.drones import prepare_map_3d
from orca_nav.core.fleet.kinematics import RobotLimits, limit_velocity_3d
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.sim.closed_loop import RunResult, Scene, run
from orca_nav.core.sim.fleet_sim import ROBOT_MAP, ROBOT_ROBOT, FleetSim
from orca_nav.core.voxel_map import load_voxel_map

MAPS = Path(__file__).resolve().parents[1] / 'config' / 'maps'


def test_limit_velocity_3d_bounds_speed_and_acceleration_as_3d_vectors():
    out = limit_velocity_3d([[0.0, 0.0, 10.0], [3.0, 0.0, 4.0]], np.zeros((2, 3)),
                            max_speed=[2.0, 10.0], max_accel=[1.0, 100.0], dt=0.5)
    assert np.allclose(out[0], [0.0, 0.0, 0.5])            # accel 1 m/s^2 for 0.5 s
    assert np.allclose(out[1], [3.0, 0.0, 4.0])            # within both limits
    capped = limit_velocity_3d([[3.0, 0.0, 4.0]], [[3.0, 0.0, 4.0]], 2.5, 100.0, 0.1)
    assert np.isclose(np.linalg.norm(capped), 2.5)


def _sim(kinds, starts, altitudes, radius=0.3, **kwargs):
    limits = RobotLimits.create(kinds, max_speed=2.0, max_accel=4.0, max_yaw_rate=2.0)
    return FleetSim(limits, radius, starts, start_altitudes=altitudes, **kwargs)


def test_quadrotor_climbs_with_limits_and_ground_robots_stay_on_the_ground():
    sim = _sim(['quadrotor', 'holonomic'], [[0, 0, 0], [5, 0, 0]], [1.0, 0.0])
    for _ in range(100):
        sim.set_commands([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]], climb_rates=[5.0, 5.0])
        sim.step(0.02)
    # Accelerates at 4 m/s^2 up to 2 m/s (speed limit as a 3-D vector).
    assert np.isclose(sim.climb_rates[0], 2.0) and sim.climb_rates[1] == 0.0
    assert sim.altitudes[1] == 0.0 and 1.0 + 2.0 < sim.altitudes[0] < 1.0 + 2.0 * 1.98
    with pytest.raises(ValueError, match=r'start_altitudes\[1\] must be 0 for a ground robot'):
        _sim(['quadrotor', 'holonomic'], [[0, 0, 0], [5, 0, 0]], [1.0, 0.5])


def test_collisions_in_3d_drone_drone_drone_ground_and_voxels():
    # Two drones stacked 1 m apart and a drone high above a ground robot: no contact.
    sim = _sim(['quadrotor', 'quadrotor', 'quadrotor', 'diff_drive'],
               [[0, 0, 0], [0, 0, 0], [5, 0, 0], [5, 0, 0]], [1.0, 2.0, 2.0, 0.0])
    assert sim.step(0.02) == []
    # Drone 2 comes down into the ground layer (1 m) above the ground robot: a contact.
    sim2 = _sim(['quadrotor', 'diff_drive'], [[5, 0, 0], [5.2, 0, 0]], [1.2, 0.0])
    events = sim2.step(0.02)
    assert [(e.kind, e.robots) for e in events] == [(ROBOT_ROBOT, (0, 1))]
    assert len(events[0].position) == 3
    # Two drones 0.5 m apart in 3-D touch (radii 0.3 + 0.3).
    sim3 = _sim(['quadrotor', 'quadrotor'], [[0, 0, 0], [0.3, 0, 0]], [1.0, 1.4])
    assert [e.robots for e in sim3.step(0.02)] == [(0, 1)]
    # A drone next to a column of voxels.
    occupied = np.zeros((10, 10, 10), dtype=bool)
    occupied[:, 5, 5] = True                              # column at x, y 1.0..1.2
    grid = OccupancyGrid(occupied, 0.2, (0.0, 0.0, 0.0))
    sim4 = _sim(['quadrotor', 'quadrotor'], [[0.75, 1.1, 0], [0.4, 0.4, 0]], [1.0, 1.0])
    sim4.set_grid_3d(grid)
    events = sim4.step(0.02)
    assert [(e.kind, e.robots) for e in events] == [(ROBOT_MAP, (0,))]   # 0.25 m from the cube
    assert np.allclose(events[0].position, (0.75, 1.1, 1.0))


def _drone(name, **kw):
    return RobotSpec(name, kinematics='quadrotor', radius=0.3, max_speed=2.0, max_accel=3.0, **kw)


def run_closed_loop(specs, starts, altitudes, goals, goal_z, grid3d=None, seconds=40.0,
                    params=ControllerParams(deadlock=None)) -> RunResult:
    """Controller and simulator in lockstep at 20 Hz (`core.sim.closed_loop`) until every
    robot is within 0.2 m of its goal, 3-D for a drone."""
    goals = [[(*goal, z) if spec.flies else tuple(goal)]
             for spec, goal, z in zip(specs, goals, goal_z)]
    return run(Scene('drones', specs, np.asarray(starts, dtype=float), goals, grid_3d=grid3d,
                     start_altitudes=np.asarray(altitudes, dtype=float), duration=seconds,
                     params=params, goal_tolerance=0.2, sim_step=0.01))


def test_drones_swap_across_a_sphere_in_open_space_without_collisions():
    n = 8
    angles = 2 * np.pi * np.arange(n) / n
    centre = np.array([0.0, 0.0, 8.0])
    points = centre + 4.0 * np.column_stack([np.cos(angles), np.sin(angles),
                                             np.where(np.arange(n) % 2, 0.5, -0.5)])
    goals = 2 * centre - points
    grid = load_voxel_map(MAPS / 'open_3d.yaml')
    result = run_closed_loop(
        [_drone(f'd{i}') for i in range(n)], np.column_stack([points[:, :2], np.zeros(n)]),
        points[:, 2], goals[:, :2], goals[:, 2], grid3d=grid)
    assert result.contacts == [] and result.finished == n


def test_drones_pass_a_forest_column_without_touching_it():
    grid = load_voxel_map(MAPS / 'forest_3d.yaml')
    # A column of the forest (radius 0.68 m in forest_3d.npz) and two pairs of drones swapping
    # on lines 1.3 m from its axis, crossing each other beside it at one altitude.
    cx, cy = 7.07, 34.26
    starts = np.array([[cx - 4, cy + 1.3, 1.5], [cx + 4, cy + 1.3, 1.5],
                       [cx + 1.3, cy - 4, 1.5], [cx + 1.3, cy + 4, 1.5]])
    goals = starts[[1, 0, 3, 2]]
    assert not grid.occupied_at(starts).any()
    assert grid.occupied_at(np.array([[cx, cy, 1.5]]))[0], 'the column moved'
    result = run_closed_loop(
        [_drone(f'd{i}') for i in range(4)], np.column_stack([starts[:, :2], np.zeros(4)]),
        starts[:, 2], goals[:, :2], goals[:, 2], grid3d=grid)
    assert result.contacts == [] and result.finished == 4
    assert prepare_map_3d(grid).grid is grid


def test_mixed_fleet_low_drones_and_ground_robots_cross_without_collisions():
    specs = [RobotSpec('g0', kinematics='holonomic', radius=0.3, max_speed=1.0),
             RobotSpec('g1', kinematics='holonomic', radius=0.3, max_speed=1.0),
             _drone('d0'), _drone('d1')]
    starts = np.array([[-4, 0, 0], [4, 0, 0], [0, -4, 0], [0, 4, 0]], dtype=float)
    goals = starts[[1, 0, 3, 2], :2]
    # The drones' goals are at 0.6 m: they keep their altitude within 0.2 m.
    result = run_closed_loop(specs, starts, [0.0, 0.0, 0.6, 0.6], goals, [0.0, 0.0, 0.6, 0.6])
    assert result.contacts == [] and result.finished == 4


def test_drone_goals_outside_the_3d_map_or_in_a_column_are_refused():
    grid = load_voxel_map(MAPS / 'forest_3d.yaml')
    ctl = FleetController([_drone('d0'), RobotSpec('g0')])
    ctl.set_map_3d(prepare_map_3d(grid))
    reason = ctl.set_goal(0, (20.0, 20.0), 7.0)
    assert 'outside the 3-D map' in reason and 'z -0.2..5' in reason
    reason = ctl.set_goal(0, (7.07, 34.26), 1.5)
    assert 'inside an obstacle of the 3-D map' in reason
    assert ctl.set_goal(0, (2.0, 2.0), 1.0) is None
    # A ground robot's goal does not look at the 3-D map.
    assert ctl.set_goal(1, (7.07, 34.26)) is None


@pytest.mark.parametrize('axis', ['horizontal', 'vertical'])
def test_head_on_drones_pass_each_other(axis):
    """RVO2-3D's plane is undefined for an exactly head-on approach; keep_right avoids it."""
    if axis == 'horizontal':
        starts, z = np.array([[0, -4, 0], [0, 4, 0]], float), [3.0, 3.0]
        goals, goal_z = starts[[1, 0], :2], [3.0, 3.0]
    else:
        starts, z = np.zeros((2, 3)), [2.0, 6.0]
        goals, goal_z = np.zeros((2, 2)), [6.0, 2.0]
    result = run_closed_loop([_drone('d0'), _drone('d1')], starts, z, goals, goal_z,
                             seconds=20.0)
    assert result.contacts == [] and result.finished == 2


def test_a_level_goal_set_before_the_first_state_waits_for_the_altitude():
    """goal_z 0 means "at the altitude it flies": before any state, only x, y are checked."""
    ctl = FleetController([_drone('d0')])
    ctl.set_map_3d(prepare_map_3d(load_voxel_map(MAPS / 'forest_3d.yaml')))
    assert ctl.set_goal(0, (2.0, 2.0), 0.0) is None
    assert 'outside the 3-D map' in ctl.set_goal(0, (50.0, 2.0), 0.0)
