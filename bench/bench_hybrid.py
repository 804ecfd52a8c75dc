"""Hybrid A* benchmark on the parking_2d map: orca_nav against OMPL RRTConnect and BIT*, same run.

Queries: the five of ``shared/refdata/planners/parking_2d.npz`` (car 4.5 x 2.0 m, rear overhang
0.9 m, wheelbase 2.7 m, minimum turning radius 5 m; poses are rear-axle centres).

* orca_nav: ``HybridAStar`` with default ``HybridParams``, deterministic; each query is planned
  ``--repeats`` times and the median wall-clock ``plan()`` time is reported (the per-goal
  distance field is part of it; the per-map precomputation - clearance field, heuristic graph,
  Reeds-Shepp table - is reported separately).
* OMPL (PyPI ``ompl``), as in the refdata README: ``ReedsSheppStateSpace(5)``, bounds
  [0, 60] x [0, 40], yaw wrapped to [-pi, pi), edges checked every 0.1 m, validity = the car
  footprint free of occupied cells (a clearance shortcut in plain Python, then the sample test).
  RRTConnect: time and length of its first solution (cap ``--rrt-cap`` s). BIT*: time of the
  first solution (the first moment ``bestCost()`` is finite) and length of the best path at
  ``--bitstar-budget`` s. ``--seeds`` runs each (seed set once per process, so runs differ but
  are not reproducible one by one).
* Every returned path is re-checked: interpolated at 0.05 m, the footprint sampled every 0.05 m
  on its edges and 0.1 m inside, looked up in the grid (no clearance shortcut).

Reported per query: success, median time, median path length, median direction switches, and
orca_nav's length over the best peer's median length. Targets (issue 4): 5/5 solved, median
plan time <= 200 ms, length <= 1.05 x best peer.

Usage: python -m bench.bench_hybrid [--quick] [--repeats 5] [--seeds 5]
"""
import argparse
import json
import math
import statistics
import time
from pathlib import Path

import numpy as np

from orca_nav.core.geometry import wrap_angle
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.planning.footprint import Footprint, FootprintChecker
from orca_nav.core.planning.hybrid_astar import HybridAStar, HybridParams

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT.parent / 'shared' / 'refdata' / 'planners' / 'parking_2d.npz'
RESULTS = ROOT / 'bench' / 'results' / 'hybrid.json'
CAR = dict(wheelbase=2.7, min_turning_radius=5.0, footprint_length=4.5, footprint_width=2.0,
           rear_overhang=0.9)


def load_map():
    m = np.load(MAP)
    grid = OccupancyGrid(m['grid'] > 50, float(m['resolution']), m['origin'])
    return grid, [str(n) for n in m['query_names']], m['queries']


def posthoc_free(grid, poses):
    """Footprint check of poses (K, 3) by samples alone, no shortcut (edges every resolution / 2,
    interior every resolution: 0.05 m and 0.1 m here, the refdata README's post-hoc check)."""
    checker = FootprintChecker(grid, Footprint(CAR['footprint_length'], CAR['footprint_width'],
                                               CAR['rear_overhang']))
    return all(checker.free_by_samples(poses[i:i + 500]).all() for i in range(0, len(poses), 500))


def switches_of(poses):
    """Direction switches of a pose sequence: sign changes of the displacement along the heading."""
    d = np.diff(poses[:, :2], axis=0)
    along = d[:, 0] * np.cos(poses[:-1, 2]) + d[:, 1] * np.sin(poses[:-1, 2])
    sign = np.sign(along[np.abs(along) > 1e-6])
    return int(np.count_nonzero(sign[1:] != sign[:-1]))


def run_orca_nav(grid, names, queries, repeats):
    t0 = time.perf_counter()
    grid.clearance()
    clearance_time = time.perf_counter() - t0
    planner = HybridAStar(grid, HybridParams(**CAR))
    rows = {}
    for name, q in zip(names, queries):
        times, cpu, result = [], [], None
        for _ in range(repeats):
            c0 = time.process_time()
            result = planner.plan(q[:3], q[3:])
            cpu.append(time.process_time() - c0)
            times.append(result.stats.plan_time)
        row = dict(success=result.success, status=result.status.name,
                   time_s=statistics.median(times), cpu_s=statistics.median(cpu),
                   expansions=result.stats.expanded_nodes)
        if result.success:
            poses, _ = result.path.sample(0.05)
            row.update(length=result.path.length, switches=result.path.direction_switches,
                       posthoc_collision_free=posthoc_free(grid, poses))
        rows[name] = row
    return rows, dict(clearance_s=clearance_time, planner_init_s=planner.precompute_time)


