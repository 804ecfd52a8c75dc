"""ORCA responsibility: per-agent weights and non-cooperative agents
(core.avoidance.responsibility)."""
import numpy as np
import pytest

from orca_nav.core.avoidance import NonCooperative, OrcaParams, compute_velocities, solve

PARAMS = OrcaParams(time_step=0.1, neighbor_dist=10.0, max_neighbors=10, time_horizon=3.0,
                    time_horizon_obst=2.0, radius=0.4, max_speed=1.5)


def _crowd(seed=3, count=30):
    rng = np.random.default_rng(seed)
    positions = rng.uniform(-6.0, 6.0, (count, 2))
    velocities = rng.uniform(-1.0, 1.0, (count, 2))
    pref = rng.uniform(-1.5, 1.5, (count, 2))
    return positions, velocities, pref


def test_equal_weights_are_rvo2_bit_for_bit():
    positions, velocities, pref = _crowd()
    plain = solve(positions, velocities, pref, PARAMS)
    for weights in (0.5, np.full(len(positions), 0.5), np.full(len(positions), 0.8)):
        weighted = solve(positions, velocities, pref, PARAMS, responsibility=weights)
        assert np.array_equal(weighted.velocities, plain.velocities)
        assert np.array_equal(weighted.lines.point_x, plain.lines.point_x)
    # An empty set of non-cooperative agents changes nothing either.
    none = solve(positions, velocities, pref, PARAMS, others=NonCooperative.empty())
    assert np.array_equal(none.velocities, plain.velocities)


def test_a_loaded_robot_yields_less():
    # Head-on, slightly off-centre; robot 0 (a load, weight 0.2) against robot 1 (0.5): robot 1
    # takes 5/7 of the avoidance, robot 0 2/7, and together they still take all of it.
    positions = np.array([[-3.0, -0.02], [3.0, 0.02]])
    velocities = np.array([[1.0, 0.0], [-1.0, 0.0]])
    equal = compute_velocities(positions, velocities, velocities, PARAMS)
    loaded = compute_velocities(positions, velocities, velocities, PARAMS,
                                responsibility=[0.2, 0.5])
    change_equal = np.hypot(*(equal - velocities).T)
    change_loaded = np.hypot(*(loaded - velocities).T)
    np.testing.assert_allclose(change_equal[0], change_equal[1], rtol=1e-5)
    assert change_loaded[0] < change_equal[0] < change_loaded[1]
    np.testing.assert_allclose(change_loaded[0] / change_loaded[1], 0.2 / 0.5, rtol=1e-3)


PERSON_RADIUS = 0.4
CONTACT = 0.8                          # robot radius + person radius


def _robot_velocity(full: bool, robot, robot_v, person, person_v, params=PARAMS):
    """The robot's ORCA velocity (preferred velocity zero: it only has to get out of the way).
    Full responsibility: the person is a NonCooperative. Reciprocal: the person is one more
    fleet agent (ORCA assumes it takes half; its own answer is ignored, it walks on)."""
    if full:
        others = NonCooperative(person[None], person_v[None], np.array([PERSON_RADIUS]))
        return compute_velocities(robot[None], robot_v[None], np.zeros((1, 2)), params,
                                  others=others)[0]
    return compute_velocities(np.stack([robot, person]), np.stack([robot_v, person_v]),
                              np.stack([np.zeros(2), person_v]), params)[0]


def test_robot_keeps_full_clearance_from_a_non_cooperative_agent():
    # A person 2.5 m away walks straight at a standing robot at 1 m/s. ORCA's promise: the
    # velocity chosen keeps the agents apart for the time horizon if both keep their velocities.
    robot, person, person_v = np.zeros(2), np.array([2.5, 0.01]), np.array([-1.0, 0.0])
    t = np.linspace(0.0, PARAMS.time_horizon, 3001)[:, None]
    closest = {}
    for full in (True, False):
        velocity = _robot_velocity(full, robot, np.zeros(2), person, person_v)
        closest[full] = float(np.hypot(*(person - robot + (person_v - velocity) * t).T).min())
    print(f'closest approach over the horizon: full responsibility {closest[True]:.3f} m, '
          f'reciprocal {closest[False]:.3f} m (contact at {CONTACT} m)')
    assert closest[True] >= CONTACT - 1e-4
    # Reciprocal ORCA sidesteps only half as far: half the clearance, the two overlap.
    np.testing.assert_allclose(closest[False], CONTACT / 2.0, atol=0.01)


