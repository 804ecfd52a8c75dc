"""The nodes' console scripts (`ros2 run orca_nav orca_node`, the launch file's executables).

A node module imports rclpy, numpy and scipy, which takes seconds on a loaded machine; Ctrl-C
then (a launch stopped while its nodes start) used to print a KeyboardInterrupt traceback from
the middle of an import. Here SIGINT and SIGTERM end the process at once, quietly, with status
0, from the first instant: nothing exists yet that needs cleaning up (no rclpy, no file), and
the interpreter's finalization of half-imported modules would only cost time.
`node_main.run_node` takes the signals over once the node module is loaded.
"""
import importlib
import signal

from orca_nav.process import end_process


def _stop_while_importing(signum, frame):
    end_process(0)


def _run(module: str) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _stop_while_importing)
    importlib.import_module(f'orca_nav.ros.{module}').main()


def orca_node():
    _run('orca_node')


def planner_node():
    _run('planner_node')


def fleet_sim_node():
    _run('fleet_sim_node')


def map_publisher():
    _run('map_publisher')


def map_3d_publisher():
    _run('map_3d_publisher')


def mission_node():
    _run('mission_node')


def recorder_node():
    _run('recorder_node')


def tf_relay():
    _run('tf_relay')
