"""map_publisher's parameters."""
from __future__ import annotations

from orca_nav.parameters.spec import ParamSpec

MAP_TOPIC = '/map'
NODE_SPECS = [
    ParamSpec('yaml_filename', '', 'Path of the map_server map YAML (image, resolution, origin, '
              'thresholds)', read_only=True),
    ParamSpec('frame_id', 'map', 'Frame of the published map', read_only=True),
    ParamSpec('topic', MAP_TOPIC, 'Topic the map is published on (transient local)',
              read_only=True),
]
