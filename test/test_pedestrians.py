"""Scripted pedestrians (core.fleet.pedestrians) in the core simulator, robot-person contacts,
and the fleet controller avoiding them closed loop (core only, no ROS)."""
import dataclasses

import numpy as np
import pytest

from orca_nav.core.avoidance import NonCooperative
from orca_nav.core.fleet.controller import FleetController
from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.kinematics import RobotLimits
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.geometry import body_to_world
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.sim.fleet_sim import ROBOT_PERSON, FleetSim
from orca_nav.core.sim.pedestrians import PedestrianParams, Pedestrians


def test_line_walkers_go_back_and_forth_at_their_speed():
    people = Pedestrians([[0.0, 0.0, 2.0, 0.0]], [], PedestrianParams(speed=0.5))
    np.testing.assert_allclose(people.velocities, [[0.5, 0.0]])
    for _ in range(40):                     # 4 s: 2 m there, turned, then back
        people.step(0.1)
    np.testing.assert_allclose(people.positions, [[2.0, 0.0]], atol=1e-9)
    for _ in range(10):
        people.step(0.1)
    np.testing.assert_allclose(people.positions, [[1.5, 0.0]], atol=1e-9)
    np.testing.assert_allclose(people.velocities, [[-0.5, 0.0]])


def test_random_walkers_stay_in_their_area_and_off_the_walls():
    occupied = np.zeros((40, 40), dtype=bool)
    occupied[15:25, 15:25] = True           # a 1 m block in the middle of a 4 m square
    grid = OccupancyGrid(occupied, 0.1, (0.0, 0.0))
    params = PedestrianParams(speed=1.0, radius=0.2, turn_std=1.5, area=(0.0, 0.0, 4.0, 4.0))
    people = Pedestrians([], [[0.5, 0.5], [3.5, 3.5], [0.5, 3.5]], params, grid=grid, seed=4)
    visited = []
    for _ in range(600):
        people.step(0.05)
        visited.append(people.positions.copy())
    visited = np.concatenate(visited)
    assert visited.min() >= 0.2 - 1e-9 and visited.max() <= 3.8 + 1e-9
    assert grid.clearance_at(visited).min() > 0.2
    assert np.ptp(visited[:, 0]) > 2.0          # they do get around
    again = Pedestrians([], [[0.5, 0.5], [3.5, 3.5], [0.5, 3.5]], params, grid=grid, seed=4)
    for _ in range(600):
        again.step(0.05)
    np.testing.assert_array_equal(again.positions, people.positions)   # seeded


def test_bad_pedestrians_are_named():
    with pytest.raises(ValueError, match=r'pedestrians.lines\[0\] is not finite'):
        Pedestrians([[0.0, np.nan, 1.0, 1.0]], [])
    with pytest.raises(ValueError, match='pedestrians.area'):
        PedestrianParams(area=(1.0, 0.0, 0.0, 1.0))
    with pytest.raises(ValueError, match='pedestrians.speed'):
        PedestrianParams(speed=-1.0)
    with pytest.raises(ValueError, match='pedestrians.stop_gap must be finite and >= 0'):
        PedestrianParams(stop_gap=-0.1)


def test_people_with_a_stop_gap_stand_short_of_a_robot_and_walk_on_when_it_goes():
    params = PedestrianParams(speed=0.5, radius=0.25, stop_gap=0.15)
    # person0 walks at a robot standing at x 2.6 (radius 0.25); person1 walks away from it.
    people = Pedestrians([[0.0, 0.0, 5.0, 0.0], [2.05, 0.0, -3.0, 0.0]], [], params)
    robot, radius = np.array([[2.6, 0.0]]), np.array([0.25])
    for _ in range(100):                    # 5 s: it reaches the robot after about 3.5 s
        people.step(0.05, robot, radius)
    gap = 2.6 - people.positions[0, 0] - 0.5
    assert 0.15 <= gap < 0.15 + 0.5 * 0.05        # the last step would have closed within 0.15
    np.testing.assert_array_equal(people.velocities[0], [0.0, 0.0])     # standing
    assert people.positions[1, 0] < 0.0                                 # walked on
    robot = np.array([[2.6, 3.0]])                                      # the robot drives off
    people.step(0.05, robot, radius)
    np.testing.assert_allclose(people.velocities[0], [0.5, 0.0])
    assert people.positions[0, 0] > 2.6 - 0.5 - 0.15


