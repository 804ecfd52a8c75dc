"""The 3-D planner as planner_node runs it: FleetPlanner plan jobs for a drone on the forest.

planner_node hands every drone goal to `FleetPlanner`, which turns it into a plan request that
`run_request` executes on a worker thread: the 3-D kinodynamic A* search, the trajectory sampling
(`sample_period`) and the time-parametrised reference that is published. This bench times exactly
that call (wall and CPU), with the node's default settings (safety margin 0.05 m, a budget of 5,000
expansions, 0.1 s samples), on the forest queries of ../shared/refdata/planners (the 5 given ones,
plus ``--extra`` random ones, seeded, as bench_kinodynamic draws them), for a quadrotor of the
refdata's size and limits (radius 0.3 m, 3 m/s, 3 m/s^2), on two maps:

* ``node map``: config/maps/forest_3d (0.2 m voxels on a floor) after the trip the node's map
  takes: occupied voxel centres (the PointCloud2 of map_3d_publisher) back to a grid
  (`voxel_map.grid_from_centres`, what `convert.cloud_to_grid` does);
* ``refdata``: the 0.1 m forest_3d.npz itself.

Peer in the same run: the bare `KinodynamicAStar.plan` on the same built planner and query, so
the ratio is what the node's path adds. Building the planner (inflation, distance fields,
coarse graphs; once per map and robot spec, shared by the fleet) is reported apart. Each
trajectory is checked against the map: every sample at least the radius from occupied voxels.

Target: median plan time <= 250 ms.

Usage: python -m bench.bench_planner3d [--quick] [--extra 10] [--repeats 3]
"""
import argparse
import json
import statistics
import time

import numpy as np

from bench.bench_kinodynamic import PLANNERS, REPO, random_queries
from orca_nav.core.fleet.fleet_planner import FleetPlanner, ReplanPolicy
from orca_nav.core.fleet.plan_jobs import (
    PlanSettings,
    StartState,
    build_planner,
    planner_key,
    run_request,
)
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.voxel_map import grid_from_centres, load_voxel_map, occupied_centres

RESULTS = REPO / 'bench' / 'results' / 'planner3d.json'
DRONE = RobotSpec('drone0', kinematics='quadrotor', radius=0.3, max_speed=3.0, max_accel=3.0)
SETTINGS = PlanSettings(safety_margin=0.05, sample_period=0.1)
TARGET_S = 0.25


def maps():
    """(name, grid) as the node gets it, and the refdata grid."""
    shipped = load_voxel_map(REPO / 'config' / 'maps' / 'forest_3d.yaml')
    node_map = grid_from_centres(occupied_centres(shipped), shipped.resolution)
    refdata = OccupancyGrid.from_npz(PLANNERS / 'forest_3d.npz')
    return [('node map (0.2 m, via the cloud)', node_map), ('refdata (0.1 m)', refdata)]


def queries(extra: int) -> np.ndarray:
    given = np.load(PLANNERS / 'forest_3d.npz')['queries'].astype(float)
    if not extra:
        return given
    forest = OccupancyGrid.from_npz(PLANNERS / 'forest_3d.npz')
    return np.vstack([given, random_queries(forest, extra, 20.0, 0.6, seed=7)])


