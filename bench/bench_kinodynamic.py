"""Kinodynamic A* benchmark on the shared planner maps, with OMPL's control-based RRT as the peer.

Maps and queries come from ``../shared/refdata/planners`` (see its README):

* ``forest_3d``: 40 x 40 x 5 m, 0.1 m voxels, quadrotor radius 0.3 m, |v| <= 3 m/s, |a| <= 3 m/s^2,
  the 5 given queries (rest to rest) plus ``--extra`` random ones (seeded; start and goal >= 20 m
  apart, 0.6 m from obstacles) so the numbers are not tuned to 5 queries;
* ``forest_2d``: the same forest cut at z = 1 m (a 2-D ground robot, radius 0.3 m, 3 m/s,
  3 m/s^2), the 5 queries projected to (x, y);
* ``parking_2d``: the parking lot with a 0.3 m round robot at a low speed limit (0.5 m/s,
  0.5 m/s^2), positions of its 5 queries (the case Fast-Planner users report failing).

Per query: status, wall plan time (and CPU time: the machine is shared), trajectory duration
against the straight-line bound |goal - start| / v_max, length, and an independent validity check
of the trajectory sampled every 0.02 s (limits; inflated map; on forest_3d also the exact distance
to the cylinders). Map loading and the planner's precomputation (inflation, distance fields,
coarse graphs) are reported separately, not as plan time.

Peer, same run, same queries: OMPL 2.0.1 (PyPI ``ompl``) control-based RRT on the double
integrator, set up as in the refdata README: state (p, v) with |v| <= v_max, control = acceleration
box projected onto the ball |a| <= a_max and integrated exactly, propagation step 0.1 s, controls
of 1-10 steps, every 0.02 s of a step swept against the same inflated map, goal reached when
|(dp, dv)| <= 1.0, RNG seed 1 per query, capped at ``--ompl-cap`` seconds. Skipped if ``ompl``
is not installed.

Usage: python -m bench.bench_kinodynamic [--quick] [--extra 10] [--ompl-cap 5]
"""
import argparse
import json
import math
import statistics
import time
from pathlib import Path

import numpy as np

from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.planning.kinodynamic_astar import KinodynamicAStar, KinodynamicParams
from orca_nav.core.planning.result import PlanStatus

REPO = Path(__file__).resolve().parents[1]
PLANNERS = REPO.parent / 'shared' / 'refdata' / 'planners'
RESULTS = REPO / 'bench' / 'results' / 'kinodynamic.json'
RADIUS = 0.3
CHECK_DT = 0.02


# ---------------------------------------------------------------------- maps and queries
def load_forest():
    data = np.load(PLANNERS / 'forest_3d.npz')
    shape = tuple(data['shape'])
    occ = np.unpackbits(data['occ_packed'])[:np.prod(shape)].reshape(shape).astype(bool)
    grid = OccupancyGrid(occ, float(data['resolution']), data['origin'])
    return grid, data['queries'].astype(float), data['cylinders']


def random_queries(grid, count, min_dist, margin, seed):
    rng = np.random.default_rng(seed)
    lo, hi = grid.extent
    lo, hi = lo + 1.0, hi - 1.0
    if grid.ndim == 3:
        lo[2], hi[2] = 0.6, 4.4
    out = []
    while len(out) < count:
        a, b = rng.uniform(lo, hi), rng.uniform(lo, hi)
        if np.linalg.norm(a - b) >= min_dist and \
                (grid.clearance_at(np.stack([a, b])) > margin).all():
            out.append(np.concatenate([a, b]))
    return np.array(out)


def scenarios(extra, seed=7):
    """(name, grid, params, queries (K, 2 ndim), cylinders or None, n_given)."""
    t0 = time.perf_counter()
    forest, forest_q, cylinders = load_forest()
    load_s = time.perf_counter() - t0
    quad = KinodynamicParams(max_vel=3.0, max_acc=3.0, robot_radius=RADIUS, max_speed=3.0,
                             max_acc_norm=3.0)
    queries = (np.vstack([forest_q, random_queries(forest, extra, 20.0, 0.6, seed)])
               if extra else forest_q)
    out = [('forest_3d', forest, quad, queries, cylinders, len(forest_q), load_s)]

    iz = int(1.0 / forest.resolution)
    slice_grid = OccupancyGrid(forest.occupied[iz], forest.resolution, forest.origin[:2])
    ground = KinodynamicParams(max_vel=3.0, max_acc=3.0, robot_radius=RADIUS, max_speed=3.0,
                               max_acc_norm=3.0)
    out.append(('forest_2d', slice_grid, ground, forest_q[:, [0, 1, 3, 4]], None, len(forest_q),
                0.0))

    t0 = time.perf_counter()
    park = np.load(PLANNERS / 'parking_2d.npz')
    park_grid = OccupancyGrid(park['grid'] >= 50, float(park['resolution']), park['origin'])
    slow = KinodynamicParams(max_vel=0.5, max_acc=0.5, robot_radius=RADIUS, max_speed=0.5,
                             max_time=5.0)
    out.append(('parking_2d_slow', park_grid, slow, park['queries'][:, [0, 1, 3, 4]].astype(float),
                None, len(park['queries']), time.perf_counter() - t0))
    return out


