"""map_3d_publisher's parameters."""
from __future__ import annotations

from orca_nav.parameters.spec import ParamSpec

MAP_3D_TOPIC = '/map_3d'
NODE_SPECS = [
    ParamSpec('yaml_filename', '', 'Path of the voxel map YAML (voxels: <file>.npz)',
              read_only=True),
    ParamSpec('frame_id', 'map', 'Frame of the published cloud', read_only=True),
    ParamSpec('topic', MAP_3D_TOPIC, 'Topic the 3-D map is published on (transient local)',
              read_only=True),
    ParamSpec('resolution', 0.0, 'Voxel size of the map (m); 0: the file\'s (the parameter is '
              'then set to it)', min=0.0,
              max=100.0),
]
