"""fleet_sim_node and map_publisher over real rclpy / DDS.

Every wait is a condition: a message seen, a simulated time reached, a node state. Motion is
driven in lockstep (the test answers each odometry with a cmd_vel, as a controller does) or on
the test's own /clock, so positions and stamps are exact whatever the machine's load.
"""
import json
import math
import os
import subprocess
import sys
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
from rosgraph_msgs.msg import Clock as ClockMsg  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from orca_nav.core.fleet.kinematics import RobotLimits  # noqa: E402
from orca_nav.core.grid import OccupancyGrid  # noqa: E402
from orca_nav.core.sim.faults import Faults  # noqa: E402
from orca_nav.core.sim.fleet_sim import FleetSim  # noqa: E402
from orca_nav.ros.convert import latched_qos, odom_to_state, stamp_to_seconds  # noqa: E402
from orca_nav.ros.fleet_sim_node import FleetSimNode  # noqa: E402
from orca_nav.ros.map_publisher import MapPublisher  # noqa: E402

from ros_harness import RosHarness, SimClock, harness_fixture, private_domain, sim_time  # noqa: E402

pytestmark = pytest.mark.ros
REPO = Path(__file__).resolve().parents[1]
PERIOD = 0.02       # 1 / odom_rate = 1 / sim_rate with the defaults: one step per exchange


class Ros(RosHarness):
    """The harness plus a helper that starts fleet_sim_node."""

    def sim(self, robots, extra=(), **robot_fields):
        overrides = [Parameter('robots', value=list(robots))] + list(extra)
        for key, values in robot_fields.items():
            for robot, value in zip(robots, values):
                overrides.append(Parameter(f'{robot}.{key}', value=value))
        return self.add(FleetSimNode(context=self.context, parameter_overrides=overrides))


class Controller:
    """The test as the robots' controller: answers the k-th odometry of `robot` with
    `policy(robot, k)` (a cmd_vel message, a list of them, or None for no answer) and keeps the
    odometry it got.

    Created after the node: its cmd_vel publishers wait for the node's subscriptions, so an
    answer is never lost to discovery (the node opens the first exchange once it sees both)."""

    def __init__(self, ros, robots, policy, cmd_type=Twist):
        self.odom = {robot: [] for robot in robots}
        self.policy = policy
        self.pubs = {robot: ros.publisher(cmd_type, f'/{robot}/cmd_vel') for robot in robots}
        for robot in robots:
            ros.probe.create_subscription(Odometry, f'/{robot}/odom',
                                          lambda msg, r=robot: self._on_odom(r, msg), 10)

    def _on_odom(self, robot, msg):
        self.odom[robot].append(msg)
        answer = self.policy(robot, len(self.odom[robot]) - 1)
        for cmd in answer if isinstance(answer, list) else [answer] if answer else []:
            self.pubs[robot].publish(cmd)


def forward(vx, vy=0.0):
    cmd = Twist()
    cmd.linear.x, cmd.linear.y = float(vx), float(vy)
    return cmd


def lockstep(timeout=30.0, start_timeout=30.0, rtf=0.0):
    return [Parameter('publish_clock', value=True), Parameter('lockstep', value=True),
            Parameter('real_time_factor', value=float(rtf)),
            Parameter('lockstep_timeout', value=float(timeout)),
            Parameter('lockstep_start_timeout', value=float(start_timeout))]


def stamp_s(msg):
    return stamp_to_seconds(msg.header.stamp)


def clock_times(clocks):
    return [stamp_to_seconds(c.clock) for c in clocks]


def rounded(times):
    """Times as a set comparable across float sums (k * 0.02 against parsed stamps)."""
    return set(np.round(times, 9).tolist())


ros = harness_fixture(Ros)


