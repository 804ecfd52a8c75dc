"""map_3d_publisher: loads a 3-D voxel map and publishes it latched as a point cloud.

The sibling of `map_publisher` for drones (a managed node, `orca_nav.ros.lifecycle`): parameter
`yaml_filename` names a voxel map YAML (`orca_nav.core.voxel_map`, e.g.
config/maps/forest_3d.yaml); configuring loads it, activating publishes it once on `topic`
(default /map_3d) with transient-local, reliable QoS as sensor_msgs/PointCloud2 of the occupied
voxel centres (x, y, z float32) in `frame_id`. The voxel size is the parameter `resolution`: 0
takes the file's and sets the parameter to it, so `ros2 param get` tells what a subscriber
needs to rebuild the grid (`convert.cloud_to_grid`); another value must be the file's. A
missing or malformed file, or a wrong resolution, fails configuration with a ValueError naming
the parameter (with `autostart`, `main` logs it and exits with status 1).
"""
from __future__ import annotations

from pathlib import Path

from rclpy.parameter import Parameter
from sensor_msgs.msg import PointCloud2

from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.voxel_map import load_voxel_map
from orca_nav.parameters.map_3d_publisher import NODE_SPECS
from orca_nav.ros.construction import released_on_failure
from orca_nav.ros.convert import grid_to_cloud, latched_qos
from orca_nav.ros.lifecycle import ManagedNode
from orca_nav.ros.node_main import run_node
from orca_nav.ros.params import declare_parameters


def load_map_3d(path: str) -> OccupancyGrid:
    """The 3-D grid of a voxel map YAML; ValueError naming yaml_filename if unusable."""
    if not path:
        raise ValueError('yaml_filename: no 3-D map file given (set the parameter yaml_filename)')
    file = Path(path).expanduser()
    if not file.is_file():
        raise ValueError(f'yaml_filename: 3-D map file {str(file)!r} does not exist')
    try:
        return load_voxel_map(file)
    except ValueError as err:
        raise ValueError(f'yaml_filename: {err}') from None


class Map3dPublisher(ManagedNode):
    """Publishes the voxel map of `yaml_filename` once, latched, on `topic`, when activated."""

    @released_on_failure
    def __init__(self, **kwargs):
        super().__init__('map_3d_publisher', **kwargs)
        self.params = declare_parameters(self, NODE_SPECS)
        self.start()

    def configure(self) -> None:
        params = self.params
        self.grid = load_map_3d(params['yaml_filename'])
        wanted = float(self.get_parameter('resolution').value)
        if wanted not in (0.0, self.grid.resolution):
            raise ValueError(f'resolution: {wanted:g} m, but {params["yaml_filename"]} has '
                             f'{self.grid.resolution:g} m voxels (0 takes the file\'s)')
        if wanted == 0.0:
            self.set_parameters([Parameter('resolution', value=float(self.grid.resolution))])
        self.publisher = self.create_lifecycle_publisher(PointCloud2, params['topic'],
                                                         latched_qos())
        self.msg = grid_to_cloud(self.grid, params['frame_id'], self.get_clock().now().to_msg())

    def activated(self) -> None:
        self.publisher.publish(self.msg)
        params = self.params
        nz, ny, nx = self.grid.shape
        lower, upper = self.grid.extent
        self.get_logger().info(
            f'published {params["yaml_filename"]} ({nx} x {ny} x {nz} voxels of '
            f'{self.grid.resolution:g} m, {self.msg.width} occupied; x {lower[0]:g}..{upper[0]:g}, '
            f'y {lower[1]:g}..{upper[1]:g}, z {lower[2]:g}..{upper[2]:g}) on {params["topic"]} '
            f'in frame {params["frame_id"]}')


def main(args=None) -> None:
    run_node(Map3dPublisher, 'map_3d_publisher', args)


if __name__ == '__main__':
    main()
