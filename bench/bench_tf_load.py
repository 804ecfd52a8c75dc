"""warehouse_tf as `ros2 launch` runs it, on a loaded machine: `python -m bench.bench_tf_load`.

Every node of the fleet's graph (`describe_graph`, as the launch file starts it: the simulator
publishes /clock at real time, no lockstep) runs in its own process (`bench/processes.py`), as
launch_ros starts them; `--busy N` processes spin meanwhile. It counts the goals mission_node
reports reached in its log (what a `ros2 launch` user reads), follows /clock, and times the map ->
odom transforms it receives on every robot's TF topic (the largest gap in wall time, as a Python
subscriber on the same loaded machine sees them); it prints these and how often a node logged that
it rejected odometry.

The issue this measures: under load, map -> odom stamped when it was computed arrived with gaps
of 1-2.5 s, odometry newer than orca_node's transform_tolerance was dropped and robots stopped
(0/12 and 4/12 goals); the simulator now post-dates it as AMCL does (docs/tf.md).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.processes import Process

RESULTS = Path(__file__).resolve().parent / 'results'


def goals_reached(log_text: str) -> dict:
    """Goals reached per robot, from mission_node's log (what a `ros2 launch` user reads)."""
    reached = {}
    for match in re.finditer(r'\]: (\S+): (?:last )?goal \(?(\d+) of \d+\)? reached', log_text):
        reached[match[1]] = max(reached.get(match[1], 0), int(match[2]))
    return reached


def run(scenario: str, busy: int, duration: float) -> dict:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rosgraph_msgs.msg import Clock
    from tf2_msgs.msg import TFMessage

    from orca_nav.bringup.demo import load_scenario, with_overrides
    from orca_nav.bringup.graph import MISSION, describe_graph
    from orca_nav.core.fleet.names import robot_names
    from orca_nav.ros.tf_listener import TF_QOS

    cfg = with_overrides(load_scenario(scenario), duration=duration)
    specs = describe_graph(cfg, use_sim=True)
    goals = sum(len(robot.goals) for robot in cfg.robots)
    folder = Path(tempfile.mkdtemp(prefix='orca_nav_tf_load_'))
    mission_log = folder / f'{MISSION}.log'
    loops = [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(busy)]
    nodes = []
    context = rclpy.Context()
    rclpy.init(args=[], context=context)
    # A light observer (it shares the load): simulated time and map -> odom arrivals.
    observer = rclpy.create_node('tf_load_observer', context=context)
    sim_time = [0.0]
    arrivals = {}
    observer.create_subscription(Clock, '/clock', lambda msg: sim_time.__setitem__(
        0, msg.clock.sec + 1e-9 * msg.clock.nanosec), 10)

    def on_tf(robot, msg):
        if any(t.child_frame_id.endswith('odom') for t in msg.transforms):
            arrivals.setdefault(robot, []).append(time.monotonic())

    for robot in cfg.robot_names:
        observer.create_subscription(TFMessage, robot_names(robot, cfg.tf_layout).tf_topic,
                                     lambda msg, r=robot: on_tf(r, msg), TF_QOS)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(observer)
    try:
        os.environ['RCUTILS_LOGGING_BUFFERED_STREAM'] = '0'     # mission_node's log, as it goes
        nodes.extend(Process(spec, folder, log_level='info') for spec in specs)
        start = time.monotonic()
        cap = start + 3.0 * duration + 60.0
        while sim_time[0] < duration and time.monotonic() < cap and \
                sum(goals_reached(mission_log.read_text()).values()) < goals and \
                all(node.proc.poll() is None for node in nodes):
            executor.spin_once(timeout_sec=0.1)
        wall = time.monotonic() - start
        gaps = [max(b - a for a, b in zip(times, times[1:])) for times in arrivals.values()
                if len(times) > 1]
    finally:
        for node in nodes:
            node.stop()
        for loop in loops:
            loop.kill()
            loop.wait()
        observer.destroy_node()
        rclpy.try_shutdown(context=context)
    texts = {node.name: node.log_path.read_text() for node in nodes}
    refused = sum(text.count('rejecting odometry') for text in texts.values())
    return {'scenario': scenario, 'busy_loops': busy,
            'goals_reached': sum(goals_reached(texts[MISSION]).values()), 'goals': goals,
            'simulated_s': sim_time[0], 'wall_s': wall,
            'largest_map_odom_gap_s': max(gaps) if gaps else None,
            'odometry_rejections_logged': refused, 'logs': str(folder)}


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.bench_tf_load',
                                     description=__doc__.splitlines()[0])
    parser.add_argument('--scenario', default='warehouse_tf')
    parser.add_argument('--busy', type=int, default=os.cpu_count() or 1,
                        help='busy-loop processes beside the fleet (default: one per core)')
    parser.add_argument('--runs', type=int, default=1)
    parser.add_argument('--duration', type=float, default=80.0,
                        help='simulated seconds at most (default 80, the scenario\'s)')
    parser.add_argument('--quick', action='store_true', help='one run')
    args = parser.parse_args(argv)
    rows = [run(args.scenario, args.busy, args.duration) for _ in range(args.runs)]
    print(f'{"run":>3} | {"goals":>7} | {"sim s":>6} | {"wall s":>6} | '
          f'{"largest map->odom gap":>21} | odometry rejections logged')
    for index, r in enumerate(rows):
        gap = '-' if r['largest_map_odom_gap_s'] is None else f'{r["largest_map_odom_gap_s"]:.2f} s'
        print(f'{index:>3} | {r["goals_reached"]:>3}/{r["goals"]:<3} | {r["simulated_s"]:6.1f} | '
              f'{r["wall_s"]:6.1f} | {gap:>21} | {r["odometry_rejections_logged"]}')
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / 'tf_load.json').write_text(json.dumps({'runs': rows, 'cores': os.cpu_count(),
                                                      'load_average': os.getloadavg()[0]},
                                                     indent=2) + '\n')
    return rows


if __name__ == '__main__':
    main()
