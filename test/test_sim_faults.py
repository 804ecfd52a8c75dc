"""Fault injection in the core simulator: dead and faulty robots, localization jumps, odometry
loss, delay and jitter; seeded and reproducible, off by default."""
import numpy as np
import pytest

from orca_nav.core.fleet.kinematics import RobotLimits
from orca_nav.core.sim.faults import NO_ROBOT, Faults, OdometryLink
from orca_nav.core.sim.fleet_sim import FleetSim


def sim(faults=Faults(), count=2, **kwargs):
    limits = RobotLimits.create(['holonomic'] * count, max_speed=2.0, max_accel=100.0,
                                max_yaw_rate=2.0)
    starts = np.column_stack([np.arange(count) * 3.0, np.zeros(count), np.zeros(count)])
    return FleetSim(limits, 0.3, starts, faults=faults, **kwargs)


def drive(s, seconds, command=(1.0, 0.0, 0.0), dt=0.05):
    for _ in range(int(round(seconds / dt))):
        s.step(dt, np.tile(command, (len(s), 1)))


def test_no_faults_by_default():
    a, b = sim(), sim(Faults())
    drive(a, 1.0)
    drive(b, 1.0)
    assert np.array_equal(a.poses, b.poses)
    assert not Faults().odometry_faulty
    assert np.array_equal(a.localization_error(), np.zeros((2, 2)))


def test_a_dead_robot_stops_obeying_at_its_time():
    s = sim(Faults(dead_robot=1, dead_time=0.5))
    drive(s, 1.0)
    assert s.poses[0, 0] == pytest.approx(1.0)
    assert s.poses[1, 0] == pytest.approx(3.0 + 0.5)     # moved until 0.5 s, then stopped
    assert np.allclose(s.twists[1], 0.0)


def test_a_faulty_robot_drives_a_scaled_and_rotated_velocity():
    s = sim(Faults(faulty_robot=0, faulty_scale=0.5, faulty_rotation=np.pi / 2))
    drive(s, 1.0)
    assert s.poses[0, :2] == pytest.approx([0.0, 0.5])
    assert s.poses[1, :2] == pytest.approx([4.0, 0.0])     # the others obey


def test_localization_jump_of_a_given_size_while_it_lasts():
    faults = Faults(jump_robot=1, jump_time=0.5, jump_size=0.5, jump_duration=0.3, seed=4)
    s = sim(faults)
    drive(s, 0.45)
    assert np.array_equal(s.odometry()[0][:, :2], s.poses[:, :2])
    drive(s, 0.1)
    error = s.odometry()[0][:, :2] - s.poses[:, :2]
    assert np.linalg.norm(error[1]) == pytest.approx(0.5) and np.all(error[0] == 0.0)
    assert np.allclose(error, s.localization_error())
    drive(s, 0.3)
    assert np.array_equal(s.odometry()[0][:, :2], s.poses[:, :2])   # over
    # the direction comes from the seed: the same seed gives the same jump
    same, other = sim(faults), sim(Faults(jump_robot=1, jump_size=0.5, seed=5))
    drive(same, 0.1)
    drive(other, 0.1)
    assert np.array_equal(same.localization_error(0.6), s.localization_error(0.6))
    assert not np.array_equal(other.localization_error(0.6), s.localization_error(0.6))
    # times count from the robot's first command: never commanded, no jump yet
    assert not sim(faults).localization_error(5.0).any()
    # the true motion is not affected
    clean = sim()
    drive(clean, 0.85)
    assert np.array_equal(clean.poses, s.poses)


def test_odometry_loss_rate_is_seeded_and_reproducible():
    def losses(seed):
        link = OdometryLink(Faults(odom_drop_rate=0.3, seed=seed))
        delivered = []
        for k in range(200):
            link.send(k * 0.02, np.arange(10.0)[:, None])
            delivered.append(len(link.deliver(k * 0.02)))
        return link, delivered
    link, delivered = losses(1)
    assert link.sent == 2000 and 0.25 < link.dropped / link.sent < 0.35
    assert sum(delivered) == link.sent - link.dropped
    assert losses(1)[1] == delivered and losses(2)[1] != delivered


def test_odometry_delay_and_jitter_keep_the_stamp():
    link = OdometryLink(Faults(odom_delay=0.2, odom_jitter=0.05, seed=3))
    link.send(1.0, np.array([[1.0], [2.0]]))
    assert link.deliver(1.19) == []
    late = link.deliver(1.25)
    assert sorted(robot for robot, _, _ in late) == [0, 1]
    assert all(stamp == 1.0 for _, stamp, _ in late)
    assert link.deliver(2.0) == []


@pytest.mark.parametrize('kwargs, message', [
    ({'odom_drop_rate': 1.5}, r'odom_drop_rate must be in \[0, 1\], got 1.5'),
    ({'odom_delay': -0.1}, 'odom_delay must be finite and >= 0'),
    ({'jump_size': float('nan')}, 'jump_size must be finite'),
    ({'faulty_rotation': float('inf')}, 'faulty_rotation must be finite'),
])
def test_bad_fault_values_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Faults(**kwargs)


def test_a_fault_on_a_robot_that_does_not_exist_is_refused():
    with pytest.raises(ValueError, match=r'dead_robot: robot index 5 is not in 0..1'):
        sim(Faults(dead_robot=5))
    assert Faults().dead_robot == NO_ROBOT
