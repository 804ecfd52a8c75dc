"""3-D ORCA benchmark: orca_nav's compute_velocities on (N, 3) arrays against rvo23d
(PyPI jt-pyrvo23d, which bundles RVO2-3D), driven in the same run.

Workloads (the parameters of the RVO2-3D reference run cube_crossing_125: time_step 0.1,
neighbor_dist 10, max_neighbors 12, time_horizon 4, radius 0.6, max_speed 1.5):
- lattice: a box lattice with 3 m spacing (10 x 10 x 10 for N = 1,000, 25 x 20 x 20 for
  N = 10,000), goal = -start, so the crowd meets in the middle;
- sphere: N agents on a Fibonacci sphere (about 3 m apart), goal = -start (the symmetric case).

Both simulations start from the same state and run interleaved, step by step, so they share the
machine's load. orca_nav's step is: preferred velocities from arrays (RVO2-3D reference rule,
float32), compute_velocities, position update (float32, as RVO2-3D). rvo23d's doStep is timed
alone, and its full step also includes the Python loops reading positions and setting the same
float32 preferred velocities. Each configuration is run `--repeats` times (fresh start each time);
per run the median step time is taken, and the table shows the min and the median of those over the
runs. Since orca_nav matches RVO2-3D bit for bit, the positions of both simulations after each run
are compared too (max |dpos|).

Usage: python -m bench.bench_orca3d [--quick] [--sizes 1000 10000] [--steps 40] [--repeats 5]
"""
import argparse
import json
import time
from pathlib import Path

import numpy as np

from orca_nav.core import OrcaParams, compute_velocities

PARAMS = dict(time_step=0.1, neighbor_dist=10.0, max_neighbors=12, time_horizon=4.0,
              time_horizon_obst=4.0, radius=0.6, max_speed=1.5)
RESULTS = Path(__file__).resolve().parent / 'results' / 'orca3d.json'
LATTICE_SHAPES = {125: (5, 5, 5), 1000: (10, 10, 10), 10000: (25, 20, 20)}


def lattice_workload(count):
    shape = LATTICE_SHAPES.get(count) or (int(np.ceil(count ** (1.0 / 3.0))),) * 3
    cells = np.stack(np.meshgrid(*[np.arange(n) for n in shape], indexing='ij'), -1).reshape(-1, 3)
    start = 3.0 * cells[:count].astype(np.float64)
    start -= start.mean(axis=0)
    return start.astype(np.float32), (-start).astype(np.float32)


def sphere_workload(count):
    radius = np.sqrt(count * 9.0 / (4.0 * np.pi))  # about 3 m between neighbours
    z = 1.0 - (2.0 * np.arange(count) + 1.0) / count
    azimuth = np.arange(count) * np.pi * (3.0 - np.sqrt(5.0))
    ring = np.sqrt(1.0 - z * z)
    start = radius * np.stack([ring * np.cos(azimuth), ring * np.sin(azimuth), z], axis=1)
    return start.astype(np.float32), (-start).astype(np.float32)


WORKLOADS = {'lattice': lattice_workload, 'sphere': sphere_workload}


def preferred(positions, goals, max_speed):
    """The reference rule in float32: toward the goal at max_speed, the offset itself within 1 m."""
    offset = goals - positions
    dist_sq = (offset * offset).sum(axis=1)
    far = dist_sq > 1.0
    pref = offset.copy()
    pref[far] = offset[far] / np.sqrt(dist_sq[far])[:, None] * np.float32(max_speed)
    return pref


def peer_simulator(rvo23d, start):
    p = PARAMS
    sim = rvo23d.PyRVOSimulator(p['time_step'], p['neighbor_dist'], p['max_neighbors'],
                                p['time_horizon'], p['radius'], p['max_speed'], (0.0, 0.0, 0.0))
    for position in start.tolist():
        sim.addAgent(tuple(position))
    return sim


def peer_step(sim, goals):
    """rvo23d's step: read the positions and set the preferred velocities (the same float32
    rule, so both simulations stay identical), then doStep: (full, doStep) s."""
    tic = time.perf_counter()
    count = len(goals)
    positions = np.array([sim.getAgentPosition(i) for i in range(count)], dtype=np.float32)
    for i, velocity in enumerate(preferred(positions, goals, PARAMS['max_speed']).tolist()):
        sim.setAgentPrefVelocity(i, tuple(velocity))
    mid = time.perf_counter()
    sim.doStep()
    end = time.perf_counter()
    return end - tic, end - mid