@pytest.mark.parametrize('rtf', [0.0, 1.0], ids=['as_fast_as_possible', 'real_time'])
def test_lockstep_integrates_cmd_vel_and_reports_body_frame_twist(ros, rtf):
    clocks = ros.collect(ClockMsg, '/clock')
    start = [1.0, 1.0, math.pi / 2]
    ros.sim(['robot0'], extra=lockstep(rtf=rtf), kinematics=['diff_drive'], start=[start],
            max_accel=[10.0])
    # vy: a diff-drive robot cannot move sideways, so it is dropped.
    command = forward(0.5, 0.7)
    answers = 30
    ctl = Controller(ros, ['robot0'], lambda robot, k: command if k < answers else None)
    odom = ctl.odom['robot0']
    assert ros.wait_for(lambda: len(odom) > answers)

    # The same commands, one per exchange, in the core: the node's odometry is exactly that run.
    ref = FleetSim(RobotLimits.create(['diff_drive'], max_speed=1.0, max_accel=10.0,
                                      max_yaw_rate=2.0, min_turning_radius=1.0),
                   0.3, np.array([start]))
    for k, msg in enumerate(odom[:answers + 1]):
        assert stamp_s(msg) == pytest.approx(k * PERIOD, abs=1e-9)
        assert msg.header.frame_id == 'map' and msg.child_frame_id == 'robot0/base_link'
        state = odom_to_state(msg)
        assert np.allclose(state.position[:2], ref.poses[0, :2], atol=1e-12), k
        ref.set_commands([[0.5, 0.7, 0.0]])
        ref.advance(PERIOD, PERIOD)
    # Heading +y: the robot moved along +y; the twist is reported in base_link (REP-105).
    last = odom[answers]
    state = odom_to_state(last)
    assert last.twist.twist.linear.x == pytest.approx(0.5)
    assert last.twist.twist.linear.y == 0.0
    assert state.velocity[:2] == pytest.approx([0.0, 0.5], abs=1e-9)
    assert state.position[0] == pytest.approx(1.0, abs=1e-9)
    assert state.position[1] == pytest.approx(1.0 + 0.004 + 0.008 + 0.01 * (answers - 2))
    # /clock went out for every exchange, with the odometry stamps.
    assert ros.wait_for(lambda: rounded([answers * PERIOD]) <= rounded(clock_times(clocks)))
    assert rounded([stamp_s(m) for m in odom]) <= rounded(clock_times(clocks))


def test_publish_clock_free_running_stamps_odometry_with_the_published_clock(ros):
    robots = ['robot0', 'robot1', 'robot2']
    starts = [[0.0, 0.0, 0.0], [1.0, 2.0, 0.5], [-3.0, 1.0, -1.0]]
    clocks = ros.collect(ClockMsg, '/clock')
    boxes = {r: ros.collect(Odometry, f'/{r}/odom') for r in robots}
    ros.sim(robots, extra=[Parameter('publish_clock', value=True),
                           Parameter('odom_rate', value=25.0)], start=starts)
    assert ros.wait_for(lambda: all(len(boxes[r]) >= 5 for r in robots))
    last = max(stamp_s(boxes[r][-1]) for r in robots)
    assert ros.wait_for(lambda: clock_times(clocks) and clock_times(clocks)[-1] >= last)
    times = clock_times(clocks)
    steps = np.round(np.asarray(times) / 0.02, 6)
    assert np.all(steps == np.round(steps)) and np.all(np.diff(times) > 0.0)
    for robot, start in zip(robots, starts):
        stamps = [stamp_s(m) for m in boxes[robot]]
        # Odometry every 2 steps of 1/50 s: at multiples of 1/25 s, each a published time.
        assert rounded(stamps) <= rounded(times)
        assert np.allclose(np.diff(stamps), 0.04)
        msg = boxes[robot][-1]
        assert msg.header.frame_id == 'map' and msg.child_frame_id == f'{robot}/base_link'
        state = odom_to_state(msg)
        assert np.allclose(state.position[:2], start[:2]) and state.yaw == pytest.approx(start[2])


