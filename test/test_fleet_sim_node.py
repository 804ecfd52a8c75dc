"""fleet_sim_node and map_publisher over real rclpy / DDS (no timing asserts: counts are loose)."""
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import Twist, TwistStamped  # noqa: E402
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter, parameter_value_to_python  # noqa: E402
from rclpy.parameter_client import AsyncParameterClient  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from orca_nav.core.grid import OccupancyGrid  # noqa: E402
from orca_nav.ros.convert import latched_qos, odom_to_state  # noqa: E402
from orca_nav.ros.fleet_sim_node import FleetSimNode  # noqa: E402
from orca_nav.ros.map_publisher import MapPublisher  # noqa: E402
from ros_harness import RosHarness, private_domain, wait_for  # noqa: E402

pytestmark = pytest.mark.ros
REPO = Path(__file__).resolve().parents[1]


class Ros(RosHarness):
    """The harness plus a helper that starts fleet_sim_node."""

    def sim(self, robots, extra=(), **robot_fields):
        overrides = [Parameter('robots', value=list(robots))] + list(extra)
        for key, values in robot_fields.items():
            for robot, value in zip(robots, values):
                overrides.append(Parameter(f'{robot}.{key}', value=value))
        return self.add(FleetSimNode(context=self.context, parameter_overrides=overrides))

    def send(self, topic, msg, times):
        """Publishes `msg` on `topic` `times` times, 50 ms apart; returns the publisher."""
        pub = self.probe.create_publisher(type(msg), topic, 10)
        for _ in range(times):
            pub.publish(msg)
            time.sleep(0.05)
        return pub


def forward(vx, vy=0.0):
    cmd = Twist()
    cmd.linear.x, cmd.linear.y = vx, vy
    return cmd


@pytest.fixture
def ros():
    env = Ros()
    yield env
    env.shutdown()


def test_publishes_odometry_for_every_robot_at_about_the_rate(ros):
    robots = ['robot0', 'robot1', 'robot2']
    boxes = {r: ros.collect(Odometry, f'/{r}/odom') for r in robots}
    ros.sim(robots, extra=[Parameter('odom_rate', value=20.0)],
            start=[[0.0, 0.0, 0.0], [1.0, 2.0, 0.5], [-3.0, 1.0, -1.0]])
    assert wait_for(lambda: all(boxes[r] for r in robots))
    t0 = {r: len(boxes[r]) for r in robots}
    time.sleep(2.0)
    for i, r in enumerate(robots):
        got = len(boxes[r]) - t0[r]
        assert 8 <= got <= 60, f'{r}: {got} odometry messages in 2 s at 20 Hz'
        msg = boxes[r][-1]
        assert msg.header.frame_id == 'map' and msg.child_frame_id == f'{r}/base_link'
    state = odom_to_state(boxes['robot1'][-1])
    assert np.allclose(state.position[:2], [1.0, 2.0]) and state.yaw == pytest.approx(0.5)


def test_integrates_cmd_vel_and_reports_body_frame_twist(ros):
    odom = ros.collect(Odometry, '/robot0/odom')
    ros.sim(['robot0'], kinematics=['diff_drive'], start=[[1.0, 1.0, math.pi / 2]],
            max_accel=[10.0])
    # vy: a diff-drive robot cannot move sideways, so it is dropped.
    ros.send('/robot0/cmd_vel', forward(0.5, 0.7), times=30)
    assert wait_for(lambda: odom)
    last = odom[-1]
    state = odom_to_state(last)
    # Heading +y: the robot moved along +y; the twist is reported in base_link (REP-105).
    assert last.twist.twist.linear.x == pytest.approx(0.5)
    assert last.twist.twist.linear.y == pytest.approx(0.0)
    assert state.velocity[:2] == pytest.approx([0.0, 0.5], abs=1e-9)
    assert abs(state.position[0] - 1.0) < 1e-6
    assert 1.0 + 0.3 < state.position[1] < 1.0 + 1.5


