"""The built-in drone scenarios (drones, drones_sphere) and the graph and RViz config that run
them."""
import numpy as np
import pytest

from orca_nav.bringup.scenarios import drones, drones_sphere
from orca_nav.core.voxel_map import load_voxel_map


def test_the_drones_scenario_swaps_pairs_at_different_altitudes_clear_of_the_trunks():
    cfg = drones()
    assert len(cfg.robots) >= 12 and cfg.planner_enabled and cfg.map_path is None
    grid = load_voxel_map(cfg.map_3d_path)
    starts = np.array([(*r.start[:2], r.start_z) for r in cfg.robots])
    goals = np.array([(*r.goals[0][:2], r.goal_z) for r in cfg.robots])
    assert (grid.clearance_at(np.vstack([starts, goals])) >= 0.9).all()
    np.testing.assert_array_equal(goals[0::2], starts[1::2])      # pairs swap places
    assert len(set(starts[:, 2])) >= 4 and (starts[0::2, 2] != goals[0::2, 2]).all()


def test_the_sphere_scenario_sends_24_drones_to_their_antipodes_inside_open_space():
    cfg = drones_sphere()
    assert len(cfg.robots) == 24 and not cfg.planner_enabled
    starts = np.array([(*r.start[:2], r.start_z) for r in cfg.robots])
    goals = np.array([(*r.goals[0][:2], r.goal_z) for r in cfg.robots])
    centre = np.array([0.0, 0.0, 8.0])
    np.testing.assert_allclose(starts + goals, 2 * centre[None].repeat(24, 0), atol=2e-3)
    distance = np.linalg.norm(starts[:, None] - starts[None], axis=2) + np.eye(24) * 99
    assert distance.min() > 4 * 0.3
    lower, upper = load_voxel_map(cfg.map_3d_path).extent
    assert (starts > lower + 1.0).all() and (starts < upper - 1.0).all()


def test_the_drones_graph_publishes_the_3d_map_and_rviz_shows_it():
    from orca_nav.bringup.graph import describe_graph, share_dir
    from orca_nav.bringup.rviz import rviz_config
    cfg = drones()
    specs = {s.name: s for s in describe_graph(cfg, use_sim=True)}
    assert 'map_publisher' not in specs
    publisher = specs['map_3d_publisher'].parameters[0]
    assert publisher['yaml_filename'] == str(cfg.map_3d_path)
    for node in ('planner_node', 'orca_node', 'fleet_sim'):
        params = specs[node].parameters[0]
        assert params['map_3d_resolution'] == 0.2 and params['drone0.start_z'] == 1.0
    assert specs['planner_node'].parameters[0]['drone0.goal_z'] == 3.0
    assert specs['orca_node'].parameters[0]['require_map_3d'] is True
    displays = rviz_config(cfg, share_dir() / 'config' / 'orca_nav.rviz')[
        'Visualization Manager']['Displays']
    cloud = [d for d in displays if d['Name'] == 'Map 3-D']
    assert cloud and cloud[0]['Topic']['Value'] == '/map_3d' and cloud[0]['Size (m)'] == 0.2
    assert all(d['Enabled'] for d in displays if d['Name'].startswith('Plan drone'))


def test_markers_draw_drones_as_spheres_at_their_altitude():
    pytest.importorskip('rclpy')
    from builtin_interfaces.msg import Time
    from visualization_msgs.msg import Marker

    from orca_nav.core.fleet.controller import FleetController
    from orca_nav.core.fleet.robots import RobotSpec
    from orca_nav.ros.markers import DISC, GOAL, fleet_markers
    ctl = FleetController([RobotSpec('d0', kinematics='quadrotor', radius=0.3),
                           RobotSpec('g0', radius=0.25)])
    ctl.set_state(0, 1.0, [1.0, 2.0, 2.5], [0.0, 0.0, 0.0], 0.0)
    ctl.set_state(1, 1.0, [4.0, 2.0], [0.0, 0.0], 0.0)
    assert ctl.set_goal(0, [5.0, 5.0], 3.5) is None
    markers = {(m.ns, m.id): m for m in fleet_markers(ctl.view(1.0), ['d0', 'g0'], 'map',
                                                      Time(sec=1), False).markers}
    drone, ground = markers[('d0', DISC)], markers[('g0', DISC)]
    assert drone.type == Marker.SPHERE and drone.pose.position.z == 2.5
    assert drone.scale.x == drone.scale.z == 0.6
    assert ground.type == Marker.CYLINDER and ground.pose.position.z == 0.0
    assert markers[('d0', GOAL)].pose.position.z == 3.5
