"""Filter mode (core): incoming twists are the preferred velocities; unconstrained robots get
their input back bit for bit, constrained ones ORCA's velocity; stale input stops the robot."""
import math

import numpy as np
import pytest

from orca_nav.core.fleet.controller import FleetController
from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.kinematics import RobotLimits
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.geometry import body_to_world, world_to_body
from orca_nav.core.sim.fleet_sim import FleetSim

PERIOD = 0.05
FILTER = ControllerParams(filter_mode=True, deadlock=None)


def fleet(kinematics, **params):
    robots = [RobotSpec(f'r{i}', kinematics=k, radius=0.3, max_speed=1.0, max_accel=2.0)
              for i, k in enumerate(kinematics)]
    return FleetController(robots, ControllerParams(filter_mode=True, deadlock=None, **params))


@pytest.mark.parametrize('kinematics, twist', [
    ('holonomic', (0.3, -0.2, 0.4)), ('holonomic', (1.0, 0.0, 0.1)),
    ('diff_drive', (0.5, 0.0, 0.3)), ('diff_drive', (-0.2, 0.0, -0.1)), ('car', (0.6, 0.0, 0.2))])
def test_an_unconstrained_robot_gets_its_input_back_bit_for_bit(kinematics, twist):
    ctl = fleet([kinematics, 'holonomic'])
    ctl.set_state(0, 10.0, (0.0, 0.0), (0.0, 0.0), 0.7)
    ctl.set_state(1, 10.0, (30.0, 0.0), (0.0, 0.0), 0.0)     # far beyond neighbor_dist
    ctl.set_input_twist(0, 10.0, twist)
    out = ctl.step(10.0)
    assert out.ran[0] and np.array_equal(out.twists[0], np.array(twist))


def test_a_robot_heading_at_another_is_diverted_and_yaw_rate_kept():
    ctl = fleet(['holonomic', 'holonomic'])
    ctl.set_state(0, 10.0, (0.0, 0.0), (1.0, 0.0), 0.0)
    ctl.set_state(1, 10.0, (2.0, 0.0), (-1.0, 0.0), math.pi)
    ctl.set_input_twist(0, 10.0, (1.0, 0.0, 0.25))
    ctl.set_input_twist(1, 10.0, (1.0, 0.0, 0.0))
    out = ctl.step(10.0)
    assert not np.array_equal(out.twists[0], [1.0, 0.0, 0.25])
    assert out.twists[0, 2] == 0.25     # a holonomic robot's rotation does not move it


def test_input_older_than_source_timeout_gives_zero():
    ctl = fleet(['holonomic'], source_timeout=0.3)
    ctl.set_input_twist(0, 10.0, (0.5, 0.0, 0.1))
    for now, moving in ((10.0, True), (10.25, True), (10.35, False)):
        ctl.set_state(0, now, (0.0, 0.0), (0.0, 0.0), 0.0)
        out = ctl.step(now)
        assert out.ran[0] and (out.twists[0] != 0.0).any() == moving
    assert 'source_timeout' in ctl.status(10.35)[0].message


def test_bad_input_twist_is_refused_by_name():
    ctl = fleet(['holonomic'])
    with pytest.raises(ValueError, match='twist'):
        ctl.set_input_twist(0, 1.0, (math.nan, 0.0, 0.0))
    with pytest.raises(ValueError, match='source_timeout'):
        ControllerParams(filter_mode=True, source_timeout=0.0)


@pytest.mark.parametrize('kinematics', ['holonomic', 'diff_drive'])
def test_naive_controllers_crossing_through_the_filter_never_touch(kinematics):
    """Each robot's own controller (a stand-in for Nav2's) drives straight at its goal across a
    circle; filtered, no two robots come closer than their radii, and all arrive. (Slightly
    irregular, as real starts are: a perfectly symmetric ring is ORCA's textbook deadlock, which
    the filter, knowing no goals, does not break.)"""
    count, ring = 6, 3.0
    rng = np.random.default_rng(4)
    angle = 2 * np.pi * np.arange(count) / count + rng.uniform(-0.15, 0.15, count)
    ring = ring + rng.uniform(-0.3, 0.3, count)
    starts = np.column_stack([ring * np.cos(angle), ring * np.sin(angle), angle + np.pi])
    goals = -starts[:, :2]
    ctl = fleet([kinematics] * count)
    limits = RobotLimits.create([kinematics] * count, 1.0, 2.0, 2.0)
    sim = FleetSim(limits, [0.3] * count, starts)
    now, gaps = 100.0, []
    for _ in range(int(30.0 / PERIOD)):
        pose, body = sim.odometry()
        heading = goals - pose[:, :2]
        distance = np.hypot(*heading.T)
        wanted = heading / np.maximum(distance, 1e-9)[:, None] * np.minimum(distance, 1.0)[:, None]
        local = world_to_body(wanted, pose[:, 2])
        if kinematics == 'diff_drive':     # turn toward the goal, drive when facing it
            bearing = np.arctan2(local[:, 1], local[:, 0])
            local = np.column_stack([np.maximum(local[:, 0], 0.0), 2.0 * bearing])
            inputs = np.column_stack([local[:, 0], np.zeros(count), np.clip(local[:, 1], -2, 2)])
        else:
            inputs = np.column_stack([local, np.zeros(count)])
        velocity = body_to_world(body[:, :2], pose[:, 2])
        for i in range(count):
            ctl.set_state(i, now, pose[i, :2], velocity[i], pose[i, 2])
            ctl.set_input_twist(i, now, inputs[i])
        out = ctl.step(now)
        assert not sim.step(PERIOD, out.twists)
        p = sim.poses[:, :2]
        distances = np.hypot(*(p[:, None] - p[None]).transpose(2, 0, 1))
        gaps.append(np.min(distances + 1e9 * np.eye(count)))
        now += PERIOD
    assert min(gaps) >= 0.6 - 1e-6
    assert np.all(np.hypot(*(sim.poses[:, :2] - goals).T) < 0.3)
