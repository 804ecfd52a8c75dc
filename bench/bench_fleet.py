"""Fleet benchmark: orca_node's control cycle and odom -> cmd_vel latency over real DDS.

For N robots (default 10, 50, 100, 200, 500), orca_node runs as its own process (centralized mode,
20 Hz, `cycle_trigger: odometry`, holonomic robots of radius 0.3 m and 1 m/s). A player process
plays the fleet's odometry (20 Hz, or `--odom-rate`) and this process (the probe) times the
commands. Robots sit on a jittered lattice (`--spacing`, default 2 m: a busy warehouse floor;
1.2 m is a crowd where most LPs are infeasible), every one moving at 0.5 m/s toward its mirror
image through the centre (goals set the same way), so every robot has `max_neighbors`
neighbours within neighbor_dist in each cycle. Positions are replayed unchanged (the scene is
the same each cycle), so the numbers measure the controller, not a changing workload.

Measured:
- control cycle (ms, p50/p99): orca_node's own timing of a whole cycle (preferred velocities,
  deadlock breaker, one compute_velocities for all robots, twist mapping, acceleration limits,
  publishing N cmd_vel), wall clock and CPU time of its thread, read from its /diagnostics (its
  last 200 cycles, all inside the measurement window);
- odom -> cmd_vel latency (ms, p50/p99): from the moment the player has published the last
  odometry message of a burst to the probe's DDS receipt of a cmd_vel (rmw's received_timestamp,
  so the probe's own Python dispatch of ten commands arriving together does not count; the
  latency at the probe's callback is in the JSON as well), paired after the run with the latest
  burst published before it arrived, over a sample of up to 10 robots
  spread over the fleet (subscribing to all N cmd_vel topics would make this process the
  bottleneck); the node publishes cmd_vel in robot order, so later robots see up to the
  publishing time of the earlier ones;
- cmd_vel rate (Hz): over the window, the slowest and the fastest of the sampled robots (with
  `--odom-rate 50`: the control rate is kept whatever the odometry rate);
- parameter service: while the fleet runs, a `set_parameters` call on the running node (what
  `ros2 param set` does) and its answer time;
- peer (same run, same scene): a naive per-robot Python loop around RVO2 (PyPI pyrvo): set each
  agent's position, velocity and preferred velocity, do_step, read each velocity back;
  and orca_nav's core compute_velocities alone on the same arrays.

Two players, each in the table (`--players`): `bytes` (below) and `objects`, which builds an
ordinary Odometry message object for every robot and burst and publishes it, as a Gazebo
bridge or a robot driver on the same computer does (about 2.5x the player's CPU per message).

Player and probe are separate processes: in one, the player's 500-message bursts held Python's
lock from the thread receiving commands and delayed the player's own record of its bursts, both
by tens of ms, which the latency then counted against orca_node. The player serializes each
robot's Odometry once and only writes the stamp into it (publishing bytes costs 16 us a message
here, a message object 40 us), and its per-robot publishers carry no QoS-event handlers (as
orca_node's): it stands for robots on other machines, so its own cost should take as little as
it can of the cores the node is measured on. Its bursts are then shorter (8 ms for 500), which
leaves more of each burst for the node to take after the burst's last message, where the
latency starts.

Fleets of more than 400 robots run with the DDS profile the launch gives them
(`bringup.graph.dds_environment`: bursts of one message per robot fit Fast DDS's queues).

`--repeats R` runs every size R times, sizes interleaved; the table gives each figure's median
and the lines under it min / median / max of the judged ones.

Usage: python -m bench.bench_fleet [--quick] [--sizes 10 50 100 200 500] [--seconds 10]
       [--spacing 2] [--odom-rate 20] [--repeats 1] [--players bytes objects]
"""
import argparse
import json
import multiprocessing
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import yaml

RESULTS = Path(__file__).resolve().parent / 'results' / 'fleet.json'
REPO = Path(__file__).resolve().parents[1]
RATE = 20.0
RADIUS, MAX_SPEED, SPEED = 0.3, 1.0, 0.5
_STAMP = struct.Struct('<iI')     # builtin_interfaces/Time in little-endian CDR
ORCA = dict(neighbor_dist=5.0, max_neighbors=10, time_horizon=3.0, time_horizon_obst=2.0)
PLAYERS = ('bytes', 'objects')      # how the player publishes odometry (`play_odometry`)


