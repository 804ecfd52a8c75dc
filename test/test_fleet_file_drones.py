"""Fleet files with drones: [x, y, z, yaw] poses for quadrotors, the 3-D map (`map_3d`), the
drones' altitudes in their ROS parameters, and the built-in drone scenarios."""
import numpy as np
import pytest

from orca_nav.bringup.fleet_file import FleetFileError, load_fleet_config
from orca_nav.bringup.scenarios import drones, drones_sphere, maps_dir
from orca_nav.core.voxel_map import load_voxel_map


def fleet(*robots, **top):
    return load_fleet_config({'robots': list(robots), **top})


def test_a_drone_pose_carries_its_altitude_into_the_config_and_its_parameters():
    cfg = fleet({'name': 'd0', 'kinematics': 'quadrotor', 'start': [1.0, 2.0, 3.0, 0.5],
                 'goals': [[4.0, 5.0, 6.0, 0.0], [1.0, 1.0, 2.0]]},
                {'name': 'g0', 'start': [0.0, 0.0, 0.0], 'goal': [1.0, 0.0]},
                map_3d=str(maps_dir() / 'open_3d.yaml'))
    drone, ground = cfg.robots
    assert drone.start == (1.0, 2.0, 0.5) and drone.start_z == 3.0
    assert drone.goals == ((4.0, 5.0, 0.0), (1.0, 1.0, 0.0)) and drone.goal_z == (6.0, 2.0)
    params = drone.ros_parameters()
    assert params['start'] == [1.0, 2.0, 0.5] and params['start_z'] == 3.0
    assert params['goal'] == [4.0, 5.0, 0.0] and params['goal_z'] == 6.0
    assert 'start_z' not in ground.ros_parameters() and ground.start_z == 0.0
    assert cfg.map_3d_path == maps_dir() / 'open_3d.yaml'
    again = load_fleet_config(cfg.to_dict())
    assert again == cfg
    assert cfg.to_dict()['robots'][0]['start'] == [1.0, 2.0, 3.0, 0.5]


@pytest.mark.parametrize('robot, top, problem', [
    ({'name': 'g', 'start': [0.0, 0.0, 1.0, 0.0]}, {},
     'robots[0].start: expected [x, y] or [x, y, yaw], got [0.0, 0.0, 1.0, 0.0]'),
    ({'name': 'd', 'kinematics': 'quadrotor', 'start': [0.0, 0.0]}, {},
     'robots[0].start: expected [x, y, z] or [x, y, z, yaw] (a quadrotor), got [0.0, 0.0]'),
    ({'name': 'd', 'kinematics': 'quadrotor', 'start': [0.0, 0.0, 1.0]}, {'map_3d': 'nope.yaml'},
     'map_3d: ')])
def test_bad_drone_entries_are_refused_naming_the_field(robot, top, problem):
    with pytest.raises(FleetFileError) as err:
        fleet(robot, **top)
    assert problem in str(err.value)


def test_drones_stacked_above_each_other_do_not_overlap_but_at_one_height_they_do():
    above = {'name': 'a', 'kinematics': 'quadrotor', 'start': [0.0, 0.0, 1.0]}
    fleet(above, {'name': 'b', 'kinematics': 'quadrotor', 'start': [0.0, 0.0, 2.0]})
    with pytest.raises(FleetFileError, match=r'robots\[1\].start: \[0.2, 0, 1, 0\] overlaps'):
        fleet(above, {'name': 'b', 'kinematics': 'quadrotor', 'start': [0.2, 0.0, 1.0]})


def test_the_drones_scenario_swaps_pairs_at_different_altitudes_clear_of_the_trunks():
    cfg = drones()
    assert len(cfg.robots) >= 12 and cfg.planner_enabled and cfg.map_path is None
    grid = load_voxel_map(cfg.map_3d_path)
    starts = np.array([(*r.start[:2], r.start_z) for r in cfg.robots])
    goals = np.array([(*r.goals[0][:2], r.goal_z[0]) for r in cfg.robots])
    assert (grid.clearance_at(np.vstack([starts, goals])) >= 0.9).all()
    np.testing.assert_array_equal(goals[0::2], starts[1::2])      # pairs swap places
    assert len(set(starts[:, 2])) >= 4 and (starts[0::2, 2] != goals[0::2, 2]).all()


def test_the_sphere_scenario_sends_24_drones_to_their_antipodes_inside_open_space():
    cfg = drones_sphere()
    assert len(cfg.robots) == 24 and not cfg.planner_enabled
    starts = np.array([(*r.start[:2], r.start_z) for r in cfg.robots])
    goals = np.array([(*r.goals[0][:2], r.goal_z[0]) for r in cfg.robots])
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
    assert publisher['resolution'] == 0.2
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
