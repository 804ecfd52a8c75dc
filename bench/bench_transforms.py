"""Transform-buffer benchmark: every robot's pose from TF in one call.

For N robots (default 10, 100, 1000), one TransformBuffer holds N namespaced trees as the nodes
keep them: `map -> odom` at 1 Hz (a localization) and `odom -> base_link` at 50 Hz over the
buffer's 10 s. Measured (min and median over repeats, one core):
- `lookup_many`: `map -> odom` and `map -> base_link` of all N robots, each at its own stamp,
  in one call;
- peer (same run, same buffer): the per-robot loop a node would write around a tf2-style
  buffer, N `lookup` calls;
- inserting one transform (what each TF message costs per transform).

Usage: python -m bench.bench_transforms [--quick] [--sizes 10 100 1000]
"""
import argparse
import json
import time
from pathlib import Path

import numpy as np

from orca_nav.core.transforms import TransformBuffer

RESULTS = Path(__file__).resolve().parent / 'results' / 'transforms.json'


def fleet_buffer(count, seed=0):
    rng = np.random.default_rng(seed)
    buf = TransformBuffer()
    for i in range(count):
        for t in np.arange(0.0, 10.0, 1.0):
            yaw = rng.uniform(-np.pi, np.pi)
            buf.set_transform(f'r{i}/map', f'r{i}/odom', t, rng.normal(size=3),
                              [0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2)])
        for t in np.arange(0.0, 10.0, 0.02):
            yaw = rng.uniform(-np.pi, np.pi)
            buf.set_transform(f'r{i}/odom', f'r{i}/base_link', t, rng.normal(size=3),
                              [0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2)])
    return buf


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), float(np.median(times))


def run_size(count, repeats):
    buf = fleet_buffer(count)
    stamps = np.random.default_rng(1).uniform(1.0, 8.9, count)
    targets = [f'r{i}/map' for i in range(count)]
    row = {'robots': count}
    for frame in ('odom', 'base_link'):
        sources = [f'r{i}/{frame}' for i in range(count)]
        assert buf.lookup_many(targets, sources, stamps).ok.all()
        many = timed(lambda: buf.lookup_many(targets, sources, stamps), repeats)
        loop = timed(lambda: [buf.lookup(t, s, x) for t, s, x in zip(targets, sources, stamps)],
                     max(1, repeats // 5))
        row[f'map_{frame}'] = {'lookup_many_ms': [1e3 * v for v in many],
                               'per_robot_lookups_ms': [1e3 * v for v in loop],
                               'speedup_min': loop[0] / many[0]}
    inserts = 2000
    stamp0 = 10.0
    one = timed(lambda: [buf.set_transform('r0/odom', 'r0/base_link', stamp0 + k * 1e-4,
                                           [0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0])
                         for k in range(inserts)], 1)
    row['insert_us'] = 1e6 * one[0] / inserts
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true')
    parser.add_argument('--sizes', type=int, nargs='+', default=None)
    args = parser.parse_args(argv)
    sizes = args.sizes or ([10, 100] if args.quick else [10, 100, 1000])
    repeats = 5 if args.quick else 20
    rows = [run_size(n, repeats) for n in sizes]
    print(f"{'robots':>7} {'chain':>15} {'lookup_many ms':>15} {'N lookups ms':>13} {'ratio':>7}")
    for row in rows:
        for frame in ('odom', 'base_link'):
            r = row[f'map_{frame}']
            print(f"{row['robots']:>7} {'map->' + frame:>15} {r['lookup_many_ms'][0]:>15.3f} "
                  f"{r['per_robot_lookups_ms'][0]:>13.3f} {r['speedup_min']:>7.1f}")
    print('insert: ' + ', '.join(f"{row['insert_us']:.1f} us ({row['robots']} robots)"
                                 for row in rows))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(rows, indent=2))


if __name__ == '__main__':
    main()
