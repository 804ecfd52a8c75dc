"""Shards benchmark: one fleet split over several orca_node processes (`shards: S`), over DDS.

The fleet: N holonomic robots (radius 0.3 m, 1 m/s) on a jittered 2 m lattice; once every node
runs, each robot gets a goal on /<robot>/goal_pose: in every cell of 2 x 2 robots the diagonally
opposite start, so the four meet at the cell's centre (2.8 m each). The robot list interleaves
the cells' corners over the shards (`shards: S` gives contiguous blocks of that list), so the
robots that meet belong to different shards (all four with 4 shards): almost every encounter is
a boundary encounter, where each robot's shard takes half of the avoidance.

The nodes are those `describe_graph` gives for the fleet file (the launch file's), each started
as its own process: fleet_sim_node (the robots, odometry at the control rate) and S orca_node
shards at `--rate` (default 10 Hz, cycle_trigger odometry).

The full run is in lockstep on the simulator's clock (`use_sim_time`, the simulator publishing
/clock and advancing one odometry period only once every robot's command for the last one has
arrived, or 2 s passed): the robots are commanded at `--rate` of their own time however much of
the machine the five processes need, so it shows the fleet as it runs where every part has the
cores it needs, and how far this machine is from that (simulated seconds per wall second). The
parts alone run on the wall clock: their CPU per second is the cost model.

Measured:
(a) the full run: per shard the control cycle (ms, p50/p99, wall and CPU of its thread, from its
    /diagnostics status `<node>: control cycle`, its last 200 cycles), the cmd_vel rate a
    sample of robots receives (Hz per simulated second per robot, up to 8 per shard), the
    simulated seconds in the wall-clock window, every process's CPU (/proc: CPU seconds per
    simulated second, and per wall second), the simulator's contacts and the boundary contacts
    (robots of different shards) among them, and how long start-up took (until every shard ran);
(b) each part alone: the simulator with N robots and no controller (CPU per simulated second:
    it follows the wall clock), and one shard commanding its N/S robots while seeing all N (the
    simulator beside it playing the fleet; the others stand still), its CPU per second and
    cycle p50/p99.
Projection to S + 1 machines: the simulator on a machine of its own and one shard per machine
(each part's CPU per second of the robots' time and a shard's cycle CPU p99 against the control
period: the heavier median of the part alone and in the full run, where the simulator serves S
shards), each shard
machine receiving N odometry messages per control period (the bytes per message measured by
serializing one), the simulator's machine sending them S times (DDS unicast).
Every number is min/median over `--repeats` runs.

Usage: python -m bench.bench_shards [--quick] [--robots 1000] [--shards 4] [--rate 10]
       [--seconds 15] [--repeats 3]        (--quick: 40 robots, 2 shards, 8 s, one run)
"""
import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from bench.processes import Process

RESULTS = Path(__file__).resolve().parent / 'results' / 'shards.json'
SPACING = 2.0
RADIUS, MAX_SPEED = 0.3, 1.0
SAMPLED_PER_SHARD = 8


def lattice(count, seed=0):
    """(starts (N, 2), goals (N, 2), column, row): the jittered lattice; in each cell of 2 x 2
    robots every robot's goal is the diagonally opposite start, so the four meet at the cell's
    centre (RVO2's circle with four robots). A robot without a diagonal partner stays."""
    side = int(np.ceil(np.sqrt(count)))
    column, row = np.arange(count) % side, np.arange(count) // side
    start = SPACING * np.column_stack([column, row]).astype(float)
    start += np.random.default_rng(seed).uniform(-0.1, 0.1, start.shape)
    partner = (row ^ 1) * side + (column ^ 1)
    valid = ((column ^ 1) < side) & (partner < count)
    goal = start.copy()
    goal[valid] = start[partner[valid]]
    return start, goal, column, row


