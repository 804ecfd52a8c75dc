"""The safety layer (core/fleet/safety.py) and acceleration-aware ORCA, each part against a run
without it: the braking envelope against the map, passive safety against people who walk at
robots, reciprocal braking between robots, late cycles, drones among people."""
import dataclasses
import math

import numpy as np
import pytest

from orca_nav.core.avoidance import NonCooperative, OrcaParams, solve
from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.kinematics import RobotLimits, integrate_pose, limit_twist
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.fleet.safety import PERSON, ROBOT, STATIC, SafetyInput, SafetyLayer
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.obstacle_distance import ObstacleDistance
from orca_nav.core.sim.closed_loop import Scene, run
from orca_nav.core.sim.pedestrians import PedestrianParams, Pedestrians

from scenes import room

OFF = ControllerParams(safety=None, acceleration_aware=False)


def _one(kind='holonomic', **fields):
    return RobotSpec('robot0', kinematics=kind, **fields)


def _input(poses, velocities, commands, hold=0.05, adjustable=None, n=None):
    n = len(poses)
    return SafetyInput(poses=np.asarray(poses, float), altitudes=np.zeros(n),
                       velocities=np.asarray(velocities, float), yaw_rates=np.zeros(n),
                       commands=np.asarray(commands, float), climb_rates=np.zeros(n),
                       hold=np.full(n, hold),
                       adjustable=np.ones(n, bool) if adjustable is None else adjustable,
                       known=np.ones(n, bool), stale=np.zeros(n, bool), speed_cap=np.ones(n))


@pytest.mark.parametrize('kind', ['holonomic', 'diff_drive', 'car'])
def test_braking_paths_are_the_kinematic_model_driven_step_by_step(kind):
    """The layer's closed-form braking path is what limit_twist + integrate_pose give when the
    command is held for `hold` and then zero is commanded."""
    limits = RobotLimits.create([kind], [1.5], [1.0], [1.2], [2.0])
    layer = SafetyLayer(limits, np.array([0.3]), np.array([1.0]))
    command = np.array([[1.2, 0.3 if kind == 'holonomic' else 0.0, 0.4]])
    state = _input([[1.0, 2.0, 0.3]], [[0.4 * math.cos(0.3), 0.4 * math.sin(0.3), 0.0]], command,
                   hold=0.13)
    state.yaw_rates = np.array([0.2])
    h, samples = 0.025, 120
    path, _ = layer.braking_paths(state, np.array([0]), command, np.zeros(1), np.array([0.13]),
                                   samples, h)
    pose = state.poses.copy()
    twist = np.array([[0.4, 0.0, 0.2]])
    for s in range(1, samples):
        target = command if (s - 1) * h < 0.13 - 1e-12 else np.zeros((1, 3))
        twist = limit_twist(target, twist, limits, h)
        pose = integrate_pose(pose, twist, h)
        np.testing.assert_allclose(path[s, 0, :2], pose[0, :2], atol=1e-9)


def test_obstacle_distance_never_overstates_and_is_exact_near_cells():
    rng = np.random.default_rng(3)
    grid = OccupancyGrid(rng.random((30, 30)) < 0.05, 0.1, (0.0, 0.0))
    distance = ObstacleDistance(grid)
    points = rng.uniform(0.0, 3.0, (3000, 2))
    padded = np.pad(grid.occupied, 1, constant_values=True)
    lower = (np.argwhere(padded)[:, ::-1] - 1) * 0.1
    gap = np.maximum(np.maximum(lower[None] - points[:, None], points[:, None] - lower[None] - 0.1),
                     0.0)
    truth = np.sqrt((gap ** 2).sum(axis=2)).min(axis=1)
    bound = distance.lower_bound(points)
    assert (bound <= truth + 1e-12).all()
    assert np.mean(np.abs(bound - truth) < 1e-9) > 0.99


@pytest.mark.parametrize('field', [True, False])
def test_obstacle_distance_near_is_the_lower_bound_wherever_that_is_within_reach(field):
    """lower_bound_near (the safety layer's one read of the grid per point) gives lower_bound's
    value wherever that is below the point's reach, and at least the reach elsewhere: with the
    clearance field (points certainly beyond skipped, occupied cells read from it) and without
    it; points outside the map are occupied (0)."""
    rng = np.random.default_rng(5)
    grid = OccupancyGrid(rng.random((40, 40)) < 0.03, 0.1, (0.0, 0.0))
    if field:
        grid.clearance()
    distance = ObstacleDistance(grid)
    points = rng.uniform(-0.5, 4.5, (2000, 2))
    reach = rng.uniform(0.0, 1.0, len(points))
    near = distance.lower_bound_near(points, reach)
    bound = distance.lower_bound(points, float(reach.max()))
    within = bound < reach
    np.testing.assert_array_equal(near[within], bound[within])
    assert (near[~within] >= reach[~within]).all()
    assert within.any() and (~within).any() and (near[~grid.in_bounds(points)] == 0.0).all()