def test_publish_clock_as_fast_as_possible(ros):
    clocks = ros.collect(ClockMsg, '/clock')
    odom = ros.collect(Odometry, '/robot0/odom')
    ros.sim(['robot0'], extra=[Parameter('publish_clock', value=True),
                               Parameter('real_time_factor', value=0.0),
                               Parameter('start_time', value=1000.0),
                               Parameter('odom_rate', value=25.0)])
    assert ros.wait_for(lambda: clocks and clock_times(clocks)[-1] >= 1002.0 and odom)
    ticks = (np.asarray([stamp_s(m) for m in odom]) - 1000.0) / 0.04
    assert np.allclose(ticks, np.round(ticks), atol=1e-6) and ticks.min() >= 0.0


def test_without_publish_clock_follows_the_node_clock(ros):
    """use_sim_time with an external /clock (here the test's, as Gazebo's would be)."""
    odom = ros.collect(Odometry, '/robot0/odom')
    ros.sim(['robot0'], extra=[sim_time(), Parameter('cmd_timeout', value=0.0)],
            max_accel=[100.0])
    clock = SimClock(ros, start_s=100.0)

    def tick():
        """Advances the clock one step and waits for the odometry of that time."""
        stamp = clock.advance(PERIOD)
        assert ros.wait_for(lambda: odom and odom[-1].header.stamp == stamp)
        return odom[-1]

    tick()
    pub = ros.publisher(Twist, '/robot0/cmd_vel')
    pub.publish(forward(1.0))
    for _ in range(200):            # until the command arrived (a bound, not a delay)
        msg = tick()
        if msg.twist.twist.linear.x > 0.0:
            break
    # From here each step integrates exactly the simulated time that passed: 0.02 s at 1 m/s.
    for _ in range(5):
        x = msg.pose.pose.position.x
        msg = tick()
        assert msg.twist.twist.linear.x == 1.0
        assert msg.pose.pose.position.x - x == pytest.approx(PERIOD, abs=1e-9)


def test_lockstep_waits_for_every_robot_then_advances(ros):
    clocks = ros.collect(ClockMsg, '/clock')
    node = ros.sim(['a', 'b'], extra=lockstep(), start=[[0.0, 0.0, 0.0], [5.0, 0.0, 0.0]])
    ctl = Controller(ros, ['a', 'b'], lambda robot, k: forward(0.5) if robot == 'a' else None)
    for k in range(1, 4):
        # a answered exchange k, b did not: the simulation holds.
        assert ros.wait_for(lambda: node.lockstep.exchange == k and node.lockstep.missing == [1])
        assert len(ctl.odom['a']) == k and node.sim.time == pytest.approx((k - 1) * PERIOD)
        assert max(clock_times(clocks), default=0.0) <= (k - 1) * PERIOD + 1e-9
        ctl.pubs['b'].publish(forward(0.0))
        assert ros.wait_for(lambda: len(ctl.odom['a']) == k + 1)
        assert stamp_s(ctl.odom['a'][k]) == pytest.approx(k * PERIOD, abs=1e-9)


def test_lockstep_start_up_waits_for_the_controllers(ros):
    clocks = ros.collect(ClockMsg, '/clock')
    odom = ros.collect(Odometry, '/robot0/odom')
    node = ros.sim(['robot0'], extra=lockstep(start_timeout=60.0))
    # The start time is on /clock (repeated for late subscribers) but with no cmd_vel publisher
    # the first exchange does not open: no odometry, nothing moves.
    assert ros.wait_for(lambda: clocks)
    assert clock_times(clocks)[0] == 0.0 and node.lockstep.exchange == 0 and not odom
    ctl = Controller(ros, ['robot0'], lambda robot, k: forward(0.0))
    assert ros.wait_for(lambda: len(ctl.odom['robot0']) >= 3)
    assert [stamp_s(m) for m in ctl.odom['robot0'][:3]] == pytest.approx([0.0, PERIOD,
                                                                           2 * PERIOD])


