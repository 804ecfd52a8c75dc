"""Fingerprints of closed-loop runs, to show that a change to the control cycle's code changed
no command: `bench.bench_generalize` scenes run through `orca_nav.core.sim.closed_loop`, with a
SHA-256 over every command (twists and climb rates, bit for bit) and the run's outcome
(contacts, goals reached, robots finished, makespan).

    python tools/closed_loop_fingerprint.py record before.json [--jobs 2]
    python tools/closed_loop_fingerprint.py compare before.json [--jobs 2]

`compare` runs the same scenes and exits 1 when any fingerprint differs, naming the scene and
the first cycle whose commands differ.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# (family, seed): every kinematic model, map and no map, people, late cycles, lost odometry,
# the planner (trajectory tracking) and the drones' 3-D cycle.
SCENES = [('open_diff_drive', 0), ('open_holonomic', 1), ('office_doors', 0), ('dense_swap', 0),
          ('people_threatening', 0), ('starved', 0), ('odometry_loss', 1), ('drones_people', 0),
          ('warehouse_aisles', 0), ('parking_cars', 0)]


def fingerprint(job):
    from bench.bench_generalize import scene
    from orca_nav.core.sim.closed_loop import _Loop
    family, seed = job
    loop = _Loop(scene(family, seed))
    digest, per_cycle = hashlib.sha256(), []
    step = loop.controller.step

    def recorded(now, *args, **kwargs):
        out = step(now, *args, **kwargs)
        cycle = hashlib.sha256(out.twists.tobytes() + out.climb_rates.tobytes()
                               + out.ran.tobytes() + out.publish.tobytes())
        digest.update(cycle.digest())
        per_cycle.append(cycle.hexdigest()[:16])
        return out

    loop.controller.step = recorded
    result = loop.run()
    return {'scene': f'{family}/{seed}', 'commands': digest.hexdigest(), 'cycles': per_cycle,
            'contacts': [[e.kind, e.time, list(e.robots), list(e.speeds)]
                         for e in result.contacts],
            'reached': result.reached, 'goals': result.goals, 'finished': result.finished,
            'makespan': result.makespan, 'stuck': result.stuck,
            'plan_failures': result.plan_failures}


def run_all(jobs):
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(fingerprint, SCENES, chunksize=1))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('mode', choices=('record', 'compare'))
    parser.add_argument('path', type=Path)
    parser.add_argument('--jobs', type=int, default=2)
    args = parser.parse_args(argv)
    runs = run_all(args.jobs)
    for r in runs:
        print(f"{r['scene']:<24} {r['commands'][:16]} contacts {len(r['contacts'])} reached "
              f"{r['reached']}/{r['goals']} finished {r['finished']} makespan {r['makespan']}")
    if args.mode == 'record':
        args.path.write_text(json.dumps(runs, indent=1))
        return 0
    before = {r['scene']: r for r in json.loads(args.path.read_text())}
    differ = 0
    for r in runs:
        old = before[r['scene']]
        if old == r:
            continue
        differ += 1
        first = next((k for k, (a, b) in enumerate(zip(old['cycles'], r['cycles'])) if a != b),
                     min(len(old['cycles']), len(r['cycles'])))
        changed = [key for key in r if key != 'cycles' and r[key] != old[key]]
        print(f"DIFFERENT {r['scene']}: first at cycle {first}; {', '.join(changed)}")
    print('identical' if not differ else f'{differ} of {len(runs)} scenes differ')
    return 1 if differ else 0


if __name__ == '__main__':
    raise SystemExit(main())