def scene(count, spacing, seed=0):
    """Jittered lattice, each robot heading to its mirror image through the centre."""
    side = int(np.ceil(np.sqrt(count)))
    ix, iy = np.meshgrid(np.arange(side), np.arange(side))
    start = spacing * np.stack([ix.ravel(), iy.ravel()], axis=1)[:count].astype(float)
    start += np.random.default_rng(seed).uniform(-0.1, 0.1, start.shape)
    start -= start.mean(axis=0)
    goals = -start
    heading = goals / np.maximum(np.linalg.norm(goals, axis=1, keepdims=True), 1e-9)
    return start, goals, SPEED * heading


def node_params(robots, goals):
    params = dict(robots=robots, control_rate=RATE, cycle_trigger='odometry', odom_timeout=0.5,
                  marker_rate=0.0, diagnostics_rate=1.0, **ORCA)
    for robot, goal in zip(robots, goals):
        params[robot] = {'radius': RADIUS, 'max_speed': MAX_SPEED, 'max_accel': 2.0,
                         'goal': [float(goal[0]), float(goal[1]), 0.0]}
    return {'orca_node': {'ros__parameters': params}}


def percentile(values, q):
    return float(np.percentile(values, q)) if len(values) else float('nan')


def play_odometry(count, spacing, odom_rate, env, stop, bursts_out, player='bytes'):
    """The fleet's odometry at `odom_rate` in a process of its own (`env` on top of this
    one's). `player` 'bytes': prebuilt serialized messages, restamped; 'objects': a new
    Odometry message object per robot and burst, filled and published as a simulator bridge
    or a robot driver does. At `stop`, sends the system time (ns) each burst's last message
    was published."""
    os.environ.update(env)
    import rclpy
    from nav_msgs.msg import Odometry
    from rclpy.serialization import serialize_message

    from orca_nav.ros.convert import state_to_odom
    from orca_nav.ros.qos_events import publisher_events

    robots = [f'robot{i}' for i in range(count)]
    start, _, velocity = scene(count, spacing)
    yaw = np.arctan2(velocity[:, 1], velocity[:, 0])
    body_speed = np.linalg.norm(velocity, axis=1)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('bench_fleet_player', context=context)
    pubs = [node.create_publisher(Odometry, f'/{r}/odom', 10, event_callbacks=publisher_events())
            for r in robots]
    # Serialized once; each burst writes its stamp (header.stamp, right after the 4-byte CDR
    # encapsulation header) into a copy. A message object would cost the player 2.5x the time
    # per publish (its conversion to C), on the cores the node is measured on.
    serialized = [bytearray(serialize_message(state_to_odom(
        start[i], yaw[i], (body_speed[i], 0.0), 0.0, node.get_clock().now().to_msg(), 'map',
        f'{robots[i]}/base_link'))) for i in range(count)]
    bursts = []
    period = 1.0 / odom_rate
    next_t = time.perf_counter()
    frames = [(robot, f'{robot}/base_link') for robot in robots]
    while not stop.is_set():
        if player == 'objects':
            stamp = node.get_clock().now().to_msg()
            for i, (pub, (_, child)) in enumerate(zip(pubs, frames)):
                pub.publish(state_to_odom(start[i], yaw[i], (body_speed[i], 0.0), 0.0, stamp,
                                          'map', child))
        else:
            sec, nanosec = divmod(node.get_clock().now().nanoseconds, 1_000_000_000)
            for pub, raw in zip(pubs, serialized):
                _STAMP.pack_into(raw, 4, sec, nanosec)
                pub.publish(bytes(raw))
        bursts.append(time.time_ns())
        next_t += period
        stop.wait(max(0.0, next_t - time.perf_counter()))
    node.destroy_node()
    rclpy.try_shutdown(context=context)
    bursts_out.send(bursts)