def run_map(name, grid, qs, repeats):
    supervisor = FleetPlanner({DRONE.name: DRONE}, SETTINGS, ReplanPolicy(goal_tolerance=0.3))
    supervisor.set_map(grid, now=0.0)
    rows, build_s = [], None
    for k, q in enumerate(qs):
        supervisor.set_start_state(DRONE.name, StartState([*q[:3], 0.0], [0.0, 0.0, 0.0], 0.0),
                                   now=float(k))
        actions = supervisor.set_goal(DRONE.name, [*q[3:], 0.0], now=float(k))
        if not actions.plan:
            rows.append({'query': k, 'status': 'refused', 'message': actions.status[-1].message})
            continue
        (request,) = actions.plan
        if build_s is None:
            t0 = time.perf_counter()
            key = planner_key(request.grid, request.map_generation, request.spec,
                              request.settings)
            bare = request.planners.get(key, lambda: build_planner(grid, DRONE, SETTINGS))
            build_s = time.perf_counter() - t0
        node_s, cpu_s, search_s, bare_s = [], [], [], []
        for _ in range(repeats):
            w0, c0 = time.perf_counter(), time.process_time()
            outcome = run_request(request)
            node_s.append(time.perf_counter() - w0)
            cpu_s.append(time.process_time() - c0)
            search_s.append(outcome.result.stats.plan_time)
            w0 = time.perf_counter()
            bare.plan(q[:3], np.zeros(3), q[3:], np.zeros(3))
            bare_s.append(time.perf_counter() - w0)
        supervisor.finish(outcome, now=float(k))
        row = {'query': k, 'status': outcome.result.status.value,
               'node_ms': 1e3 * statistics.median(node_s), 'cpu_ms': 1e3 * statistics.median(cpu_s),
               'search_ms': 1e3 * statistics.median(search_s),
               'bare_ms': 1e3 * statistics.median(bare_s)}
        ref = outcome.reference
        if ref is not None:
            bound = float(np.linalg.norm(q[3:] - q[:3])) / DRONE.max_speed
            row.update(duration_over_bound=ref.duration / bound,
                       clear=bool(grid.points_free(ref.positions, DRONE.radius).all()),
                       end_error=float(np.linalg.norm(ref.positions[-1] - q[3:])))
        rows.append(row)
    return {'map': name, 'build_s': build_s, 'rows': rows}


def summary(result, given):
    rows = result['rows']
    solved = [r for r in rows if r['status'] == 'success']
    node = [r['node_ms'] for r in solved]
    out = {'map': result['map'], 'solved': f'{len(solved)}/{len(rows)}',
           'given_solved': f'{sum(r["status"] == "success" for r in rows[:given])}/{given}',
           'median_node_ms': statistics.median(node) if node else None,
           'max_node_ms': max(node) if node else None,
           'median_cpu_ms': statistics.median(r['cpu_ms'] for r in solved) if solved else None,
           'median_bare_ms': statistics.median(r['bare_ms'] for r in solved) if solved else None,
           'build_s': result['build_s'],
           'all_clear': all(r.get('clear', False) for r in solved),
           'median_duration_over_bound': statistics.median(r['duration_over_bound']
                                                           for r in solved) if solved else None}
    out['ratio_node_over_bare'] = (out['median_node_ms'] / out['median_bare_ms']
                                   if solved else None)
    out['target_met'] = bool(node) and out['median_node_ms'] <= 1e3 * TARGET_S \
        and len(solved) == len(rows)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.bench_planner3d')
    parser.add_argument('--quick', action='store_true', help='the 5 given queries, 1 repeat')
    parser.add_argument('--extra', type=int, default=10, help='random queries besides the 5')
    parser.add_argument('--repeats', type=int, default=3, help='runs per query (median)')
    args = parser.parse_args(argv)
    extra, repeats = (0, 1) if args.quick else (args.extra, args.repeats)
    qs = queries(extra)
    results, summaries = [], []
    print(f'FleetPlanner run_request for a quadrotor (r 0.3 m, 3 m/s, 3 m/s^2), {len(qs)} '
          f'forest queries, median of {repeats}; target median <= {TARGET_S * 1e3:.0f} ms')
    print(f'{"map":34s} {"solved":>7s} {"median ms":>10s} {"max ms":>8s} {"cpu ms":>8s} '
          f'{"bare A* ms":>11s} {"x bare":>7s} {"build s":>8s} {"dur/bound":>9s} clear')
    for name, grid in maps():
        result = run_map(name, grid, qs, repeats)
        s = summary(result, given=5)
        results.append(result)
        summaries.append(s)
        print(f'{name:34s} {s["solved"]:>7s} {s["median_node_ms"]:10.0f} {s["max_node_ms"]:8.0f} '
              f'{s["median_cpu_ms"]:8.0f} {s["median_bare_ms"]:11.0f} '
              f'{s["ratio_node_over_bare"]:7.2f} {s["build_s"]:8.2f} '
              f'{s["median_duration_over_bound"]:9.2f} {s["all_clear"]}')
    print('target met' if all(s['target_met'] for s in summaries) else 'TARGET MISSED')
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({'summary': summaries, 'runs': results}, indent=1))
    return summaries


if __name__ == '__main__':
    main()
