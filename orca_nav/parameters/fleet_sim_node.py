"""fleet_sim_node's parameters: the simulation (NODE_SPECS), its TF frames (TF_SPECS), fault
injection (`fault.*`), scripted pedestrians (`pedestrians.*`), unmapped boxes and laser scans
(`boxes`, `scan.*`)."""
from __future__ import annotations

import math

from orca_nav.core.fleet.names import TF_LAYOUTS
from orca_nav.core.sim.pedestrians import PedestrianParams
from orca_nav.parameters.shared import SHARED_SPECS
from orca_nav.parameters.spec import ParamSpec

NODE_SPECS = [
    ParamSpec('robots', ['robot0'], 'Names of the simulated robots (topic namespaces)',
              read_only=True),
    ParamSpec('global_frame', 'map', 'Frame of /map and the root of the TF trees; the odometry '
              "poses' frame with tf_layout none", read_only=True),
    ParamSpec('sim_rate', 50.0, 'Integration steps per second (Hz)', min=1.0, max=1000.0,
              read_only=True),
    ParamSpec('odom_rate', 50.0, 'Odometry messages per robot per second (Hz); at most sim_rate',
              min=0.1, max=1000.0, read_only=True),
    ParamSpec('noise_pos_std', 0.0, 'Std. dev. of the Gaussian noise on odometry positions (m)',
              min=0.0, max=10.0),
    ParamSpec('noise_vel_std', 0.0, 'Std. dev. of Gaussian noise on the executed linear '
              'velocity (m/s)', min=0.0, max=10.0),
    ParamSpec('cmd_latency', 0.0, 'Delay between receiving a cmd_vel and executing it (s)',
              min=0.0, max=10.0),
    ParamSpec('cmd_vel_stamped', False, 'cmd_vel is geometry_msgs/TwistStamped instead of Twist',
              read_only=True),
    ParamSpec('cmd_timeout', 0.25, 'Stop a robot whose last cmd_vel is older than this, in '
              'simulated time (s); 0: no watchdog', min=0.0, max=3600.0),
    ParamSpec('seed', 0, 'Seed of the noise generator', min=0, max=2**31 - 1, read_only=True),
    ParamSpec('diagnostics_rate', 1.0, 'Diagnostics messages per second (Hz)', min=0.1,
              max=100.0, read_only=True),
    ParamSpec('publish_clock', False, 'Publish simulated time on /clock after every '
              'integration step (from start_time, 1/sim_rate a step)', read_only=True),
    ParamSpec('start_time', 0.0, 'Simulated time at start-up, with publish_clock (s)', min=0.0,
              max=1e9, read_only=True),
    ParamSpec('real_time_factor', 1.0, 'With publish_clock: at most this many simulated seconds '
              'per wall second; 0 runs as fast as possible', min=0.0, max=1000.0, read_only=True),
    ParamSpec('lockstep', False, 'With publish_clock: advance 1/odom_rate once every robot '
              'answered the last odometry with a cmd_vel (or lockstep_timeout passed)',
              read_only=True),
    ParamSpec('lockstep_timeout', 1.0, 'Lockstep: wall time an exchange waits for missing '
              'cmd_vel (s)', min=0.001, max=3600.0, read_only=True),
    ParamSpec('lockstep_start_timeout', 30.0, 'Lockstep: wall time the first exchange waits '
              'for the controllers (s)', min=0.0, max=3600.0, read_only=True),
    ParamSpec('lockstep_subscribers', 1, 'Lockstep: the first exchange also waits until every '
              "robot's odometry has this many subscribers", min=1, max=10000, read_only=True),
    SHARED_SPECS['ground_clearance'],
    SHARED_SPECS['map_3d_topic'],
    SHARED_SPECS['map_3d_resolution'],
]

# ---- Fault injection (all off by default; `fault.<name>`, read only; see core.sim.faults.Faults).
# Times are simulated seconds since the robot's first cmd_vel took effect; robots by name.
FAULT_SPECS = [
    ParamSpec('seed', 0, 'Seed of the fault generator (loss, jitter, jump direction), apart '
              'from the noise seed', min=0, max=2**31 - 1, read_only=True),
    ParamSpec('odom_drop_rate', 0.0, 'Probability that one odometry message is lost',
              min=0.0, max=1.0, read_only=True),
    ParamSpec('odom_delay', 0.0, 'Delay added to every odometry message (s); the stamp stays the '
              'measurement time', min=0.0, max=10.0, read_only=True),
    ParamSpec('odom_jitter', 0.0, 'Further uniform 0..jitter delay per odometry message (s)',
              min=0.0, max=10.0, read_only=True),
    ParamSpec('dead_robot', '', 'Robot that stops obeying cmd_vel at dead_time (its drive is '
              'commanded to stop)', read_only=True),
    ParamSpec('dead_time', 0.0, 'When dead_robot dies (s after its first cmd_vel)', min=0.0,
              max=1e6, read_only=True),
    ParamSpec('faulty_robot', '', 'Robot whose linear velocity is scaled by faulty_scale and '
              'turned by faulty_rotation from faulty_time',
              read_only=True),
    ParamSpec('faulty_time', 0.0, 'When faulty_robot goes wrong (s after its first cmd_vel)',
              min=0.0, max=1e6, read_only=True),
    ParamSpec('faulty_scale', 1.0, 'Executed / commanded linear speed of faulty_robot',
              min=0.0, max=10.0, read_only=True),
    ParamSpec('faulty_rotation', 0.0, 'Turn of faulty_robot\'s executed linear velocity (rad, '
              'counter-clockwise)', min=-math.pi, max=math.pi, read_only=True),
    ParamSpec('jump_robot', '', 'Robot whose reported map-frame position jumps at jump_time',
              read_only=True),
    ParamSpec('jump_time', 0.0, 'When the localization jump happens (s after the robot\'s first '
              'cmd_vel)', min=0.0, max=1e6,
              read_only=True),
    ParamSpec('jump_size', 0.0, 'Size of the localization jump (m), in a seeded direction',
              min=0.0, max=100.0, read_only=True),
    ParamSpec('jump_duration', 0.0, 'How long the jumped position is reported (s); 0: for good',
              min=0.0, max=1e6, read_only=True),
]

