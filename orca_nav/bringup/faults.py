"""`orca-nav faults`: a fleet scenario run under each fault, with counts.

Every case runs the same fleet (default: the 8-robot circle) on the embedded simulator over real
DDS topics. A fault inside the simulated robots (a dead or faulty robot, a localization jump)
and the baseline run in lockstep on simulated time, as fast as the machine allows: the same run
whatever the load. The others run on simulated time paced at `real_time_factor` against the wall
clock (not in lockstep: lost and late odometry, a dead node and a loaded machine must be able to
cost time, as they do on real robots). The simulator injects the fault (`fleet_sim_node`
`fault.*` parameters, `orca_nav.core.sim.faults.Faults`); a node kill takes the node out of the
running graph and starts a fresh one `OUTAGE_S` later; busy loops are processes spinning for the
whole run; the CPU-starved case runs every node on the wall clock with more busy loops than
cores. Fault times count from the robots' start: `FAULT_TIME_S` in, mid-path.

Per case and over its runs: contacts (the simulator's reports, by class: robot-robot,
robot-obstacle, robot-person, and whether a robot in it moved), robots at their goal
(of those that can still reach it: a dead robot cannot), the worst minimum separation (surface
to surface, from the recorded odometry: a localization jump shifts the jumped robot's record
too), the recovery time (how much later the fleet finished than without a fault), and for a
killed node how long until every robot stood still after the kill and until every robot not at
its goal moved again after the restart.
"""
from __future__ import annotations

import dataclasses
import json
import math
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Mapping, Optional, Sequence

import numpy as np

from orca_nav.bringup.fleet_file import FleetConfig
from orca_nav.bringup.graph import ORCA, PLANNER

FAULT_TIME_S = 2.0      # s after the robots' start: the fault happens mid-path
OUTAGE_S = 2.0          # s a killed node stays dead; s a localization jump lasts
STOPPED_SPEED = 0.05    # m/s: a robot slower than this stands
OPEN_MAP = 'open_40x40.yaml'   # 40 m x 40 m of free space around the origin
SPEED_WINDOW_S = 0.1    # s over which a recorded track's speed is measured
SPEED_STEP_S = 0.02     # s between two such measurements (the odometry period)


@dataclass(frozen=True)
class FaultCase:
    """One row: the simulator's fault parameters, a node to kill and restart, busy loops."""

    name: str
    sim: Mapping[str, Any] = field(default_factory=dict)
    kill: Optional[str] = None          # full node name, e.g. /orca_node
    busy_loops: int = 0
    planner: bool = False               # the fleet plans (needed to kill the planner)
    dead_robot: Optional[str] = None    # a robot that cannot reach its goal
    wall_clock: bool = False            # no simulated time: every node on the wall clock

    @property
    def lockstep(self) -> bool:
        """The row runs in lockstep: nothing in it needs time to pass on the wall clock (the
        simulator refuses lost or late odometry in lockstep)."""
        return not (self.kill or self.busy_loops or self.wall_clock
                    or any(self.sim.get(name, 0.0) > 0.0 for name in ODOMETRY_FAULTS))


# The simulator's faults that lose or delay odometry.
ODOMETRY_FAULTS = ('fault.odom_drop_rate', 'fault.odom_delay', 'fault.odom_jitter')


