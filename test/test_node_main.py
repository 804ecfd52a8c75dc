"""Ctrl-C ends every orca_nav process within 2 s, in any state, with status 0 and no traceback.

Each case starts a node (or `orca-nav demo`) as its console script does, in a process group of
its own and a private DDS domain, waits until it is in the state under test by observing it (its
signal handlers installed, a log line, a lifecycle transition done over DDS, a plan under way),
signals the group as a terminal and `ros2 launch` do (SIGINT twice, or SIGTERM), and checks the
process has ended 2 s later with status 0 and nothing but log lines on its output.
"""
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip('rclpy')
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402

from orca_nav.core.grid import OccupancyGrid  # noqa: E402
from orca_nav.ros.convert import grid_to_msg, latched_qos, state_to_odom  # noqa: E402

from ros_harness import LifecycleClient, RosHarness, private_domain  # noqa: E402

pytestmark = pytest.mark.ros

REPO = Path(__file__).resolve().parents[1]
WAIT_S = 60.0      # bound of every wait for a state (a loaded 2-core machine starts slowly)
REPLY_S = 5.0      # a service reply not here by then is taken as lost
STOP_S = 2.0       # what the signals must take at most to end the process


def handles(pid, signum):
    """Process `pid` has a handler installed for `signum` (/proc/<pid>/status, SigCgt)."""
    try:
        status = Path(f'/proc/{pid}/status').read_text()
    except OSError:
        return False
    caught = int(next(line for line in status.splitlines() if line.startswith('SigCgt:'))
                 .split()[1], 16)
    return bool(caught >> (signum - 1) & 1)


class Process:
    """A command in a process group of its own and the private domain; its combined output is
    read line by line on a thread."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(
            argv, cwd=REPO, env={**os.environ, 'ROS_DOMAIN_ID': str(private_domain())},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, process_group=0)
        self.lines = []
        self._new_lines = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    def node(cls, executable, ros_args):
        """The node as its console script (orca_nav.ros.entry) starts it."""
        return cls([sys.executable, '-c', f'from orca_nav.ros.entry import {executable}; '
                    f'{executable}()', '--ros-args', *ros_args])

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            self._new_lines.put(line)
        self._new_lines.put(None)       # end of output

    def wait_for_line(self, fragment, meanwhile=None):
        """The first output line containing `fragment`; fails after WAIT_S or at end of output.
        `meanwhile()` is called before every wait for a line (at least every 0.1 s)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            if meanwhile is not None:
                meanwhile()
            try:
                line = self._new_lines.get(timeout=0.1 if meanwhile else WAIT_S)
            except queue.Empty:
                if time.monotonic() < deadline:
                    continue
                pytest.fail(f'no line with {fragment!r} in {WAIT_S} s; output:\n{self.output}')
            if line is None:
                pytest.fail(f'exited before logging {fragment!r}; output:\n{self.output}')
            if fragment in line:
                return line

    def wait_for_handler(self, signum):
        """Waits until the process has its own handler for `signum` (Python installs none for
        SIGTERM: the entry point's comes first, before the heavy imports)."""
        done = threading.Event()
        while not handles(self.proc.pid, signum):
            assert self.proc.poll() is None, f'exited while starting:\n{self.output}'
            done.wait(0.005)        # /proc has no change notification: look again shortly

    def stop(self, signals):
        """Sends `signals` to the group; the exit status once the process ended, which it must
        within STOP_S."""
        for signum in signals:
            os.killpg(self.proc.pid, signum)
        try:
            code = self.proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f'still running {STOP_S} s after {signals}; output:\n{self.output}')
        self._reader.join(timeout=WAIT_S)
        return code

    @property
    def output(self):
        return ''.join(self.lines)

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture(scope='module')
def ros():
    """One harness in the nodes' private domain, for lifecycle calls and planner inputs."""
    harness = RosHarness(domain_id=private_domain())
    yield harness
    harness.shutdown()


def configure(ros, node_name):
    """Configures an autostart:=false node over its lifecycle service (it is then inactive)."""
    client = LifecycleClient(ros, node_name, WAIT_S)
    try:
        assert client.configure(REPLY_S, WAIT_S), \
            f'{node_name} did not become inactive within {WAIT_S} s'
    finally:
        client.close()


def corridor_for_a_car(ros):
    """A 200 m x 5 m corridor on /map and a car at its west end heading east: without reverse
    (Dubins) and a 4 m turning radius it cannot turn back to a goal behind it, and the search
    runs until its budget is spent (tens of seconds). Returns the publishers, to be destroyed
    (the map is latched: later nodes in the domain would get it), and a function that publishes
    the car's odometry (best effort: repeated until the planner has it)."""
    occupied = np.zeros((50, 2000), dtype=bool)
    occupied[0, :] = occupied[-1, :] = True
    stamp = ros.probe.get_clock().now().to_msg()
    map_pub = ros.probe.create_publisher(OccupancyGridMsg, '/map', latched_qos())
    map_pub.publish(grid_to_msg(OccupancyGrid(occupied, 0.1, (0.0, 0.0)), 'map', stamp))
    odom_pub = ros.probe.create_publisher(Odometry, '/car/odom', qos_profile_sensor_data)
    odom = state_to_odom((2.0, 2.5), 0.0, (0.0, 0.0), 0.0, stamp, 'map', 'car/base_link')
    return [map_pub, odom_pub], lambda: odom_pub.publish(odom)


CAR = ['-p', 'robots:=[car]', '-p', 'car.kinematics:=car', '-p', 'car.min_turning_radius:=4.0',
       '-p', 'car.start:=[2.0, 2.5, 0.0]', '-p', 'car.goal:=[1.0, 2.5, 3.14159]',
       '-p', 'allow_reverse:=false', '-p', 'plan_time_budget:=120.0']

