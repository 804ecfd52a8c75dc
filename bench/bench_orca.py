"""ORCA crowd benchmark: orca_nav's OrcaSimulator.step() against PyPI pyrvo (RVO2 2.0.3).

Workloads (RVO2 Circle parameters: time_step 0.25, neighbor_dist 15, max_neighbors 10,
horizons 10, radius 1.5, max_speed 2):
- circle: N agents evenly on a circle of radius 200*N/250 (5 m spacing), goals antipodal;
- crossing: a square lattice with 4 m spacing, each agent heading to its mirror image through
  the centre, so the crowd meets in the middle.

Preferred velocities: (goal - position) clamped to max_speed, set from arrays for orca_nav,
and with the usual Python loop over agents for pyrvo. The two simulations run interleaved,
step by step, so they share the machine's load. Each workload runs `--runs` times (fresh
simulators, `--steps` steps each); a run's figures are medians over its steps, and the table
gives the min and the median over runs of: ms per step for orca_nav, pyrvo's do_step alone
and pyrvo's full step (loop + do_step), and the ratio orca_nav / do_step within each run;
plus the peak memory allocated during one orca_nav step (tracemalloc) per agent, and the
ratio of thread CPU times (orca_nav's step / do_step), which a loaded machine distorts less.

Usage: python -m bench.bench_orca [--quick] [--workloads crossing] [--sizes 100 1000] [--steps 60]
                                 [--runs 5]
"""
import argparse
import json
import os
import time
import tracemalloc
from pathlib import Path

import numpy as np

from orca_nav.core.avoidance import OrcaParams, OrcaSimulator

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


def orca_nav_simulator(start):
    sim = OrcaSimulator(OrcaParams(**PARAMS))
    for position in start:
        sim.add_agent(position)
    return sim


def pyrvo_simulator(pyrvo, start):
    sim = pyrvo.RVOSimulator()
    sim.set_time_step(PARAMS['time_step'])
    # pyrvo: defaults must be set before add_agent (otherwise it returns an invalid index).
    sim.set_agent_defaults(PARAMS['neighbor_dist'], PARAMS['max_neighbors'], PARAMS['time_horizon'],
                           PARAMS['time_horizon_obst'], PARAMS['radius'], PARAMS['max_speed'])
    for x, y in start:
        sim.add_agent((float(x), float(y)))
    return sim


def orca_nav_step(sim, goals):
    """(wall, thread CPU) s of one step."""
    tic, cpu = time.perf_counter(), time.thread_time()
    sim.set_pref_velocities(preferred(sim.positions, goals, PARAMS['max_speed']))
    sim.step()
    return time.perf_counter() - tic, time.thread_time() - cpu


def pyrvo_step(sim, goal_list):
    """The usual Python loop setting preferred velocities, then do_step: (full, do_step,
    do_step's thread CPU) s."""
    max_speed = PARAMS['max_speed']
    tic = time.perf_counter()
    for i, (gx, gy) in enumerate(goal_list):
        p = sim.get_agent_position(i)
        vx, vy = gx - p.x, gy - p.y
        length = (vx * vx + vy * vy) ** 0.5
        if length > max_speed:
            vx, vy = vx * max_speed / length, vy * max_speed / length
        sim.set_agent_pref_velocity(i, (vx, vy))
    mid, cpu = time.perf_counter(), time.thread_time()
    sim.do_step()
    end = time.perf_counter()
    return end - tic, end - mid, time.thread_time() - cpu


def peak_bytes_per_agent(sim, goals):
    """Peak memory allocated during one orca_nav step (tracemalloc), per agent."""
    tracemalloc.start()
    orca_nav_step(sim, goals)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / sim.num_agents


def run_once(pyrvo, start, goals, steps):
    """Both simulators step by step, interleaved, so they share the machine's load. Returns
    the run's median ms per step (orca_nav, pyrvo do_step, pyrvo full step, and the thread
    CPU time of orca_nav's step and of do_step) and the simulators."""
    ours = orca_nav_simulator(start)
    peer = pyrvo_simulator(pyrvo, start) if pyrvo is not None else None
    goal_list = goals.tolist()
    our_times, peer_full, peer_do_step, our_cpu, peer_cpu = [], [], [], [], []
    for _ in range(steps):
        wall, cpu = orca_nav_step(ours, goals)
        our_times.append(wall)
        our_cpu.append(cpu)
        if peer is not None:
            full, do_step, do_step_cpu = pyrvo_step(peer, goal_list)
            peer_full.append(full)
            peer_do_step.append(do_step)
            peer_cpu.append(do_step_cpu)
    medians = [1e3 * float(np.median(t)) if t else float('nan')
               for t in (our_times, peer_do_step, peer_full, our_cpu, peer_cpu)]
    return medians, ours, peer