def test_lockstep_sends_the_first_odometry_again_to_a_controller_that_lost_it(ros):
    """A controller whose subscription matched late loses the first odometry (played here by
    one that ignores it): the simulator sends it again instead of waiting out the start-up."""
    node = ros.sim(['robot0', 'robot1'], extra=lockstep(start_timeout=300.0),
                   start=[[0.0, 0.0, 0.0], [3.0, 0.0, 0.0]])
    ctl = Controller(ros, ['robot0', 'robot1'],
                     lambda robot, k: None if robot == 'robot1' and k == 0 else forward(0.0))
    odom = ctl.odom['robot1']
    assert ros.wait_for(lambda: odom and stamp_s(odom[-1]) > 0.0)
    # The first odometry again (until answered: on a slow machine more than once), then the
    # next; later ones may have come in meanwhile.
    stamps = [stamp_s(m) for m in odom]
    first_new = next(k for k, t in enumerate(stamps) if t > 0.0)
    assert first_new >= 2 and set(stamps[:first_new]) == {0.0}
    assert stamps[first_new] == pytest.approx(PERIOD)
    assert [stamp_s(m) for m in ctl.odom['robot0'][:2]] == pytest.approx([0.0, PERIOD])
    assert node.lockstep.exchange >= 2


def test_lockstep_times_out_and_advances_naming_the_silent_robot(ros, capfd):
    node = ros.sim(['robot0', 'robot1'], extra=lockstep(timeout=0.5),
                   start=[[0.0, 0.0, 0.0], [3.0, 0.0, 0.0]])
    # robot1 answers the first odometry only.
    ctl = Controller(ros, ['robot0', 'robot1'],
                     lambda robot, k: forward(1.0) if robot == 'robot0' or k == 0 else None)
    odom = ctl.odom['robot1']
    assert ros.wait_for(lambda: len(odom) >= 4)
    assert [stamp_s(m) for m in odom[:4]] == pytest.approx([k * PERIOD for k in range(4)])
    assert ctl.odom['robot0'][3].pose.pose.position.x > ctl.odom['robot0'][2].pose.pose.position.x
    assert odom[3].pose.pose.position.x > odom[2].pose.pose.position.x    # its last command
    assert node.lockstep.exchange >= 4
    err = capfd.readouterr().err
    assert 'lockstep: no cmd_vel from robot1 at t = 0.020 s before the timeout' in err, err


def test_watchdog_stops_a_robot_in_simulated_time(ros):
    # The silent exchanges end by the lockstep timeout: long enough that no answer of the first
    # three, however slow the machine, is counted for a later exchange.
    ros.sim(['robot0'], extra=lockstep(timeout=0.5) + [Parameter('cmd_timeout', value=0.1)],
            max_accel=[100.0])
    ctl = Controller(ros, ['robot0'], lambda robot, k: forward(1.0) if k < 3 else None)
    odom = ctl.odom['robot0']
    assert ros.wait_for(lambda: len(odom) > 12)
    # The last command is the answer to odometry 2 (t = 0.04); steps starting up to 0.04 + 0.1
    # move 0.02 each, the one at 0.16 is commanded to stop. On a loaded machine that answer can
    # miss its exchange's timeout and count for the next one (t = 0.06): the robot then stops a
    # step later, still cmd_timeout after the last command the simulator took.
    x = [m.pose.pose.position.x for m in odom[:13]]
    vx = [m.twist.twist.linear.x for m in odom[:13]]
    moving = 9 if vx[9] == 1.0 else 8
    assert x == pytest.approx([PERIOD * min(k, moving) for k in range(13)], abs=1e-9)
    assert vx == [0.0] + [1.0] * moving + [0.0] * (12 - moving)


