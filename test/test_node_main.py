"""Node processes stop cleanly on SIGINT/SIGTERM, however many arrive.

`ros2 launch` and the terminal both send Ctrl-C's SIGINT to every node of the process group, so
each node gets it twice. Each test starts a node module as a subprocess in its own process group
and a private DDS domain, waits until the node logged that it started, signals the group and
waits for the exit: status 0, no traceback.
"""
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip('rclpy')
from ros_harness import private_domain  # noqa: E402

pytestmark = pytest.mark.ros

REPO = Path(__file__).resolve().parents[1]
WAIT_S = 60.0      # bound of every wait (a loaded 2-core machine starts processes slowly)


class NodeProcess:
    """`python -m orca_nav.ros.<module> --ros-args ...` in a process group of its own; its
    combined output is read line by line on a thread."""

    def __init__(self, module, ros_args):
        self.proc = subprocess.Popen(
            [sys.executable, '-m', f'orca_nav.ros.{module}', '--ros-args', *ros_args],
            cwd=REPO, env={**os.environ, 'ROS_DOMAIN_ID': str(private_domain())},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, process_group=0)
        self.lines = []
        self._new_lines = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            self._new_lines.put(line)
        self._new_lines.put(None)       # end of output

    def wait_for_line(self, fragment):
        """The first output line containing `fragment`; fails after WAIT_S or at end of output."""
        while True:
            try:
                line = self._new_lines.get(timeout=WAIT_S)
            except queue.Empty:
                pytest.fail(f'no line with {fragment!r} in {WAIT_S} s; output:\n{self.output}')
            if line is None:
                pytest.fail(f'exited before logging {fragment!r}; output:\n{self.output}')
            if fragment in line:
                return line

    def signal_group(self, signum):
        os.killpg(self.proc.pid, signum)

    def wait_exit(self):
        try:
            code = self.proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f'still running {WAIT_S} s after the signal; output:\n{self.output}')
        self._reader.join(timeout=WAIT_S)
        return code

    @property
    def output(self):
        return ''.join(self.lines)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# Module -> (ROS arguments, a fragment of the line it logs once started). planner_node spins a
# MultiThreadedExecutor, the others a SingleThreadedExecutor.
NODES = {
    'map_publisher': (['-p', 'yaml_filename:=config/maps/corridor.yaml'], 'published'),
    'fleet_sim_node': (['-p', 'robots:=[robot0, robot1]', '-p', 'sim_rate:=50'], 'simulating'),
    'orca_node': (['-p', 'robots:=[robot0, robot1]', '-p', 'control_rate:=10'], 'commanded'),
    'planner_node': (['-p', 'robots:=[robot0]'], 'planning for'),
}


@pytest.mark.parametrize('module,signals', [
    ('map_publisher', [signal.SIGINT, signal.SIGINT]),
    ('fleet_sim_node', [signal.SIGINT, signal.SIGINT]),
    ('map_publisher', [signal.SIGTERM]),
    ('fleet_sim_node', [signal.SIGINT, signal.SIGTERM]),
    ('orca_node', [signal.SIGINT, signal.SIGINT]),
    ('planner_node', [signal.SIGINT, signal.SIGINT]),
])
def test_stop_signals_end_the_node_cleanly(module, signals):
    ros_args, started = NODES[module]
    node = NodeProcess(module, ros_args)
    try:
        node.wait_for_line(started)
        for signum in signals:
            node.signal_group(signum)
        code = node.wait_exit()
    finally:
        node.kill()
    output = node.output
    assert code == 0, output
    assert 'Traceback' not in output and 'KeyboardInterrupt' not in output, output
    assert f'shutting down on {signals[0].name}' in output, output


def test_map_publisher_logs_its_start_at_info_with_readable_numbers():
    node = NodeProcess('map_publisher', NODES['map_publisher'][0])
    try:
        line = node.wait_for_line('published')
    finally:
        node.kill()
    assert line.startswith('[INFO]'), line
    assert line.rstrip().endswith('published config/maps/corridor.yaml (280 x 101 cells at 0.1 m) '
                                  'on /map in frame map'), line
