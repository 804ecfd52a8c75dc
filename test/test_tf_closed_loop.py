"""The whole chain on a robot stack's frames, over real DDS: the simulator publishes odometry in
drifting odom frames, odom -> base_link and a localization's map -> odom corrections on TF (both
layouts); orca_node and mission_node put the poses in map through TF. Four diff-drive robots
cross, one robot's localization is off by a metre for 2 s and then corrected (the pose jumps by
a metre at once): no contact, and every robot reaches its last goal."""

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytest.importorskip('tf2_msgs.msg')
from orca_nav.bringup.fleet_file import load_fleet_config  # noqa: E402
from orca_nav.bringup.graph import describe_graph  # noqa: E402
from orca_nav.bringup.runner import run_graph  # noqa: E402

from ros_harness import contact_reports  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.slow]
STARTS = [(-3.0, 0.0, 0.0), (3.0, 0.2, 3.14159), (0.0, -3.0, 1.5708), (0.2, 3.0, -1.5708)]


def fleet(layout):
    return load_fleet_config({
        'name': f'tf_{layout}', 'tf_layout': layout,
        'defaults': {'kinematics': 'diff_drive', 'radius': 0.25, 'max_speed': 0.8,
                     'max_accel': 1.5, 'max_yaw_rate': 2.0},
        'robots': [{'name': f'robot{i}', 'start': list(s),
                    'goals': [[-s[0], -s[1], s[2]], [s[0] * 0.5, s[1] * 0.5, s[2]]]}
                   for i, s in enumerate(STARTS)],
        'fleet_sim_node': {'odom_drift': 0.02, 'localization_rate': 2.0,
                           'localization_jump': 0.02, 'fault.jump_robot': 'robot1',
                           'fault.jump_time': 3.0, 'fault.jump_size': 1.0,
                           'fault.jump_duration': 2.0},
        'orca_node': {'safety_margin': 0.1},
        'demo': {'goal_tolerance': 0.3}})


@pytest.mark.parametrize('layout', ['namespaced', 'prefixed'])
def test_a_fleet_on_odom_frames_and_tf_arrives_without_contact(layout):
    cfg = fleet(layout)
    specs = describe_graph(cfg, sim_overrides={'lockstep': True, 'real_time_factor': 0.0},
                           observers=0)
    with run_graph(specs) as graph:
        sim = graph.nodes['/fleet_sim']
        contacts = contact_reports(graph)
        goals = np.array([r.goals[-1][:2] for r in cfg.robots])

        def arrived():
            truth = sim.sim.poses[:, :2].copy()
            return bool(np.all(np.hypot(*(truth - goals).T) < 0.35))
        assert graph.wait_for(arrived, timeout=240.0), sim.sim.poses
        assert graph.error is None
        assert sim.sim.time > 5.0        # the jump (3 s to 5 s after the first command) happened
    assert contacts == []
