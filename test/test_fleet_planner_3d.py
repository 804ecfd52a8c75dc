"""The fleet planning supervisor in 3-D: drones plan through a 3-D map, ground robots on /map,
bad 3-D goals end at once naming the field; the 3-D reference is tracked in 3-D (core, no ROS)."""
import numpy as np
import pytest

from orca_nav.core.fleet.fleet_planner import FleetPlanner, ReplanPolicy
from orca_nav.core.fleet.plan_jobs import PlanSettings, StartState, run_request
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.fleet.status import Level
from orca_nav.core.fleet.tracking import FleetTracker
from orca_nav.core.grid import OccupancyGrid

from scenes import room

RES3 = 0.2
DRONE = RobotSpec('drone0', kinematics='quadrotor', radius=0.25, max_speed=2.0, max_accel=2.0)
GROUND = RobotSpec('robot0', kinematics='holonomic', radius=0.25, max_speed=1.0, max_accel=1.0)
POLICY = ReplanPolicy(goal_tolerance=0.2)
# The budget only guards against a hang: a loaded machine may take seconds for these plans.
SETTINGS = PlanSettings(safety_margin=0.05, plan_time_budget=30.0)


def wall_with_window():
    """10 x 10 x 4 m at 0.2 m: a wall across x 4.8..5.2 with one window at y 3..7, z 2..3.6,
    the only way from the west half to the east half; a floor (z 0..0.2) and a ceiling
    (z 3.8..4) span the map, so its occupied voxels (the cloud on ROS) span it too."""
    nx, ny, nz = 50, 50, 20
    occ = np.zeros((nz, ny, nx), bool)
    x = (np.arange(nx) + 0.5) * RES3
    y = (np.arange(ny) + 0.5) * RES3
    z = (np.arange(nz) + 0.5) * RES3
    wall = (x > 4.8) & (x < 5.2)
    window = ((y > 3.0) & (y < 7.0))[None, :, None] & ((z > 2.0) & (z < 3.6))[:, None, None]
    occ[:, :, wall] = True
    occ &= ~(window & wall[None, None, :])
    occ[0] = occ[-1] = True
    return OccupancyGrid(occ, RES3, (0.0, 0.0, 0.0))


def drone_state(x, y, z, yaw=0.0, stamp=0.0):
    return StartState(pose=[x, y, z, yaw], velocity=[0.0, 0.0, 0.0], stamp_s=stamp)


def fleet(*specs):
    return FleetPlanner({s.name: s for s in specs}, SETTINGS, POLICY)


def test_a_drone_plans_in_3d_through_the_window_with_start_and_goal_altitude():
    planner = fleet(DRONE)
    grid = wall_with_window()
    planner.set_map(grid, now=0.0)
    planner.set_start_state('drone0', drone_state(2.0, 2.0, 0.8), now=0.0)
    (request,) = planner.set_goal('drone0', [8.0, 8.0, 1.5, 0.0], now=0.0).plan
    outcome = run_request(request)
    assert outcome.result.success, outcome.result.message
    ref = outcome.reference
    assert ref.dim == 3
    np.testing.assert_allclose(ref.positions[0], [2.0, 2.0, 0.8], atol=1e-6)
    np.testing.assert_allclose(ref.positions[-1], [8.0, 8.0, 1.5], atol=0.05)
    crossing = np.argmin(np.abs(ref.positions[:, 0] - 5.0))
    assert 2.0 < ref.positions[crossing, 2] < 3.6 and 3.0 < ref.positions[crossing, 1] < 7.0
    assert grid.points_free(ref.positions, DRONE.radius).all()
    actions = planner.finish(outcome, now=0.5)
    (update,) = actions.publish
    assert update.reference is ref and actions.status[0].message.startswith('following a ')
    progress = planner.progress('drone0')
    assert progress.pose.size == 4 and progress.distance_remaining > np.linalg.norm([6, 6, 0.7])