def test_stale_cmd_vel_stops_the_robot_and_nan_is_ignored(ros, capfd):
    odom = ros.collect(Odometry, '/robot0/odom')
    node = ros.sim(['robot0'], extra=[Parameter('cmd_timeout', value=0.3)], max_accel=[50.0])
    pub = ros.send('/robot0/cmd_vel', forward(1.0), times=5)
    assert wait_for(lambda: odom and odom[-1].twist.twist.linear.x > 0.9)
    bad = Twist()
    bad.linear.x = float('nan')
    pub.publish(bad)
    # The watchdog stops it 0.3 s after the last good command; NaN is not a command.
    assert wait_for(lambda: odom[-1].twist.twist.linear.x == 0.0, timeout=5.0)
    x = odom[-1].pose.pose.position.x
    time.sleep(0.3)
    assert odom[-1].pose.pose.position.x == x
    assert np.all(np.isfinite(node.sim.poses))
    # Four bad commands, warnings throttled to one per 2 s naming the robot.
    for _ in range(3):
        pub.publish(bad)
    time.sleep(0.5)
    err = capfd.readouterr().err
    assert 1 <= err.count('robot0: ignoring cmd_vel with non-finite values') <= 2, err


def test_collision_reported_once_on_topic_and_in_diagnostics(ros):
    events = ros.collect(String, '/fleet_sim/collisions', qos=50)
    diags = ros.collect(DiagnosticArray, '/diagnostics', qos=50)
    ros.sim(['a', 'b', 'c'], start=[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [5.0, 5.0, 0.0]],
            radius=[0.3, 0.3, 0.3], max_accel=[20.0, 20.0, 20.0],
            extra=[Parameter('cmd_timeout', value=0.0)])
    ros.send('/a/cmd_vel', forward(1.0), times=3)
    # a drives into b and keeps pushing (b does not move): one event, then ongoing contact.
    assert wait_for(lambda: events)
    time.sleep(0.5)
    records = [json.loads(m.data) for m in events]
    assert len(records) == 1
    rec = records[0]
    assert rec['kind'] == 'robot_robot' and rec['robots'] == ['a', 'b']
    assert 0.3 <= rec['position'][0] <= 1.0 and set(rec) >= {'time', 'kind', 'robots', 'position'}

    def colliding_status():
        for arr in diags:
            levels = {s.hardware_id: s.level for s in arr.status}
            if levels.get('a') == DiagnosticStatus.ERROR:
                return levels
        return None
    assert wait_for(colliding_status)
    levels = colliding_status()
    assert levels['b'] == DiagnosticStatus.ERROR and levels['c'] == DiagnosticStatus.OK


def test_robot_map_collision_with_a_latched_map(ros, tmp_path):
    occ = np.zeros((40, 40), dtype=bool)
    occ[:, 30:] = True                     # wall from x = 3 m
    OccupancyGrid(occ, 0.1, (0.0, 0.0)).save_map_yaml(tmp_path / 'wall')
    ros.add(MapPublisher(context=ros.context, parameter_overrides=[
        Parameter('yaml_filename', value=str(tmp_path / 'wall.yaml'))]))
    events = ros.collect(String, '/fleet_sim/collisions', qos=50)
    node = ros.sim(['robot0'], start=[[2.0, 2.0, 0.0]], max_accel=[20.0],
                   extra=[Parameter('cmd_timeout', value=0.0)])
    assert wait_for(lambda: node.sim.grid is not None)
    ros.send('/robot0/cmd_vel', forward(1.0), times=3)
    assert wait_for(lambda: events)
    rec = json.loads(events[0].data)
    assert rec['kind'] == 'robot_map' and rec['robots'] == ['robot0']
    assert rec['position'][0] == pytest.approx(2.7, abs=0.1)


def test_stamped_cmd_vel(ros):
    odom = ros.collect(Odometry, '/r/odom')
    ros.sim(['r'], extra=[Parameter('cmd_vel_stamped', value=True)], max_accel=[20.0])
    cmd = TwistStamped()
    cmd.header.frame_id = 'r/base_link'
    cmd.twist.linear.y = 0.5
    ros.send('/r/cmd_vel', cmd, times=10)
    assert wait_for(lambda: odom and odom[-1].pose.pose.position.y > 0.05)


def test_bad_parameters_rejected(ros):
    with pytest.raises(ValueError, match=r'robot0\.max_speed'):
        ros.sim(['robot0'], max_speed=[-1.0])
    with pytest.raises(ValueError, match='robots'):
        ros.sim([])
    with pytest.raises(ValueError, match='odom_rate'):
        ros.sim(['robot0'], extra=[Parameter('odom_rate', value=100.0)])
    node = ros.sim(['robot0'])
    result = node.set_parameters([Parameter('noise_pos_std', value=-0.5)])[0]
    assert not result.successful and 'noise_pos_std' in result.reason
    result = node.set_parameters([Parameter('robot0.kinematics', value='tank')])[0]
    assert not result.successful and 'robot0.kinematics' in result.reason
    result = node.set_parameters([Parameter('robot0.max_speed', value=0.25)])[0]
    assert result.successful and node.sim.limits.max_speed[0] == 0.25


