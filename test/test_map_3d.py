"""The 3-D map: voxel map files, their point-cloud form and map_3d_publisher over real DDS."""
import array
from pathlib import Path

import numpy as np
import pytest

from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.voxel_map import (
    grid_from_centres,
    load_voxel_map,
    occupied_centres,
    save_voxel_map,
)

rclpy = pytest.importorskip('rclpy')
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import PointCloud2, PointField  # noqa: E402

from orca_nav.ros.convert import cloud_to_grid, cloud_xyz, grid_to_cloud, latched_qos  # noqa: E402
from orca_nav.ros.map_3d_publisher import Map3dPublisher  # noqa: E402

from ros_harness import harness_fixture  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MAPS = REPO / 'config' / 'maps'
SHARED_FOREST = REPO.parent / 'shared' / 'refdata' / 'planners' / 'forest_3d.npz'


def same_grid(a: OccupancyGrid, b: OccupancyGrid) -> bool:
    return (a.shape == b.shape and np.allclose(a.origin, b.origin, atol=1e-5)
            and a.resolution == b.resolution and np.array_equal(a.occupied, b.occupied))


# ---------------------------------------------------------------------- the files
@pytest.mark.skipif(not SHARED_FOREST.is_file(), reason='needs ../shared/refdata')
def test_forest_3d_is_the_shared_forest_at_0_2_m_on_a_floor():
    grid = load_voxel_map(MAPS / 'forest_3d.yaml')
    fine = OccupancyGrid.from_npz(SHARED_FOREST)
    assert grid.resolution == 0.2 and grid.shape == (26, 200, 200)
    lower, upper = grid.extent
    assert np.allclose(lower, [0.0, 0.0, -0.2]) and np.allclose(upper, [40.0, 40.0, 5.0])
    assert grid.occupied[0].all()           # the floor
    # Every 0.1 m occupied voxel lies in an occupied 0.2 m voxel, and every 0.2 m one holds one.
    fine_centres = occupied_centres(fine)
    assert grid.occupied_at(fine_centres).all()
    cylinders = grid.occupied[1:]
    assert cylinders.sum() * 8 >= len(fine_centres)
    assert not grid.occupied_at(np.array([[2.0, 2.0, 1.0], [38.0, 38.0, 1.0]])).any()


def test_open_3d_is_empty_between_floor_and_ceiling():
    grid = load_voxel_map(MAPS / 'open_3d.yaml')
    lower, upper = grid.extent
    assert np.allclose(lower, [-15, -15, -0.2]) and np.allclose(upper, [15, 15, 16.2])
    assert grid.occupied[0].all() and grid.occupied[-1].all() and not grid.occupied[1:-1].any()


def test_voxel_map_files_round_trip_and_bad_files_name_the_field(tmp_path):
    grid = OccupancyGrid(np.random.default_rng(3).random((4, 5, 6)) < 0.3, 0.5, (1.0, -2.0, 0.0))
    yaml_path, _ = save_voxel_map(grid, tmp_path / 'room')
    assert same_grid(load_voxel_map(yaml_path), grid)
    (tmp_path / 'bad.yaml').write_text('image: x.pgm\n')
    with pytest.raises(ValueError, match='voxels'):
        load_voxel_map(tmp_path / 'bad.yaml')
    (tmp_path / 'gone.yaml').write_text('voxels: gone.npz\n')
    with pytest.raises(ValueError, match=r'voxels: .*gone\.npz.* does not exist'):
        load_voxel_map(tmp_path / 'gone.yaml')


# ---------------------------------------------------------------------- points <-> grid
@pytest.mark.parametrize('name', ['forest_3d', 'open_3d'])
def test_occupied_centres_rebuild_the_map_exactly(name):
    grid = load_voxel_map(MAPS / f'{name}.yaml')
    assert same_grid(grid_from_centres(occupied_centres(grid), grid.resolution), grid)


def test_points_off_the_grid_empty_or_not_finite_are_refused():
    points = np.array([[0.1, 0.1, 0.1], [0.3, 0.1, 0.1]])
    with pytest.raises(ValueError, match=r'points\[1\].*off the grid of resolution 0.3'):
        grid_from_centres(points, 0.3)
    with pytest.raises(ValueError, match='no points'):
        grid_from_centres(np.zeros((0, 3)), 0.2)
    with pytest.raises(ValueError, match=r'points\[0\] is not finite'):
        grid_from_centres([[np.nan, 0.0, 0.0]], 0.2)
    with pytest.raises(ValueError, match='more than'):
        grid_from_centres([[0.0, 0.0, 0.0], [1e5, 1e5, 1e5]], 0.1)