def meeting_pairs(start, goal, column, row):
    """Lattice index pairs (i, k) of robots that meet: both move and share a cell."""
    moving = np.hypot(*(goal - start).T) > 0.0
    cell = (column // 2) * (row.max() + 2) + row // 2
    return [(i, k) for i in np.flatnonzero(moving) for k in np.flatnonzero(moving)
            if i < k and cell[i] == cell[k]]


def fleet_config(count, shards, rate, lockstep=False):
    """(the fleet, each robot's goal, the meeting pairs by name); with `lockstep` every node runs
    on the simulator's clock, which waits for every robot's command (see the module docstring).
    Lattice index j is robot `robot<j>`, listed grouped by its corner of the cell,
    (column mod 2 + 2 (row mod 2)) mod shards, so the robots that meet belong to different
    shards (with 4 shards all four of a cell, with 2 the diagonal partners; the groups are only
    about as large as the shards' blocks: a few robots land in the next shard)."""
    from orca_nav.bringup.fleet_file import load_fleet_config
    start, goal, column, row = lattice(count)
    group = (column % 2 + 2 * (row % 2)) % shards
    order = sorted(range(count), key=lambda j: (group[j], j))
    cfg = load_fleet_config({
        'name': 'shards_bench', 'shards': shards, 'use_sim_time': lockstep,
        'defaults': {'kinematics': 'holonomic', 'radius': RADIUS, 'max_speed': MAX_SPEED,
                     'max_accel': 2.0},
        'robots': [{'name': f'robot{j}', 'start': [float(start[j, 0]), float(start[j, 1]), 0.0]}
                   for j in order],
        'orca_node': {'control_rate': float(rate), 'marker_rate': 0.0, 'diagnostics_rate': 1.0,
                      'odom_timeout': max(0.5, 5.0 / rate)},
        'fleet_sim_node': {'odom_rate': float(rate), 'sim_rate': 2.0 * rate,
                           'cmd_timeout': max(0.25, 2.5 / rate),
                           **({'publish_clock': True, 'lockstep': True, 'real_time_factor': 1.0,
                               'lockstep_timeout': 2.0, 'lockstep_start_timeout': 600.0}
                              if lockstep else {})}})
    pairs = [(f'robot{i}', f'robot{k}') for i, k in meeting_pairs(start, goal, column, row)]
    return cfg, {f'robot{j}': goal[j] for j in range(count)}, pairs


class Observer:
    """The benchmark's own node: goals out; shard statuses, contacts and sampled cmd_vel in."""

    def __init__(self, robots, sampled):
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import PoseStamped, Twist
        from rclpy.executors import SingleThreadedExecutor
        from rosgraph_msgs.msg import Clock
        from std_msgs.msg import String

        from orca_nav.ros.convert import latched_qos
        from orca_nav.ros.fleet_sim_node import COLLISION_HISTORY
        self._rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('bench_shards', context=self.context)
        self.lock = threading.Lock()
        self.cycles = {}         # shard node name -> values of its latest control-cycle status
        self.contacts = []
        self.simulating = False     # the simulator's diagnostics arrived: it is up
        self.positions = {}         # robot -> (x, y) in the simulator's latest diagnostics
        self.sim_time = None        # s: the latest /clock (lockstep runs)
        self.cmd_counts = dict.fromkeys(sampled, 0)
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag, 50)
        self.node.create_subscription(
            Clock, '/clock', lambda msg: setattr(self, 'sim_time', msg.clock.sec
                                                 + 1e-9 * msg.clock.nanosec), 10)
        self.node.create_subscription(String, '/fleet_sim/collisions',
                                      lambda msg: self.contacts.append(json.loads(msg.data)),
                                      latched_qos(COLLISION_HISTORY))
        for robot in sampled:
            self.node.create_subscription(Twist, f'/{robot}/cmd_vel',
                                          lambda _msg, r=robot: self._on_cmd(r), 50)
        self._pose_type = PoseStamped
        self.goal_pubs = {r: self.node.create_publisher(PoseStamped, f'/{r}/goal_pose', 10)
                          for r in robots}
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._spinner = threading.Thread(target=self._spin, daemon=True)
        self._spinner.start()

    def _spin(self):
        try:
            self.executor.spin()
        except Exception:   # the context shuts down under the executor at the end
            pass

    def _on_diag(self, msg):
        for status in msg.status:
            if status.name.startswith('fleet_sim: '):
                self.simulating = True
                values = {kv.key: kv.value for kv in status.values}
                self.positions[status.hardware_id] = (float(values['x']), float(values['y']))
            elif status.name.endswith(': control cycle') and status.values:
                with self.lock:
                    self.cycles[status.name.split(':')[0]] = {
                        kv.key: float(kv.value) for kv in status.values}

    def _on_cmd(self, robot):
        with self.lock:
            self.cmd_counts[robot] += 1

    def send_goals(self, goals, readers, timeout):
        """Publishes every goal once all `readers` nodes subscribe to every goal topic, and again
        every second: a publisher can see a subscription matched before that subscriber has
        matched the publisher, and drops the message then (a goal a robot already has changes
        nothing)."""
        deadline = time.monotonic() + timeout
        while any(p.get_subscription_count() < readers for p in self.goal_pubs.values()):
            if time.monotonic() > deadline:
                raise RuntimeError(f'goal topics not matched by {readers} nodes in {timeout:g} s')
            time.sleep(0.1)
        messages = []
        for robot, xy in goals.items():
            msg = self._pose_type()
            msg.header.frame_id = 'map'
            msg.pose.position.x, msg.pose.position.y = float(xy[0]), float(xy[1])
            msg.pose.orientation.w = 1.0
            messages.append((self.goal_pubs[robot], msg))

        def publish():
            stamp = self.node.get_clock().now().to_msg()
            for pub, msg in messages:
                msg.header.stamp = stamp
                pub.publish(msg)
        publish()
        self.node.create_timer(1.0, publish)

    def graph_view(self, robots) -> str:
        """What discovery shows this node: the nodes, and per robot the readers of its
        odometry and the writers of its cmd_vel (the simulator's lockstep waits for both)."""
        node = self.node
        links = {r: (node.count_subscribers(f'/{r}/odom'), node.count_publishers(f'/{r}/cmd_vel'))
                 for r in robots}
        return (f'nodes seen {sorted(node.get_node_names())}, (odom readers, cmd_vel writers) '
                f'{links}')

    def close(self):
        self.executor.shutdown(timeout_sec=2.0)
        self.node.destroy_node()
        self._rclpy.try_shutdown(context=self.context)


