"""PolynomialTrajectory: evaluation, sampling, joints, bad input."""
import numpy as np
import pytest

from orca_nav.core.planning.polynomial import PolynomialTrajectory


def two_segment():
    # Segment 0: 2 s of constant acceleration (1, -0.5) from rest at (0, 0).
    # Segment 1: 1 s of coasting from where segment 0 ends.
    seg0 = np.array([[0.0, 0.0], [0.0, 0.0], [0.5, -0.25]])
    p1, v1 = np.array([2.0, -1.0]), np.array([2.0, -1.0])
    seg1 = np.array([p1, v1])
    return PolynomialTrajectory.from_segments([(2.0, seg0), (1.0, seg1)])


def test_evaluate_and_sample():
    traj = two_segment()
    assert traj.duration == 3.0 and traj.ndim == 2
    np.testing.assert_allclose(traj.segment_start_times, [0.0, 2.0])
    pos, vel, acc = traj.evaluate([1.0, 2.0, 2.5, 3.0, 9.0])
    np.testing.assert_allclose(pos, [[0.5, -0.25], [2.0, -1.0], [3.0, -1.5], [4.0, -2.0],
                                     [4.0, -2.0]])
    np.testing.assert_allclose(vel, [[1.0, -0.5], [2.0, -1.0], [2.0, -1.0], [2.0, -1.0],
                                     [2.0, -1.0]])
    np.testing.assert_allclose(acc[0], [1.0, -0.5])
    np.testing.assert_allclose(acc[2], [0.0, 0.0])
    t, pos, vel, acc = traj.sample(0.4)
    assert t[0] == 0.0 and t[-1] == 3.0 and np.all(np.diff(t) <= 0.4 + 1e-12)
    assert pos.shape == vel.shape == acc.shape == (t.size, 2)
    # Sampled velocity integrates to the sampled position.
    fine_t, fine_p, fine_v, _ = traj.sample(1e-3)
    np.testing.assert_allclose(np.trapezoid(fine_v, fine_t, axis=0), fine_p[-1] - fine_p[0],
                               atol=1e-6)
    assert traj.length() == pytest.approx(np.hypot(4.0, 2.0), rel=1e-6)


def test_bad_input():
    with pytest.raises(ValueError, match='dt'):
        two_segment().sample(0.0)
    with pytest.raises(ValueError, match=r'durations\[1\]'):
        PolynomialTrajectory([1.0, -1.0], np.zeros((2, 3, 2)))
    with pytest.raises(ValueError, match='coefficients'):
        PolynomialTrajectory([1.0], np.zeros((2, 3, 2)))
    with pytest.raises(ValueError, match='coefficients'):
        PolynomialTrajectory([1.0], np.full((1, 3, 2), np.nan))