def run_node_size(count, seconds, spacing, odom_rate, player='bytes'):
    """orca_node in a subprocess, odometry played by another (`play_odometry` with `player`),
    commands timed here; returns the measured numbers."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import Twist
    from rcl_interfaces.msg import Parameter as ParameterMsg
    from rcl_interfaces.msg import ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    from rclpy.executors import SingleThreadedExecutor

    from orca_nav.bringup.graph import dds_environment
    robots = [f'robot{i}' for i in range(count)]
    _, goals, _ = scene(count, spacing)
    env = dds_environment(count)    # what the launch gives a fleet this large
    with tempfile.NamedTemporaryFile('w', suffix='.yaml', delete=False) as f:
        yaml.safe_dump(node_params(robots, goals), f)
        params_file = f.name
    proc = subprocess.Popen([sys.executable, '-m', 'orca_nav.ros.orca_node', '--ros-args',
                             '--params-file', params_file, '--log-level', 'warn'],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, **env})
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('bench_fleet_probe', context=context)
    sampled = sorted(set(np.linspace(0, count - 1, min(count, 10)).astype(int).tolist()))
    lock = threading.Lock()
    arrivals = []        # (DDS receipt, callback) system times (ns) of each sampled cmd_vel
    received = {i: 0 for i in sampled}
    measuring = threading.Event()
    first_cmd = threading.Event()
    diag = {}

    def on_cmd(i, info):
        now = time.time_ns()
        first_cmd.set()
        if measuring.is_set():
            with lock:
                received[i] += 1
                arrivals.append((info['received_timestamp'], now))

    def on_diag(msg):
        for status in msg.status:
            if status.name == 'orca_node: control cycle' and status.values:
                diag.update({kv.key: float(kv.value) for kv in status.values})

    for i in sampled:
        node.create_subscription(Twist, f'/{robots[i]}/cmd_vel',
                                 lambda _m, info, i=i: on_cmd(i, info), 50)
    node.create_subscription(DiagnosticArray, '/diagnostics', on_diag, 10)
    parameters = node.create_client(SetParameters, '/orca_node/set_parameters')
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    def spin():
        try:
            executor.spin()
        except Exception:   # the context shuts down under the executor at the end
            pass

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    spawn = multiprocessing.get_context('spawn')
    stop = spawn.Event()
    bursts_in, bursts_out = spawn.Pipe(duplex=False)
    playing = spawn.Process(target=play_odometry,
                            args=(count, spacing, odom_rate, env, stop, bursts_out, player),
                            daemon=True)
    try:
        playing.start()
        if not first_cmd.wait(timeout=60.0):
            raise RuntimeError(f'orca_node with {count} robots sent no cmd_vel within 60 s')
        time.sleep(3.0)             # warm-up: discovery of every topic, first cycles
        measuring.set()
        window_start = time.perf_counter()
        time.sleep(0.5 * seconds)
        param_ms = set_parameter_ms(parameters, ParameterMsg(
            name='marker_rate',
            value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=0.0)))
        time.sleep(max(0.0, window_start + seconds - time.perf_counter()))
        measuring.clear()
        window = time.perf_counter() - window_start
        load = os.getloadavg()[0]
        diag.clear()
        deadline = time.monotonic() + 5.0
        while not diag and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        bursts = bursts_in.recv() if bursts_in.poll(10.0) else []
        playing.join(timeout=5.0)
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        proc.terminate()
        try:
            proc.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            proc.kill()
        os.unlink(params_file)
    # Each command against the latest burst published before its DDS receipt (the system
    # clock, the same in both processes).
    ends, arrived = np.array(bursts), np.array(arrivals, dtype=np.int64).reshape(-1, 2)
    burst = np.searchsorted(ends, arrived[:, 0], side='right') - 1
    lat_ms, at_callback_ms = (1e-6 * (arrived[burst >= 0, col] - ends[burst[burst >= 0]])
                              for col in (0, 1))
    return {'cycle_p50_ms': diag.get('cycle_p50_ms', float('nan')),
            'cycle_p99_ms': diag.get('cycle_p99_ms', float('nan')),
            'cycle_cpu_p50_ms': diag.get('cycle_cpu_p50_ms', float('nan')),
            'cycle_cpu_p99_ms': diag.get('cycle_cpu_p99_ms', float('nan')),
            'cycles': int(diag.get('cycles', 0)),
            'latency_p50_ms': percentile(lat_ms, 50), 'latency_p99_ms': percentile(lat_ms, 99),
            'latency_callback_p50_ms': percentile(at_callback_ms, 50),
            'latency_callback_p99_ms': percentile(at_callback_ms, 99),
            'latency_samples': int(len(lat_ms)), 'sampled_robots': len(sampled),
            'cmd_rate_min_hz': min(received.values()) / window,
            'cmd_rate_max_hz': max(received.values()) / window, 'param_set_ms': param_ms,
            'load_average': load}


def set_parameter_ms(client, parameter):
    """Sets one parameter on the running node, as `ros2 param set` does; the time to the
    answer in ms, or None when none came within 10 s or the node refused."""
    from rcl_interfaces.srv import SetParameters
    if not client.wait_for_service(timeout_sec=10.0):
        return None
    started = time.perf_counter()
    future = client.call_async(SetParameters.Request(parameters=[parameter]))
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    if not done.wait(timeout=10.0) or not future.result().results[0].successful:
        return None
    return 1e3 * (time.perf_counter() - started)


def time_core(count, repeats, spacing):
    """orca_nav's compute_velocities alone on the benchmark scene (ms per call)."""
    from orca_nav.core.avoidance import OrcaParams, compute_velocities
    start, goals, velocity = scene(count, spacing)
    pref = goals - start
    pref *= np.minimum(1.0, MAX_SPEED / np.linalg.norm(pref, axis=1))[:, None]
    params = OrcaParams(time_step=1.0 / RATE, radius=RADIUS, max_speed=MAX_SPEED, **ORCA)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        compute_velocities(start, velocity, pref, params)
        times.append(time.perf_counter() - t0)
    return 1e3 * np.array(times)