def test_people_who_stood_for_their_patience_turn_back():
    params = PedestrianParams(speed=0.5, radius=0.25, stop_gap=0.15, patience=1.0)
    # A line walker and a random walker (heading +x, no drift) both blocked by a robot.
    people = Pedestrians([[0.0, 0.0, 5.0, 0.0]], [[0.0, 3.0]], dataclasses.replace(
        params, turn_std=0.0), seed=1)
    people._heading[:] = 0.0
    robots, radii = np.array([[2.6, 0.0], [2.6, 3.0]]), np.array([0.25, 0.25])
    standing_since = None
    for k in range(200):
        people.step(0.05, robots, radii)
        if standing_since is None and not people.velocities.any():
            standing_since = k
        if standing_since is not None and people.velocities[:, 0].max() < 0.0:
            break
    assert standing_since is not None
    assert (k - standing_since) * 0.05 == pytest.approx(1.0, abs=0.051)     # stood 1 s
    np.testing.assert_allclose(people.velocities, [[-0.5, 0.0], [-0.5, 0.0]], atol=1e-9)


def test_people_without_a_stop_gap_walk_into_a_robot():
    people = Pedestrians([[0.0, 0.0, 5.0, 0.0]], [], PedestrianParams(speed=0.5, radius=0.25))
    for _ in range(150):
        people.step(0.05, np.array([[2.6, 0.0]]), np.array([0.25]))
    assert people.positions[0, 0] > 2.6                 # straight through: they avoid no one


def _limits(count):
    return RobotLimits.create(['holonomic'] * count, [1.0] * count, [2.0] * count,
                              [2.0] * count, [1.0] * count)


def test_the_simulator_reports_a_robot_person_contact_once():
    people = Pedestrians([[3.0, 0.0, -3.0, 0.0]], [], PedestrianParams(speed=1.0, radius=0.25))
    sim = FleetSim(_limits(1), [0.3], [[0.0, 0.0, 0.0]], pedestrians=people)
    events = []
    for _ in range(40):
        events += sim.step(0.1)
        if events and not sim.person_contacts:
            break
    assert [(e.kind, e.robots, e.person) for e in events] == [(ROBOT_PERSON, (0,), 0)]
    assert 2.45 <= events[0].time <= 2.5 + 1e-9    # the gap 3 - 0.55 m closes at 1 m/s


def _standing_robot_and_a_person(avoid: bool, params=ControllerParams(safety=None)):
    """A robot holding its goal while a person walks through it; closest centre distance and
    the robot's speed then."""
    people = Pedestrians([[4.0, 0.05, -4.0, 0.05]], [], PedestrianParams(speed=0.8, radius=0.25))
    sim = FleetSim(_limits(1), [0.3], [[0.0, 0.0, 0.0]], pedestrians=people)
    controller = FleetController([RobotSpec('robot0', radius=0.3)], params)
    controller.set_goal(0, (0.0, 0.0))
    now, closest, speed = 0.0, np.inf, 0.0
    for _ in range(150):
        pose, twist = sim.odometry()
        controller.set_state(0, now, pose[0, :2], body_to_world(twist[:, :2], pose[:, 2])[0],
                             pose[0, 2])
        if avoid:
            controller.set_others(NonCooperative(people.positions.copy(),
                                                 people.velocities.copy(), np.full(1, 0.25)))
        sim.step(0.05, controller.step(now).twists)
        gap = float(np.hypot(*(sim.poses[0, :2] - people.positions[0])))
        if gap < closest:
            closest, speed = gap, float(np.hypot(*sim.twists[0, :2]))
        now += 0.05
    return closest, speed


def test_the_controller_steps_aside_for_a_person_it_is_told_about():
    """ORCA alone sidesteps; the safety layer (docs/safety.md) keeps the robot still where the
    person could reach it moving, so the person walks into a robot at rest."""
    assert _standing_robot_and_a_person(avoid=False)[0] < 0.1
    assert _standing_robot_and_a_person(avoid=True)[0] >= 0.55
    closest, speed = _standing_robot_and_a_person(avoid=True, params=ControllerParams())
    assert closest < 0.55 and speed <= 0.05