def run_once(rvo23d, start, goals, steps, params):
    """One run of `steps` steps, both simulations interleaved. Median s per step of each."""
    pos, vel = start.copy(), np.zeros_like(start)
    step = np.float32(PARAMS['time_step'])
    peer = peer_simulator(rvo23d, start) if rvo23d is not None else None
    ours, full, do_step = [], [], []
    for _ in range(steps):
        tic = time.perf_counter()
        vel = compute_velocities(pos, vel, preferred(pos, goals, PARAMS['max_speed']),
                                 params).astype(np.float32)
        pos = pos + vel * step
        ours.append(time.perf_counter() - tic)
        if peer is not None:
            f, d = peer_step(peer, goals)
            full.append(f)
            do_step.append(d)
    result = dict(ours=float(np.median(ours)))
    if peer is not None:
        peer_pos = np.array([peer.getAgentPosition(i) for i in range(len(start))])
        result.update(full=float(np.median(full)), do_step=float(np.median(do_step)),
                      dpos=float(np.abs(pos - peer_pos).max()))
    return result


def run_workload(rvo23d, start, goals, steps, repeats):
    params = OrcaParams(**PARAMS)
    runs = [run_once(rvo23d, start, goals, steps, params) for _ in range(repeats)]
    row = dict(n=len(start), steps=steps, repeats=repeats)
    keys = ('ours', 'do_step', 'full') if rvo23d is not None else ('ours',)
    for key in keys:
        values = [1e3 * r[key] for r in runs]
        row[f'{key}_min_ms'] = float(np.min(values))
        row[f'{key}_median_ms'] = float(np.median(values))
    if rvo23d is not None:
        row['ratio_do_step_median'] = row['ours_median_ms'] / row['do_step_median_ms']
        row['ratio_do_step_min'] = row['ours_min_ms'] / row['do_step_min_ms']
        row['ratio_full_median'] = row['ours_median_ms'] / row['full_median_ms']
        row['max_position_difference'] = max(r['dpos'] for r in runs)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.bench_orca3d',
                                     description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='N = 1000 only, fewer steps and runs')
    parser.add_argument('--sizes', type=int, nargs='+', help='agent counts (default 1000 10000)')
    parser.add_argument('--steps', type=int, help='steps per run (default 40, quick 10)')
    parser.add_argument('--repeats', type=int, help='runs per configuration (default 5, quick 2)')
    parser.add_argument('--workloads', nargs='+', choices=sorted(WORKLOADS),
                        default=list(WORKLOADS))
    args = parser.parse_args(argv)
    sizes = args.sizes or ([1000] if args.quick else [1000, 10000])
    steps = args.steps or (10 if args.quick else 40)
    repeats = args.repeats or (2 if args.quick else 5)
    try:
        import rvo23d
    except ImportError:
        rvo23d = None
        print('rvo23d not installed: peer columns left empty (pip install jt-pyrvo23d)')
    header = (f"{'workload':<8} {'N':>6} {'orca_nav ms min/med':>20} {'doStep ms min/med':>18} "
              f"{'full ms med':>12} {'x doStep med':>13} {'x min':>6} {'x full':>7} "
              f"{'max |dpos|':>11}")
    print(f'{steps} steps per run, {repeats} runs; per run the median step')
    print(header)
    print('-' * len(header))
    rows = []
    for name in args.workloads:
        for count in sizes:
            start, goals = WORKLOADS[name](count)
            row = dict(workload=name, **run_workload(rvo23d, start, goals, steps, repeats))
            rows.append(row)
            ours = f"{row['ours_min_ms']:.1f} / {row['ours_median_ms']:.1f}"
            if rvo23d is not None:
                peer = (f"{row['do_step_min_ms']:.1f} / {row['do_step_median_ms']:.1f}"
                        f"{'':>1}{row['full_median_ms']:>12.1f} "
                        f"{row['ratio_do_step_median']:>13.2f} "
                        f"{row['ratio_do_step_min']:>6.2f} {row['ratio_full_median']:>7.2f} "
                        f"{row['max_position_difference']:>11.2e}")
            else:
                peer = '-'
            print(f'{name:<8} {count:>6} {ours:>20} {peer:>18}', flush=True)
    print('x = orca_nav / rvo23d (lower is better; < 1: orca_nav faster). x min: fastest run '
          'against fastest run. max |dpos|: positions of the two simulations after each run.')
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({'params': PARAMS, 'steps': steps, 'repeats': repeats,
                                   'rows': rows}, indent=1))
    print(f'wrote {RESULTS}')
    return rows


if __name__ == '__main__':
    main()