def time_pyrvo_loop(count, repeats, spacing):
    """The naive peer: per-robot Python loop around RVO2 (pyrvo) doing the same ORCA work."""
    try:
        import pyrvo
    except ImportError:
        return None
    start, goals, velocity = scene(count, spacing)
    pref = goals - start
    pref *= np.minimum(1.0, MAX_SPEED / np.linalg.norm(pref, axis=1))[:, None]
    sim = pyrvo.RVOSimulator()
    sim.set_time_step(1.0 / RATE)
    sim.set_agent_defaults(ORCA['neighbor_dist'], ORCA['max_neighbors'], ORCA['time_horizon'],
                           ORCA['time_horizon_obst'], RADIUS, MAX_SPEED)
    for p in start:
        sim.add_agent((float(p[0]), float(p[1])))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for i in range(count):
            sim.set_agent_position(i, (float(start[i, 0]), float(start[i, 1])))
            sim.set_agent_velocity(i, (float(velocity[i, 0]), float(velocity[i, 1])))
            sim.set_agent_pref_velocity(i, (float(pref[i, 0]), float(pref[i, 1])))
        sim.do_step()
        _ = [sim.get_agent_velocity(i).to_tuple() for i in range(count)]
        times.append(time.perf_counter() - t0)
    return 1e3 * np.array(times)


def run_size(count, seconds, spacing, odom_rate, quick, player='bytes'):
    """One run of one fleet size with one player: the node over DDS, then the core and the
    peer on its scene."""
    measured = run_node_size(count, seconds, spacing, odom_rate, player)
    core = time_core(count, 10 if quick else 40, spacing)
    peer = time_pyrvo_loop(count, 10 if quick else 40, spacing)
    row = dict(robots=count, player=player, **measured, core_p50_ms=float(np.median(core)),
               pyrvo_loop_p50_ms=float(np.median(peer)) if peer is not None else None)
    row['cycle_vs_pyrvo_loop'] = (row['cycle_p50_ms'] / row['pyrvo_loop_p50_ms']
                                  if peer is not None else None)
    return row


def median_row(runs):
    """Each figure's median over the runs of one size (None where a run has none)."""
    row = {}
    for key, value in runs[0].items():
        values = [r[key] for r in runs if r[key] is not None]
        row[key] = (value if key in ('robots', 'player') else
                    float(np.median(values)) if len(values) == len(runs) else None)
    return row


