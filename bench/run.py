"""Runs the benchmarks: `python -m bench.run [--quick] [area ...]` (default: all areas).

Each area is a module bench/bench_<area>.py whose main(argv) prints a table with the peer measured
in the same run and the ratio, and writes bench/results/<area>.json.
"""
import argparse
import importlib
import sys
import time

AREAS = ('orca', 'orca3d', 'kinodynamic', 'planner3d', 'hybrid', 'cycle', 'fleet', 'pipeline',
         'transforms', 'noisy_map', 'sensors', 'people', 'shards', 'tf_load', 'generalize',
         'replan')


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.run',
                                     description=__doc__.splitlines()[0])
    parser.add_argument('areas', nargs='*', metavar='area',
                        help=f"one or more of {', '.join(AREAS)} (default: all)")
    parser.add_argument('--quick', action='store_true', help='smaller sizes, fewer repeats')
    args = parser.parse_args(argv)
    unknown = [a for a in args.areas if a not in AREAS]
    if unknown:
        parser.error(f"unknown area {unknown[0]!r}; choose from {', '.join(AREAS)}")
    failed = []
    for area in args.areas or AREAS:
        print(f'\n=== bench {area} ===', flush=True)
        start = time.perf_counter()
        try:
            importlib.import_module(f'bench.bench_{area}').main(['--quick'] if args.quick else [])
        except Exception as err:  # report every area even when one breaks
            failed.append(area)
            print(f'bench {area} FAILED: {type(err).__name__}: {err}', file=sys.stderr)
        print(f'=== {area}: {time.perf_counter() - start:.1f} s', flush=True)
    if failed:
        sys.exit(f"benchmarks failed: {', '.join(failed)}")


if __name__ == '__main__':
    main()