def _wall_scene(params, kind='holonomic'):
    """A robot sent through a wall 3 m ahead (its goal lies behind it; no planner)."""
    grid = room(10.0, blocks=[(5.0, 0.0, 5.4, 10.0)])
    return Scene('wall', [_one(kind, max_speed=1.5, max_accel=1.0)],
                 np.array([[2.0, 5.0, 0.0]]), [[(8.0, 5.0)]], grid=grid, duration=12.0,
                 params=params)


def test_the_braking_envelope_keeps_a_robot_off_a_wall_orca_would_let_it_hit():
    """ORCA's obstacle lines assume the velocity changes at once; at 1 m/s^2 the robot needs
    1.1 m to stop from 1.5 m/s. Without the layer (and with the map's ORCA obstacles removed
    by a zero horizon) the robot drives into the wall; with it, it stops before."""
    blind = ControllerParams(safety=None, acceleration_aware=False, time_horizon_obst=0.01)
    assert any(e.category == 'robot_obstacle' and e.moving()
               for e in run(_wall_scene(blind)).contacts)
    guarded = ControllerParams(time_horizon_obst=0.01)
    assert run(_wall_scene(guarded)).contacts == []


def _toward_wall(kind, x, speed, speed_cap=1.0):
    """A robot of `kind` at (x, 5) heading +x at `speed`, commanded on to a wall at x = 5
    along a left-turning arc: the layer's result."""
    grid = room(10.0, blocks=[(5.0, 0.0, 5.4, 10.0)])
    limits = RobotLimits.create([kind], [1.5], [1.0], [2.0], [1.0])
    layer = SafetyLayer(limits, np.array([0.3]), np.array([1.0]))
    layer.static = ObstacleDistance(grid)
    command = np.array([[1.5, 0.0, 0.5]])
    state = _input([[x, 5.0, 0.0]], [[speed, 0.0, 0.0]], command)
    state = dataclasses.replace(state, speed_cap=np.array([speed_cap]))
    return command[0], layer.apply(state, 0.025, NonCooperative.empty())


def test_a_command_is_scaled_along_its_own_arc():
    """A diff-drive robot turning toward a wall keeps its curvature when slowed."""
    command, result = _toward_wall('diff_drive', 3.5, 1.5)
    assert 0.0 < result.scale[0] < 1.0 and result.reason[0] == STATIC
    np.testing.assert_allclose(result.twists[0], command * result.scale[0])


def test_a_round_robot_that_must_stand_still_turns_on_the_spot_once_at_rest():
    """No factor of the arc is safe: the robot stands. A diff-drive robot at rest keeps the
    command's turn (its footprint does not move, so no braking path changes; facing a wall
    closely it could otherwise never turn toward the way out). Still moving (1 m/s, 0.5 m from
    the wall) it brakes straight: turning while it brakes bends its braking path off the one
    checked (warehouse_throughput seed 16: braking from 0.96 m/s while turning at 2 rad/s, a
    robot hit a shelf at 0.36 m/s). A car cannot turn standing, and a robot whose state is too
    old to trust does not move at all."""
    command, moving = _toward_wall('diff_drive', 4.2, 1.0)
    assert moving.scale[0] == 0.0 and moving.reason[0] == STATIC
    np.testing.assert_allclose(moving.twists[0], 0.0)
    _, standing = _toward_wall('diff_drive', 4.65, 0.0)
    assert standing.scale[0] == 0.0 and standing.reason[0] == STATIC
    np.testing.assert_allclose(standing.twists[0], [0.0, 0.0, command[2]])
    _, car = _toward_wall('car', 4.2, 1.0)
    np.testing.assert_allclose(car.twists[0], 0.0)
    _, stale = _toward_wall('diff_drive', 4.2, 1.0, speed_cap=0.0)
    np.testing.assert_allclose(stale.twists[0], 0.0)