def spread(runs, key, fmt='{:.1f}'):
    """`min / median / max` of one figure over the runs."""
    values = [r[key] for r in runs]
    if any(v is None for v in values):
        return 'no answer in ' + str(sum(v is None for v in values)) + ' run(s)'
    return ' / '.join(fmt.format(v) for v in (min(values), float(np.median(values)), max(values)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true', help='10 and 50 robots, short windows')
    parser.add_argument('--sizes', type=int, nargs='+', default=None)
    parser.add_argument('--seconds', type=float, default=None, help='measurement window per size')
    parser.add_argument('--spacing', type=float, default=2.0, help='lattice spacing (m)')
    parser.add_argument('--odom-rate', type=float, default=RATE,
                        help=f'odometry rate of every robot (Hz; the node runs at {RATE:g} Hz)')
    parser.add_argument('--repeats', type=int, default=None,
                        help='runs of every size, interleaved (default 1; the table is the median)')
    parser.add_argument('--players', nargs='+', choices=PLAYERS, default=list(PLAYERS),
                        help='odometry players, each in the same table (default both)')
    args = parser.parse_args(argv)
    sizes = args.sizes or ([10, 50] if args.quick else [10, 50, 100, 200, 500])
    seconds = args.seconds or (3.0 if args.quick else 10.0)
    repeats = args.repeats or 1
    if args.odom_rate <= 0.0 or repeats < 1:
        parser.error('--odom-rate must be > 0 and --repeats at least 1')
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')

    cases = [(count, player) for count in sizes for player in args.players]
    runs = {case: [] for case in cases}
    for repeat in range(repeats):       # sizes interleaved: a busy minute spreads over all
        for count, player in cases:
            runs[count, player].append(run_size(count, seconds, args.spacing, args.odom_rate,
                                                args.quick, player))
            print(f'run {repeat + 1}/{repeats}: {count} robots, {player} player done',
                  file=sys.stderr, flush=True)
    rows = [median_row(runs[case]) for case in cases]

    header = (f"{'robots':>6} | {'player':>7} | {'cycle p50':>9} | {'cycle p99':>9} | "
              f"{'cpu p50':>7} | "
              f"{'cpu p99':>7} | {'odom->cmd p50':>13} | "
              f"{'odom->cmd p99':>13} | {'cmd Hz min':>10} | {'param set':>9} | "
              f"{'core ORCA p50':>13} | {'pyrvo loop p50':>14} | {'cycle/pyrvo':>11} | {'load':>4}")
    print(f'orca_node at {RATE:g} Hz over DDS (ms), odometry at {args.odom_rate:g} Hz, lattice '
          f'spacing {args.spacing:g} m; peer = per-robot Python loop around pyrvo (RVO2 2.0.3), '
          f'same scene, same run; ' + ('median of ' + str(repeats) + ' runs' if repeats > 1
                                       else 'one run'))
    print(header)
    print('-' * len(header))
    for r in rows:
        peer = f"{r['pyrvo_loop_p50_ms']:14.3f}" if r['pyrvo_loop_p50_ms'] is not None else \
            f"{'n/a':>14}"
        ratio = f"{r['cycle_vs_pyrvo_loop']:10.1f}x" if r['cycle_vs_pyrvo_loop'] is not None \
            else f"{'n/a':>11}"
        param = 'no answer' if r['param_set_ms'] is None else f"{r['param_set_ms']:.0f} ms"
        print(f"{r['robots']:6d} | {r['player']:>7} | {r['cycle_p50_ms']:9.2f} | "
              f"{r['cycle_p99_ms']:9.2f} | "
              f"{r['cycle_cpu_p50_ms']:7.2f} | {r['cycle_cpu_p99_ms']:7.2f} | "
              f"{r['latency_p50_ms']:13.2f} | {r['latency_p99_ms']:13.2f} | "
              f"{r['cmd_rate_min_hz']:10.1f} | {param:>9} | "
              f"{r['core_p50_ms']:13.2f} | {peer} | {ratio} | {r['load_average']:4.1f}")
    print('cycle = wall clock of a whole control cycle in orca_node; cpu = CPU time of that thread '
          'in it (what the cycle costs without other processes competing for the cores); cmd Hz '
          'min = the slowest sampled robot; param set = a set_parameters answer while running '
          '("no answer" if any run had none); load = 1-min load average at the end of the '
          f'window, {os.cpu_count()} cores; player = the odometry player: prebuilt serialized '
          'messages (bytes) or a message object per robot and burst (objects, as a simulator '
          'bridge publishes)')
    print('odom->cmd = to the probe\'s DDS receipt; at its Python callback (p50 / p99 ms): ' +
          ', '.join(f"{r['robots']} robots {r['player']} {r['latency_callback_p50_ms']:.1f} / "
                    f"{r['latency_callback_p99_ms']:.1f}" for r in rows))
    print(f'over {repeats} run(s), min / median / max:')
    for count, player in cases:
        case = runs[count, player]
        print(f"  {count} robots, {player}: odom->cmd p50 {spread(case, 'latency_p50_ms')} ms, "
              f"p99 {spread(case, 'latency_p99_ms')} ms; cmd_vel "
              f"{spread(case, 'cmd_rate_min_hz', '{:.2f}')} Hz (slowest robot), "
              f"{spread(case, 'cmd_rate_max_hz', '{:.2f}')} Hz (fastest); param set "
              f"{spread(case, 'param_set_ms', '{:.0f}')} ms; load "
              f"{spread(case, 'load_average')}")
    print('targets: 100 robots odom->cmd_vel p50 <= 10 ms, p99 <= 30 ms; 500 robots every cmd_vel '
          f'>= 18 Hz, p50 <= 20 ms, p99 <= 50 ms, parameters answered; cmd_vel at {RATE:g} Hz '
          '+-5 % whatever the odometry rate')
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({'rate_hz': RATE, 'odom_rate_hz': args.odom_rate,
                                   'quick': bool(args.quick), 'seconds': seconds,
                                   'repeats': repeats, 'spacing_m': args.spacing,
                                   'load_average': os.getloadavg()[0], 'cores': os.cpu_count(),
                                   'players': args.players, 'rows': rows,
                                   'runs': {f'{c} {p}': runs[c, p] for c, p in cases}},
                                  indent=1))
    return rows


if __name__ == '__main__':
    main()