def test_map_publisher_latched_for_a_late_subscriber(ros):
    ros.add(MapPublisher(context=ros.context, parameter_overrides=[
        Parameter('yaml_filename', value=str(REPO / 'config' / 'maps' / 'corridor.yaml'))]))
    time.sleep(0.5)
    maps = ros.collect(OccupancyGridMsg, '/map', qos=latched_qos())
    assert wait_for(lambda: maps)
    msg = maps[0]
    assert msg.header.frame_id == 'map' and msg.info.resolution == pytest.approx(0.1)
    assert (msg.info.width, msg.info.height) == (280, 101)
    expected = OccupancyGrid.from_map_yaml(REPO / 'config' / 'maps' / 'corridor.yaml')
    got = np.frombuffer(bytes(msg.data), dtype=np.int8).reshape(101, 280) == 100
    assert np.array_equal(got, expected.occupied)


def test_map_publisher_missing_or_malformed_file(ros, tmp_path):
    missing = tmp_path / 'nope.yaml'
    with pytest.raises(ValueError, match='nope.yaml'):
        MapPublisher(context=ros.context,
                     parameter_overrides=[Parameter('yaml_filename', value=str(missing))])
    broken = tmp_path / 'broken.yaml'
    broken.write_text('image: x.pgm\nresolution: 0.1\n')
    with pytest.raises(ValueError, match=r"broken\.yaml.*origin"):
        MapPublisher(context=ros.context,
                     parameter_overrides=[Parameter('yaml_filename', value=str(broken))])


def _run_module(module, *ros_args, timeout=90):
    return subprocess.run([sys.executable, '-m', module, '--ros-args', *ros_args],
                          capture_output=True, text=True, timeout=timeout, env=dict(os.environ))


@pytest.mark.slow
def test_map_publisher_main_exits_nonzero_naming_the_path(tmp_path):
    missing = tmp_path / 'missing_map.yaml'
    proc = _run_module('orca_nav.ros.map_publisher', '-p', f'yaml_filename:={missing}')
    assert proc.returncode == 1
    assert 'missing_map.yaml' in proc.stderr + proc.stdout


@pytest.mark.slow
def test_params_file_start_loads_the_parameters():
    """`python -m orca_nav.ros.fleet_sim_node --ros-args --params-file config/fleet_sim.yaml`."""
    # A domain of its own: the subprocess's odometry must not reach later tests' fleets.
    domain = private_domain()
    ros = Ros(domain_id=domain)
    odom = ros.collect(Odometry, '/robot1/odom')
    proc = subprocess.Popen([sys.executable, '-m', 'orca_nav.ros.fleet_sim_node', '--ros-args',
                             '--params-file', str(REPO / 'config' / 'fleet_sim.yaml')],
                            env={**os.environ, 'ROS_DOMAIN_ID': str(domain)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # Generous limits: a loaded 2-core machine can take many seconds to start a process.
        client = AsyncParameterClient(ros.probe, 'fleet_sim')
        assert client.wait_for_services(timeout_sec=60.0), 'fleet_sim parameter services'
        names = ['robots', 'robot0.kinematics', 'robot0.max_speed', 'robot1.start',
                 'cmd_timeout']
        # A request sent right after discovery can be lost before the reply path matches: retry.
        for _ in range(20):
            future = client.get_parameters(names)
            if wait_for(future.done, timeout=3.0):
                break
        assert future.done(), 'no reply from fleet_sim/get_parameters'
        values = [parameter_value_to_python(v) for v in future.result().values]
        assert list(values[0]) == ['robot0', 'robot1']
        assert values[1] == 'diff_drive' and values[2] == pytest.approx(0.8)
        assert list(values[3]) == pytest.approx([2.0, 0.0, 3.14159])
        assert values[4] == pytest.approx(0.5)
        # And the behaviour follows: robot1 is where the file starts it.
        assert wait_for(lambda: odom, timeout=30.0)
        assert odom[-1].pose.pose.position.x == pytest.approx(2.0)
    finally:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        print(out)      # shown by pytest when the test fails
        ros.shutdown()
