"""Obstacles from sensors: simulated scans (core.fleet.sim_scan), sensor points as short-lived
ORCA obstacles (core.fleet.sensed_obstacles), and a robot avoiding an unmapped box it only
sees with its scan (core only, no ROS)."""
import numpy as np
import pytest

from orca_nav.core.fleet.sensed_obstacles import SensedObstacles, planar_scan
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.sim.scan import beam_angles, box_clearance, box_overlap, check_boxes, scan_ranges


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


def test_sensor_points_become_few_edges_bounded_and_short_lived():
    sensed = SensedObstacles(robots=2, persistence=0.5, max_points=10, link_distance=0.3)
    wall = np.column_stack([np.full(40, 3.0), np.linspace(-1.0, 1.0, 40)])
    nobody = (np.zeros((0, 2)), np.zeros(0))
    sensed.add_scan(0, 1.0, wall, *nobody)
    assert sensed.point_count() == 10                      # thinned evenly to max_points
    np.testing.assert_allclose(sensed.edges(1.0), [[[3.0, -1.0], [3.0, 1.0]]])   # one edge
    sensed.add_scan(0, 1.1, wall[:5], *nobody)
    assert sensed.point_count() == 5                       # the older scan went first
    corner = np.array([[0.0, 5.0], [0.1, 5.0], [0.2, 5.0], [0.2, 5.1], [0.2, 5.2],
                       [np.inf, np.inf], [9.0, 9.0]])
    sensed.add_scan(1, 1.0, corner, *nobody)
    edges = sensed.edges(1.2)
    # robot0's straight piece, robot1's corner (two edges) and its lone point (a short one).
    assert len(edges) == 1 + 2 + 1
    np.testing.assert_allclose(edges[1:3], [[[0.0, 5.0], [0.2, 5.0]], [[0.2, 5.0], [0.2, 5.2]]])
    # Points on a robot or a tracked agent when the scan comes in are not obstacles.
    version = sensed.version
    sensed.add_scan(1, 1.2, np.array([[4.0, 4.3], [7.0, 7.0]]), np.array([[4.0, 4.0]]),
                    np.array([0.3]))
    assert sensed.version != version
    assert len(sensed.edges(1.2)) == 4 + 1 and sensed.edges(1.2)[-1][0].tolist() == [7.0, 7.0]
    assert sensed.edges(1.75).shape == (0, 2, 2)     # all expired


def test_the_distance_to_the_sensed_edges():
    sensed = SensedObstacles(robots=1, persistence=0.5, max_points=50, link_distance=0.3)
    points = np.array([[0.0, 0.0], [3.5, 0.5], [3.0, 2.0]])
    assert np.isinf(sensed.distance(points, 1.0)).all()            # nothing sensed yet
    wall = np.column_stack([np.full(21, 3.0), np.linspace(-1.0, 1.0, 21)])
    sensed.add_scan(0, 1.0, wall, np.zeros((0, 2)), np.zeros(0))
    # Beside the wall, level with it, and past its end (to the end point).
    np.testing.assert_allclose(sensed.distance(points, 1.0), [3.0, 0.5, 1.0])
    assert np.isinf(sensed.distance(points, 1.6)).all()            # expired


def test_extra_obstacles_act_as_obstacles_next_to_the_prepared_map():
    from orca_nav.core.avoidance import OrcaParams, prepare_obstacles, solve
    params = OrcaParams(0.1, 10.0, 10, 3.0, 2.0, 0.3, 1.0)
    west = np.array([[-3.0, -1.0], [-2.0, -1.0], [-2.0, 1.0], [-3.0, 1.0]])
    east = np.array([[2.0, -1.0], [3.0, -1.0], [3.0, 1.0], [2.0, 1.0]])
    rng = np.random.default_rng(2)
    positions = np.column_stack([rng.uniform(-1.5, 1.5, 12), rng.uniform(-3.0, 3.0, 12)])
    pref = rng.uniform(-1.0, 1.0, (12, 2))
    both = solve(positions, np.zeros((12, 2)), pref, params, obstacles=[west, east])
    split = solve(positions, np.zeros((12, 2)), pref, params,
                  obstacles=prepare_obstacles([west]), extra_obstacles=[east])
    np.testing.assert_allclose(split.velocities, both.velocities, atol=1e-12)
    only_extra = solve(positions, np.zeros((12, 2)), pref, params, extra_obstacles=[west, east])
    np.testing.assert_allclose(only_extra.velocities, both.velocities, atol=1e-12)
    with pytest.raises(ValueError, match='extra_obstacles'):
        solve(positions, np.zeros((12, 2)), pref, params, extra_obstacles=[west[:, :1]])