def _people_scene(params, behaviour='threatening', seed=0, kind='holonomic', duration=40.0):
    """Four robots crossing a 16 m square among six people who walk at them at 1.3 m/s."""
    grid = room(16.0)
    walkers = Pedestrians(np.zeros((0, 4)), [[4.0, 4.0], [12.0, 12.0], [4.0, 12.0],
                                             [12.0, 4.0], [8.0, 2.0], [8.0, 14.0]],
                          PedestrianParams(speed=1.3, radius=0.25, area=(0.0, 0.0, 16.0, 16.0)),
                          grid=grid, seed=seed, behaviours=[behaviour] * 6)
    robots = [RobotSpec(f'robot{i}', kinematics=kind) for i in range(4)]
    starts = np.array([[2.0, 8.0, 0.0], [14.0, 8.0, math.pi], [8.0, 6.0, 1.57],
                       [8.0, 10.0, -1.57]])
    goals = [[(14.0, 8.0)], [(2.0, 8.0)], [(8.0, 14.0)], [(8.0, 2.0)]]
    return Scene('people', robots, starts, goals, grid=grid, pedestrians=walkers,
                 person_radius=0.3, duration=duration, params=params)


@pytest.mark.parametrize('seed', [0, 1])
def test_people_who_walk_at_robots_only_ever_meet_a_robot_at_rest(seed):
    """Passive safety: a person faster than ORCA's reaction catches a moving robot without the
    layer; with it, every robot-person contact finds the robot standing."""
    # Without the layer the people catch a moving robot within 4 s; 8 s show it.
    unguarded = run(_people_scene(OFF, seed=seed, duration=8.0))
    assert any(e.category == 'robot_person' and e.moving() for e in unguarded.contacts)
    guarded = run(_people_scene(ControllerParams(), seed=seed))
    assert [e for e in guarded.contacts if e.moving()] == []
    assert any(e.category == 'robot_person' for e in guarded.contacts)   # they did reach them


def test_a_robot_stands_before_a_person_could_reach_it():
    """The passive check in one cycle: a person 1 m ahead of a robot at 1 m/s; the robot may not
    keep going, though the person is standing (it could start walking at 1.5 m/s)."""
    limits = RobotLimits.create(['holonomic'], [1.0], [2.0], [2.0])
    layer = SafetyLayer(limits, np.array([0.3]), np.array([2.0]))
    person = NonCooperative(np.array([[1.55, 0.0]]), np.zeros((1, 2)), np.array([0.25]))
    state = _input([[0.0, 0.0, 0.0]], [[1.0, 0.0, 0.0]], [[1.0, 0.0, 0.0]])
    result = layer.apply(state, 0.025, person)
    assert result.scale[0] < 1.0 and result.reason[0] == PERSON
    # Moving away from the person is limited as well: the person is faster than the robot.
    state = _input([[0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0]], [[-1.0, 0.0, 0.0]])
    far = NonCooperative(np.array([[5.0, 0.0]]), np.zeros((1, 2)), np.array([0.25]))
    assert layer.apply(state, 0.025, far).scale[0] == 1.0


def test_two_robots_braking_together_keep_apart():
    """Reciprocal: two robots driving at each other too fast to stop are both slowed so that
    their braking paths, taken together, never meet."""
    limits = RobotLimits.create(['holonomic'] * 2, [1.5] * 2, [1.0] * 2, [2.0] * 2)
    layer = SafetyLayer(limits, np.array([0.3, 0.3]), np.array([1.0, 1.0]))
    state = _input([[0.0, 0.0, 0.0], [2.6, 0.0, math.pi]], [[1.5, 0.0, 0.0], [1.5 * -1, 0.0, 0.0]],
                   [[1.5, 0.0, 0.0], [1.5, 0.0, 0.0]])
    result = layer.apply(state, 0.025, NonCooperative.empty())
    assert (result.scale < 1.0).all() and (result.reason == ROBOT).all()


def test_orca_picks_a_velocity_the_robot_can_reach():
    """Acceleration-aware ORCA: the new velocity is within max_velocity_change of the current
    one (and RVO2's choice without it)."""
    positions = np.array([[1.0, 0.0], [-1.0, 0.0]])
    velocities = np.array([[-1.0, 0.0], [0.0, 0.0]])
    pref = np.array([[-1.0, 0.0], [1.0, 0.0]])
    free = solve(positions, velocities, pref, OrcaParams(0.05, 5.0, 10, 3.0, 2.0, 0.35, 1.0))
    limited = solve(positions, velocities, pref,
                    OrcaParams(0.05, 5.0, 10, 3.0, 2.0, 0.35, 1.0, max_velocity_change=0.1))
    assert (np.linalg.norm(free.velocities - velocities, axis=1) > 0.1).any()
    assert (np.linalg.norm(limited.velocities - velocities, axis=1) <= 0.1 + 1e-9).all()
    # Toward RVO2's choice, not straight at the oncoming robot.
    heading = free.velocities[1] - velocities[1]
    step = limited.velocities[1] - velocities[1]
    assert np.dot(heading, step) / (np.linalg.norm(heading) * np.linalg.norm(step)) > 0.99