def test_cloud_messages_round_trip_and_bad_clouds_name_the_field():
    grid = load_voxel_map(MAPS / 'forest_3d.yaml')
    msg = grid_to_cloud(grid, 'map', rclpy.time.Time().to_msg())
    assert [f.name for f in msg.fields] == ['x', 'y', 'z'] and msg.point_step == 12
    assert msg.width == int(grid.occupied.sum()) and msg.height == 1
    rebuilt, note = cloud_to_grid(msg, 0.2, frame_id='map')
    assert note is None and same_grid(rebuilt, grid)
    with pytest.raises(ValueError, match="header.frame_id 'map' is not the global frame 'odom'"):
        cloud_to_grid(msg, 0.2, frame_id='odom')
    # NaN points are dropped, named.
    points = cloud_xyz(msg)
    points[[3, 7], 2] = np.nan
    noisy = _cloud(points)
    rebuilt, note = cloud_to_grid(noisy, 0.2)
    assert 'data: 2 of' in note and 'NaN' in note and 'point 3' in note
    assert rebuilt.occupied.sum() == grid.occupied.sum() - 2
    with pytest.raises(ValueError, match='none of the 2 points is finite'):
        cloud_to_grid(_cloud(np.full((2, 3), np.nan)), 0.2)
    with pytest.raises(ValueError, match=r'width x height = 0 x 1: the cloud has no points'):
        cloud_to_grid(_cloud(np.zeros((0, 3))), 0.2)
    no_z = _cloud(points[:5])
    no_z.fields = no_z.fields[:2]
    with pytest.raises(ValueError, match=r"fields: no z field \(have \['x', 'y'\]\)"):
        cloud_to_grid(no_z, 0.2)
    short = _cloud(points[:5])
    short.data = short.data[:30]
    with pytest.raises(ValueError, match='data: 30 bytes'):
        cloud_to_grid(short, 0.2)


def test_cloud_with_padding_double_fields_and_big_endian():
    xyz = np.array([[0.1, 0.1, 0.1], [0.3, 0.5, 0.1]])
    rec = np.zeros(2, dtype=[('intensity', '>f4'), ('x', '>f8'), ('y', '>f8'), ('z', '>f8'),
                             ('pad', 'u1', 4)])
    rec['x'], rec['y'], rec['z'] = xyz.T
    msg = PointCloud2(height=1, width=2, is_bigendian=True, point_step=rec.dtype.itemsize,
                      row_step=2 * rec.dtype.itemsize)
    msg.fields = [PointField(name='intensity', offset=0, datatype=PointField.FLOAT32, count=1)] + [
        PointField(name=a, offset=4 + 8 * k, datatype=PointField.FLOAT64, count=1)
        for k, a in enumerate('xyz')]
    msg.data = array.array('B', rec.tobytes())
    assert np.allclose(cloud_xyz(msg), xyz)
    grid, _ = cloud_to_grid(msg, 0.2)
    assert grid.shape == (1, 3, 2) and grid.occupied.sum() == 2


def _cloud(points) -> PointCloud2:
    msg = PointCloud2(height=1, width=len(points), is_bigendian=False, point_step=12,
                      row_step=12 * len(points), is_dense=False)
    msg.header.frame_id = 'map'
    msg.fields = [PointField(name=a, offset=4 * k, datatype=PointField.FLOAT32, count=1)
                  for k, a in enumerate('xyz')]
    msg.data = array.array('B', np.asarray(points, dtype='<f4').tobytes())
    return msg


# ---------------------------------------------------------------------- over DDS
ros = harness_fixture()


@pytest.mark.ros
def test_map_3d_publisher_latched_for_a_late_subscriber(ros):
    node = ros.add(Map3dPublisher(context=ros.context, parameter_overrides=[
        Parameter('yaml_filename', value=str(MAPS / 'forest_3d.yaml'))]))
    assert node.get_parameter('resolution').value == 0.2
    clouds = ros.collect(PointCloud2, '/map_3d', qos=latched_qos())
    assert ros.wait_for(lambda: clouds)
    msg = clouds[0]
    assert msg.header.frame_id == 'map'
    grid, note = cloud_to_grid(msg, node.get_parameter('resolution').value, frame_id='map')
    assert note is None and same_grid(grid, load_voxel_map(MAPS / 'forest_3d.yaml'))


@pytest.mark.ros
def test_map_3d_publisher_refuses_a_wrong_resolution_or_a_missing_file(ros, tmp_path):
    with pytest.raises(ValueError, match=r'resolution: 0.1 m, but .*forest_3d.yaml has 0.2 m'):
        Map3dPublisher(context=ros.context, parameter_overrides=[
            Parameter('yaml_filename', value=str(MAPS / 'forest_3d.yaml')),
            Parameter('resolution', value=0.1)])
    with pytest.raises(ValueError, match=r'yaml_filename: .*nope.yaml.* does not exist'):
        Map3dPublisher(context=ros.context, parameter_overrides=[
            Parameter('yaml_filename', value=str(tmp_path / 'nope.yaml'))])
    with pytest.raises(ValueError, match='yaml_filename: .*corridor.yaml: a voxel map YAML needs'):
        Map3dPublisher(context=ros.context, parameter_overrides=[
            Parameter('yaml_filename', value=str(MAPS / 'corridor.yaml'))])