class OmplPeer:
    """OMPL geometric planners in ReedsSheppStateSpace(5) with the car validity checker."""

    def __init__(self, grid, seed):
        import ompl.base as ob
        import ompl.geometric as og
        import ompl.util as ou
        ou.setLogLevel(ou.LOG_NONE)
        ou.RNG.setSeed(seed)
        self.ob, self.og = ob, og
        self.grid = grid
        self.exact = FootprintChecker(grid, Footprint(4.5, 2.0, 0.9))
        self.clear = grid.clearance().astype(float)
        self.res = grid.resolution
        self.half_diag = math.hypot(2.25, 1.0)
        self.max_extent = math.hypot(60.0, 40.0)

    def valid(self, state):
        x, y, yaw = state.getX(), state.getY(), state.getYaw()
        cx, cy = x + 1.35 * math.cos(yaw), y + 1.35 * math.sin(yaw)
        ix, iy = int(cx / self.res), int(cy / self.res)
        if 0 <= ix < self.clear.shape[1] and 0 <= iy < self.clear.shape[0]:
            c = self.clear[iy, ix]
            if c - self.res * 1.5 > self.half_diag:     # clear of every occupied square
                return True
            if c + self.res < 1.0:                      # an occupied cell under the car
                return False
        return bool(self.exact.free_xyyaw(np.array([x]), np.array([y]), np.array([yaw]))[0])

    def _setup(self, q):
        ob, og = self.ob, self.og
        space = ob.ReedsSheppStateSpace(5.0)
        bounds = ob.RealVectorBounds(2)
        bounds.setLow(0, 0.0)
        bounds.setHigh(0, 60.0)
        bounds.setLow(1, 0.0)
        bounds.setHigh(1, 40.0)
        space.setBounds(bounds)
        ss = og.SimpleSetup(space)
        ss.setStateValidityChecker(self.valid)
        ss.getSpaceInformation().setStateValidityCheckingResolution(0.1 / self.max_extent)
        start, goal = space.allocState(), space.allocState()
        for state, pose in ((start, q[:3]), (goal, q[3:])):
            state.setX(float(pose[0]))
            state.setY(float(pose[1]))
            state.setYaw(float(wrap_angle(pose[2])))
        ss.setStartAndGoalStates(start, goal)
        return ss, space

    def _result(self, ss, elapsed, cpu):
        if not ss.haveExactSolutionPath():
            return dict(success=False, time_s=elapsed, cpu_s=cpu)
        path = ss.getSolutionPath()
        length = path.length()
        path.interpolate(max(2, int(math.ceil(length / 0.05)) + 1))
        poses = np.array([[s.getX(), s.getY(), s.getYaw()] for s in path.getStates()])
        return dict(success=True, time_s=elapsed, cpu_s=cpu, length=length,
                    switches=switches_of(poses),
                    posthoc_collision_free=posthoc_free(self.grid, poses))

    def rrt_connect(self, q, cap):
        ss, _ = self._setup(q)
        ss.setPlanner(self.og.RRTConnect(ss.getSpaceInformation()))
        t0, c0 = time.perf_counter(), time.process_time()
        ss.solve(cap)
        return self._result(ss, time.perf_counter() - t0, time.process_time() - c0)

    def bit_star(self, q, budget):
        ss, _ = self._setup(q)
        planner = self.og.BITstar(ss.getSpaceInformation())
        ss.setPlanner(planner)
        ss.setup()
        t0, c0 = time.perf_counter(), time.process_time()
        first = []

        def stop():
            now = time.perf_counter() - t0
            if not first and math.isfinite(planner.bestCost().value()):
                first.append((now, time.process_time() - c0))
            return now >= budget

        ss.solve(self.ob.PlannerTerminationCondition(stop))
        out = self._result(ss, time.perf_counter() - t0, time.process_time() - c0)
        if out['success'] and first:
            out['time_s'], out['cpu_s'] = first[0]
        return out


def summarize(runs):
    ok = [r for r in runs if r['success']]

    def med(key):
        return statistics.median(r[key] for r in ok) if ok else None
    return dict(success=len(ok), runs=len(runs), time_s=med('time_s'), cpu_s=med('cpu_s'),
                length=med('length'), switches=med('switches'),
                posthoc_clean=sum(r['posthoc_collision_free'] for r in ok))


