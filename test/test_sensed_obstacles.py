"""Obstacles from sensors: simulated scans (core.fleet.sim_scan), sensor points as short-lived
ORCA obstacles (core.fleet.sensed_obstacles), and a robot avoiding an unmapped box it only
sees with its scan (core only, no ROS)."""
import numpy as np
import pytest

from orca_nav.core.fleet.sensed_obstacles import SensedObstacles
from orca_nav.core.fleet.sim_scan import (beam_angles, box_clearance, box_overlap, check_boxes,
                                          scan_ranges)
from orca_nav.core.grid import OccupancyGrid


def test_a_scan_sees_walls_boxes_and_discs():
    occupied = np.zeros((100, 100), dtype=bool)
    occupied[:, 80:] = True                          # a wall from x = 8 m
    grid = OccupancyGrid(occupied, 0.1, (0.0, 0.0))
    angles = np.array([0.0, np.pi / 2, np.pi, -np.pi / 2])
    boxes = check_boxes([[4.0, 6.0, 6.0, 7.0]])          # 1 m above the robot at (5, 5)
    ranges = scan_ranges(np.array([5.0, 5.0]), 0.0, angles, 6.0, grid, boxes,
                         np.array([[2.0, 5.0]]), np.array([0.5]))
    # +x: the wall at 8 (to half a cell), +y: the box at 6, -x: the disc's edge at 2.5,
    # -y: the map's edge at 0 (outside the map counts as occupied).
    np.testing.assert_allclose(ranges, [3.0, 1.0, 2.5, 5.0], atol=0.051)
    facing_up = scan_ranges(np.array([5.0, 5.0]), np.pi / 2, np.array([0.0]), 6.0, None, boxes,
                            np.zeros((0, 2)), np.zeros(0))
    np.testing.assert_allclose(facing_up, [1.0])         # beams are in the robot's frame
    nothing = scan_ranges(np.array([5.0, 5.0]), 0.0, beam_angles(8), 2.0, None,
                          np.zeros((0, 4)), np.zeros((0, 2)), np.zeros(0))
    assert np.isinf(nothing).all()


def test_boxes_collide_and_are_checked():
    boxes = check_boxes([[0.0, 0.0, 1.0, 1.0]])
    positions = np.array([[1.2, 0.5], [1.4, 0.5], [0.5, 0.5]])
    assert box_overlap(boxes, positions, np.full(3, 0.3)).tolist() == [True, False, True]
    np.testing.assert_allclose(box_clearance(boxes, positions), [0.2, 0.4, 0.0])
    with pytest.raises(ValueError, match=r'boxes\[1\]'):
        check_boxes([[0.0, 0.0, 1.0, 1.0], [2.0, 0.0, 1.0, 1.0]])


def test_sensor_points_become_segments_bounded_and_short_lived():
    sensed = SensedObstacles(robots=2, persistence=0.5, max_points=10, link_distance=0.3)
    wall = np.column_stack([np.full(40, 3.0), np.linspace(-1.0, 1.0, 40)])
    sensed.add_scan(0, 1.0, wall)
    assert sensed.point_count() == 10                      # thinned evenly to max_points
    sensed.add_scan(0, 1.1, wall[:5])
    assert sensed.point_count() == 5                       # the older scan went first
    sensed.add_scan(1, 1.0, np.array([[0.0, 5.0], [np.inf, np.inf], [9.0, 9.0]]))
    segments = sensed.segments(1.2, np.zeros((0, 2)), np.zeros(0))
    # robot0's 5 points 0.05 m apart: 4 links; robot1's two lone points: 2 short segments.
    assert len(segments) == 6
    assert all(s.shape == (2, 2) for s in segments)
    # Points on a robot or a tracked agent are not obstacles.
    cleared = sensed.segments(1.2, np.array([[9.0, 9.2], [0.0, 5.0]]), np.array([0.3, 0.3]))
    assert len(cleared) == 4
    assert sensed.segments(1.7, np.zeros((0, 2)), np.zeros(0)) == []     # all expired