def test_non_finite_cmd_vel_is_rejected_with_a_warning(ros, capfd):
    # use_sim_time too: the node's clock follows its own /clock, so its warnings are throttled
    # in simulated time and all four rejections fall in one throttling period. The timeout is
    # also the time every later answer has (wall clock): 1 s, not less, for a loaded machine.
    node = ros.sim(['robot0'], extra=lockstep(timeout=1.0) + [sim_time()], max_accel=[100.0])
    bad = Twist()
    bad.linear.x = float('nan')
    # Odometry 1 is answered with NaN only: not an answer, exchange 2 times out and the robot
    # keeps its last command.
    speeds = {0: forward(0.5), 1: [bad] * 4}
    ctl = Controller(ros, ['robot0'], lambda robot, k: speeds.get(k, forward(0.25)))
    odom = ctl.odom['robot0']
    assert ros.wait_for(lambda: len(odom) >= 4)
    assert [m.twist.twist.linear.x for m in odom[:4]] == [0.0, 0.5, 0.5, 0.25]
    assert np.all(np.isfinite(node.sim.poses))
    err = capfd.readouterr().err
    assert err.count('robot0: ignoring cmd_vel with non-finite values '
                     '(linear.x, linear.y, angular.z, linear.z) = (nan, 0, 0, 0)') == 1, err
    assert 'lockstep: no cmd_vel from robot0 at t = 0.020 s' in err, err


def test_collision_reported_once_on_topic_and_in_diagnostics(ros):
    events = ros.collect(String, '/fleet_sim/collisions', qos=50)
    diags = ros.collect(DiagnosticArray, '/diagnostics', qos=50)
    ros.sim(['a', 'b', 'c'], start=[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [5.0, 5.0, 0.0]],
            radius=[0.3, 0.3, 0.3], max_accel=[20.0, 20.0, 20.0], extra=lockstep())
    # a drives into b and keeps pushing (b does not move): one event, then ongoing contact.
    ctl = Controller(ros, ['a', 'b', 'c'],
                     lambda robot, k: forward(1.0 if robot == 'a' else 0.0))
    assert ros.wait_for(lambda: events)
    seen = len(ctl.odom['a'])
    assert ros.wait_for(lambda: len(ctl.odom['a']) >= seen + 20)
    records = [json.loads(m.data) for m in events]
    assert len(records) == 1
    rec = records[0]
    assert rec['kind'] == 'robot_robot' and rec['robots'] == ['a', 'b']
    assert 0.3 <= rec['position'][0] <= 1.0 and set(rec) >= {'time', 'kind', 'robots', 'position'}
    assert rec['time'] == pytest.approx(rec['sim_time'])    # start_time 0, one step an exchange

    def colliding_status():
        for arr in diags:
            levels = {s.hardware_id: s.level for s in arr.status}
            if levels.get('a') == DiagnosticStatus.ERROR:
                return levels, stamp_s(arr)
        return None
    assert ros.wait_for(colliding_status)
    levels, stamp = colliding_status()
    assert levels['b'] == DiagnosticStatus.ERROR and levels['c'] == DiagnosticStatus.OK
    assert stamp == pytest.approx(rec['time'], abs=1e-9)


def test_a_late_subscriber_still_gets_every_collision(ros):
    """Robots overlapping at start collide at the first step; a listener that connects only
    after that (and after more contacts) still receives every report, with the running count."""
    node = ros.sim(['a', 'b', 'c', 'd'], start=[[0.0, 0.0, 0.0], [0.2, 0.0, 0.0],
                                                [5.0, 0.0, 0.0], [5.1, 0.0, 0.0]],
                   radius=[0.3] * 4, extra=lockstep())
    Controller(ros, ['a', 'b', 'c', 'd'], lambda robot, k: forward(0.0))
    assert ros.wait_for(lambda: node._collisions_reported == 2)
    events = ros.collect(String, '/fleet_sim/collisions', qos=latched_qos(1000))
    assert ros.wait_for(lambda: len(events) == 2)
    records = [json.loads(m.data) for m in events]
    assert [(r['robots'], r['count']) for r in records] == [(['a', 'b'], 1), (['c', 'd'], 2)]
    assert records[0]['time'] == pytest.approx(PERIOD)      # the first step


