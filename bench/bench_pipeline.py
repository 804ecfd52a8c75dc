"""Pipeline benchmark: goals -> planner_node -> orca_node tracking -> fleet_sim, over real DDS.

1. Plan latency per kinematics: wall time from publishing a goal on /<robot>/goal_pose to the
   first non-zero /<robot>/cmd_vel, with the planner (planner_node -> trajectory -> tracking)
   against the same graph without the planner (orca_node heads straight for the goal): the
   peer is the pipeline's own no-planning path, so the ratio is the price of planning.
2. Fleet makespan on the `warehouse` and `parking` scenarios (`orca-nav demo`: planner + ORCA),
   against a baseline of the same robots driving their planned paths with ORCA off: the same
   DDS graph with orca_node's neighbour set emptied (neighbor_dist 0, time_horizon_obst
   0.01 s), and, without ROS latency, the core tracker and kinematics in a lock-step simulation
   (core.fleet_sim). The baselines' collisions are what ORCA prevents.

`python -m bench.bench_pipeline [--quick]`; writes bench/results/pipeline.json. The DDS runs
take real time (each demo about a minute), so the full run takes about 6 minutes; --quick
measures the diff-drive latency and the core baseline only.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / 'results' / 'pipeline.json'

# One robot per kinematics, on the map of its scenario: (scenario, start, goals).
LATENCY_CASES = {
    'holonomic': ('forest', (2.0, 20.0, 0.0), [(10.0, 20.0, 0.0), (2.0, 20.0, 0.0)]),
    'quadrotor': ('forest', (2.0, 2.0, 0.0), [(14.0, 14.0, 0.0), (2.0, 2.0, 0.0)]),
    'diff_drive': ('warehouse', (2.0, 5.0, 0.0), [(10.0, 5.0, 0.0), (2.0, 8.0, 0.0)]),
    'car': ('parking', (4.0, 6.0, 0.0), [(22.0, 7.0, 0.0), (4.0, 15.0, 1.571)]),
}


# ------------------------------------------------------------------ baseline: ORCA off
def baseline_run(cfg, dt: float = 0.05):
    """The fleet drives its planned paths with ORCA off (core simulation, no ROS).

    Same planner and settings as planner_node, same tracker and velocity mapping as orca_node,
    goals visited in turn (next goal planned from the pose where the previous was reached).
    Returns a dict: makespan (None unless every goal was reached), per-robot finish times,
    robot-robot and robot-map collision events.
    """
    from orca_nav.core.fleet.kinematics import RobotLimits
    from orca_nav.core.fleet.plan_jobs import (
        PlanSettings,
        StartState,
        build_planner,
        plan_reference,
    )
    from orca_nav.core.fleet.robots import RobotSpec
    from orca_nav.core.fleet.tracking import FleetTracker, tracking_twist
    from orca_nav.core.grid import OccupancyGrid
    from orca_nav.core.sim.fleet_sim import FleetSim
    from orca_nav.parameters.shared import SHARED_SPECS

    grid = OccupancyGrid.from_map_yaml(cfg.map_path)
    robots = cfg.robots
    n = len(robots)
    limits = RobotLimits.create([r.kinematics for r in robots], [r.max_speed for r in robots],
                                [r.max_accel for r in robots], [r.max_yaw_rate for r in robots],
                                [r.min_turning_radius for r in robots])
    starts = np.array([r.start for r in robots], dtype=float)
    sim = FleetSim(limits, [r.radius for r in robots], starts, grid=grid)
    specs = [RobotSpec(r.name, **r.field_values()) for r in robots]
    tracker = FleetTracker([s.non_holonomic for s in specs], steered=[s.steered for s in specs])
    settings = PlanSettings.from_values({'safety_margin': SHARED_SPECS['safety_margin'].default,
                                         **cfg.node_parameters['planner_node']})
    goal_index = np.zeros(n, dtype=int)
    finish = [None] * n
    planners = [None] * n
    failures = 0

    def plan_next(i, pose, t):
        nonlocal failures
        goal = np.array(robots[i].goals[goal_index[i]], dtype=float)
        if planners[i] is None:
            planners[i] = build_planner(grid, specs[i], settings)
        result, reference = plan_reference(planners[i], specs[i], settings,
                                           StartState(pose, np.zeros(2), t), goal)
        if reference is None:
            failures += 1
            print(f'baseline {cfg.name}: {robots[i].name} goal {goal_index[i]}: '
                  f'{result.status.value}: {result.message}', file=sys.stderr)
        tracker.set_reference(i, reference, t)

    for i in range(n):
        plan_next(i, starts[i], 0.0)
    robot_events = map_events = 0
    t = 0.0
    tol = cfg.demo.goal_tolerance
    while t < cfg.demo.duration and any(f is None for f in finish):
        poses = sim.poses
        cmd = tracker.update(t, poses[:, :2], poses[:, 2], limits.max_speed, limits.max_yaw_rate)
        for i in range(n):        # mission bookkeeping: a handful of robots, once per step
            if finish[i] is not None:
                continue
            if np.hypot(*(poses[i, :2] - robots[i].goals[goal_index[i]][:2])) <= tol:
                goal_index[i] += 1
                if goal_index[i] == len(robots[i].goals):
                    finish[i] = t       # the tracker keeps it at its last goal
                else:
                    plan_next(i, poses[i], t)
        twist = tracking_twist(cmd.pref_velocity, poses[:, 2], limits, cmd)
        for event in sim.step(dt, twist):
            if event.kind == 'robot_robot':
                robot_events += 1
            else:
                map_events += 1
        t += dt
    done = all(f is not None for f in finish)
    return {'makespan': max(finish) if done else None, 'finish_times': finish,
            'robot_collisions': robot_events, 'map_collisions': map_events,
            'plan_failures': failures}


# ------------------------------------------------------------------ ROS pipeline runs
def with_orca_off(cfg):
    """The same fleet with orca_node's ORCA reduced to nothing: no agent neighbours and an
    obstacle horizon of 0.01 s, so every robot drives its planned path ignoring the others."""
    from orca_nav.bringup.fleet_file import load_fleet_config
    raw = cfg.to_dict()
    raw['orca_node'] = {**raw.get('orca_node', {}), 'neighbor_dist': 0.0, 'max_neighbors': 0,
                        'time_horizon_obst': 0.01}
    raw['name'] = f'{cfg.name}_orca_off'
    return load_fleet_config(raw)


def pipeline_run(cfg):
    """`orca-nav demo` on cfg (planner + ORCA over DDS); returns the fleet part of report.json."""
    from orca_nav.bringup.demo import run_demo

    class Quiet:
        def update(self, *args):
            pass

        def close(self):
            pass

    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        report = run_demo(cfg, Path(folder), progress=Quiet())
    fleet = report['fleet']
    return {'makespan': fleet['makespan'], 'all_reached': fleet['all_reached'],
            'collisions': fleet['collisions'], 'wall_time': time.monotonic() - started}


def latency_run(kinematics: str, planner: bool, repeats: int):
    """Goal -> first non-zero cmd_vel wall times (s) for one stopped robot of `kinematics`."""
    import rclpy
    from geometry_msgs.msg import PoseStamped, Twist
    from nav_msgs.msg import Odometry

    from orca_nav.bringup.fleet_file import load_fleet_config
    from orca_nav.bringup.graph import describe_graph
    from orca_nav.bringup.runner import run_graph
    from orca_nav.bringup.scenarios import scenario_config
    from orca_nav.ros.convert import yaw_to_quaternion

    scenario, start, goals = LATENCY_CASES[kinematics]
    base = scenario_config(scenario)
    robot = {k: getattr(base.robots[0], k) for k in (
        'radius', 'max_speed', 'max_accel', 'max_yaw_rate', 'wheelbase', 'min_turning_radius')}
    # A drone flies at 1 m through the fleet's 3-D map (its goals at z = 0 keep the altitude).
    drone = {'start_z': 1.0} if kinematics == 'quadrotor' else {}
    cfg = load_fleet_config({
        'name': f'latency_{kinematics}', 'map': str(base.map_path),
        **({'map_3d': str(base.map_3d_path)} if drone else {}),
        'robots': [{**robot, 'name': 'robot0', 'kinematics': kinematics, 'start': list(start),
                    **drone}],
        'planner': {'enabled': planner, **({'plan_configured_goals': False} if planner else {})},
        'orca_node': {'trajectories_only': planner}})
    latencies = []
    state = {'moving_at': -1.0, 'pose': None}
    lock = threading.Lock()
    with run_graph(describe_graph(cfg)) as graph:
        node = graph.add_node(rclpy.create_node('latency_probe', context=graph.context))

        def on_cmd(msg):
            if abs(msg.linear.x) + abs(msg.linear.y) + abs(msg.angular.z) > 1e-6:
                with lock:
                    state['moving_at'] = time.monotonic()

        def on_odom(msg):
            with lock:
                state['pose'] = msg.pose.pose

        node.create_subscription(Twist, '/robot0/cmd_vel', on_cmd, 10)
        node.create_subscription(Odometry, '/robot0/odom', on_odom, 10)
        goal_pub = node.create_publisher(PoseStamped, '/robot0/goal_pose', 10)

        def send(x, y, orientation):
            msg = PoseStamped()
            msg.header.frame_id = 'map'
            msg.header.stamp = node.get_clock().now().to_msg()
            msg.pose.position.x, msg.pose.position.y = float(x), float(y)
            msg.pose.orientation = orientation
            goal_pub.publish(msg)
            return time.monotonic()

        def wait_until(condition, timeout):
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                with lock:
                    if condition():
                        return True
                time.sleep(0.002)
            return False

        wait_until(lambda: state['pose'] is not None and goal_pub.get_subscription_count() > 0,
                   30.0)
        time.sleep(1.0)        # the latched map reaches every node
        for k in range(repeats):
            # Stop where it is (a goal at its own pose) and wait until cmd_vel stays zero.
            with lock:
                pose = state['pose']
            if pose is None:
                raise RuntimeError(f'latency {kinematics}: no odometry from fleet_sim')
            send(pose.position.x, pose.position.y, pose.orientation)
            wait_until(lambda: time.monotonic() - state['moving_at'] > 0.7, 15.0)
            x, y, yaw = goals[k % len(goals)]
            sent = send(x, y, yaw_to_quaternion(yaw))
            if wait_until(lambda: state['moving_at'] >= sent, 15.0):
                latencies.append(state['moving_at'] - sent)
            time.sleep(1.5)    # drive a little before stopping again
    return latencies


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.bench_pipeline',
                                     description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true',
                        help='diff-drive latency and the core baseline only (< 30 s)')
    parser.add_argument('--part', choices=('all', 'latency', 'makespan'), default='all',
                        help='run one part; its results replace that part in the JSON file')
    args = parser.parse_args(argv)

    results = {'latency': {}, 'makespan': {}}
    if args.part != 'all' and RESULTS.exists():
        results.update(json.loads(RESULTS.read_text()))
    repeats = 2 if args.quick else 3
    if args.part in ('all', 'latency'):
        results['latency'] = {}
        latency_table(results, args.quick, repeats)
    if args.part in ('all', 'makespan'):
        results['makespan'] = {}
        makespan_table(results, args.quick)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + '\n')
    print(f'wrote {RESULTS}', file=sys.stderr)
    return results


def latency_table(results, quick: bool, repeats: int) -> None:
    print('\nplan latency: goal -> first non-zero cmd_vel (median of '
          f'{repeats}, wall-clock ms)')
    print(f'{"kinematics":<12} {"planner":>9} {"direct":>9} {"ratio":>7}')
    kinds = ('diff_drive',) if quick else tuple(LATENCY_CASES)
    for kind in kinds:
        with_plan = latency_run(kind, True, repeats)
        direct = latency_run(kind, False, repeats)
        row = {'planner_s': with_plan, 'direct_s': direct}
        results['latency'][kind] = row
        p = statistics.median(with_plan) if with_plan else float('nan')
        d = statistics.median(direct) if direct else float('nan')
        ratio = p / d if d > 0 else float('nan')
        print(f'{kind:<12} {p * 1e3:>9.0f} {d * 1e3:>9.0f} {ratio:>7.1f}', flush=True)


def makespan_table(results, quick: bool) -> None:
    from orca_nav.bringup.scenarios import scenario_config
    print('\nfleet makespan (s) and collisions: planner + ORCA over DDS, against the same '
          'robots driving their planned paths with ORCA off (same DDS graph; and the core '
          'simulation without ROS)')
    print(f'{"scenario":<10} {"robots":>6} {"ORCA":>7} {"coll.":>5} {"ORCA off":>9} '
          f'{"coll.":>5} {"ratio":>6} {"core off":>9} {"coll.":>5}')

    def fmt(v):
        return f'{v:.1f}' if v is not None else 'n/a'
    for name in ('warehouse',) if quick else ('warehouse', 'parking'):
        cfg = scenario_config(name)
        core = baseline_run(cfg)
        if quick:      # the DDS runs take the scenario's real time (about a minute each)
            print(f'{name:<10} {len(cfg.robots):>6} {"-":>7} {"-":>5} {"-":>9} {"-":>5} '
                  f'{"-":>6} {fmt(core["makespan"]):>9} '
                  f'{core["robot_collisions"] + core["map_collisions"]:>5}')
            results['makespan'][name] = {'robots': len(cfg.robots), 'core_orca_off': core}
            continue
        ours = pipeline_run(cfg)
        off = pipeline_run(with_orca_off(cfg))
        results['makespan'][name] = {'robots': len(cfg.robots), 'orca': ours, 'orca_off': off,
                                     'core_orca_off': core}
        ratio = (ours['makespan'] / off['makespan']) if ours['makespan'] and off['makespan'] \
            else float('nan')
        core_coll = core['robot_collisions'] + core['map_collisions']
        print(f'{name:<10} {len(cfg.robots):>6} {fmt(ours["makespan"]):>7} '
              f'{ours["collisions"]:>5} {fmt(off["makespan"]):>9} {off["collisions"]:>5} '
              f'{ratio:>6.2f} {fmt(core["makespan"]):>9} {core_coll:>5}', flush=True)


if __name__ == '__main__':
    main()