# ---------------------------------------------------------------------- validity of a trajectory
def check(planner, inflated, traj, start, goal, cylinders):
    """Independent re-check of a returned trajectory sampled every CHECK_DT."""
    p = planner.params
    t, pos, vel, acc = traj.sample(CHECK_DT)
    speed = np.linalg.norm(vel, axis=1)
    out = dict(
        collision_free=bool(not inflated.occupied_at(pos).any()),
        within_limits=bool(np.abs(vel).max() <= p.max_vel + 1e-6
                           and np.abs(acc).max() <= p.max_acc + 1e-6
                           and (p.max_speed is None or speed.max() <= p.max_speed + 1e-6)
                           and (p.max_acc_norm is None
                                or np.linalg.norm(acc, axis=1).max() <= p.max_acc_norm + 1e-6)),
        end_error=float(np.linalg.norm(pos[-1] - goal)),
        start_error=float(np.linalg.norm(pos[0] - start)),
    )
    if cylinders is not None:
        dxy = (np.linalg.norm(pos[:, None, :2] - cylinders[None, :, :2], axis=2)
               - cylinders[None, :, 2])
        out['min_cylinder_clearance'] = float(dxy.min())
    return out


def run_ours(name, grid, params, queries, cylinders):
    t0 = time.perf_counter()
    planner = KinodynamicAStar(grid, params)
    setup_s = time.perf_counter() - t0
    inflated = grid.inflated(params.robot_radius)
    d = grid.ndim
    vmax = params.max_speed or params.max_vel
    runs = []
    for k, q in enumerate(queries):
        start, goal = q[:d], q[d:]
        zero = np.zeros(d)
        cpu0 = time.process_time()
        result = planner.plan(start, zero, goal, zero)
        cpu = time.process_time() - cpu0
        bound = float(np.linalg.norm(goal - start) / vmax)
        run = dict(query=k, status=result.status.value, time_s=result.stats.plan_time, cpu_s=cpu,
                   expanded=result.stats.expanded_nodes, bound_s=bound)
        if result.status is PlanStatus.SUCCESS:
            traj = result.trajectory
            run.update(duration_s=traj.duration, duration_ratio=traj.duration / bound,
                       length=traj.length(),
                       **check(planner, inflated, traj, start, goal, cylinders))
        runs.append(run)
    return setup_s, runs


