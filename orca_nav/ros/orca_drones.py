"""orca_node's drone wiring: the 3-D map from `map_3d_topic` into the controller.

Subscribed only when a robot of `robots` is a quadrotor. Each cloud (sensor_msgs/PointCloud2 of
occupied voxel centres, transient local, in `global_frame`) becomes a 3-D grid of
`map_3d_resolution` (`convert.cloud_to_grid`), then the drones' voxel obstacles
(`core.fleet.drones.prepare_map_3d`, a cKDTree of the surface voxels: quick, so on the control
thread). Points with NaN coordinates are dropped with a warning naming the field; a cloud that
cannot be used (empty, wrong frame, no finite point, a layout or resolution problem) is refused
with a warning naming the field, and the drones keep the 3-D map they had, or, with
`require_map_3d`, hold still until a usable one comes. Drone goals the new map puts outside it
or inside an obstacle are dropped, each with a warning.
"""
from __future__ import annotations

from typing import Callable, Sequence

from sensor_msgs.msg import PointCloud2

from orca_nav.core.fleet.controller import FleetController
from orca_nav.core.fleet.drones import prepare_map_3d
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.ros.convert import cloud_to_grid, latched_qos


class DroneMap:
    """Feeds the 3-D map to `fleet` (of the robots `specs`); `node` subscribes and logs. A drone
    goal the map drops goes to `goal_dropped(row, text)`; after every new map, `changed()`
    (robots may have become ready)."""

    def __init__(self, node, fleet: FleetController, cfg: dict, specs: Sequence[RobotSpec],
                 goal_dropped: Callable[[int, str], None], changed: Callable[[], None]):
        self._log = node.get_logger()
        self._fleet = fleet
        self._frame = cfg['global_frame']
        self._goal_dropped, self._changed = goal_dropped, changed
        self.topic = cfg['map_3d_topic']
        self.resolution = cfg['map_3d_resolution']
        if any(spec.flies for spec in specs):
            node.create_subscription(PointCloud2, self.topic, self._on_cloud, latched_qos())

    def _on_cloud(self, msg: PointCloud2) -> None:
        log, fleet = self._log, self._fleet
        keeping = ('the drones keep the previous 3-D map' if fleet.map_3d is not None
                   else 'drones without a 3-D map')
        try:
            grid, note = cloud_to_grid(msg, self.resolution, frame_id=self._frame)
        except ValueError as err:
            log.warning(f'rejecting {self.topic}: {err}; {keeping}')
            return
        if note is not None:
            log.warning(f'{self.topic}: {note}')
        model = prepare_map_3d(grid)
        lower, upper = grid.extent
        nz, ny, nx = grid.shape
        log.info(f'3-D map {nx} x {ny} x {nz} voxels of {grid.resolution:g} m (x {lower[0]:g}..'
                 f'{upper[0]:g}, y {lower[1]:g}..{upper[1]:g}, z {lower[2]:g}..{upper[2]:g}) '
                 f'-> {len(model.obstacles)} surface voxels for the drones')
        for i, reason in fleet.set_map_3d(model):
            self._goal_dropped(i, f'{fleet.names[i]}: dropping goal after the new 3-D map: '
                                  f'{reason}')
        self._changed()