def run_workload(pyrvo, start, goals, steps, runs):
    """`runs` runs of the workload: min and median over runs of each run's median."""
    per_run = []
    for _ in range(runs):
        medians, ours, peer = run_once(pyrvo, start, goals, steps)
        per_run.append(medians)
    ours_ms, do_step_ms, full_ms, ours_cpu_ms, do_step_cpu_ms = np.array(per_run).T
    row = dict(n=len(start), steps=steps, runs=runs,
               orca_nav_ms=float(np.median(ours_ms)), orca_nav_min_ms=float(ours_ms.min()))
    if peer is not None:
        ratio = ours_ms / do_step_ms
        peer_positions = np.array([peer.get_agent_position(i).to_tuple()
                                   for i in range(len(start))])
        row.update(pyrvo_do_step_ms=float(np.median(do_step_ms)),
                   pyrvo_do_step_min_ms=float(do_step_ms.min()),
                   pyrvo_full_ms=float(np.median(full_ms)),
                   ratio_do_step=float(np.median(ratio)), ratio_do_step_min=float(ratio.min()),
                   ratio_do_step_max=float(ratio.max()),
                   ratio_full=float(np.median(ours_ms / full_ms)),
                   orca_nav_cpu_ms=float(np.median(ours_cpu_ms)),
                   pyrvo_do_step_cpu_ms=float(np.median(do_step_cpu_ms)),
                   ratio_do_step_cpu=float(np.median(ours_cpu_ms / do_step_cpu_ms)),
                   ratio_do_step_cpu_max=float((ours_cpu_ms / do_step_cpu_ms).max()),
                   max_position_difference=float(np.abs(ours.positions - peer_positions).max()))
    row['peak_bytes_per_agent'] = peak_bytes_per_agent(ours, goals)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.bench_orca',
                                     description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true',
                        help='N = 100, 1000 and fewer steps (< 30 s)')
    parser.add_argument('--sizes', type=int, nargs='+',
                        help='agent counts (default 100 1000 10000)')
    parser.add_argument('--workloads', nargs='+', choices=list(WORKLOADS), default=list(WORKLOADS),
                        help='workloads to run (default all)')
    parser.add_argument('--steps', type=int, help='steps per run (default 60, quick 20)')
    parser.add_argument('--runs', type=int, help='runs per workload (default 5, quick 2)')
    args = parser.parse_args(argv)
    sizes = args.sizes or ([100, 1000] if args.quick else [100, 1000, 10000])
    steps = args.steps or (20 if args.quick else 60)
    runs = args.runs or (2 if args.quick else 5)
    try:
        import pyrvo
    except ImportError:
        pyrvo = None
        print('pyrvo not installed: peer columns left empty (pip install pyrvo)')
    rows = []
    header = (f"{'workload':<9} {'N':>6} {'orca_nav ms':>13} {'do_step ms':>13} {'full ms':>8} "
              f"{'x do_step':>17} {'x full':>7} {'x cpu':>11} {'bytes/agent':>12} "
              f"{'max |dpos|':>11}")
    print(f'{runs} runs of {steps} steps per workload; min / median over runs')
    print(header)
    print('-' * len(header))
    for name in args.workloads:
        build = WORKLOADS[name]
        for count in sizes:
            start, goals = build(count)
            row = dict(workload=name, **run_workload(pyrvo, start, goals, steps, runs))
            rows.append(row)
            ours = f"{row['orca_nav_min_ms']:.3f}/{row['orca_nav_ms']:.3f}"
            if pyrvo:
                peer = f"{row['pyrvo_do_step_min_ms']:.3f}/{row['pyrvo_do_step_ms']:.3f}"
                ratio = (f"{row['ratio_do_step_min']:.2f}/{row['ratio_do_step']:.2f}"
                         f" (<{row['ratio_do_step_max']:.2f})")
                cpu = f"{row['ratio_do_step_cpu']:.2f} (<{row['ratio_do_step_cpu_max']:.2f})"
                cells = (f"{peer:>13} {row['pyrvo_full_ms']:>8.3f} {ratio:>17} "
                         f"{row['ratio_full']:>7.2f} {cpu:>11}")
                diff = f"{row['max_position_difference']:>11.2e}"
            else:
                cells = f"{'-':>13} {'-':>8} {'-':>17} {'-':>7} {'-':>11}"
                diff = f"{'-':>11}"
            print(f"{name:<9} {count:>6} {ours:>13} {cells} {row['peak_bytes_per_agent']:>12.0f} "
                  f"{diff}", flush=True)
    print('ms: median ms per step of a run, min/median over runs; x do_step: orca_nav / pyrvo '
          'do_step within a run, min/median over runs (< max); x full: median, against pyrvo '
          'including its Python loop; x cpu: the same ratio of thread CPU times (what a loaded '
          'machine does not distort), median over runs (< max). Lower is better.')
    print(f'load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores')
    print('max |dpos|: largest position difference to pyrvo after the last run (float64 vs '
          'float32).')
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({'params': PARAMS, 'rows': rows}, indent=1))
    print(f'wrote {RESULTS}')
    return rows


if __name__ == '__main__':
    main()
