"""tf_relay's parameters."""
from __future__ import annotations

from orca_nav.parameters.spec import ParamSpec

NODE_SPECS = [
    ParamSpec('robots', ['robot0'], 'Robots whose <robot>/tf and <robot>/tf_static are relayed',
              read_only=True),
    ParamSpec('global_frame', 'map', 'The frame every robot tree shares (kept unprefixed)',
              read_only=True),
]