def wait_until(predicate, timeout, what, processes=()):
    deadline = time.monotonic() + timeout
    while not predicate():
        for p in processes:
            if p.proc.poll() is not None:
                raise RuntimeError(f'{p.name} exited with status {p.proc.returncode} '
                                   f'(log: {p.log.name})')
        if time.monotonic() > deadline:
            raise RuntimeError(f'{what} within {timeout:g} s')
        time.sleep(0.1)


def run(cfg, goals, specs, seconds, startup_timeout, shard_names):
    """Starts `specs` as processes, waits until every shard in `shard_names` runs cycles, sends
    the goals, measures `seconds`. Returns the numbers of the window."""
    from orca_nav.ros.orca_params import commanded_robots
    shard_specs = [s for s in specs if s.name in shard_names]
    blocks = {s.name: commanded_robots({**s.parameters[-1]}) for s in shard_specs}
    sampled = [block[i] for block in blocks.values()
               for i in sorted(set(np.linspace(0, len(block) - 1, min(len(block),
                                                                     SAMPLED_PER_SHARD)).astype(int)))]
    shard_of = {robot: name for name, block in blocks.items() for robot in block}
    observer = Observer(list(cfg.robot_names), sampled)
    with tempfile.TemporaryDirectory(prefix='bench_shards_') as folder:
        processes = []
        try:
            started = time.perf_counter()
            processes = [Process(spec, folder) for spec in specs]
            wait_until(lambda: observer.simulating and
                       all(observer.cycles.get(n, {}).get('cycles', 0) > 0
                           for n in shard_names) and
                       (not sampled or all(observer.cmd_counts.values())),
                       startup_timeout, 'not every shard ran control cycles', processes)
            startup_s = time.perf_counter() - started
            observer.send_goals(goals, readers=len(shard_specs), timeout=startup_timeout)
            cpu0 = {p.name: p.cpu_s() for p in processes}
            with observer.lock:
                cmd0 = dict(observer.cmd_counts)
            t0, sim0 = time.perf_counter(), observer.sim_time
            time.sleep(seconds)
            elapsed, sim1 = time.perf_counter() - t0, observer.sim_time
            cpu_s = {p.name: p.cpu_s() - cpu0[p.name] for p in processes}
            # Per second of the robots' time: simulated in lockstep, else the wall's.
            if cfg.use_sim_time and (sim0 is None or sim1 is None or sim1 <= sim0):
                raise RuntimeError(f'simulated time did not advance in the {seconds:g} s window')
            sim_elapsed = sim1 - sim0 if cfg.use_sim_time else elapsed
            with observer.lock:
                cmd_rates = [(observer.cmd_counts[r] - cmd0[r]) / sim_elapsed for r in sampled]
            observer.cycles.clear()     # the statuses after the window cover it
            observer.positions.clear()
            wait_until(lambda: all(n in observer.cycles for n in shard_names) and
                       len(observer.positions) == len(cfg.robots), 30.0,
                       'no control-cycle or simulator status after the window', processes)
            for p in processes:
                if p.proc.poll() is not None:
                    raise RuntimeError(f'{p.name} exited during the run (log: {p.log.name})')
        except Exception:
            # The logs go with the folder: what each process said is printed before.
            print(f'bench_shards: simulator up {observer.simulating}, clock {observer.sim_time}, '
                  f'shard cycles {observer.cycles}, sampled commands {observer.cmd_counts}; '
                  f'{observer.graph_view(cfg.robot_names)}', file=sys.stderr)
            for p in processes:
                p.log.flush()
                tail = Path(p.log.name).read_text().splitlines()[-20:]
                print(f'--- {p.name} (exit status {p.proc.poll()}):', *tail, sep='\n',
                      file=sys.stderr)
            raise
        finally:
            for p in processes:
                p.stop()
            observer.close()
    contacts = [c for c in observer.contacts if c['kind'] == 'robot_robot']
    boundary = [c for c in contacts if len({shard_of.get(r) for r in c['robots']}) == 2]
    movers = [r.name for r in cfg.robots if r.name in goals and
              float(np.hypot(*np.subtract(r.start[:2], goals[r.name]))) > 0.3]
    arrived = sum(float(np.hypot(*np.subtract(observer.positions[r], goals[r]))) < 0.3
                  for r in movers)
    return {'startup_s': startup_s, 'seconds': elapsed, 'simulated_seconds': sim_elapsed,
            'cpu_per_s': {n: c / sim_elapsed for n, c in cpu_s.items()},
            'cpu_per_wall_s': {n: c / elapsed for n, c in cpu_s.items()}, 'arrived': arrived,
            'movers': len(movers),
            'shards': {n: observer.cycles[n] for n in shard_names},
            'cmd_vel_hz_p50': float(np.median(cmd_rates)) if cmd_rates else None,
            'cmd_vel_hz_min': float(np.min(cmd_rates)) if cmd_rates else None,
            'robot_contacts': len(contacts),
            'boundary_contacts': len(boundary), 'contact_reports': observer.contacts}


