"""Pose uncertainty and odometry latency in the fleet controller (core.fleet.state_estimate):
each closed-loop test runs the same scene with the feature off and on; off, the robots touch."""
import numpy as np
import pytest

from orca_nav.core.fleet.controller import FleetController
from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.kinematics import RobotLimits
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.fleet.state_estimate import (
    covariance_problem,
    project_positions,
    uncertainty_margins,
    usable_covariances,
)
from orca_nav.core.geometry import body_to_world
from orca_nav.core.sim.fleet_sim import FleetSim

PERIOD = 0.05
RADIUS = 0.3


def _closed_loop(params, starts, goals, delays=(0.0, 0.0), offsets=None, covariances=None,
                 seconds=14.0):
    """Controller + core simulator. Robot i's odometry reaches the controller delays[i] late
    (stamped when it was measured) and reports its position off by offsets[i] with covariance
    covariances[i]. Returns the least true centre distance and the largest final goal error."""
    count = len(starts)
    robots = [RobotSpec(f'robot{i}', radius=RADIUS, max_speed=1.0, max_accel=2.0)
              for i in range(count)]
    controller = FleetController(robots, params)
    limits = RobotLimits.create(['holonomic'] * count, [1.0] * count, [2.0] * count,
                                [2.0] * count, [1.0] * count)
    sim = FleetSim(limits, [RADIUS] * count, np.asarray(starts, dtype=float))
    for i, goal in enumerate(goals):
        controller.set_goal(i, goal)
    offsets = np.zeros((count, 2)) if offsets is None else np.asarray(offsets, dtype=float)
    now, history, closest = 10.0, [], np.inf
    for _ in range(int(round(seconds / PERIOD))):
        pose, twist = sim.odometry()
        history.append((now, pose.copy(), body_to_world(twist[:, :2], pose[:, 2])))
        for i in range(count):
            lag = int(round(delays[i] / PERIOD))
            if len(history) > lag:
                stamp, poses, velocities = history[-1 - lag]
                controller.set_state(i, stamp, poses[i, :2] + offsets[i], velocities[i],
                                     poses[i, 2],
                                     None if covariances is None else covariances[i])
        sim.step(PERIOD, controller.step(now).twists)
        xy = sim.poses[:, :2]
        gaps = np.hypot(*(xy[:, None] - xy[None]).transpose(2, 0, 1)) + 1e9 * np.eye(count)
        closest = min(closest, float(gaps.min()))
        now += PERIOD
    return closest, float(np.hypot(*(sim.poses[:, :2] - np.asarray(goals)).T).max())


def test_delayed_odometry_is_projected_to_the_cycle_time():
    # robot1's odometry comes 0.3 s late (a slow link); robot0's is current. They cross at a
    # right angle: robot1's stale position lags 0.3 m behind along its path.
    starts, goals = [(-5.0, 0.0, 0.0), (0.0, -5.5, np.pi / 2)], [(5.0, 0.0), (0.0, 5.0)]
    scene = dict(starts=starts, goals=goals, delays=(0.0, 0.3))
    # ORCA alone: the safety layer would slow the robot of the old odometry down anyway.
    as_if_now, _ = _closed_loop(ControllerParams(safety_margin=0.0, time_horizon=2.0,
                                                 max_extrapolation=0.0, safety=None), **scene)
    projected, final = _closed_loop(ControllerParams(safety_margin=0.0, time_horizon=2.0,
                                                     max_extrapolation=0.5, safety=None),
                                    **scene)
    print(f'closest: delayed odometry used as if current {as_if_now:.3f} m, '
          f'projected {projected:.3f} m (contact at {2 * RADIUS} m)')
    assert as_if_now < 2 * RADIUS - 0.1
    assert projected >= 2 * RADIUS - 0.01
    assert final <= 0.2


def test_others_keep_away_from_an_uncertain_pose():
    # robot1 stands at the origin but its localization reports it 0.25 m lower, with a
    # standard deviation of 0.15 m (2 sigma = 0.3 m covers the error); robot0 passes above it.
    scene = dict(starts=[(-4.0, 0.45, 0.0), (0.0, 0.0, 0.0)], goals=[(4.0, 0.45), (0.0, 0.0)],
                 offsets=[(0.0, 0.0), (0.0, -0.25)],
                 covariances=[np.zeros((2, 2)), np.diag([0.15 ** 2, 0.15 ** 2])])
    ignored, _ = _closed_loop(ControllerParams(safety_margin=0.0, max_uncertainty_margin=0.0),
                              **scene)
    margin, final = _closed_loop(ControllerParams(safety_margin=0.0, uncertainty_gain=2.0,
                                                  max_uncertainty_margin=0.3), **scene)
    print(f'closest: covariance ignored {ignored:.3f} m, margin from covariance {margin:.3f} m '
          f'(contact at {2 * RADIUS} m)')
    assert ignored < 2 * RADIUS - 0.1
    assert margin >= 2 * RADIUS
    assert final <= 0.35      # robot1 made room and its goal is where it stood