def run_peers(grid, names, queries, seeds, rrt_cap, bitstar_budget):
    try:
        import ompl.base  # noqa: F401
    except ImportError:
        return None
    out = {'RRTConnect': {}, 'BITstar': {}}
    peer = OmplPeer(grid, seed=1)
    for name, q in zip(names, queries):
        out['RRTConnect'][name] = summarize([peer.rrt_connect(q, rrt_cap) for _ in range(seeds)])
        out['BITstar'][name] = summarize([peer.bit_star(q, bitstar_budget) for _ in range(seeds)])
    return out


def fmt(v, spec):
    width = ''.join(ch for ch in spec.split('.')[0] if ch.isdigit())
    return format('-', '>' + width) if v is None else format(v, spec)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true', help='fewer repeats and peer runs (< 30 s)')
    parser.add_argument('--repeats', type=int, default=5, help='orca_nav plans per query')
    parser.add_argument('--seeds', type=int, default=5, help='OMPL runs per planner and query')
    parser.add_argument('--rrt-cap', type=float, default=10.0, help='RRTConnect time cap (s)')
    parser.add_argument('--bitstar-budget', type=float, default=1.0, help='BIT* time budget (s)')
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.seeds, args.rrt_cap = 2, 1, 5.0
    grid, names, queries = load_map()
    ours, precompute = run_orca_nav(grid, names, queries, args.repeats)
    peers = run_peers(grid, names, queries, args.seeds, args.rrt_cap, args.bitstar_budget)

    print(f'parking_2d, {len(names)} queries; orca_nav precompute per map: clearance '
          f'{precompute["clearance_s"] * 1000:.0f} ms, planner init '
          f'{precompute["planner_init_s"] * 1000:.0f} ms '
          f'(not in plan times)')
    header = (f'{"query":18s} {"planner":11s} {"ok":>5s} {"time ms":>8s} {"cpu ms":>7s} '
              f'{"length m":>9s} {"switch":>6s} {"clean":>5s}')
    print(header)
    print('-' * len(header))
    ratios = {}
    for name in names:
        r = ours[name]
        print(f'{name:18s} {"orca_nav":11s} {("1/1" if r["success"] else "0/1"):>5s} '
              f'{r["time_s"] * 1000:8.1f} '
              f'{r["cpu_s"] * 1000:7.1f} '
              f'{fmt(r.get("length"), "9.1f")} {fmt(r.get("switches"), "6d")} '
              f'{str(r.get("posthoc_collision_free", "-")):>5s}')
        best = None
        for planner in ('RRTConnect', 'BITstar'):
            if peers is None:
                continue
            p = peers[planner][name]
            ms = [None if v is None else v * 1000 for v in (p['time_s'], p['cpu_s'])]
            print(f'{"":18s} {planner:11s} {p["success"]}/{p["runs"]:<3d} '
                  f'{fmt(ms[0], "8.1f")} {fmt(ms[1], "7.1f")} {fmt(p["length"], "9.1f")} '
                  f'{fmt(p["switches"], "6.1f")} {p["posthoc_clean"]:>5d}')
            if p['length'] is not None:
                best = p['length'] if best is None else min(best, p['length'])
        if best is not None and r.get('length') is not None:
            ratios[name] = r['length'] / best
            rrt = peers['RRTConnect'][name]['time_s']
            speed = f', plan time / RRTConnect = {r["time_s"] / rrt:.2f}' if rrt else ''
            print(f'{"":18s} {"ratio":11s} length / best peer median = {ratios[name]:.3f}{speed}')
    solved = sum(ours[n]['success'] for n in names)
    median_time = statistics.median(ours[n]['time_s'] for n in names)
    median_cpu = statistics.median(ours[n]['cpu_s'] for n in names)
    print(f'\norca_nav: {solved}/{len(names)} solved, median plan time {median_time * 1000:.1f} ms '
          f'(CPU {median_cpu * 1000:.1f} ms) '
          f'(target <= 200, stretch 100), worst length ratio '
          f'{fmt(max(ratios.values()) if ratios else None, ".3f")} (target <= 1.05)')
    if peers is None:
        print('OMPL not installed: peers skipped')
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(dict(
        map='parking_2d', args=vars(args), precompute=precompute, orca_nav=ours, peers=peers,
        length_ratio_to_best_peer=ratios, solved=solved, median_plan_time_s=median_time,
        median_plan_cpu_s=median_cpu), indent=2))
    return ours, peers


if __name__ == '__main__':
    main()
