"""Config assets of the simulator side: example maps, fleet_sim.yaml, RViz and gz bridge files."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest
import yaml

from orca_nav.core.grid import OccupancyGrid

from conftest import SHARED

REPO = Path(__file__).resolve().parents[1]
MAPS = REPO / 'config' / 'maps'
MAP_NAMES = ('open_40x40', 'corridor', 'blocks', 'warehouse', 'parking_2d', 'forest_2d')


def _make_maps():
    spec = importlib.util.spec_from_file_location('make_maps', REPO / 'tools' / 'make_maps.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load(name):
    return OccupancyGrid.from_map_yaml(MAPS / f'{name}.yaml')


def test_committed_maps_are_what_the_generator_writes():
    assert _make_maps().main(['--check', '--shared', str(SHARED)]) == 0


@pytest.mark.parametrize('name', MAP_NAMES)
def test_maps_load_small_and_binary(name):
    grid = _load(name)
    assert grid.ndim == 2 and 0.1 <= grid.resolution <= 0.25
    pgm = MAPS / f'{name}.pgm'
    assert pgm.read_bytes()[:2] == b'P5' and pgm.stat().st_size <= 250_000
    # Closed: the border cells are walls or (outside the map) count as occupied anyway.
    assert grid.occupied_at([[grid.origin[0] - 0.01, grid.origin[1] + 1.0]])[0]


def test_corridor_geometry():
    grid = _load('corridor')
    free = ~grid.occupied_at([[0.0, 0.0], [0.0, 1.2], [0.0, -1.2], [-9.0, 4.0], [9.0, -4.0]])
    assert free.all()
    assert grid.occupied_at([[0.0, 1.3], [0.0, -1.3], [-3.9, 3.0], [3.9, -3.0]]).all()


def test_blocks_is_rvo2_blocks_scaled():
    grid = _load('blocks')
    scale = _make_maps().BLOCKS_SCALE
    rng = np.random.default_rng(0)
    inside = rng.uniform(10.2, 39.8, size=(200, 2)) * scale * rng.choice([-1, 1], size=(200, 2))
    assert grid.occupied_at(inside).all()
    # RVO2 Blocks.cc agent starts (55 + 10 i, 55 + 10 j) and goals, scaled, are free with room.
    starts = np.array([[55 + 10 * i, 55 + 10 * j] for i in range(5) for j in range(5)]) * scale
    for sx, sy in ((1, 1), (-1, 1), (1, -1), (-1, -1)):
        assert (grid.clearance_at(starts * [sx, sy]) > 0.5).all()
    assert grid.clearance_at([[0.0, 0.0]])[0] > 1.5


def test_warehouse_aisles_let_two_robots_pass():
    grid = _load('warehouse')
    # Mid-aisle between shelf rows 3-4 and 6-7: two 0.3 m robots side by side at y = 4.5, 5.5.
    xs = np.linspace(5.5, 24.5, 40)
    for y in (4.6, 5.4):
        assert (grid.clearance_at(np.column_stack([xs, np.full_like(xs, y)])) > 0.3).all()


def test_parking_2d_is_exactly_the_reference_grid():
    ref = np.load(SHARED / 'refdata' / 'planners' / 'parking_2d.npz')
    grid = _load('parking_2d')
    assert np.array_equal(grid.occupied, ref['grid'] >= 100)
    assert grid.resolution == pytest.approx(0.1) and np.allclose(grid.origin, [0.0, 0.0])


def test_forest_2d_covers_every_cylinder_at_1m():
    ref = np.load(SHARED / 'refdata' / 'planners' / 'forest_3d.npz')
    grid = _load('forest_2d')
    assert grid.resolution == pytest.approx(0.2) and grid.shape == (200, 200)
    assert grid.occupied_at(ref['cylinders'][:, :2]).all()
    queries = ref['queries']
    assert not grid.occupied_at(queries[:, :2]).any()


def test_fleet_sim_yaml_names_only_declared_parameters():
    from orca_nav.parameters.fleet_sim_node import NODE_SPECS
    from orca_nav.parameters.shared import ROBOT_SPECS
    params = yaml.safe_load((REPO / 'config' / 'fleet_sim.yaml').read_text())
    values = params['fleet_sim']['ros__parameters']
    node_names = {s.name for s in NODE_SPECS}
    robot_fields = {s.name for s in ROBOT_SPECS}
    for key, value in values.items():
        if key in values['robots']:
            assert set(value) <= robot_fields, key
        else:
            assert key in node_names, key
    for spec in NODE_SPECS:
        if spec.name in values:
            assert spec.validate(spec.name, values[spec.name]) is None


def test_fleet_sim_yaml_documents_every_parameter_with_its_default():
    """The file says its values are the defaults unless marked "example" (only `robots`)."""
    from orca_nav.parameters.fleet_sim_node import NODE_SPECS
    values = yaml.safe_load((REPO / 'config' / 'fleet_sim.yaml').read_text())
    values = values['fleet_sim']['ros__parameters']
    for spec in NODE_SPECS:
        assert spec.name in values, f'{spec.name} is not in config/fleet_sim.yaml'
        if spec.name != 'robots':
            assert values[spec.name] == spec.default, spec.name


def test_gz_bridge_maps_the_gazebo_fleet_onto_orca_nav_topics():
    entries = yaml.safe_load((REPO / 'config' / 'gz_bridge.yaml').read_text())
    keys = {'ros_topic_name', 'gz_topic_name', 'ros_type_name', 'gz_type_name', 'direction'}
    assert all(set(e) == keys for e in entries)
    by_ros = {e['ros_topic_name']: e for e in entries}
    for i in range(4):
        odom, cmd = by_ros[f'/robot{i}/odom'], by_ros[f'/robot{i}/cmd_vel']
        assert (odom['gz_topic_name'], odom['direction']) == (f'/model/robot{i}/odometry',
                                                              'GZ_TO_ROS')
        assert (odom['ros_type_name'], odom['gz_type_name']) == ('nav_msgs/msg/Odometry',
                                                                 'gz.msgs.Odometry')
        assert (cmd['gz_topic_name'], cmd['direction']) == (f'/model/robot{i}/cmd_vel',
                                                            'ROS_TO_GZ')
        assert (cmd['ros_type_name'], cmd['gz_type_name']) == ('geometry_msgs/msg/Twist',
                                                               'gz.msgs.Twist')