def test_uncertainty_margin_is_the_widest_axis_and_bounded():
    covariances = np.array([np.diag([0.01, 0.04]),                # sigma 0.1 / 0.2
                            [[0.05, 0.03], [0.03, 0.05]],         # eigenvalues 0.08, 0.02
                            np.diag([4.0, 4.0]),                  # lost: 2 m
                            np.zeros((2, 2))])
    np.testing.assert_allclose(uncertainty_margins(covariances, 2.0, 1.0),
                               [0.4, 2.0 * np.sqrt(0.08), 1.0, 0.0])


def test_projection_is_bounded_and_never_backwards():
    positions = np.zeros((3, 2))
    velocities = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    stamps = np.array([9.9, 9.0, 10.5])             # 0.1 s old, 1 s old, from the future
    np.testing.assert_allclose(project_positions(positions, velocities, stamps, 10.0, 0.25),
                               [[0.1, 0.0], [0.0, 0.5], [0.0, 0.0]])


def test_the_batch_covariance_check_accepts_exactly_what_the_single_one_does():
    rng = np.random.default_rng(3)
    # Around each limit: finite, symmetric (to rounding), positive semi-definite (to rounding).
    cases = [np.zeros((2, 2)), np.eye(2), [[0.1, 0.0], [0.0, np.nan]], [[np.inf, 0.0], [0.0, 1.0]],
             [[0.1, 0.05], [0.0, 0.1]], [[1.0, 0.5], [0.5 + 5e-7, 1.0]],
             [[1.0, 0.5], [0.5 + 2e-6, 1.0]], [[0.01, 0.1], [0.1, 0.01]],
             [[1.0, 1.0], [1.0, 1.0 - 5e-10]], [[1.0, 1.0], [1.0, 1.0 - 2e-9]],
             [[-0.1, 0.0], [0.0, 0.1]], [[0.0, 0.0], [0.0, -1e-30]]]
    cases += list(rng.normal(size=(200, 2, 2)))
    covariances = np.array(cases, dtype=float)
    single = [covariance_problem(c) is None for c in covariances]
    assert usable_covariances(covariances).tolist() == single
    assert 3 < sum(single) < len(single)       # both answers are exercised


@pytest.mark.parametrize('covariance, message', [
    ([[0.1, 0.0], [0.0, np.nan]], 'not a finite 2 x 2'),
    ([[0.1, 0.05], [0.0, 0.1]], 'not symmetric'),
    ([[0.01, 0.1], [0.1, 0.01]], 'not positive semi-definite'),
    ([[-0.1, 0.0], [0.0, 0.1]], 'not positive semi-definite'),
])
def test_unusable_covariance_gives_the_largest_margin_and_says_why(covariance, message,
                                                                   monkeypatch):
    from orca_nav.core.fleet import avoidance_layers
    radii = []
    real_solve = avoidance_layers.solve

    def spy(positions, velocities, pref, params, obstacles, **kwargs):
        radii.append(float(np.asarray(params.radius)[0]))
        return real_solve(positions, velocities, pref, params, obstacles, **kwargs)
    monkeypatch.setattr(avoidance_layers, 'solve', spy)
    assert message in covariance_problem(np.asarray(covariance))
    params = ControllerParams(safety_margin=0.0, max_uncertainty_margin=0.4)
    controller = FleetController([RobotSpec('robot0', radius=0.3)], params)
    assert controller.set_state(0, 1.0, (0.0, 0.0), (0.0, 0.0), 0.0, np.zeros((2, 2))) is None
    controller.step(1.0)
    assert message in controller.set_state(0, 2.0, (0.1, 0.0), (0.0, 0.0), 0.0, covariance)
    controller.step(2.0)
    assert controller.view(2.0).positions[0].tolist() == [0.1, 0.0]    # the state is used
    np.testing.assert_allclose(radii, [0.3, 0.7])