def fault_cases(robot: str) -> List[FaultCase]:
    """The built-in cases; `robot` is the one that fails where one robot fails."""
    return [
        FaultCase('no fault'),
        FaultCase('odometry loss 10 %', {'fault.odom_drop_rate': 0.1}),
        FaultCase('odometry loss 30 %', {'fault.odom_drop_rate': 0.3}),
        FaultCase('odometry delay 200 ms', {'fault.odom_delay': 0.2}),
        FaultCase('one robot dead mid-path', {'fault.dead_robot': robot,
                                              'fault.dead_time': FAULT_TIME_S},
                  dead_robot=robot),
        FaultCase('one robot faulty (speed x0.6, turned 30 deg)', {
            'fault.faulty_robot': robot, 'fault.faulty_time': FAULT_TIME_S,
            'fault.faulty_scale': 0.6, 'fault.faulty_rotation': math.radians(30.0)}),
        FaultCase('orca_node killed and restarted', kill='/' + ORCA),
        FaultCase('planner_node killed and restarted', kill='/' + PLANNER, planner=True),
        FaultCase('localization jump 0.5 m', {
            'fault.jump_robot': robot, 'fault.jump_time': FAULT_TIME_S,
            'fault.jump_size': 0.5, 'fault.jump_duration': OUTAGE_S}),
        FaultCase('two busy loops', busy_loops=2),
        FaultCase('CPU starved: four busy loops, wall clock', busy_loops=4, wall_clock=True),
    ]


class NodeOutage:
    """Kills `full_name` at FAULT_TIME_S of the mission and restarts it OUTAGE_S later (the
    `during` hook of `run_demo`); remembers when, in mission time."""

    def __init__(self, full_name: str):
        self.full_name = full_name
        self.killed_at: Optional[float] = None
        self.restarted_at: Optional[float] = None
        self._spec = None

    def __call__(self, graph, mission) -> None:
        now = mission.elapsed()
        if self.killed_at is None and now >= FAULT_TIME_S:
            self._spec = graph.stop_node(self.full_name)
            self.killed_at = now
        elif self.restarted_at is None and self.killed_at is not None and \
                now >= self.killed_at + OUTAGE_S:
            graph.start_node(self._spec)
            self.restarted_at = now


def _speeds(tracks, window: float = SPEED_WINDOW_S, step: float = SPEED_STEP_S):
    """Times (K,) and every robot's speed (N, K): its mean speed over a `window`-long stretch,
    stamped at the stretch's middle (where a steady deceleration's mean speed is the speed it
    had), every `step`; stamping it at the end would make every stop look window / 2 late."""
    from orca_nav.bringup.report import resample
    times, positions = resample(tracks, step)          # positions (K, N, 2)
    lag = max(1, round(window / step))
    if len(times) <= lag:
        return times[:0], np.zeros((len(tracks), 0))
    speed = np.linalg.norm(positions[lag:] - positions[:-lag], axis=2).T / (lag * step)
    return 0.5 * (times[lag:] + times[:-lag]), speed


def outage_times(tracks, report: dict, outage: NodeOutage):
    """(s from the kill until every robot stood, s from the restart until every robot not at
    its goal had moved again); None where it did not happen in the record. Each robot counts
    from its own first motion after the restart: a coordinated fleet lets one robot wait for
    another to pass, so the robots need not all move at one instant."""
    times, speed = _speeds(tracks)
    if outage.killed_at is None or not len(times):
        return None, None
    stopped = np.flatnonzero((times >= outage.killed_at) & (speed.max(axis=0) < STOPPED_SPEED))
    stop = float(times[stopped[0]] - outage.killed_at) if stopped.size else None
    resume = None
    if outage.restarted_at is not None:
        pending = np.array([not report['robots'][t.name]['reached'] or
                            (report['robots'][t.name]['time_to_goal'] or 0.0) > outage.restarted_at
                            for t in tracks])
        if not pending.any():
            return stop, 0.0
        moved = (speed[pending] > STOPPED_SPEED) & (times >= outage.restarted_at)
        if moved.any(axis=1).all():
            resume = float(times[moved.argmax(axis=1)].max() - outage.restarted_at)
    return stop, resume