# ---------------------------------------------------------------------- OMPL peer
class OmplControlRRT:
    """ompl.control RRT on the double integrator (refdata README setup) on an inflated grid."""

    def __init__(self, grid, inflated, params, cap):
        import ompl.base as ob
        import ompl.control as oc
        import ompl.util as ou
        ou.setLogLevel(ou.LOG_NONE)
        self.ob, self.oc, self.ou = ob, oc, ou
        self.grid, self.inflated, self.cap = grid, inflated, cap
        self.d = grid.ndim
        self.vmax = params.max_speed or params.max_vel
        self.amax = params.max_acc_norm or params.max_acc
        lo, hi = grid.extent
        self.lo, self.hi = lo + params.robot_radius, hi - params.robot_radius
        # Fast single-point lookups for the Python callbacks.
        self.free = ~inflated.occupied
        self.res = grid.resolution

    def point_free(self, x):
        idx = [int(math.floor((x[i] - self.grid.origin[i]) / self.res)) for i in range(self.d)]
        shape = self.free.shape[::-1]
        if any(i < 0 or i >= n for i, n in zip(idx, shape)):
            return False
        return bool(self.free[tuple(idx[::-1])])

    def solve(self, start, goal):
        ob, oc, d = self.ob, self.oc, self.d
        self.ou.RNG.setSeed(1)
        space = ob.RealVectorStateSpace(2 * d)
        bounds = ob.RealVectorBounds(2 * d)
        for i in range(d):
            bounds.setLow(i, float(self.lo[i]))
            bounds.setHigh(i, float(self.hi[i]))
            bounds.setLow(d + i, -self.vmax)
            bounds.setHigh(d + i, self.vmax)
        space.setBounds(bounds)
        controls = oc.RealVectorControlSpace(space, d)
        cbounds = ob.RealVectorBounds(d)
        cbounds.setLow(-self.amax)
        cbounds.setHigh(self.amax)
        controls.setBounds(cbounds)
        ss = oc.SimpleSetup(controls)

        def valid(s):
            v2 = sum(s[d + i] ** 2 for i in range(d))
            return (v2 <= self.vmax ** 2 and space.satisfiesBounds(s)
                    and self.point_free([s[i] for i in range(d)]))

        def propagate(s, c, duration, out):
            a = [c[i] for i in range(d)]
            norm = math.sqrt(sum(x * x for x in a))
            if norm > self.amax:
                a = [x * self.amax / norm for x in a]
            steps = max(1, int(math.ceil(duration / CHECK_DT)))
            for k in range(1, steps + 1):
                t = duration * k / steps
                x = [s[i] + s[d + i] * t + 0.5 * a[i] * t * t for i in range(d)]
                if not self.point_free(x):
                    for i in range(2 * d):       # out of bounds: the step is invalid
                        out[i] = 1e9
                    return
            for i in range(d):
                out[i] = x[i]
                out[d + i] = s[d + i] + a[i] * duration

        ss.setStateValidityChecker(valid)
        ss.setStatePropagator(propagate)
        si = ss.getSpaceInformation()
        si.setPropagationStepSize(0.1)
        si.setMinMaxControlDuration(1, 10)
        s0, g0 = space.allocState(), space.allocState()
        for i in range(d):
            s0[i], s0[d + i] = float(start[i]), 0.0
            g0[i], g0[d + i] = float(goal[i]), 0.0
        ss.setStartAndGoalStates(s0, g0, 1.0)
        ss.setPlanner(oc.RRT(si))
        t0 = time.perf_counter()
        ss.solve(float(self.cap))
        elapsed = time.perf_counter() - t0
        if not ss.haveExactSolutionPath():
            return dict(status='no_solution', time_s=elapsed)
        path = ss.getSolutionPath()
        states = np.array([[s[i] for i in range(2 * d)] for s in path.getStates()])
        duration = float(sum(path.getControlDurations()))
        return dict(status='success', time_s=elapsed, duration_s=duration,
                    length=float(np.linalg.norm(np.diff(states[:, :d], axis=0), axis=1).sum()),
                    goal_error=float(np.linalg.norm(states[-1, :d] - goal)))


def run_ompl(grid, params, queries, cap):
    try:
        import ompl.control  # noqa: F401
    except ImportError:
        return None
    peer = OmplControlRRT(grid, grid.inflated(params.robot_radius), params, cap)
    d = grid.ndim
    vmax = params.max_speed or params.max_vel
    runs = []
    for k, q in enumerate(queries):
        run = dict(query=k, **peer.solve(q[:d], q[d:]))
        run['bound_s'] = float(np.linalg.norm(q[d:] - q[:d]) / vmax)
        if 'duration_s' in run:
            run['duration_ratio'] = run['duration_s'] / run['bound_s']
        runs.append(run)
    return runs


# ---------------------------------------------------------------------- report
def summary(runs):
    ok = [r for r in runs if r['status'] == 'success']

    def med(key):
        return statistics.median(r[key] for r in ok) if ok else None
    out = dict(success=len(ok), queries=len(runs), median_time_s=med('time_s'),
               median_duration_ratio=med('duration_ratio'), median_length=med('length'),
               median_duration_s=med('duration_s'))
    if ok and 'cpu_s' in ok[0]:
        out['median_cpu_s'] = med('cpu_s')
        out['max_duration_ratio'] = max(r['duration_ratio'] for r in ok)
        out['all_checks_pass'] = all(r['collision_free'] and r['within_limits']
                                     and r['end_error'] <= 0.1 for r in ok)
        if 'min_cylinder_clearance' in ok[0]:
            out['min_cylinder_clearance'] = min(r['min_cylinder_clearance'] for r in ok)
    return out


