"""orca_node's parameters (`deadlock.*` for the deadlock breaker), and the graph's ORCA layouts
(MODES, MAX_SHARDS) its `mode` parameter names. What they become in the core:
`orca_nav.ros.orca_params`."""
from __future__ import annotations

from orca_nav.core.fleet.deadlock import DeadlockParams
from orca_nav.core.fleet.safety import SafetyParams
from orca_nav.parameters.shared import SHARED_SPECS
from orca_nav.parameters.spec import ParamSpec

MODES = ('centralized', 'per_robot')
MAX_SHARDS = 1024      # orca_node processes (shard mode) one fleet may be split over
TRIGGERS = ('odometry', 'timer')
# The graph's modes, and `shard`: one of several nodes that split the fleet (`shard_block`).
NODE_MODES = MODES + ('shard',)

NODE_SPECS = [
    ParamSpec('robots', ['robot0'], 'Names of all robots of the fleet (topic namespaces); '
              'the list order is the deadlock-breaking priority', read_only=True),
    ParamSpec('mode', 'centralized', 'Robots this node commands: centralized all, per_robot '
              'robot_name, shard block shard_index of shard_count; the others are reciprocal '
              'agents', choices=NODE_MODES, read_only=True),
    ParamSpec('robot_name', '', 'per_robot mode: the robot this node commands', read_only=True),
    ParamSpec('shard_index', 0, 'shard mode: which block of robots this node commands (0-based, '
              'contiguous, in list order)', min=0,
              max=MAX_SHARDS - 1, read_only=True),
    ParamSpec('shard_count', 1, 'shard mode: how many nodes split robots between them',
              min=1, max=MAX_SHARDS, read_only=True),
    ParamSpec('global_frame', 'map', 'Frame of odometry poses, goals and the map', read_only=True),
    ParamSpec('batch_robot_topics', True, 'Read the per-robot topics (odometry, goals, plans) on '
              'a thread of their own, their callbacks in batches. Needs an executor that serves '
              'guard conditions (rclpy\'s EventsExecutor does not)', read_only=True),
    SHARED_SPECS['tf_layout'],
    SHARED_SPECS['transform_tolerance'],
    ParamSpec('neighbor_dist', 5.0, 'RVO2 neighborDist: max distance to agents considered (m)',
              min=0.0, max=1000.0),
    ParamSpec('max_neighbors', 10, 'RVO2 maxNeighbors: max number of agents considered',
              min=0, max=1000),
    ParamSpec('time_horizon', 3.0, 'RVO2 timeHorizon: safe time w.r.t. other agents (s)',
              min=0.01, max=1000.0),
    ParamSpec('time_horizon_obst', 2.0, 'RVO2 timeHorizonObst: safe time w.r.t. obstacles (s)',
              min=0.01, max=1000.0),
    ParamSpec('control_rate', 20.0, 'Control cycles per second (Hz)', min=0.5, max=1000.0),
    ParamSpec('cycle_trigger', 'odometry', 'odometry: also start a cycle once every live robot has '
              'new odometry; timer: only on the control_rate timer', choices=TRIGGERS),
    ParamSpec('odom_timeout', 0.5, 'Odometry older than this stops the robot (s)',
              min=0.01, max=3600.0),
    SHARED_SPECS['safety_margin'],
    ParamSpec('command_latency', 0.0, 'Expected cmd_vel latency, added to the NH-ORCA bound '
              'and the safety layer\'s reaction time (s)',
              min=0.0, max=10.0),
    ParamSpec('acceleration_aware', True, 'Holonomic robots: ORCA picks among velocities '
              'reachable in one cycle at max_accel; false: RVO2\'s choice within max_speed'),
    ParamSpec('cmd_vel_stamped', False, 'Publish geometry_msgs/TwistStamped instead of Twist',
              read_only=True),
    ParamSpec('cmd_vel_out', 'cmd_vel', 'Per-robot topic the commands go out on '
              '(/<robot>/<cmd_vel_out>)', read_only=True),
    ParamSpec('cmd_vel_in', '', "Filter mode: per-robot topic of another controller's twists, "
              "taken as preferred velocities (/<robot>/<cmd_vel_in>); empty: off", read_only=True),
    ParamSpec('cmd_vel_in_stamped', False, 'Filter mode: the input twists are '
              'geometry_msgs/TwistStamped instead of Twist', read_only=True),
    ParamSpec('source_timeout', 0.5, 'Filter mode: an input twist older than this stops the '
              'robot (s)', min=0.01, max=60.0),
    ParamSpec('trajectories_only', False, 'Robots hold still until their first '
              '/<robot>/trajectory arrives; false: they head straight for their goal',
              read_only=True),
    ParamSpec('require_map', False, 'Robots hold still until the first /map has become '
              'obstacle polygons', read_only=True),
    SHARED_SPECS['goal_tolerance'],
    SHARED_SPECS['ground_clearance'],
    SHARED_SPECS['map_3d_topic'],
    SHARED_SPECS['map_3d_resolution'],
    ParamSpec('require_map_3d', False, 'Drones hold still until the first 3-D map (map_3d_topic) '
              'has been received', read_only=True),
    ParamSpec('map_inflation', 0.0, 'Margin added around occupied map cells before they become '
              'ORCA polygons (m)', min=0.0, max=100.0),
    ParamSpec('publish_orca_lines', False, "Add each robot's ORCA half-plane lines to "
              '/orca_nav/markers'),
    ParamSpec('marker_rate', 5.0, '/orca_nav/markers messages per second (Hz); 0 disables',
              min=0.0, max=100.0),
    ParamSpec('diagnostics_rate', 1.0, 'Robot status reports on /diagnostics per second (Hz; '
              'over 50 robots sent in parts)', min=0.1,
              max=100.0, read_only=True),
    ParamSpec('uncertainty_gain', 2.0, 'Standard deviations of the odometry pose covariance '
              '(widest x-y axis) added to the radius others avoid',
              min=0.0, max=10.0),
    ParamSpec('max_uncertainty_margin', 0.3, 'Cap of that margin (m); 0 ignores covariance',
              min=0.0, max=10.0),
    ParamSpec('max_extrapolation', 0.25, 'Longest projection of a state from its stamp to the '
              'cycle time (s); 0: none',
              min=0.0, max=10.0),
    ParamSpec('tracked_agents_topic', 'tracked_agents', 'nav_msgs/Odometry of non-cooperative '
              'agents, one message per agent (child_frame_id its id, pose in global_frame); the '
              'fleet avoids them fully. Empty: none', read_only=True),
    ParamSpec('tracked_agent_radius', 0.3, 'Radius of every tracked agent (m)', min=0.0,
              max=50.0),
    ParamSpec('tracked_agent_timeout', 1.0, 'A tracked agent not heard of for this long is '
              'dropped (s)', min=0.01, max=3600.0),
    ParamSpec('scan_topic', '', 'Per-robot sensor_msgs/LaserScan (/<robot>/<scan_topic>, frame '
              'TF-connected to the base); points are obstacles. Empty: no scans', read_only=True),
    ParamSpec('cloud_topic', '', 'Per-robot sensor_msgs/PointCloud2 (/<robot>/<cloud_topic>): '
              'points within cloud_min_z..cloud_max_z are obstacles like a scan. Empty: no clouds',
              read_only=True),
    ParamSpec('cloud_min_z', 0.05, 'Lowest point of a cloud that is an obstacle, above the base '
              'frame (m): the floor is not', min=-10.0, max=10.0),
    ParamSpec('cloud_max_z', 2.0, 'Highest point of a cloud that is an obstacle, above the base '
              'frame (m): what the robot passes under is not', min=-10.0, max=100.0),
    ParamSpec('sensor_persistence', 1.0, 'How long sensor points stay obstacles (s)', min=0.01,
              max=60.0),
    ParamSpec('sensor_max_points', 180, 'Sensor points kept per robot (thinned evenly; bounds '
              'the cost per cycle)', min=1, max=100000),
]

