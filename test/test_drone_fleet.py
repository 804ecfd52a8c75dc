"""Drones in a fleet file (altitudes, the 3-D map, placement checks) and a mixed fleet of drones
and ground robots over real DDS, closed loop in lockstep."""
import io
from pathlib import Path

import numpy as np
import pytest
import yaml

from orca_nav.bringup.fleet_file import FleetFileError, load_fleet_config, load_fleet_config_or_exit
from orca_nav.bringup.graph import describe_graph

REPO = Path(__file__).resolve().parents[1]
FOREST = str(REPO / 'config' / 'maps' / 'forest_3d.yaml')
COLUMN = (7.07, 34.26)      # a forest_3d cylinder, radius 0.68 m


def drone(name, start, start_z, goal, goal_z):
    return {'name': name, 'kinematics': 'quadrotor', 'start': list(start), 'start_z': start_z,
            'goal': list(goal), 'goal_z': goal_z}


def test_drones_are_placed_in_the_3d_map_and_bad_placements_name_the_field():
    cx, cy = COLUMN
    with pytest.raises(FleetFileError) as info:
        load_fleet_config({'map_3d': FOREST, 'robots': [
            drone('d0', [cx, cy], 1.5, [2.0, 2.0], 1.0),               # start in the column
            drone('d1', [2.0, 5.0], 1.0, [20.0, 20.0], 7.0),           # goal above the map
            drone('d2', [5.0, 2.0], 0.1, [5.0, 2.0], 0.0),             # start on the floor
            {'name': 'g0', 'start': [9.0, 9.0], 'start_z': 1.0}]})     # a flying ground robot
    assert info.value.problems == [
        'robots[3].start_z: 1 m, but only quadrotors fly (a holonomic robot is at z = 0)',
        f'robots[0].start: (x, y, z) [{cx:g}, {cy:g}, 1.5] is inside an obstacle of the 3-D '
        "map: the drone's ball (radius 0.3 m) overlaps an occupied voxel or the map border",
        'robots[1].goal: (x, y, z) [20, 20, 7] is outside the 3-D map (the 3-D map spans '
        'x 0..40, y 0..40, z -0.2..5)',
        'robots[2].start: (x, y, z) [5, 2, 0.1] is inside an obstacle of the 3-D map: the '
        "drone's ball (radius 0.3 m) overlaps an occupied voxel or the map border",
        'robots[2].goal: (x, y, z) [5, 2, 0.1] is inside an obstacle of the 3-D map: the '
        "drone's ball (radius 0.3 m) overlaps an occupied voxel or the map border"]


def test_launch_and_demo_refuse_a_drone_inside_the_forest_with_exit_status_2(tmp_path):
    path = tmp_path / 'bad.yaml'
    path.write_text(yaml.safe_dump({'map_3d': FOREST, 'robots': [
        drone('d0', list(COLUMN), 2.0, [2.0, 2.0], 1.0)]}))
    stream = io.StringIO()
    with pytest.raises(SystemExit) as info:
        load_fleet_config_or_exit(path, 'orca-nav demo', stream)
    assert info.value.code == 2
    assert 'robots[0].start: (x, y, z) [7.07, 34.26, 2] is inside an obstacle of the 3-D map' \
        in stream.getvalue()


def test_stacked_drones_and_a_drone_above_a_ground_robot_do_not_overlap():
    cfg = load_fleet_config({'robots': [
        drone('d0', [0.0, 0.0], 1.5, [5.0, 0.0], 1.0),
        drone('d1', [0.0, 0.0], 2.5, [5.0, 1.0], 0.0),
        {'name': 'g0', 'start': [0.0, 0.0]}]})
    assert [r.start_z for r in cfg.robots] == [1.5, 2.5, 0.0]
    assert cfg.robots[1].ros_parameters()['goal_z'] == 0.0
    assert 'start_z' not in cfg.robots[2].ros_parameters()
    with pytest.raises(FleetFileError, match=r'robots\[1\].start: .* overlaps robots\[0\]'):
        load_fleet_config({'robots': [drone('d0', [0.0, 0.0], 0.8, [5.0, 0.0], 0.0),
                                      {'name': 'g0', 'start': [0.2, 0.0]}]})


def test_the_graph_publishes_the_3d_map_and_drones_wait_for_it():
    cfg = load_fleet_config({'map_3d': FOREST, 'robots': [
        drone('d0', [2.0, 2.0], 1.0, [5.0, 2.0], 1.0)]})
    assert load_fleet_config(cfg.to_dict()) == cfg
    specs = {spec.name: spec for spec in describe_graph(cfg)}
    assert specs['map_3d_publisher'].parameters[0]['yaml_filename'] == FOREST
    orca = specs['orca_node'].parameters[0]
    assert orca['require_map_3d'] and orca['map_3d_resolution'] == 0.2
    assert orca['d0.start_z'] == 1.0 and orca['d0.goal_z'] == 1.0
    assert specs['fleet_sim'].parameters[0]['map_3d_resolution'] == 0.2


# ---------------------------------------------------------------------- over DDS
def mixed_fleet():
    """Four drones swapping beside a forest column (one climbing a metre on the way), two ground
    robots swapping across a low drone's path."""
    cx, cy = COLUMN
    return load_fleet_config({
        'name': 'mixed_drones', 'map_3d': FOREST,
        'defaults': {'radius': 0.3, 'max_speed': 1.5, 'max_accel': 2.0},
        'robots': [
            drone('d0', [cx - 4, cy + 1.3], 1.5, [cx + 4, cy + 1.3], 2.5),
            drone('d1', [cx + 4, cy + 1.3], 1.5, [cx - 4, cy + 1.3], 1.5),
            drone('d2', [cx + 1.3, cy - 4], 1.5, [cx + 1.3, cy + 4], 1.5),
            drone('d3', [cx + 1.3, cy + 4], 1.5, [cx + 1.3, cy - 4], 1.5),
            drone('low', [cx + 2.0, cy - 7.5], 0.6, [cx + 2.0, cy - 2.5], 0.6),
            {'name': 'g0', 'kinematics': 'holonomic', 'start': [cx - 0.5, cy - 5.0],
             'goal': [cx + 4.5, cy - 5.0]},
            {'name': 'g1', 'kinematics': 'holonomic', 'start': [cx + 4.5, cy - 5.0, 3.14159],
             'goal': [cx - 0.5, cy - 5.0]}],
        'demo': {'goal_tolerance': 0.25}})


@pytest.mark.ros
@pytest.mark.slow
def test_mixed_fleet_of_drones_and_ground_robots_arrives_without_contact():
    pytest.importorskip('rclpy')
    from orca_nav.bringup.runner import run_graph

    from ros_harness import contact_reports

    cfg = mixed_fleet()
    specs = describe_graph(cfg, sim_overrides={'lockstep': True, 'real_time_factor': 0.0})
    goals = np.array([list(r.goals[0][:2]) + [r.goal_z if r.goal_z else r.start_z]
                      for r in cfg.robots])
    with run_graph(specs) as graph:
        sim = graph.nodes['/fleet_sim']
        contacts = contact_reports(graph)

        def arrived():
            truth = np.column_stack([sim.sim.poses[:, :2], sim.sim.altitudes])
            return bool(np.all(np.linalg.norm(truth - goals, axis=1) < 0.3))
        assert graph.wait_for(arrived, timeout=240.0), (sim.sim.poses, sim.sim.altitudes)
        assert graph.error is None
        assert sim.sim.grid_3d is not None       # drone-voxel contacts were checked
    assert contacts == []
