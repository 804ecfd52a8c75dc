"""Parameters several nodes declare alike: the per-robot fields (`<robot>.<field>`), the
parameters with one name, one meaning and one default wherever they appear, and `autostart` of
every managed node."""
from __future__ import annotations

from typing import Dict, List

from orca_nav.core.fleet.names import TF_LAYOUTS
from orca_nav.core.fleet.robots import ROBOT_FIELDS
from orca_nav.parameters.spec import ParamSpec

# Per-robot fields shared by every fleet node (`<robot>.<field>`): the robot schema, plus the
# start and goal poses of the fleet file.
ROBOT_SPECS: List[ParamSpec] = [
    ParamSpec(f.name, f.default, f.description, min=f.min, max=f.max, choices=f.choices)
    for f in ROBOT_FIELDS
] + [
    ParamSpec('start', [0.0, 0.0, 0.0], 'Start pose x, y, yaw (m, m, rad) in the global frame',
              length=(3,)),
    ParamSpec('goal', [], 'Goal pose x, y, yaw (m, m, rad); empty for none',
              type_hint='double_array', length=(0, 3)),
    ParamSpec('start_z', 0.0, 'Start altitude of a quadrotor (m); 0 for every ground robot',
              min=-1e4, max=1e4),
    ParamSpec('goal_z', 0.0, 'Goal altitude of a quadrotor (m); 0: keep the altitude it flies at',
              min=-1e4, max=1e4),
]

# The per-robot parameters that place a robot rather than describe it (not RobotSpec fields).
POSE_FIELDS = ('start', 'goal', 'start_z', 'goal_z')

SHARED_SPECS: Dict[str, ParamSpec] = {spec.name: spec for spec in [
    ParamSpec('goal_tolerance', 0.15, 'A robot within this distance of its goal (or of the end of '
              'its trajectory) has arrived (m)', min=0.01, max=100.0),
    ParamSpec('safety_margin', 0.05, 'Clearance added to every robot radius, by the planner '
              'and by ORCA (m)',
              min=0.0, max=10.0),
    ParamSpec('tf_layout', 'none', 'How odometry gets to the global frame: none (it is in '
              'it), namespaced (<robot>/tf trees) or prefixed (one /tf, frames <robot>/odom)',
              choices=TF_LAYOUTS, read_only=True),
    ParamSpec('ground_clearance', 1.0, 'Height of the ground robots\' layer; a drone reaching '
              'below it meets ground robots (m)', min=0.0, max=100.0),
    ParamSpec('map_3d_topic', '/map_3d', 'Topic of the drones\' 3-D map (PointCloud2 of occupied '
              'voxel centres, transient local)', read_only=True),
    ParamSpec('map_3d_resolution', 0.2, 'Voxel size of the 3-D map (m): map_3d_publisher\'s '
              'resolution', min=0.001, max=100.0, read_only=True),
    ParamSpec('transform_tolerance', 1.0, 'Odometry may be this much newer than the newest '
              'global <- odom transform (s)',
              min=0.0, max=60.0, read_only=True),
]}

AUTOSTART = ParamSpec('autostart', True, 'Configure and activate the node at start-up (false: '
                      'wait for a lifecycle manager)', read_only=True)
