"""recorder_node's parameters: the bag to write and the topics to record."""
from __future__ import annotations

from orca_nav.parameters.spec import ParamSpec

NODE_SPECS = [
    ParamSpec('output', '', 'Folder of the bag to write (rosbag2, MCAP); it must not '
              'exist yet', read_only=True),
    ParamSpec('topics', [], 'Topics to record (resolved in the node\'s namespace), each '
              'from when a publisher appears', read_only=True,
              type_hint='string_array'),
]
