"""map_publisher: loads a map_server map (YAML + PGM/PNG) and publishes it latched.

Like nav2_map_server's map_server, a managed node (`orca_nav.ros.lifecycle`): parameter
`yaml_filename`; configuring loads the map, activating publishes it once on `topic` (default /map)
with transient-local, reliable QoS, so subscribers that start later still get it. A missing or
malformed map file fails configuration with a ValueError naming the path (and the field); with
`autostart` the constructor raises it and `main` logs it and exits with status 1.
"""
from __future__ import annotations

from pathlib import Path

import yaml
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg

from orca_nav.core.grid import OccupancyGrid
from orca_nav.parameters.map_publisher import NODE_SPECS
from orca_nav.ros.construction import released_on_failure
from orca_nav.ros.convert import grid_to_msg, latched_qos
from orca_nav.ros.lifecycle import ManagedNode
from orca_nav.ros.node_main import run_node
from orca_nav.ros.params import declare_parameters


def load_map(path: str) -> OccupancyGrid:
    """The 2-D grid of a map_server YAML; ValueError naming the path (and field) if unusable."""
    if not path:
        raise ValueError('yaml_filename: no map file given (set the parameter yaml_filename)')
    file = Path(path).expanduser()
    if not file.is_file():
        raise ValueError(f'yaml_filename: map file {str(file)!r} does not exist')
    try:
        grid = OccupancyGrid.from_map_yaml(file)
    except ValueError as err:
        raise ValueError(f'yaml_filename: cannot load map {str(file)!r}: {err}') from err
    except yaml.YAMLError as err:
        raise ValueError(f'yaml_filename: map file {str(file)!r} is not valid YAML: {err}') \
            from err
    except (OSError, KeyError, TypeError) as err:    # unreadable image, odd YAML contents
        raise ValueError(f'yaml_filename: cannot load map {str(file)!r}: '
                         f'{type(err).__name__}: {err}') from err
    return grid


class MapPublisher(ManagedNode):
    """Publishes the map of `yaml_filename` once, latched, on `topic`, when activated."""

    @released_on_failure
    def __init__(self, **kwargs):
        super().__init__('map_publisher', **kwargs)
        self.params = declare_parameters(self, NODE_SPECS)
        self.start()

    def configure(self) -> None:
        params = self.params
        self.grid = load_map(params['yaml_filename'])
        self.publisher = self.create_lifecycle_publisher(OccupancyGridMsg, params['topic'],
                                                         latched_qos())
        self.msg = grid_to_msg(self.grid, params['frame_id'], self.get_clock().now().to_msg())

    def activated(self) -> None:
        self.publisher.publish(self.msg)
        params = self.params
        ny, nx = self.grid.shape
        self.get_logger().info(f'published {params["yaml_filename"]} ({nx} x {ny} cells at '
                               f'{self.grid.resolution:g} m) on {params["topic"]} in frame '
                               f'{params["frame_id"]}')


def main(args=None) -> None:
    run_node(MapPublisher, 'map_publisher', args)


if __name__ == '__main__':
    main()
