"""Planning cost at fleet scale: one plan, the fleet's coordination and one replan, at 20 to
500 diff-drive robots.

Each size N: a square warehouse whose area grows with the fleet (rows of 8 m x 1 m shelves,
1.8 m aisles, 2.5 m cross-aisles, about AREA_PER_ROBOT m^2 a robot), N robots at random free
starts, each with a goal at a random free point. The fleet supervisor (`FleetPlanner`, as
planner_node hosts it, coordination on) gets every goal at t = 0 and each query runs here
(`plan_jobs.run_request`, what planner_node's worker thread runs: hybrid A* with the analytic
Reeds-Shepp shot). Measured, in one process on the wall clock:

- plan: one query's time, median / p95 / max over the N first plans, and their sum: what a
  batch of N goals queues on planner_node's one worker (the map's planner is built by the
  first query, which is the max);
- coordinate: `check_progress`, the supervisor's per-cycle work (progress along every plan,
  stuck watch, the coordinator's order and gates over every pair of paths that come near
  each other): the first call (every conflict table built) and the median of the next ones;
- replan: one robot gets a new goal (set_goal, its query, finish, the next check_progress with
  its conflict tables against every other path built anew): median over REPLANS robots, and
  the part of it that is not the query.

No peer plans a coordinated fleet here (Open-RMF's traffic schedule is not on PyPI); the
query's peer is OMPL's in `bench hybrid`.

Usage: python -m bench.bench_replan [--quick] [--sizes 20 50 200 500] [--seed 0]
"""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from bench.bench_generalize import fleet, free_points
from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.fleet_planner import Actions, FleetPlanner, ReplanPolicy
from orca_nav.core.fleet.plan_jobs import PlanSettings, StartState, run_request
from orca_nav.core.grid import OccupancyGrid

RESULTS = Path(__file__).resolve().parent / 'results' / 'replan.json'
SIZES = (20, 50, 200, 500)
QUICK_SIZES = (20, 50)
AREA_PER_ROBOT = 12.0       # m^2 of warehouse per robot (shelves included)
REPLANS = 10
STEADY_CALLS = 10


def warehouse(robots: int) -> OccupancyGrid:
    """A square warehouse for `robots` robots (see the module docstring)."""
    side = max(20.0, math.sqrt(robots * AREA_PER_ROBOT))
    shelf, depth, aisle, cross = 8.0, 1.0, 1.8, 2.5
    rects = []
    x = 3.0
    while x + shelf <= side - 3.0:
        y = 3.0
        while y + depth <= side - 3.0:
            rects.append((x, y, x + shelf, y + depth))
            y += depth + aisle
        x += shelf + cross
    return OccupancyGrid.from_rectangles((0.0, 0.0, side, side), 0.1, rects, wall=0.3)


class _Fleet:
    """The supervisor and its queries, every query timed."""

    def __init__(self, robots, grid: OccupancyGrid):
        self.planner = FleetPlanner({r.name: r for r in robots},
                                    PlanSettings(safety_margin=ControllerParams().safety_margin),
                                    ReplanPolicy(goal_tolerance=0.3, coordinate=True))
        self.planner.set_map(grid, 0.0)
        self.query_s: list = []
        self.failed = 0

    def run(self, actions: Actions, now: float) -> None:
        """Runs every query the actions ask for, and those their outcomes ask for."""
        while actions.plan:
            requests, actions = actions.plan, Actions()
            for request in requests:
                started = time.perf_counter()
                outcome = run_request(request)
                self.query_s.append(time.perf_counter() - started)
                self.failed += outcome.reference is None
                actions += self.planner.finish(outcome, now)


def _timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def measure(robots_count: int, seed: int) -> dict:
    rng = np.random.default_rng([seed, robots_count])
    grid = warehouse(robots_count)
    robots = fleet(['diff_drive'] * robots_count)
    radii = np.array([r.radius for r in robots])
    starts = free_points(rng, grid, robots_count, radii + 0.35, radii + 0.3)
    goals = free_points(rng, grid, robots_count, radii + 0.35, radii + 0.3)
    yaw = rng.uniform(-math.pi, math.pi, robots_count)
    f = _Fleet(robots, grid)
    for r, (x, y), heading in zip(robots, starts, yaw):
        f.planner.set_start_state(r.name, StartState((x, y, heading), (0.0, 0.0), 0.0), 0.0)
    actions = Actions()
    for r, (x, y) in zip(robots, goals):
        actions += f.planner.set_goal(r.name, (x, y, 0.0), 0.0)
    f.run(actions, 0.0)
    plans = np.array(f.query_s)
    now = 0.05
    first = _timed(lambda: f.run(f.planner.check_progress(now), now))
    steady = []
    for _ in range(STEADY_CALLS):
        now += 0.05
        steady.append(_timed(lambda: f.run(f.planner.check_progress(now), now)))
    replans, queries = [], []
    count = min(REPLANS, robots_count)
    fresh = free_points(rng, grid, count, radii[:count] + 0.35, radii[:count] + 0.3,
                        avoid=np.vstack([starts, goals]), avoid_radius=0.6)
    for r, (x, y) in zip(robots[:count], fresh):
        now += 0.05
        asked = len(f.query_s)

        def replan():
            f.run(f.planner.set_goal(r.name, (x, y, 0.0), now), now)
            f.run(f.planner.check_progress(now), now)
        replans.append(_timed(replan))
        queries.append(sum(f.query_s[asked:]))
    replans, queries = np.array(replans), np.array(queries)
    return {'robots': robots_count, 'map_m': round(grid.extent[1][0] - grid.extent[0][0], 1),
            'plans': len(plans), 'replans': count, 'failed_plans': f.failed,
            'plan_median_ms': 1e3 * float(np.median(plans)),
            'plan_p95_ms': 1e3 * float(np.percentile(plans, 95)),
            'plan_max_ms': 1e3 * float(plans.max()), 'plans_total_s': float(plans.sum()),
            'coordinate_first_ms': 1e3 * first,
            'coordinate_median_ms': 1e3 * float(np.median(steady)),
            'replan_median_ms': 1e3 * float(np.median(replans)),
            'replan_without_query_median_ms': 1e3 * float(np.median(replans - queries))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help=f'sizes {QUICK_SIZES}')
    parser.add_argument('--sizes', type=int, nargs='+')
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv)
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    print(f'{"robots":>6} {"map m":>6} {"plan ms med/p95/max":>22} {"batch s":>8} {"failed":>6} '
          f'{"coordinate ms 1st/med":>22} {"replan ms (no query)":>21}')
    rows = []
    for n in sizes:
        r = measure(n, args.seed)
        rows.append(r)
        print(f'{n:>6} {r["map_m"]:>6} {r["plan_median_ms"]:>8.1f}/{r["plan_p95_ms"]:.1f}/'
              f'{r["plan_max_ms"]:<6.0f} {r["plans_total_s"]:>8.1f} {r["failed_plans"]:>6} '
              f'{r["coordinate_first_ms"]:>11.1f}/{r["coordinate_median_ms"]:<10.2f} '
              f'{r["replan_median_ms"]:>8.1f} ({r["replan_without_query_median_ms"]:.1f})',
              flush=True)
    print('plan: one query (the first builds the map\'s planner: max); batch: all N first plans '
          "in a row, as planner_node's worker runs them; coordinate: the supervisor's per-cycle "
          'check_progress; replan: a new goal for one robot until its gate is known')
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({'seed': args.seed, 'sizes': rows}, indent=2) + '\n')
    print(f'wrote {RESULTS}')


if __name__ == '__main__':
    main()