def odometry_bytes(cfg):
    """Serialized size of one robot's odometry message (CDR), as DDS carries it."""
    from builtin_interfaces.msg import Time
    from rclpy.serialization import serialize_message

    from orca_nav.ros.convert import state_to_odom
    name = cfg.robot_names[-1]
    msg = state_to_odom((1.0, 2.0), 0.5, (0.5, 0.0), 0.0, Time(), cfg.global_frame,
                        f'{name}/base_link')
    return len(serialize_message(msg))


def stats(values):
    values = [v for v in values if v is not None]
    return {'min': float(np.min(values)), 'median': float(np.median(values))} if values else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true', help='40 robots, 2 shards, 8 s, one run')
    parser.add_argument('--robots', type=int, default=None)
    parser.add_argument('--shards', type=int, default=None)
    parser.add_argument('--rate', type=float, default=10.0, help='control and odometry rate (Hz)')
    parser.add_argument('--seconds', type=float, default=None, help='measurement window')
    parser.add_argument('--repeats', type=int, default=None)
    parser.add_argument('--startup-timeout', type=float, default=600.0,
                        help='wall seconds for every node to start and connect')
    args = parser.parse_args(argv)
    count = args.robots or (40 if args.quick else 1000)
    shards = args.shards or (2 if args.quick else 4)
    seconds = args.seconds or (8.0 if args.quick else 15.0)
    repeats = args.repeats or (1 if args.quick else 3)
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    from orca_nav.bringup.graph import FLEET_SIM, describe_graph, shard_name
    from orca_nav.ros.orca_params import commanded_robots
    cfg, goals, pairs = fleet_config(count, shards, args.rate)
    specs = describe_graph(cfg, use_sim=True)
    lockstep_cfg = fleet_config(count, shards, args.rate, lockstep=True)[0]
    lockstep_specs = describe_graph(lockstep_cfg, use_sim=True)
    names = [shard_name(k) for k in range(shards)]
    shard_of = {robot: spec.name for spec in specs if spec.name in names
                for robot in commanded_robots(spec.parameters[-1])}
    boundary_pairs = sum(shard_of[a] != shard_of[b] for a, b in pairs)
    sim_spec = next(s for s in specs if s.name == FLEET_SIM)
    full, sim_alone, shard_alone = [], [], []
    for repeat in range(repeats):
        full.append(run(lockstep_cfg, goals, lockstep_specs, seconds, args.startup_timeout,
                        names))
        print(f'run {repeat + 1}/{repeats}: full run done', file=sys.stderr, flush=True)
        sim_alone.append(run(cfg, {}, [sim_spec], seconds, args.startup_timeout, []))
        alone = [sim_spec, next(s for s in specs if s.name == names[0])]
        shard_alone.append(run(cfg, goals, alone, seconds, args.startup_timeout, names[:1]))
        print(f'run {repeat + 1}/{repeats}: parts alone done', file=sys.stderr, flush=True)

    period_ms = 1e3 / args.rate
    cycle_keys = ('cycle_p50_ms', 'cycle_p99_ms', 'cycle_cpu_p50_ms', 'cycle_cpu_p99_ms')
    result = {
        'robots': count, 'shards': shards, 'rate_hz': args.rate, 'seconds': seconds,
        'repeats': repeats, 'quick': bool(args.quick), 'cores': os.cpu_count(),
        'full': {
            'startup_s': stats([r['startup_s'] for r in full]),
            'simulated_seconds': stats([r['simulated_seconds'] for r in full]),
            'per_shard': {n: {k: stats([r['shards'][n].get(k) for r in full])
                              for k in cycle_keys} for n in names},
            'cpu_per_s': {p: stats([r['cpu_per_s'][p] for r in full])
                          for p in full[0]['cpu_per_s']},
            'cpu_per_wall_s': {p: stats([r['cpu_per_wall_s'][p] for r in full])
                               for p in full[0]['cpu_per_wall_s']},
            'cmd_vel_hz_p50': stats([r['cmd_vel_hz_p50'] for r in full]),
            'cmd_vel_hz_min': stats([r['cmd_vel_hz_min'] for r in full]),
            'arrived': [r['arrived'] for r in full], 'movers': full[0]['movers'],
            'contacts': [r['robot_contacts'] for r in full],
            'boundary_contacts': [r['boundary_contacts'] for r in full],
            'contact_reports': [r['contact_reports'] for r in full]},
        'simulator_alone_cpu_per_s': stats([r['cpu_per_s'][FLEET_SIM] for r in sim_alone]),
        'shard_alone': {'cpu_per_s': stats([r['cpu_per_s'][names[0]] for r in shard_alone]),
                        **{k: stats([r['shards'][names[0]].get(k) for r in shard_alone])
                           for k in cycle_keys},
                        'contacts': [r['robot_contacts'] for r in shard_alone]},
        'meeting_pairs': len(pairs), 'meeting_pairs_across_shards': boundary_pairs,
        'odometry_bytes': odometry_bytes(cfg),
        'load_average': os.getloadavg()[0]}
    odom_in = count * args.rate * result['odometry_bytes'] / 1e6
    # The heavier of each part alone and in the full run (the simulator sends to S shards
    # there; a shard avoids moving robots of other shards), in CPU seconds per second of the
    # robots' time: what a machine needs to keep up with real time.
    result['projection'] = {
        'simulator_machine_cores': max(result['simulator_alone_cpu_per_s']['median'],
                                       result['full']['cpu_per_s'][FLEET_SIM]['median']),
        'shard_machine_cores': max([result['shard_alone']['cpu_per_s']['median']] +
                                   [result['full']['cpu_per_s'][n]['median'] for n in names]),
        'shard_cycle_cpu_p99_ms': max(
            [result['shard_alone']['cycle_cpu_p99_ms']['median']] +
            [result['full']['per_shard'][n]['cycle_cpu_p99_ms']['median'] for n in names]),
        'period_ms': period_ms,
        'odometry_into_each_shard_MB_per_s': odom_in,
        'odometry_out_of_simulator_MB_per_s': shards * odom_in}
    report(result, names)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=1))
    return result


