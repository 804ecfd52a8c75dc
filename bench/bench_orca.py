"""ORCA crowd benchmark: orca_nav's OrcaSimulator.step() against PyPI pyrvo (RVO2 2.0.3).

Workloads (RVO2 Circle parameters: time_step 0.25, neighbor_dist 15, max_neighbors 10,
horizons 10, radius 1.5, max_speed 2):
- circle: N agents evenly on a circle of radius 200*N/250 (5 m spacing), goals antipodal;
- crossing: a square lattice with 4 m spacing, each agent heading to its mirror image through
  the centre, so the crowd meets in the middle.

Preferred velocities: (goal - position) clamped to max_speed, set from arrays for orca_nav,
and with the usual Python loop over agents for pyrvo. Reported: median ms per step for
orca_nav, pyrvo's do_step alone and pyrvo's full step (loop + do_step), their ratios, and the
peak extra memory of one orca_nav step (tracemalloc) per agent.

Usage: python -m bench.bench_orca [--quick] [--sizes 100 1000] [--steps 60]
"""
import argparse
import json
import time
import tracemalloc
from pathlib import Path

import numpy as np

from orca_nav.core.orca import OrcaParams, OrcaSimulator

PARAMS = dict(time_step=0.25, neighbor_dist=15.0, max_neighbors=10, time_horizon=10.0,
              time_horizon_obst=10.0, radius=1.5, max_speed=2.0)
RESULTS = Path(__file__).resolve().parent / 'results' / 'orca.json'


def circle_workload(count):
    radius = 200.0 * count / 250.0
    angle = 2.0 * np.pi * np.arange(count) / count
    start = radius * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    return start, -start


def crossing_workload(count):
    side = int(np.ceil(np.sqrt(count)))
    ix, iy = np.meshgrid(np.arange(side), np.arange(side))
    start = 4.0 * np.stack([ix.ravel(), iy.ravel()], axis=1)[:count].astype(np.float64)
    centre = start.mean(axis=0)
    return start - centre, centre - start


WORKLOADS = {'circle': circle_workload, 'crossing': crossing_workload}


def preferred(positions, goals, max_speed):
    offset = goals - positions
    length = np.sqrt((offset ** 2).sum(axis=1))
    scale = np.minimum(1.0, max_speed / np.maximum(length, 1e-12))
    return offset * scale[:, None]


def time_orca_nav(start, goals, steps):
    sim = OrcaSimulator(OrcaParams(**PARAMS))
    for position in start:
        sim.add_agent(position)
    times = []
    for _ in range(steps):
        tic = time.perf_counter()
        sim.set_pref_velocities(preferred(sim.positions, goals, PARAMS['max_speed']))
        sim.step()
        times.append(time.perf_counter() - tic)
    final_positions = sim.positions
    tracemalloc.start()
    sim.set_pref_velocities(preferred(sim.positions, goals, PARAMS['max_speed']))
    sim.step()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return 1e3 * float(np.median(times)), peak / len(start), final_positions


def time_pyrvo(pyrvo, start, goals, steps):
    sim = pyrvo.RVOSimulator()
    sim.set_time_step(PARAMS['time_step'])
    sim.set_agent_defaults(PARAMS['neighbor_dist'], PARAMS['max_neighbors'], PARAMS['time_horizon'],
                           PARAMS['time_horizon_obst'], PARAMS['radius'], PARAMS['max_speed'])
    for x, y in start:
        sim.add_agent((float(x), float(y)))
    goal_list = goals.tolist()
    max_speed = PARAMS['max_speed']
    full, do_step = [], []
    for _ in range(steps):
        tic = time.perf_counter()
        for i, (gx, gy) in enumerate(goal_list):
            p = sim.get_agent_position(i)
            vx, vy = gx - p.x, gy - p.y
            length = (vx * vx + vy * vy) ** 0.5
            if length > max_speed:
                vx, vy = vx * max_speed / length, vy * max_speed / length
            sim.set_agent_pref_velocity(i, (vx, vy))
        mid = time.perf_counter()
        sim.do_step()
        end = time.perf_counter()
        full.append(end - tic)
        do_step.append(end - mid)
    positions = np.array([sim.get_agent_position(i).to_tuple() for i in range(len(start))])
    return 1e3 * float(np.median(do_step)), 1e3 * float(np.median(full)), positions


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.bench_orca', description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='N = 100, 1000 and fewer steps (< 30 s)')
    parser.add_argument('--sizes', type=int, nargs='+', help='agent counts (default 100 1000 10000)')
    parser.add_argument('--steps', type=int, help='steps per run (default 60, quick 20)')
    args = parser.parse_args(argv)
    sizes = args.sizes or ([100, 1000] if args.quick else [100, 1000, 10000])
    steps = args.steps or (20 if args.quick else 60)
    try:
        import pyrvo
    except ImportError:
        pyrvo = None
        print('pyrvo not installed: peer columns left empty (pip install pyrvo)')
    rows = []
    header = (f"{'workload':<9} {'N':>6} {'orca_nav ms':>12} {'pyrvo do_step':>14} {'pyrvo full':>11} "
              f"{'x do_step':>10} {'x full':>7} {'bytes/agent':>12} {'max |dpos|':>11}")
    print(header)
    print('-' * len(header))
    for name, build in WORKLOADS.items():
        for count in sizes:
            start, goals = build(count)
            ours, bytes_per_agent, our_positions = time_orca_nav(start, goals, steps)
            row = dict(workload=name, n=count, steps=steps, orca_nav_ms=ours,
                       peak_bytes_per_agent=bytes_per_agent)
            if pyrvo is not None:
                peer_step, peer_full, peer_positions = time_pyrvo(pyrvo, start, goals, steps)
                row.update(pyrvo_do_step_ms=peer_step, pyrvo_full_ms=peer_full,
                           ratio_do_step=ours / peer_step, ratio_full=ours / peer_full,
                           max_position_difference=float(np.abs(our_positions - peer_positions).max()))
            rows.append(row)
            peer = (f"{row['pyrvo_do_step_ms']:>14.3f} {row['pyrvo_full_ms']:>11.3f} "
                    f"{row['ratio_do_step']:>10.2f} {row['ratio_full']:>7.2f}" if pyrvo else
                    f"{'-':>14} {'-':>11} {'-':>10} {'-':>7}")
            diff = f"{row['max_position_difference']:>11.2e}" if pyrvo else f"{'-':>11}"
            print(f"{name:<9} {count:>6} {ours:>12.3f} {peer} {bytes_per_agent:>12.0f} {diff}", flush=True)
    print('x = orca_nav time / pyrvo time (lower is better; < 1 means orca_nav is faster).')
    print('max |dpos|: largest position difference to pyrvo after the run (float64 vs float32).')
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({'params': PARAMS, 'rows': rows}, indent=1))
    print(f'wrote {RESULTS}')
    return rows


if __name__ == '__main__':
    main()