# executable -> (ROS arguments, the line it logs once active)
NODES = {
    'map_publisher': (['-p', 'yaml_filename:=config/maps/corridor.yaml'], 'published'),
    'map_3d_publisher': (['-p', 'yaml_filename:=config/maps/open_3d.yaml'], 'published'),
    'fleet_sim_node': (['-p', 'robots:=[robot0, robot1]', '-p', 'sim_rate:=50'], 'simulating'),
    'orca_node': (['-p', 'robots:=[robot0, robot1]', '-p', 'control_rate:=10'], 'commanded'),
    'planner_node': (['-p', 'robots:=[robot0]'], 'planning for'),
    'mission_node': (['-p', 'robots:=[robot0]', '-p', 'robot0.goals:=[1.0, 0.0, 0.0]'],
                     'goals for'),
    'tf_relay': (['-p', 'robots:=[robot0, robot1]'], 'relaying the trees'),
}
MANAGED = ('map_publisher', 'map_3d_publisher', 'orca_node', 'planner_node')
NODE_NAMES = {'fleet_sim_node': 'fleet_sim'}
TWICE = [signal.SIGINT, signal.SIGINT]      # the terminal's and launch's

CASES = [(executable, 'starting', [signal.SIGINT]) for executable in NODES] + \
    [(executable, 'active', TWICE) for executable in NODES] + \
    [(executable, 'unconfigured', [signal.SIGTERM]) for executable in MANAGED] + \
    [(executable, 'configured', TWICE) for executable in MANAGED] + \
    [('planner_node', 'planning', [signal.SIGINT, signal.SIGTERM])]


@pytest.mark.parametrize('executable, state, signals', CASES,
                         ids=[f'{e}-{s}' for e, s, _ in CASES])
def test_stop_signals_end_the_node_within_2_s_in_any_state(ros, executable, state, signals):
    ros_args, active_line = NODES[executable]
    if state == 'planning':
        ros_args = CAR
    elif state in ('unconfigured', 'configured'):
        ros_args = ros_args + ['-p', 'autostart:=false']
    node = Process.node(executable, ros_args)
    publishers = []
    try:
        if state == 'starting':
            node.wait_for_handler(signal.SIGTERM)
        elif state == 'active':
            node.wait_for_line(active_line)
        elif state == 'planning':
            node.wait_for_line('planning for')
            publishers, report_odometry = corridor_for_a_car(ros)
            node.wait_for_line('car: planning (', meanwhile=report_odometry)
        else:
            node.wait_for_line('waiting for a lifecycle manager')
            if state == 'configured':
                configure(ros, executable)
        code = node.stop(signals)
    finally:
        node.kill()
        for publisher in publishers:
            ros.probe.destroy_publisher(publisher)
    output = node.output
    assert code == 0, output
    assert 'Traceback' not in output and 'KeyboardInterrupt' not in output, output
    if state != 'starting':     # (of two signals sent together, either may be seen first)
        assert any(f'shutting down on {s.name}' in output for s in signals), output
    if state == 'active':       # and DDS was told: no node lingers for a lease period
        name = NODE_NAMES.get(executable, executable)
        assert ros.wait_for(lambda: name not in ros.probe.get_node_names(), 10.0), \
            ros.probe.get_node_names()


def demo(out):
    return Process([sys.executable, '-c', 'from orca_nav.bringup.cli import console_main; '
                    'console_main()', 'demo', '--scenario', 'circle', '--robots', '2',
                    '--real-time-factor', '1', '--out', str(out)])


def test_ctrl_c_while_the_demo_starts_ends_it_with_status_0(tmp_path):
    run = demo(tmp_path / 'out')
    try:
        run.wait_for_line('orca-nav demo: scenario circle')    # rclpy and the nodes load next
        code = run.stop(TWICE)
    finally:
        run.kill()
    assert code == 0, run.output
    assert 'Traceback' not in run.output and not (tmp_path / 'out').exists(), run.output


def test_ctrl_c_before_a_command_handles_it_ends_with_status_0_and_no_traceback():
    """The first Ctrl-C can land anywhere before a command's own handler is in place (even in
    the middle of printing the demo's first line): the CLI still ends quietly."""
    code = ('import orca_nav.bringup.cli as cli\n'
            'def interrupted(argv=None):\n'
            '    raise KeyboardInterrupt\n'
            'cli.main = interrupted\n'
            'cli.console_main()\n')
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert 'interrupted while starting' in done.stderr and 'Traceback' not in done.stderr


def test_ctrl_c_during_the_demo_writes_the_report_and_judges_it(tmp_path):
    run = demo(tmp_path / 'out')
    try:
        run.wait_for_line('t = ')      # the first progress line: the robots are under way
        code = run.stop(TWICE)
    finally:
        run.kill()
    assert 'Traceback' not in run.output, run.output
    assert 'interrupted: writing the report' in run.output
    report = json.loads((tmp_path / 'out' / 'report.json').read_text())
    assert (tmp_path / 'out' / 'trajectories.png').is_file()
    # Stopped at real-time pace long before the robots could cross the circle.
    assert report['fleet']['reached'] == 0 and code == 1, run.output


def test_map_publisher_logs_its_start_at_info_with_readable_numbers():
    node = Process.node('map_publisher', NODES['map_publisher'][0])
    try:
        line = node.wait_for_line('published')
    finally:
        node.kill()
    assert line.startswith('[INFO]'), line
    assert line.rstrip().endswith('published config/maps/corridor.yaml (280 x 101 cells at 0.1 m) '
                                  'on /map in frame map'), line