def _mm(s, fmt='{:.2f}'):
    return 'n/a' if s is None else f"{fmt.format(s['min'])} / {fmt.format(s['median'])}"


def report(r, names):
    f = r['full']
    print(f"{r['robots']} robots at {r['rate_hz']:g} Hz over {r['shards']} orca_node shards "
          f"(own processes) + fleet_sim_node, {r['seconds']:g} s windows, min / median over "
          f"{r['repeats']} run(s)")
    print(f"scene: {r['meeting_pairs']} pairs of robots meet at cell centres, "
          f"{r['meeting_pairs_across_shards']} of them across shards")
    print(f"(a) full run, in lockstep on the simulator's clock: start-up "
          f"{_mm(f['startup_s'], '{:.1f}')} s; {_mm(f['simulated_seconds'])} simulated s in the "
          f"{r['seconds']:g} s window; cmd_vel per sampled robot per simulated s "
          f"{_mm(f['cmd_vel_hz_p50'])} Hz (median robot), {_mm(f['cmd_vel_hz_min'])} Hz "
          f"(slowest robot); at their goal after the window {f['arrived']} of {f['movers']} "
          f"with one; "
          f"contacts {f['contacts']}, at shard boundaries {f['boundary_contacts']}")
    header = f"{'shard':>18} | {'cycle p50':>15} | {'cycle p99':>15} | {'cpu p50':>15} | " \
             f"{'cpu p99':>15} | {'CPU per sim s':>15} | {'CPU per wall s':>15}"
    print(header)
    print('-' * len(header))
    for n in names:
        s = f['per_shard'][n]
        print(f"{n:>18} | {_mm(s['cycle_p50_ms']):>15} | {_mm(s['cycle_p99_ms']):>15} | "
              f"{_mm(s['cycle_cpu_p50_ms']):>15} | {_mm(s['cycle_cpu_p99_ms']):>15} | "
              f"{_mm(f['cpu_per_s'][n]):>15} | {_mm(f['cpu_per_wall_s'][n]):>15}")
    print(f"{'fleet_sim':>18} | {'':>15} | {'':>15} | {'':>15} | {'':>15} | "
          f"{_mm(f['cpu_per_s']['fleet_sim']):>15} | {_mm(f['cpu_per_wall_s']['fleet_sim']):>15}")
    a = r['shard_alone']
    print(f"(b) alone: simulator with {r['robots']} robots {_mm(r['simulator_alone_cpu_per_s'])} "
          f"CPU s per simulated s; one shard ({r['robots'] // r['shards']}+ of {r['robots']} "
          f"robots) {_mm(a['cpu_per_s'])} CPU s/s (both on the wall clock), cycle p50 "
          f"{_mm(a['cycle_p50_ms'])} ms, p99 {_mm(a['cycle_p99_ms'])} ms (CPU p99 "
          f"{_mm(a['cycle_cpu_p99_ms'])} ms); contacts {a['contacts']} (the other robots stand "
          "uncommanded here: not a boundary test)")
    p = r['projection']
    print(f"projection to {r['shards'] + 1} machines (simulator on its own, one shard each; "
          "each part's heavier median, alone or in the full run): "
          f"simulator machine {p['simulator_machine_cores']:.2f} cores; each shard machine "
          f"{p['shard_machine_cores']:.2f} cores, cycle CPU p99 {p['shard_cycle_cpu_p99_ms']:.1f} "
          f"ms of the {p['period_ms']:.0f} ms period; odometry ({r['odometry_bytes']} B each) "
          f"{p['odometry_into_each_shard_MB_per_s']:.1f} MB/s into each shard machine, "
          f"{p['odometry_out_of_simulator_MB_per_s']:.1f} MB/s out of the simulator's")
    print('cycle = wall clock of a whole control cycle in the shard; cpu = CPU time of its thread '
          'in it; CPU per sim s / wall s = CPU seconds of the whole process (all threads, DDS '
          'included) per simulated / wall second')
    print(f"load average during the run: {r['load_average']:.1f} on {r['cores']} cores")


if __name__ == '__main__':
    main()
