"""orca_node's tracking seam: trajectory messages -> preferred velocities -> body twists."""
import numpy as np
import pytest

pytest.importorskip('rclpy')

from orca_nav.core.fleet.kinematics import RobotLimits, integrate_pose, limit_twist  # noqa: E402
from orca_nav.core.planning.path_timing import time_path  # noqa: E402
from orca_nav.ros.tracking_seam import TrackingSeam  # noqa: E402
from orca_nav.ros.trajectory_msgs import empty_trajectory, reference_to_trajectory  # noqa: E402


class FakeClock:
    def __init__(self, t=1000.0):
        self.t = t

    def __call__(self):
        return self.t


def parallel_park():
    """Forward 4 m along +x, then 3 m backward and 1 m to the right along an S (car-drivable)."""
    s = np.linspace(0.0, 1.0, 31)[1:]
    x = np.r_[np.linspace(0.0, 4.0, 41), 4.0 - 3.0 * s]
    y = np.r_[np.zeros(41), -0.5 * (1 - np.cos(np.pi * s))]
    yaw = np.zeros(x.size)
    # Reversing: the car faces opposite to its direction of travel (which runs toward -x).
    travel = np.arctan2(np.gradient(y[40:])[1:], np.gradient(x[40:])[1:])
    yaw[41:] = (travel + 2 * np.pi) % (2 * np.pi) - np.pi
    return x, y, yaw, np.r_[np.ones(41), -np.ones(30)]


@pytest.mark.parametrize('kinematics', ['car', 'diff_drive'])
def test_seam_drives_a_reversing_trajectory_closed_loop(kinematics):
    ref = time_path(*parallel_park(), max_speed=1.0, max_accel=1.0, max_yaw_rate=1.0)
    clock = FakeClock()
    seam = TrackingSeam(['robot0', 'robot1'], [kinematics, 'holonomic'], clock=clock)
    ros_now = 5000.0
    # Stamped 0.2 s in the past (transport delay): the tracker starts 0.2 s into it.
    seam.set_trajectory(0, reference_to_trajectory(ref, 'map', ros_now - 0.2, 'robot0/base_link'),
                        ros_now)
    limits = RobotLimits.create([kinematics, 'holonomic'], 1.0, 2.0, 2.0, min_turning_radius=1.0)
    pose = np.array([[0.0, 0.0, 0.0], [5.0, 5.0, 0.0]])
    twist = np.zeros((2, 3))
    dt = 0.05
    backward = False
    for _ in range(800):
        pref, tracked = seam.preferred_velocities(clock.t, pose[:, :2], pose[:, 2], limits)
        assert tracked.tolist() == [True, False]
        command = seam.body_twists(pref, pose[:, 2], limits)     # ORCA would filter pref here
        backward |= command[0, 0] < -0.05
        twist = limit_twist(command, twist, limits, dt)
        pose = integrate_pose(pose, twist, dt)
        clock.t += dt
        if seam.reached()[0]:
            break
    assert seam.reached()[0]
    assert backward
    assert np.linalg.norm(pose[0, :2] - ref.positions[-1]) <= 0.4
    np.testing.assert_allclose(pose[1], [5.0, 5.0, 0.0])     # untracked robot: no motion


def test_empty_trajectory_holds_still_and_trajectories_only_holds_before_the_first():
    clock = FakeClock()
    seam = TrackingSeam(['a', 'b'], ['holonomic', 'diff_drive'], trajectories_only=False,
                        clock=clock)
    limits = RobotLimits.create(['holonomic', 'diff_drive'], 1.0, 1.0, 1.0)
    pos, yaw = np.array([[0.0, 0.0], [1.0, 1.0]]), np.zeros(2)
    _, tracked = seam.preferred_velocities(clock.t, pos, yaw, limits)
    assert not tracked.any()           # orca_node heads straight for goals meanwhile
    seam.set_trajectory(1, empty_trajectory('map', 10.0), 10.0)
    pref, tracked = seam.preferred_velocities(clock.t, pos, yaw, limits)
    assert tracked.tolist() == [False, True] and not pref[1].any()
    only = TrackingSeam(['a'], ['car'], trajectories_only=True, clock=clock)
    limits = RobotLimits.create(['car'], 1.0, 1.0, 1.0)
    pref, tracked = only.preferred_velocities(clock.t, pos[:1], yaw[:1], limits)
    assert tracked[0] and not pref.any()
    assert not only.body_twists(np.array([[0.5, 0.0]]), yaw[:1], limits)[0, 2]


def test_seam_accepts_a_subset_of_rows():
    clock = FakeClock()
    seam = TrackingSeam(['a', 'b', 'c'], ['holonomic'] * 3, clock=clock)
    ref = time_path([0, 4], [0, 0], [0, 0], [1, 1], max_speed=1.0, max_accel=1.0)
    seam.set_trajectory(2, reference_to_trajectory(ref, 'map', 0.0, 'c'), 0.0)
    limits = RobotLimits.create(['holonomic'] * 2, 1.0, 1.0, 1.0)
    clock.t += 2.0
    pref, tracked = seam.preferred_velocities(clock.t, np.array([[9.0, 9.0], [0.0, 0.0]]),
                                              np.zeros(2), limits, rows=np.array([0, 2]))
    assert tracked.tolist() == [False, True]
    assert pref[1, 0] > 0.5 and not pref[0].any()
    twist = seam.body_twists(pref, np.zeros(2), limits, rows=np.array([0, 2]))
    assert twist.shape == (2, 3)