_DEADLOCK = DeadlockParams()
DEADLOCK_SPECS = [
    ParamSpec('enabled', True, 'Break symmetric stalls (yielding, right-hand detours)'),
    ParamSpec('stall_time', _DEADLOCK.stall_time, 'Window over which progress is judged (s)',
              min=0.1, max=600.0),
    ParamSpec('min_progress', _DEADLOCK.min_progress, 'Required fraction of the progress '
              'max_speed allows within stall_time', min=0.01, max=0.99),
    ParamSpec('recovery_time', _DEADLOCK.recovery_time, 'How long a stalled robot yields '
              'or detours (s)', min=0.1, max=600.0),
    ParamSpec('yield_factor', _DEADLOCK.yield_factor, 'A stalled robot yields to a '
              'higher-priority robot closer than this many times their summed radii', min=1.0,
              max=100.0),
    ParamSpec('give_way_speed', _DEADLOCK.give_way_speed, 'Speed a yielding robot backs away '
              'at, as a fraction of its max_speed', min=0.0, max=1.0),
    ParamSpec('detour_angle', _DEADLOCK.detour_angle, 'Clockwise rotation of a detouring '
              "robot's preferred velocity (rad)", min=0.01, max=1.57),
    ParamSpec('detour_spread', _DEADLOCK.detour_spread, 'Range of the per-robot offset '
              'subtracted from detour_angle (rad)', min=0.0, max=1.57),
]

_SAFETY = SafetyParams()
SAFETY_SPECS = [
    ParamSpec('enabled', True, 'The safety layer: a command is scaled down along its arc '
              'unless braking after it keeps the robot clear of obstacles, people and robots'),
    ParamSpec('person_max_speed', _SAFETY.person_max_speed, 'Assumed top speed of '
              'non-cooperative agents, whose reach the robot keeps out of (m/s)', min=0.0,
              max=20.0),
    ParamSpec('person_height', _SAFETY.person_height, 'Height of non-cooperative agents: a '
              'drone flying higher passes over them (m)', min=0.0, max=20.0),
    ParamSpec('static_margin', _SAFETY.static_margin, 'Room kept from the map, voxels and sensed '
              'edges when braking (m)', min=0.0, max=5.0),
    ParamSpec('robot_margin', _SAFETY.robot_margin, 'Room kept between two fleet robots when '
              'both brake (m)', min=0.0, max=5.0),
    ParamSpec('person_margin', _SAFETY.person_margin, "Room kept from a person's reach (m)",
              min=0.0, max=5.0),
    ParamSpec('rest_speed', _SAFETY.rest_speed, 'At or below this speed a robot is at rest '
              '(m/s)', min=0.0, max=1.0),
]
