"""Reference <-> trajectory / Path messages: round trips, the driving-direction joint, the
single-joint fallback for third-party planners, and malformed messages."""
import numpy as np
import pytest

pytest.importorskip('rclpy')
from trajectory_msgs.msg import MultiDOFJointTrajectoryPoint  # noqa: E402

from orca_nav.core.planning.path_timing import reference_from_samples, time_path  # noqa: E402
from orca_nav.ros.trajectory_msgs import (  # noqa: E402
    empty_path,
    empty_trajectory,
    msg_to_reference,
    reference_to_path,
    reference_to_trajectory,
)

from scenes import parallel_park  # noqa: E402


def parked():
    return time_path(*parallel_park(), max_speed=1.0, max_accel=1.0, max_yaw_rate=1.0)


def straight():
    return reference_from_samples([0.0, 1.0, 2.0], [[0, 0], [1, 0], [2, 0]],
                                  [[1, 0], [1, 0], [1, 0]], np.zeros((3, 2)))


def single_joint(msg):
    """The message as a third-party planner sends it: the base joint only."""
    msg.joint_names = msg.joint_names[:1]
    for point in msg.points:
        point.transforms, point.velocities, point.accelerations = (
            point.transforms[:1], point.velocities[:1], point.accelerations[:1])
    return msg


def test_round_trip_keeps_reference_stamp_and_frame():
    ref = parked()
    msg = reference_to_trajectory(ref, 'map', 1234.5, 'robot0/base_link')
    back, start, frame = msg_to_reference(msg)
    assert frame == 'map' and start == pytest.approx(1234.5)
    np.testing.assert_allclose(back.times, ref.times, atol=1e-8)
    np.testing.assert_allclose(back.positions, ref.positions, atol=1e-9)
    np.testing.assert_allclose(back.velocities, ref.velocities, atol=1e-9)
    np.testing.assert_allclose(back.accelerations, ref.accelerations, atol=1e-9)
    np.testing.assert_allclose(back.yaw, ref.yaw, atol=1e-9)
    np.testing.assert_allclose(back.yaw_rate, ref.yaw_rate, atol=1e-9)
    np.testing.assert_array_equal(back.direction, ref.direction)
    assert msg_to_reference(empty_trajectory('map', 5.0)) == (None, 5.0, 'map')


def test_direction_travels_as_a_second_joint():
    ref = parked()
    assert (ref.direction == -1).any()
    msg = reference_to_trajectory(ref, 'map', 0.0, 'robot0/base_link')
    assert msg.joint_names == ['robot0/base_link', 'robot0/driving_direction']
    sent = [p.transforms[1].translation.x for p in msg.points]
    assert sent == [float(d) for d in ref.direction]
    assert all(len(p.velocities) == len(p.accelerations) == 2 for p in msg.points)
    # The receiver reads the joint; it does not recompute the direction from the geometry.
    for point in msg.points:
        point.transforms[1].translation.x = -1.0
    assert (msg_to_reference(msg)[0].direction == -1).all()


def test_third_party_single_joint_trajectory_infers_the_direction_from_the_geometry():
    ref = parked()
    back, _, _ = msg_to_reference(single_joint(reference_to_trajectory(ref, 'map', 0.0, 'base')))
    np.testing.assert_array_equal(back.direction, ref.direction)
    msg = single_joint(reference_to_trajectory(ref, 'map', 0.0, 'base'))
    msg.joint_names = []        # some planners name no joint at all
    np.testing.assert_array_equal(msg_to_reference(msg)[0].direction, ref.direction)


def test_single_point_holds_its_pose():
    msg = single_joint(reference_to_trajectory(straight(), 'map', 3.0, 'r/base_link'))
    msg.points = msg.points[1:2]
    ref, start, _ = msg_to_reference(msg)
    assert start == pytest.approx(4.0)
    np.testing.assert_allclose(ref.positions, [[1.0, 0.0], [1.0, 0.0]])
    assert not ref.velocities.any()


def test_path_has_one_stamped_pose_per_sample():
    ref = parked()
    path = reference_to_path(ref, 'map', 1234.5)
    assert len(path.poses) == len(ref)
    last = path.poses[-1].header.stamp
    assert last.sec + 1e-9 * last.nanosec == pytest.approx(1234.5 + ref.duration, abs=1e-6)
    empty = empty_path('map', 7.0)
    assert not empty.poses and empty.header.frame_id == 'map' and empty.header.stamp.sec == 7


def malformed(change):
    msg = reference_to_trajectory(straight(), 'map', 0.0, 'r/base_link')
    change(msg)
    return msg


def set_attr(obj, name, value):
    setattr(obj, name, value)


@pytest.mark.parametrize('change, match', [
    (lambda m: m.points.append(MultiDOFJointTrajectoryPoint()),
     r'points\[3\]\.transforms\[0\] is missing'),
    (lambda m: set_attr(m.points[1].transforms[0].translation, 'y', float('nan')),
     r'points\[1\]\.transforms\[0\] is not finite'),
    (lambda m: set_attr(m.points[2].velocities[0].linear, 'x', float('inf')),
     r'points\[2\]\.velocities\[0\] is not finite'),
    (lambda m: set_attr(m.points[2].accelerations[0].linear, 'y', float('nan')),
     r'points\[2\]\.accelerations\[0\] is not finite'),
    (lambda m: set_attr(m.points[2], 'time_from_start', m.points[1].time_from_start),
     r'points\[2\]\.time_from_start \(1 s\) is not after points\[1\] \(1 s\)'),
    (lambda m: set_attr(m.points[1].transforms[1].translation, 'x', 0.5),
     r'points\[1\]\.transforms\[1\]\.translation\.x \(driving direction\) is 0\.5'),
    (lambda m: set_attr(m.points[0], 'transforms', m.points[0].transforms[:1]),
     r'points\[0\]\.transforms\[1\] is missing \(the driving direction\)'),
])
def test_malformed_trajectory_is_refused_naming_the_point_and_field(change, match):
    with pytest.raises(ValueError, match=match):
        msg_to_reference(malformed(change))