def test_robot_map_collision_with_a_latched_map(ros, tmp_path):
    occ = np.zeros((40, 40), dtype=bool)
    occ[:, 30:] = True                     # wall from x = 3 m
    OccupancyGrid(occ, 0.1, (0.0, 0.0)).save_map_yaml(tmp_path / 'wall')
    ros.add(MapPublisher(context=ros.context, parameter_overrides=[
        Parameter('yaml_filename', value=str(tmp_path / 'wall.yaml'))]))
    events = ros.collect(String, '/fleet_sim/collisions', qos=50)
    node = ros.sim(['robot0'], start=[[2.0, 2.0, 0.0]], max_accel=[20.0], extra=lockstep())
    assert ros.wait_for(lambda: node.sim.grid is not None)
    # Lockstep: nothing moves before the controller connects, here after the map arrived.
    Controller(ros, ['robot0'], lambda robot, k: forward(1.0))
    assert ros.wait_for(lambda: events)
    rec = json.loads(events[0].data)
    assert rec['kind'] == 'robot_map' and rec['robots'] == ['robot0']
    assert rec['position'][0] == pytest.approx(2.7, abs=0.03)


def test_stamped_cmd_vel(ros):
    ros.sim(['r'], extra=lockstep() + [Parameter('cmd_vel_stamped', value=True)],
            max_accel=[100.0])
    cmd = TwistStamped()
    cmd.header.frame_id = 'r/base_link'
    cmd.twist.linear.y = 0.5
    ctl = Controller(ros, ['r'], lambda robot, k: cmd, cmd_type=TwistStamped)
    assert ros.wait_for(lambda: len(ctl.odom['r']) > 5)
    assert ctl.odom['r'][5].pose.pose.position.y == pytest.approx(5 * 0.5 * PERIOD)


def test_bad_parameters_rejected(ros):
    with pytest.raises(ValueError, match=r'robot0\.max_speed'):
        ros.sim(['robot0'], max_speed=[-1.0])
    with pytest.raises(ValueError, match='robots'):
        ros.sim([])
    with pytest.raises(ValueError, match='odom_rate: 100 Hz exceeds sim_rate 50 Hz'):
        ros.sim(['robot0'], extra=[Parameter('odom_rate', value=100.0)])
    with pytest.raises(ValueError, match='lockstep: requires publish_clock'):
        ros.sim(['robot0'], extra=[Parameter('lockstep', value=True)])
    with pytest.raises(ValueError, match='real_time_factor'):
        ros.sim(['robot0'], extra=[Parameter('real_time_factor', value=-1.0)])
    node = ros.sim(['robot0'])
    result = node.set_parameters([Parameter('noise_pos_std', value=-0.5)])[0]
    assert not result.successful and 'noise_pos_std' in result.reason
    result = node.set_parameters([Parameter('robot0.kinematics', value='tank')])[0]
    assert not result.successful and 'robot0.kinematics' in result.reason
    result = node.set_parameters([Parameter('robot0.max_speed', value=0.25)])[0]
    assert result.successful and node.sim.limits.max_speed[0] == 0.25
    result = node.set_parameters([Parameter('cmd_timeout', value=2.0)])[0]
    assert result.successful and node.sim.cmd_timeout == 2.0