def test_holonomic_robots_drive_the_velocity_orca_picked():
    """In a crowd (sixteen robots at 0.8 m/s^2 crossing a circle) ORCA's velocity is one the
    robot reaches within the cycle, so it drives what ORCA promised the others; with RVO2's
    choice the acceleration limit clips it again and again."""
    from orca_nav.core.fleet.controller import FleetController
    from orca_nav.core.geometry import body_to_world
    from orca_nav.core.sim.fleet_sim import FleetSim
    count, period = 16, 0.05
    angle = np.linspace(0.0, 2 * math.pi, count, endpoint=False) + 0.01 * np.arange(count)
    xy = 5.0 * np.column_stack([np.cos(angle), np.sin(angle)])
    robots = [RobotSpec(f'robot{i}', max_speed=1.5, max_accel=0.8) for i in range(count)]

    def worst_gap(params):
        fleet = FleetController(robots, params)
        sim = FleetSim(RobotLimits.create(['holonomic'] * count, 1.5, 0.8, 2.0), 0.3,
                       np.column_stack([xy, np.zeros(count)]))
        for i in range(count):
            fleet.set_goal(i, -xy[i])
        worst = 0.0
        for k in range(300):
            pose, twist = sim.odometry()
            velocity = body_to_world(twist[:, :2], pose[:, 2])
            for i in range(count):
                fleet.set_state(i, k * period, pose[i, :2], velocity[i], pose[i, 2])
            out = fleet.step(k * period)
            sim.step(period, out.twists)
            driven = body_to_world(sim.twists[:, :2], sim.poses[:, 2])
            worst = max(worst, float(np.max(np.linalg.norm(driven - fleet.view(k * period)
                                                           .velocities, axis=1))))
        return worst
    assert worst_gap(ControllerParams(safety=None, acceleration_aware=False)) > 0.5
    assert worst_gap(ControllerParams(safety=None)) < 1e-6


def test_late_cycles_slow_robots_down_and_keep_them_off_walls():
    """A starved controller (cycles up to four periods late) with the wall it must brake for:
    the layer counts the late cycles in its reaction time."""
    blind = dict(acceleration_aware=False, time_horizon_obst=0.01)
    scene = _wall_scene(ControllerParams(safety=None, **blind))
    scene.late_cycles, scene.late_periods, scene.seed = 0.5, 4, 3
    assert any(e.moving() for e in run(scene).contacts)
    scene.params = ControllerParams(**blind)
    assert run(scene).contacts == []


def test_a_stale_state_stops_the_robot():
    """Odometry older than a period shrinks the envelope; at odom_timeout the robot stands."""
    from orca_nav.core.fleet.controller import FleetController

    def command_with_state_of_age(age):
        fleet = FleetController([_one()], ControllerParams(odom_timeout=0.5))
        fleet.set_goal(0, (10.0, 0.0))
        fleet.set_state(0, -0.5, (-0.5, 0.0), (1.0, 0.0), 0.0)
        fleet.step(-0.5)
        fleet.set_state(0, 0.3 - age, (0.3 - age, 0.0), (1.0, 0.0), 0.0)
        return fleet.step(0.3).twists[0, 0]
    fresh, aged, old = (command_with_state_of_age(age) for age in (0.0, 0.3, 0.49))
    assert 0.0 < aged < fresh and 0.0 <= old < aged


def test_drones_among_people_avoid_them_and_only_meet_them_at_rest():
    """Drones flying at 1 m among people who walk at them: without the layer they are hit
    moving; with it, only ever at rest."""
    grid = room(16.0)
    drones = [RobotSpec(f'drone{i}', kinematics='quadrotor', max_speed=1.5) for i in range(3)]
    starts = np.array([[2.0, 8.0, 0.0], [14.0, 8.0, 0.0], [8.0, 14.0, 0.0]])
    goals = [[(14.0, 8.0, 1.0)], [(2.0, 8.0, 1.0)], [(8.0, 2.0, 1.0)]]

    def scene(params):
        walkers = Pedestrians(np.zeros((0, 4)), [[6.0, 8.0], [10.0, 8.0], [8.0, 4.0]],
                              PedestrianParams(speed=1.2, radius=0.25,
                                               area=(0.0, 0.0, 16.0, 16.0)),
                              grid=grid, seed=2, behaviours=['threatening'] * 3)
        return Scene('drones_people', drones, starts, goals, start_altitudes=np.full(3, 1.0),
                     pedestrians=walkers, person_radius=0.3, duration=40.0, params=params)
    unguarded = run(scene(OFF))
    assert any(e.category == 'robot_person' and e.moving() for e in unguarded.contacts)
    guarded = run(scene(ControllerParams()))
    assert [e for e in guarded.contacts if e.moving()] == []