def fmt(value, spec):
    return '-' if value is None else format(value, spec)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true',
                        help='< 30 s: no extra queries, short OMPL runs')
    parser.add_argument('--extra', type=int, default=10,
                        help='random forest_3d queries beyond the 5')
    parser.add_argument('--ompl-cap', type=float, default=5.0, help='OMPL seconds per query')
    args = parser.parse_args(argv)
    extra = 0 if args.quick else args.extra
    cap = 1.0 if args.quick else args.ompl_cap
    ompl_queries = 2 if args.quick else 5

    report = dict(maps={})
    lines = []
    for name, grid, params, queries, cylinders, n_given, load_s in scenarios(extra):
        setup_s, runs = run_ours(name, grid, params, queries, cylinders)
        given, further = runs[:n_given], runs[n_given:]
        entry = dict(params=dict(max_vel=params.max_vel, max_acc=params.max_acc,
                                 robot_radius=params.robot_radius, max_speed=params.max_speed,
                                 max_acc_norm=params.max_acc_norm),
                     map_load_s=load_s, planner_setup_s=setup_s,
                     ours=summary(given), ours_runs=given)
        if further:
            entry['ours_further'] = summary(further)
            entry['ours_further_runs'] = further
        if name != 'parking_2d_slow':
            peer = run_ompl(grid, params, queries[:min(ompl_queries, n_given)], cap)
            if peer is not None:
                entry['ompl_control_rrt'] = summary(peer)
                entry['ompl_control_rrt']['cap_s'] = cap
                entry['ompl_runs'] = peer
        report['maps'][name] = entry
        o = entry['ours']
        lines.append(f'{name}: map load {load_s:.2f} s, planner precompute {setup_s:.2f} s '
                     '(not plan time)')
        lines.append(f'  {"planner":<28} {"ok":>6} {"med time ms":>11} {"med cpu ms":>10} '
                     f'{"dur/bound med":>13} {"max":>5} {"len m":>6}')
        lines.append(f'  {"kinodynamic A* (given)":<28} {o["success"]:>3}/{o["queries"]:<2} '
                     f'{fmt(o["median_time_s"] and o["median_time_s"] * 1e3, ".0f"):>11} '
                     f'{fmt(o.get("median_cpu_s") and o["median_cpu_s"] * 1e3, ".0f"):>10} '
                     f'{fmt(o["median_duration_ratio"], ".2f"):>13} '
                     f'{fmt(o.get("max_duration_ratio"), ".2f"):>5} '
                     f'{fmt(o["median_length"], ".1f"):>6}')
        if further:
            f = entry['ours_further']
            lines.append(f'  {"kinodynamic A* (random)":<28} {f["success"]:>3}/{f["queries"]:<2} '
                         f'{fmt(f["median_time_s"] and f["median_time_s"] * 1e3, ".0f"):>11} '
                         f'{fmt(f.get("median_cpu_s") and f["median_cpu_s"] * 1e3, ".0f"):>10} '
                         f'{fmt(f["median_duration_ratio"], ".2f"):>13} '
                         f'{fmt(f.get("max_duration_ratio"), ".2f"):>5} '
                         f'{fmt(f["median_length"], ".1f"):>6}')
        if 'ompl_control_rrt' in entry:
            pr = entry['ompl_control_rrt']
            rrt = f'OMPL control RRT (cap {cap:g} s)'
            rrt_ms = pr['median_time_s'] and pr['median_time_s'] * 1e3
            lines.append(f'  {rrt:<28} {pr["success"]:>3}/{pr["queries"]:<2} '
                         f'{fmt(rrt_ms, ".0f"):>11} {"":>10} '
                         f'{fmt(pr["median_duration_ratio"], ".2f"):>13} {"":>5} '
                         f'{fmt(pr["median_length"], ".1f"):>6}')
            if pr['median_time_s'] and o['median_time_s']:
                ours_sub = summary(given[:pr['queries']])
                if ours_sub['median_time_s']:
                    lines.append(f'  median plan time, OMPL / ours on the same {pr["queries"]} '
                                 'queries: '
                                 f'{pr["median_time_s"] / ours_sub["median_time_s"]:.1f}x')
        checks = [f'all trajectories pass re-check (0.02 s, limits, inflated map, end <= 0.1 m): '
                  f'{o.get("all_checks_pass")}']
        if 'min_cylinder_clearance' in o:
            checks.append(f'min distance to a cylinder surface {o["min_cylinder_clearance"]:.2f} m')
        lines.append('  ' + '; '.join(checks))
    print('\n'.join(lines))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=1))
    print(f'wrote {RESULTS}')
    return report


if __name__ == '__main__':
    main()