def run_case(cfg: FleetConfig, case: FaultCase, real_time_factor: float = 1.0) -> dict:
    """One run of `cfg` under `case`: the row's figures for this run. The graph runs on one
    single-threaded executor, as each node does in its own process (and a killed node is taken
    out between two callbacks)."""
    from orca_nav.bringup.demo import Progress, run_demo
    if case.planner and not cfg.planner_enabled:
        # The planner plans on a map: an open one where the fleet has none.
        from orca_nav.bringup.scenarios import maps_dir
        cfg = dataclasses.replace(cfg, planner_enabled=True,
                                  map_path=cfg.map_path or maps_dir() / OPEN_MAP)
    outage = NodeOutage(case.kill) if case.kill else None
    loops = [subprocess.Popen([sys.executable, '-c', 'while True: pass'])
             for _ in range(case.busy_loops)]
    try:
        pace = None if case.wall_clock else 0.0 if case.lockstep else real_time_factor
        report = run_demo(cfg, None, executor='single_threaded', real_time_factor=pace,
                          lockstep=case.lockstep, sim_overrides=dict(case.sim), during=outage,
                          progress=Progress(plain_every_s=math.inf))
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    tracks = report.pop('tracks')
    fleet = report['fleet']
    able = [name for name in report['robots'] if name != case.dead_robot]
    arrival = [report['robots'][name]['time_to_goal'] for name in able]
    result = {
        'collisions': fleet['collisions'],
        'contacts': fleet['contacts'],
        'at_goal': sum(report['robots'][name]['reached'] for name in able),
        'able': len(able),
        'min_separation': fleet['min_separation'],
        'finished': max(arrival) if all(t is not None for t in arrival) else None,
    }
    if outage is not None:
        result['stopped_after'], result['resumed_after'] = outage_times(tracks, report, outage)
    return result


def _worst(values, pick):
    values = [v for v in values if v is not None]
    return pick(values) if values else None


def summarize(case: FaultCase, runs: Sequence[dict], baseline: Optional[float]) -> dict:
    """The row: counts summed, the worst separation, medians of the times."""
    finished = [r['finished'] for r in runs]
    done = [t for t in finished if t is not None]
    row = {
        'fault': case.name, 'runs': len(runs),
        'collisions': sum(r['collisions'] for r in runs),
        'contacts': {category: {state: sum(r['contacts'][category][state] for r in runs)
                                for state in ('moving', 'rest')}
                     for category in runs[0]['contacts']},
        'robots_at_goal': sum(r['at_goal'] for r in runs),
        'robots_able': sum(r['able'] for r in runs),
        'worst_min_separation': _worst([r['min_separation'] for r in runs], min),
        'finished': statistics.median(done) if len(done) == len(finished) else None,
    }
    row['recovery_time'] = (row['finished'] - baseline
                            if row['finished'] is not None and baseline is not None else None)
    if case.kill:
        row['stopped_after'] = _worst([r.get('stopped_after') for r in runs], max)
        row['resumed_after'] = _worst([r.get('resumed_after') for r in runs], max)
    return row


def _number(value, unit='', digits=2):
    return '-' if value is None else f'{value:.{digits}f}{unit}'


def format_fault_table(rows: Sequence[dict]) -> str:
    """One line per fault; contacts as robot-robot / robot-obstacle / robot-person, each
    `moving/at rest`."""
    header = (f'{"fault":<46} {"runs":>4} {"contacts r-r r-o r-p (moving/rest)":>36} '
              f'{"robots at goal":>14} {"worst min sep":>13} {"recovery time":>13}  node outage')
    lines = [header, '-' * len(header)]
    for row in rows:
        outage = ''
        if 'stopped_after' in row:
            outage = (f'stopped {_number(row["stopped_after"], " s", 1)} after the kill, '
                      f'moving {_number(row["resumed_after"], " s", 1)} after the restart')
        contacts = '  '.join(f'{c["moving"]}/{c["rest"]}' for c in row['contacts'].values())
        lines.append(f'{row["fault"]:<46} {row["runs"]:>4} {contacts:>36} '
                     f'{row["robots_at_goal"]:>7}/{row["robots_able"]:<6} '
                     f'{_number(row["worst_min_separation"], " m"):>13} '
                     f'{_number(row["recovery_time"], " s", 1):>13}  {outage}')
    return '\n'.join(lines)