def test_non_cooperative_agent_never_reaches_the_robot_in_closed_loop():
    # Closed loop at a slow 2 Hz cycle: the person from 6 m at 1.4 m/s, the robot standing.
    # (Reciprocal ORCA catches up cycle by cycle here; the promise above is per cycle.)
    step = 0.5
    params = OrcaParams(step, 10.0, 10, 3.0, 2.0, 0.4, 1.5)
    robot, robot_v = np.zeros(2), np.zeros(2)
    person, person_v = np.array([6.0, 0.01]), np.array([-1.4, 0.0])
    closest = np.inf
    for _ in range(20):
        robot_v = _robot_velocity(True, robot, robot_v, person, person_v, params)
        robot = robot + robot_v * step
        person = person + person_v * step
        closest = min(closest, float(np.hypot(*(person - robot))))
    assert person[0] < robot[0] - 2.0            # the person walked past
    assert closest >= CONTACT - 1e-3


def test_non_cooperative_agents_compete_for_neighbour_slots_and_keep_their_velocity():
    params = OrcaParams(0.1, 10.0, 1, 3.0, 2.0, 0.4, 1.5)
    positions = np.array([[0.0, 0.0], [5.0, 0.0]])
    others = NonCooperative(np.array([[2.0, 0.0]]), np.array([[-1.0, 0.0]]), np.array([0.3]))
    solution = solve(positions, np.zeros((2, 2)), np.array([[1.0, 0.0], [0.0, 0.0]]), params,
                     others=others)
    # One slot each: the person is nearest to both, so each has exactly one line, from it.
    assert solution.lines.valid.sum(axis=0).tolist() == [1, 1]
    assert solution.velocities[0, 0] < 1.0        # robot 0 does not walk into the person


@pytest.mark.parametrize('kwargs, message', [
    (dict(responsibility=[0.5, 1.5]), r'responsibility\[1\] must be in \[0, 1\], got 1.5'),
    (dict(responsibility=[0.5]), r'responsibility: expected a scalar or shape \(2,\)'),
    (dict(responsibility=[0.5, np.nan]), r'responsibility\[1\] is not finite'),
    (dict(others=NonCooperative(np.zeros((1, 2)), np.zeros((1, 2)), np.array([-0.1]))),
     r'others.radii\[0\] must be >= 0, got -0.1'),
    (dict(others=NonCooperative(np.zeros((1, 2)), np.full((1, 2), np.inf), np.array([0.1]))),
     r'others.velocities\[0\] is not finite'),
    (dict(others=NonCooperative(np.zeros((2, 2)), np.zeros((1, 2)), np.array([0.1, 0.1]))),
     r'others.velocities: expected shape \(2, 2\)'),
])
def test_bad_responsibility_and_others_name_field_and_index(kwargs, message):
    with pytest.raises(ValueError, match=message):
        solve(np.array([[0.0, 0.0], [3.0, 0.0]]), np.zeros((2, 2)), np.zeros((2, 2)), PARAMS,
              **kwargs)


def test_a_robots_responsibility_field_reaches_the_fleet_controller():
    # Two robots head-on through the fleet controller: the loaded one (0.2) sidesteps less.
    from orca_nav.core.fleet.controller import FleetController
    from orca_nav.core.fleet.controller_params import ControllerParams
    from orca_nav.core.fleet.robots import RobotSpec

    def sidesteps(weights):
        robots = [RobotSpec(f'robot{i}', responsibility=w) for i, w in enumerate(weights)]
        controller = FleetController(robots, ControllerParams(deadlock=None))
        controller.set_state(0, 1.0, (-1.0, -0.02), (1.0, 0.0), 0.0)
        controller.set_state(1, 1.0, (1.0, 0.02), (-1.0, 0.0), np.pi)
        controller.set_goal(0, (5.0, -0.02))
        controller.set_goal(1, (-5.0, 0.02))
        controller.step(1.0)
        return np.abs(controller.view(1.0).velocities[:, 1])
    equal, loaded = sidesteps([0.5, 0.5]), sidesteps([0.2, 0.5])
    np.testing.assert_allclose(equal[0], equal[1], rtol=1e-4)
    assert loaded[0] < equal[0] < loaded[1]