def test_a_drone_is_not_planned_through_a_gap_3d_orca_holds_it_in():
    """The wall's window plus a slot straight between start and goal whose voxel centres are
    0.8 m apart: 0.6 m is the drone's diameter with the margin, so it passes the slot by voxel
    centres, but 3-D ORCA keeps it a voxel ball (half the voxel diagonal, 0.17 m) further from
    each and would hold it in there. The plan goes round through the window."""
    grid = wall_with_window()
    occupied = grid.occupied.copy()
    centres = (np.arange(50) + 0.5) * RES3
    slot = (centres > 1.4) & (centres < 2.0)            # free y 1.5 .. 1.9, walls at 1.3, 2.1
    occupied[1:-1, slot, 24:26] = False
    grid = OccupancyGrid(occupied, RES3, (0.0, 0.0, 0.0))
    planner = fleet(DRONE)
    planner.set_map(grid, now=0.0)
    planner.set_start_state('drone0', drone_state(2.0, 1.7, 1.0), now=0.0)
    outcome = run_request(planner.set_goal('drone0', [8.0, 1.7, 1.0, 0.0], now=0.0).plan[0])
    assert outcome.result.success, outcome.result.message
    positions = outcome.reference.positions
    crossing = positions[np.argmin(np.abs(positions[:, 0] - 5.0))]
    assert 3.0 < crossing[1] < 7.0 and 2.0 < crossing[2] < 3.6, crossing   # not the slot


def test_a_mixed_fleet_plans_each_robot_on_the_map_of_its_dimension():
    planner = fleet(DRONE, GROUND)
    planner.set_start_state('drone0', drone_state(2.0, 2.0, 1.0), now=0.0)
    planner.set_start_state('robot0', StartState([2.0, 5.0, 0.0], [0.0, 0.0], 0.0), now=0.0)
    assert not planner.set_goal('drone0', [8.0, 8.0, 3.0, 0.0], now=0.0).plan
    assert not planner.set_goal('robot0', [8.0, 5.0, 0.0], now=0.0).plan
    assert planner.statuses()[0].message == 'no 3-D map yet: holding still until one arrives'
    (drone_request,) = planner.set_map(wall_with_window(), now=1.0).plan
    assert drone_request.robot == 'drone0' and drone_request.grid.ndim == 3
    assert planner.statuses()[1].message == 'no map yet: holding still until one arrives'
    (ground_request,) = planner.set_map(room(), now=2.0).plan
    assert ground_request.robot == 'robot0' and ground_request.grid.ndim == 2
    assert planner.map_has_free_cell(2) and planner.map_has_free_cell(3)


@pytest.mark.parametrize('goal, reason, text', [
    ([5.0, 5.0, 4.5, 0.0], 'out_of_map', 'goal x, y, z (5, 5, 4.5) is outside the map '
                                         '(it spans x 0..10, y 0..10, z 0..4)'),
    ([-1.0, 5.0, 1.0, 0.0], 'out_of_map', 'goal x, y, z (-1, 5, 1) is outside the map'),
    ([5.0, 2.0, 1.0, 0.0], 'goal_in_collision', 'goal x, y, z (5, 2, 1) is in an occupied cell')])
def test_a_goal_outside_the_3d_map_or_in_the_wall_ends_at_once_naming_the_field(goal, reason, text):
    planner = fleet(DRONE)
    planner.set_map(wall_with_window(), now=0.0)
    planner.set_start_state('drone0', drone_state(2.0, 2.0, 1.0), now=0.0)
    actions = planner.set_goal('drone0', goal, now=0.0)
    assert not actions.plan
    (end,) = actions.ended
    assert end.robot == 'drone0' and not end.reached and end.reason == reason
    assert text in end.message
    assert [u.reference for u in actions.publish] == [None]      # holds still
    assert actions.status[-1].level is Level.ERROR and text in actions.status[-1].message


def test_a_drone_goal_without_altitude_or_a_flat_start_state_is_refused_naming_the_fields():
    planner = fleet(DRONE)
    actions = planner.set_goal('drone0', [8.0, 8.0, 0.0], now=0.0)
    assert not actions.plan
    assert actions.status[0].message == ('goal rejected: goal must be 4 finite values '
                                         '(x, y, z, yaw), got [8.0, 8.0, 0.0]')
    with pytest.raises(ValueError, match=r'drone0: start state pose must be 4 values '
                                         r'\(x, y, z, yaw\)'):
        planner.set_start_state('drone0', StartState([1.0, 1.0, 0.0], [0.0, 0.0], 0.0), now=0.0)
    with pytest.raises(ValueError, match='start state velocity must be 3 finite values'):
        StartState([1.0, 1.0, 1.0, 0.0], [0.0, np.nan, 0.0], 0.0)