# ---- TF frames (see orca_nav.ros.sim_tf).
TF_SPECS = [
    ParamSpec('tf_layout', 'none', "Frames of the odometry: 'none' poses in global_frame, no TF; "
              "'namespaced' odom frames, trees on <robot>/tf(_static); 'prefixed' one tree on "
              '/tf(_static), frames <robot>/odom, <robot>/base_link', choices=TF_LAYOUTS,
              read_only=True),
    ParamSpec('odom_drift', 0.0, 'With a TF layout: std. dev. of the odom frame error after '
              '1 m travelled (m, and rad in heading), growing with the root of the distance',
              min=0.0, max=1.0, read_only=True),
    ParamSpec('localization_rate', 1.0, "With a TF layout: map -> odom corrections per second "
              '(Hz) of the simulated localization', min=0.01, max=100.0, read_only=True),
    ParamSpec('localization_jump', 0.0, 'With a TF layout: std. dev. of the error of each '
              'map -> odom correction (m per axis, and rad in heading)', min=0.0, max=10.0),
    ParamSpec('transform_tolerance', 1.0, "With a TF layout: map -> odom is stamped this much "
              "after the odometry it goes out with, as AMCL post-dates it (s)",
              min=0.0, max=60.0, read_only=True),
]

# ---- Scripted pedestrians (`pedestrians.<name>`; see orca_nav.ros.sim_pedestrians).
_DEFAULT = PedestrianParams()
PEDESTRIAN_SPECS = [
    ParamSpec('lines', [], 'Line walkers, 4 numbers each: x0, y0, x1, y1 (m); each walks back '
              'and forth between the two points', type_hint='double_array', read_only=True),
    ParamSpec('walkers', [], 'Random walkers, 2 numbers each: start x, y (m)',
              type_hint='double_array', read_only=True),
    ParamSpec('area', [], 'Random walkers stay inside x0, y0, x1, y1 (m); empty: anywhere off '
              'the map\'s obstacles', type_hint='double_array', length=(0, 4), read_only=True),
    ParamSpec('speed', _DEFAULT.speed, 'Walking speed of every pedestrian (m/s)', min=0.0,
              max=10.0, read_only=True),
    ParamSpec('radius', _DEFAULT.radius, 'Radius of every pedestrian, for collisions (m)',
              min=0.01, max=5.0, read_only=True),
    ParamSpec('turn_std', _DEFAULT.turn_std, 'Random walkers: heading diffusion (rad/sqrt(s))',
              min=0.0, max=10.0, read_only=True),
    ParamSpec('stop_gap', _DEFAULT.stop_gap, 'A pedestrian stops rather than walk to within this '
              'gap of a robot (m); 0: they avoid no one',
              min=0.0, max=5.0, read_only=True),
    ParamSpec('patience', _DEFAULT.patience, 'A pedestrian who has stood this long for a robot '
              'turns back (s)', min=0.0, max=600.0, read_only=True),
    ParamSpec('topic', 'tracked_agents', 'Where the pedestrians are published '
              '(nav_msgs/Odometry per person)', read_only=True),
]

# ---- Unmapped boxes and laser scans (`boxes`, `scan.<name>`; see orca_nav.ros.sim_scans).
BOXES_SPEC = ParamSpec('boxes', [], 'Unmapped boxes, 4 numbers each: x0, y0, x1, y1 (m): solid '
                       'for the robots and the scans, not on /map', type_hint='double_array',
                       read_only=True)
SCAN_SPECS = [
    ParamSpec('rate', 0.0, 'Laser scans per robot per second (Hz); 0: none', min=0.0,
              max=100.0, read_only=True),
    ParamSpec('beams', 180, 'Beams per scan, over a full turn', min=4, max=10000,
              read_only=True),
    ParamSpec('range', 8.0, 'Range of the scans (m)', min=0.1, max=100.0, read_only=True),
    ParamSpec('topic', 'scan', 'Per-robot topic of the scans (/<robot>/<topic>)',
              read_only=True),
]