def test_map_publisher_latched_for_a_late_subscriber(ros):
    ros.add(MapPublisher(context=ros.context, parameter_overrides=[
        Parameter('yaml_filename', value=str(REPO / 'config' / 'maps' / 'corridor.yaml'))]))
    # Subscribed after the map went out (MapPublisher publishes it on construction).
    maps = ros.collect(OccupancyGridMsg, '/map', qos=latched_qos())
    assert ros.wait_for(lambda: maps)
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
        # Generous bounds: a loaded 2-core machine can take many seconds to start a process.
        client = AsyncParameterClient(ros.probe, 'fleet_sim')
        assert client.wait_for_services(timeout_sec=60.0), 'fleet_sim parameter services'
        names = ['robots', 'robot0.kinematics', 'robot0.max_speed', 'robot1.start',
                 'cmd_timeout', 'publish_clock', 'lockstep']
        # A request sent right after discovery can be lost before the reply path matches: retry.
        for _ in range(20):
            future = client.get_parameters(names)
            if ros.wait_for(future.done, timeout=3.0):
                break
        assert future.done(), 'no reply from fleet_sim/get_parameters'
        values = [parameter_value_to_python(v) for v in future.result().values]
        assert list(values[0]) == ['robot0', 'robot1']
        assert values[1] == 'diff_drive' and values[2] == pytest.approx(0.8)
        assert list(values[3]) == pytest.approx([2.0, 0.0, 3.14159])
        assert values[4] == pytest.approx(0.25) and values[5:] == [False, False]
        # And the behaviour follows: robot1 is where the file starts it.
        assert ros.wait_for(lambda: odom)
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
    # Normal start-up logs nothing above INFO.
    assert '[WARN]' not in out and '[ERROR]' not in out, out


# ---- fault injection (parameters `fault.*`, logic in core.sim.faults) ----------------------------

def test_faults_are_off_by_default_and_named_when_wrong(ros):
    node = ros.sim(['a', 'b'])
    assert node.sim.faults == Faults() and node.odometry_link is None
    with pytest.raises(ValueError, match=r"fault\.dead_robot: 'c' is not one of the robots "
                                         r'\(a, b\)'):
        ros.sim(['a', 'b'], extra=[Parameter('fault.dead_robot', value='c')])
    with pytest.raises(ValueError, match=r'fault\.odom_drop_rate / odom_delay / odom_jitter: '
                                         'need a simulator that is not in lockstep'):
        ros.sim(['a'], extra=lockstep() + [Parameter('fault.odom_drop_rate', value=0.1)])
    with pytest.raises(ValueError, match=r'fault\.odom_drop_rate'):
        ros.sim(['a'], extra=[Parameter('fault.odom_drop_rate', value=1.5)])


def test_a_dead_robot_in_lockstep_stops_at_its_time(ros):
    ros.sim(['a', 'b'], start=[[0.0, 0.0, 0.0], [0.0, 3.0, 0.0]], max_accel=[100.0, 100.0],
            extra=lockstep() + [Parameter('fault.dead_robot', value='b'),
                                Parameter('fault.dead_time', value=0.1)])
    ctl = Controller(ros, ['a', 'b'], lambda robot, k: forward(1.0))
    assert ros.wait_for(lambda: len(ctl.odom['a']) >= 16 and len(ctl.odom['b']) >= 16)
    a = [m.pose.pose.position.x for m in ctl.odom['a'][:16]]
    b = [m.pose.pose.position.x for m in ctl.odom['b'][:16]]
    assert a[15] == pytest.approx(15 * PERIOD)           # drives on
    assert b[15] == pytest.approx(b[5]) and b[5] == pytest.approx(0.1)   # died at 0.1 s


def test_odometry_loss_and_delay_from_parameters(ros):
    odom = ros.collect(Odometry, '/a/odom', qos=200)
    node = ros.sim(['a', 'b'], extra=[sim_time(), Parameter('fault.odom_drop_rate', value=0.5),
                                      Parameter('fault.odom_delay', value=0.1),
                                      Parameter('fault.seed', value=3)])
    clock = SimClock(ros, start_s=100.0)
    for k in range(1, 101):
        clock.advance(PERIOD)
        assert ros.wait_for(lambda: node.odometry_link.sent >= 2 * k)
    link = node.odometry_link
    assert 0.3 < link.dropped / link.sent < 0.7
    assert ros.wait_for(lambda: len(odom) >= 20)
    stamps = [stamp_s(m) for m in odom]
    assert len(stamps) < 100                      # lost messages never arrive
    assert max(stamps) <= clock.now_s - 0.1 + 1e-6      # each arrives 0.1 s after its stamp