def _robot_toward_a_box(scans: bool):
    """A robot heads for a goal behind an unmapped box; with `scans` the controller gets its
    simulated scans. Returns (collision events, final distance to the goal)."""
    from orca_nav.core.fleet.controller import FleetController
    from orca_nav.core.fleet.controller_params import ControllerParams
    from orca_nav.core.fleet.kinematics import RobotLimits
    from orca_nav.core.fleet.robots import RobotSpec
    from orca_nav.core.geometry import body_to_world
    from orca_nav.core.sim.fleet_sim import FleetSim
    boxes = check_boxes([[2.0, -0.6, 2.8, 0.5]])
    sim = FleetSim(RobotLimits.create(['holonomic'], [1.0], [2.0], [2.0], [1.0]), [0.3],
                   [[0.0, 0.0, 0.0]], boxes=boxes)
    controller = FleetController([RobotSpec('robot0', radius=0.3)], ControllerParams())
    controller.set_goal(0, (5.0, 0.0))
    angles = beam_angles(180)
    now, events = 0.0, []
    for _ in range(300):
        pose, twist = sim.odometry()
        controller.set_state(0, now, pose[0, :2], body_to_world(twist[:, :2], pose[:, 2])[0],
                             pose[0, 2])
        if scans:
            ranges = scan_ranges(pose[0, :2], pose[0, 2], angles, 6.0, None, boxes,
                                 np.zeros((0, 2)), np.zeros(0))
            hit = np.isfinite(ranges)
            body = ranges[hit, None] * np.column_stack([np.cos(angles[hit]), np.sin(angles[hit])])
            assert controller.set_scan(0, now, body) is None
        events += sim.step(0.05, controller.step(now).twists)
        now += 0.05
    return events, float(np.hypot(*(sim.poses[0, :2] - (5.0, 0.0))))


def test_a_robot_goes_around_a_box_only_its_scan_shows():
    blind, _ = _robot_toward_a_box(scans=False)
    seen, final = _robot_toward_a_box(scans=True)
    assert [e.kind for e in blind] == ['robot_obstacle']
    assert seen == [] and final < 0.2


def test_two_robots_side_by_side_go_around_a_box_only_their_scans_show():
    """Both head west into an unmapped box in front of them both, the lower-priority robot on
    the other's right: the right-hand detour led the first into it and made the second wait,
    for good. Now the first detours to its left, where the scans show room."""
    from orca_nav.core.fleet.controller import FleetController
    from orca_nav.core.fleet.controller_params import ControllerParams
    from orca_nav.core.fleet.kinematics import RobotLimits
    from orca_nav.core.fleet.robots import RobotSpec
    from orca_nav.core.geometry import body_to_world
    from orca_nav.core.sim.fleet_sim import FleetSim
    boxes = check_boxes([[-1.7, -0.1, -0.5, 0.9]])
    starts = np.array([[2.0, 0.0, np.pi], [2.0, 0.64, np.pi]])
    goals = starts[:, :2] - (8.0, 0.0)
    sim = FleetSim(RobotLimits.create(['holonomic'] * 2, [1.0] * 2, [2.0] * 2, [2.0] * 2,
                                      [1.0] * 2), [0.25, 0.25], starts, boxes=boxes)
    controller = FleetController([RobotSpec('a', radius=0.25), RobotSpec('b', radius=0.25)],
                                 ControllerParams())
    for i, goal in enumerate(goals):
        controller.set_goal(i, goal)
    angles = beam_angles(180)
    now, events = 0.0, []
    for _ in range(400):                                    # 20 s
        pose, twist = sim.odometry()
        velocity = body_to_world(twist[:, :2], pose[:, 2])
        for i in range(2):
            controller.set_state(i, now, pose[i, :2], velocity[i], pose[i, 2])
            ranges = scan_ranges(pose[i, :2], pose[i, 2], angles, 6.0, None, boxes,
                                 pose[[1 - i], :2], np.array([0.25]))
            hit = np.isfinite(ranges)
            body = ranges[hit, None] * np.column_stack([np.cos(angles[hit]), np.sin(angles[hit])])
            assert controller.set_scan(i, now, body) is None
        events += sim.step(0.05, controller.step(now).twists)
        now += 0.05
    assert events == []
    assert np.hypot(*(sim.poses[:, :2] - goals).T).max() < 0.2


def test_a_point_cloud_becomes_the_scan_a_planar_laser_would_give():
    # A wall 2 m ahead from floor to 3 m, the floor itself, a shelf overhead, and NaN points.
    ys = np.linspace(-1.0, 1.0, 201)
    wall = np.array([(2.0, y, z) for y in ys for z in np.linspace(0.0, 3.0, 16)])
    floor = np.array([(x, y, 0.0) for x in np.linspace(0.5, 1.5, 5) for y in ys])
    shelf = np.array([(1.0, y, 2.5) for y in ys])
    cloud = np.vstack([wall, floor, shelf, [[np.nan, 0.0, 1.0]]])
    scan = planar_scan(cloud, min_z=0.05, max_z=2.0, bins=360)
    # Only the wall is left (x = 2), one point per bearing, nearest first, in bearing order.
    np.testing.assert_allclose(scan[:, 0], 2.0)
    bearings = np.arctan2(scan[:, 1], scan[:, 0])
    assert np.all(np.diff(bearings) > 0.0)
    assert len(scan) == len(np.unique(np.floor((bearings + np.pi) / (2 * np.pi) * 360)))
    assert len(scan) < len(ys)          # 201 wall columns fall in 54 one-degree bearings
    # Lowering the ceiling to below the shelf keeps the wall only; raising it adds the shelf,
    # which is nearer (x = 1) and so replaces the wall in its bearings.
    with_shelf = planar_scan(cloud, min_z=0.05, max_z=3.0, bins=360)
    assert np.all(with_shelf[:, 0] == 1.0)
    assert planar_scan(floor, 0.05, 2.0).shape == (0, 2)
    assert planar_scan(np.zeros((0, 3)), 0.05, 2.0).shape == (0, 2)