def run_fault_suite(cfg: FleetConfig, cases: Sequence[FaultCase], runs: int = 1,
                    real_time_factor: float = 1.0, progress=None) -> List[dict]:
    """Every case `runs` times; the first case is the baseline of the recovery times."""
    rows, baseline = [], None
    for index, case in enumerate(cases):
        if progress is not None:
            progress(f'{case.name} ({index + 1}/{len(cases)})')
        results = [run_case(cfg, case, real_time_factor) for _ in range(runs)]
        row = summarize(case, results, baseline)
        if index == 0:
            baseline = row['finished']
            row['recovery_time'] = 0.0 if baseline is not None else None
        rows.append(row)
    return rows


def suite_passed(rows: Sequence[dict]) -> bool:
    """No contact in any row but people walking into robots at rest (`failed_contacts`), and
    every robot that could reach its goal reached it."""
    from orca_nav.bringup.report import failed_contacts
    return all(failed_contacts(r['contacts']) == 0 and r['robots_at_goal'] == r['robots_able']
               for r in rows)


def faults_command(args) -> int:
    from orca_nav.bringup.demo import load_scenario
    try:
        cfg = load_scenario(args.scenario, args.robots)
        if args.duration is not None:
            cfg = dataclasses.replace(cfg, demo=dataclasses.replace(cfg.demo,
                                                                    duration=args.duration))
        cases = fault_cases(cfg.robot_names[0])
        if args.only:
            unknown = [n for n in args.only if n not in [c.name for c in cases]]
            if unknown:
                raise ValueError(f'--only: {unknown[0]!r} is not a fault (faults: '
                                 f'{", ".join(c.name for c in cases)})')
            cases = [cases[0]] + [c for c in cases[1:] if c.name in args.only]
    except ValueError as err:
        for line in str(err).splitlines():
            print(f'orca-nav faults: {line}', file=sys.stderr)
        return 2
    out = Path(args.out)
    print(f'orca-nav faults: scenario {cfg.name}, {len(cfg.robots)} robots, {len(cases)} cases x '
          f'{args.runs} runs at {args.real_time_factor:g} x real time', file=sys.stderr)
    rows = run_fault_suite(cfg, cases, args.runs, args.real_time_factor,
                           progress=lambda text: print(f'orca-nav faults: {text}',
                                                       file=sys.stderr, flush=True))
    print(format_fault_table(rows))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({'scenario': cfg.name, 'robots': len(cfg.robots),
                               'real_time_factor': args.real_time_factor, 'rows': rows},
                              indent=2) + '\n')
    print(f'wrote {out}')
    return 0 if suite_passed(rows) else 1


def add_parser(commands, help_text: str) -> None:
    faults = commands.add_parser(
        'faults', help=help_text,
        description='Runs a fleet scenario on the embedded simulator under each built-in fault '
        '(odometry loss and delay, a dead or faulty robot, a killed node, a localization jump, '
        'a loaded machine), prints a table and writes it as JSON.',
        epilog='Exit status: 0 when no case had a contact (but people walking into robots at '
        'rest) and every robot that could reach its goal reached it, 1 otherwise, 2 for a '
        'start-up error.')
    faults.add_argument('--scenario', default='circle', help='built-in scenario or fleet file '
                        '(default: circle)')
    faults.add_argument('--robots', type=int, default=8, help='robots of a generated scenario '
                        '(default: 8)')
    faults.add_argument('--runs', type=int, default=1, help='runs per fault (default: 1)')
    faults.add_argument('--duration', type=float, help='time limit of a run (s)')
    faults.add_argument('--real-time-factor', type=float, default=1.0, metavar='RTF',
                        help='simulated seconds per wall second of the rows not in lockstep '
                        '(default 1: real time)')
    faults.add_argument('--only', nargs='+', metavar='FAULT', help='these faults only (and the '
                        'no-fault baseline), by their names in the table')
    faults.add_argument('--out', default='orca_nav_faults/faults.json', help='JSON output file')
    faults.set_defaults(run=faults_command)