def test_the_tracker_follows_a_3d_plan_climbing_and_descending():
    planner = fleet(DRONE)
    planner.set_map(wall_with_window(), now=0.0)
    planner.set_start_state('drone0', drone_state(2.0, 5.0, 0.6), now=0.0)
    (request,) = planner.set_goal('drone0', [8.0, 5.0, 0.6, 0.0], now=0.0).plan
    ref = run_request(request).reference
    tracker = FleetTracker([False], dim=3)
    tracker.set_reference(0, ref, start_time=0.0)
    position, dt, heights = np.array([[2.0, 5.0, 0.6]]), 0.05, []
    for k in range(int((ref.duration + 5.0) / dt)):
        cmd = tracker.update(k * dt, position, [0.0], max_speed=DRONE.max_speed)
        position = position + cmd.pref_velocity * dt
        heights.append(position[0, 2])
        if cmd.reached[0]:
            break
    assert cmd.reached[0]
    np.testing.assert_allclose(position[0], [8.0, 5.0, 0.6], atol=0.2)
    assert max(heights) > 2.0      # it climbed to the window and came down again


def test_a_drone_goal_at_z_0_keeps_the_altitude_it_flies_at():
    planner = fleet(DRONE)
    planner.set_map(wall_with_window(), now=0.0)
    planner.set_start_state('drone0', drone_state(2.0, 5.0, 2.8), now=0.0)
    (request,) = planner.set_goal('drone0', [8.0, 5.0, 0.0, 0.0], now=0.0).plan
    np.testing.assert_allclose(request.goal, [8.0, 5.0, 2.8, 0.0])


def test_the_controller_flies_a_drone_along_its_3d_plan_through_the_window():
    from orca_nav.core.fleet.controller import FleetController
    from orca_nav.core.fleet.controller_params import ControllerParams
    from orca_nav.core.fleet.drones import prepare_map_3d
    from orca_nav.core.fleet.kinematics import RobotLimits
    from orca_nav.core.sim.fleet_sim import FleetSim
    grid = wall_with_window()
    planner = fleet(DRONE)
    planner.set_map(grid, now=0.0)
    planner.set_start_state('drone0', drone_state(2.0, 5.0, 0.8), now=0.0)
    (request,) = planner.set_goal('drone0', [8.0, 5.0, 1.0, 0.0], now=0.0).plan
    ref = run_request(request).reference
    limits = RobotLimits.create(['quadrotor'], [DRONE.max_speed], [DRONE.max_accel], [2.0])
    sim = FleetSim(limits, [DRONE.radius], [[2.0, 5.0, 0.0]], start_altitudes=[0.8])
    sim.set_grid_3d(grid)
    ctl = FleetController([DRONE], ControllerParams(deadlock=None, trajectories_only=True))
    ctl.set_map_3d(prepare_map_3d(grid))
    ctl.set_trajectory(0, ref, 0.0)
    events, dt, t, heights = [], 1.0 / ctl.params.control_rate, 0.0, []
    while t < ref.duration + 10.0 and not ctl.steering.arrived[0]:
        poses, twists = sim.odometry()
        velocity = [twists[0, 0], twists[0, 1], sim.climb_rates[0]]     # yaw stays 0
        ctl.set_state(0, t, [poses[0, 0], poses[0, 1], sim.altitudes[0]], velocity, poses[0, 2])
        out = ctl.step(t)
        sim.set_commands(out.twists, climb_rates=out.climb_rates)
        events += sim.advance(dt, 0.01)
        heights.append(sim.altitudes[0])
        t += dt
    assert events == [] and ctl.steering.arrived[0]
    np.testing.assert_allclose([*sim.poses[0, :2], sim.altitudes[0]], [8.0, 5.0, 1.0], atol=0.2)
    assert max(heights) > 2.0          # through the window (z 2..3.6), not straight at the goal
