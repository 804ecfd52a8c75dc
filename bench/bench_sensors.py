"""Cost of sensed obstacles and tracked people in the fleet controller's cycle.

For N robots (default 6, 25, 100) spread over an open area, one control cycle is timed (min and
median over repeats, one core): every robot's state, then one `FleetController.step`. The peer,
measured in the same run: the same without scans. With scans, every robot also hands in a new
scan of `sensor_max_points` points (180, the default bound) every cycle (the worst case: a scan
per control period), a ring of points 2 m around it (an enclosing wall each robot sees, so every
point takes part; it simplifies to ~30 edges). A third column adds N/2 tracked people
(non-cooperative agents) and no scans.

Usage: python -m bench.bench_sensors [--quick] [--sizes 6 25 100]
"""
import argparse
import json
import time
from pathlib import Path

import numpy as np

from orca_nav.core.avoidance import NonCooperative
from orca_nav.core.fleet.controller import FleetController
from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.robots import RobotSpec

RESULTS = Path(__file__).resolve().parent / 'results' / 'sensors.json'
POINTS = ControllerParams().sensor_max_points


RING = 2.0 * np.column_stack([np.cos(np.linspace(-np.pi, np.pi, POINTS, endpoint=False)),
                              np.sin(np.linspace(-np.pi, np.pi, POINTS, endpoint=False))])


def fleet_cycle(count, scans, people, seed=0):
    """A controller and one cycle of it at time `now` (states, scans, step)."""
    rng = np.random.default_rng(seed)
    side = 6.0 * np.sqrt(count)
    positions = rng.uniform(0.0, side, (count, 2))
    velocities = rng.uniform(-0.5, 0.5, (count, 2))
    fleet = FleetController([RobotSpec(f'robot{i}') for i in range(count)], ControllerParams())
    for i in range(count):
        fleet.set_goal(i, rng.uniform(0.0, side, 2))
    if people:
        fleet.set_others(NonCooperative(rng.uniform(0.0, side, (count // 2, 2)),
                                        rng.uniform(-0.5, 0.5, (count // 2, 2)),
                                        np.full(count // 2, 0.3)))

    def cycle(now):
        for i in range(count):
            fleet.set_state(i, now, positions[i], velocities[i], 0.0)
        if scans:
            for i in range(count):
                fleet.set_scan(i, now, RING)
        fleet.step(now)
    return cycle


def timed(cycle, repeats):
    times, now = [], 10.0
    cycle(now)          # the first cycle engages the robots
    for _ in range(repeats):
        now += 0.05
        start = time.perf_counter()
        cycle(now)
        times.append(time.perf_counter() - start)
    return min(times), float(np.median(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true')
    parser.add_argument('--sizes', type=int, nargs='+', default=None)
    args = parser.parse_args(argv)
    sizes = args.sizes or ([6, 25] if args.quick else [6, 25, 100])
    repeats = 5 if args.quick else 15
    rows = []
    print(f'{"robots":>6} {"points":>7} {"plain ms":>14} {"scans ms":>14} {"x plain":>8} '
          f'{"people ms":>14}')
    for count in sizes:
        plain = timed(fleet_cycle(count, False, False), repeats)
        scans = timed(fleet_cycle(count, True, False), repeats)
        people = timed(fleet_cycle(count, False, True), repeats)
        row = {'robots': count, 'points': count * POINTS, 'plain_ms': [1e3 * v for v in plain],
               'scans_ms': [1e3 * v for v in scans], 'people_ms': [1e3 * v for v in people],
               'scans_ratio_median': scans[1] / plain[1]}
        rows.append(row)
        print(f'{count:>6} {count * POINTS:>7} {1e3 * plain[0]:6.2f}/{1e3 * plain[1]:6.2f} '
              f'{1e3 * scans[0]:6.2f}/{1e3 * scans[1]:6.2f} {scans[1] / plain[1]:8.2f} '
              f'{1e3 * people[0]:6.2f}/{1e3 * people[1]:6.2f}')
    print('ms: one control cycle, min/median over repeats; x plain: scans / plain, medians.')
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({'points_per_robot': POINTS, 'rows': rows}, indent=2) + '\n')
    print(f'wrote {RESULTS}')


if __name__ == '__main__':
    main()
