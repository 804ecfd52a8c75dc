"""mission_node's parameters (`<robot>.goals` per robot of `robots`)."""
from __future__ import annotations

from orca_nav.parameters.shared import SHARED_SPECS
from orca_nav.parameters.spec import ParamSpec

NODE_SPECS = [
    ParamSpec('robots', ['robot0'], 'Robots whose goal sequences this node steps',
              read_only=True),
    ParamSpec('global_frame', 'map', 'Frame of odometry poses and goals', read_only=True),
    SHARED_SPECS['tf_layout'],
    SHARED_SPECS['transform_tolerance'],
    ParamSpec('goal_tolerance', 0.25, 'A goal counts as reached within this distance (m)',
              min=0.01, max=100.0, read_only=True),
]


def goals_spec(robot: str) -> ParamSpec:
    return ParamSpec(f'{robot}.goals', [], f'Goals of {robot} in turn: flat x, y, yaw triples '
                     '(m, m, rad) in global_frame', read_only=True, type_hint='double_array')
