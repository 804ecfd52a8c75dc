"""The `orca-nav` command: fleet demos on the embedded simulator, and the benchmarks.

`demo` starts the whole node graph of a fleet (map publisher, embedded simulator, ORCA, planner
when the fleet enables it) in this process over real DDS topics, sends every robot its goals in
turn, and stops when all are reached or after the duration. It writes OUT/report.json and
OUT/trajectories.png (OUT: --out) and prints a summary table. Ctrl-C ends the run early and
still writes the report of what was recorded. `bench` runs bench/run.py of the source checkout.
"""
from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from orca_nav.process import end_process

# Each command imports what it needs when it runs: `orca-nav --help` and a refused fleet file
# load no rclpy, no node and no planner.

def demo_command(args) -> int:
    from orca_nav.bringup.demo import (
        demo_exit_status,
        fresh_recording_folder,
        load_scenario,
        run_demo,
        with_overrides,
    )
    from orca_nav.bringup.report import format_table
    try:
        cfg = with_overrides(load_scenario(args.scenario, args.robots), args.duration, args.seed)
    except ValueError as err:     # one line per problem of a fleet file
        for line in str(err).splitlines():
            print(f'orca-nav demo: {line}', file=sys.stderr)
        return 2
    out_dir = Path(args.out) if args.out else Path('orca_nav_demo') / cfg.name
    rtf = None if args.wall_clock else args.real_time_factor
    clock = 'wall clock' if rtf is None else \
        'simulated time in lockstep, ' + ('as fast as this machine allows' if rtf == 0.0
                                          else f'{rtf:g} x real time')
    shards = f' in {cfg.shards} shards' if cfg.shards > 1 and args.mode != 'per_robot' else ''
    print(f'orca-nav demo: scenario {cfg.name}, {len(cfg.robots)} robots, {args.mode} '
          f'ORCA{shards}, up to {cfg.demo.duration:.0f} s on {clock}; output in {out_dir}',
          file=sys.stderr)
    try:
        record = fresh_recording_folder(out_dir) if args.record else None
        report = run_demo(cfg, out_dir, mode=args.mode, executor=args.executor,
                          real_time_factor=rtf, record=record)
    except (RuntimeError, ValueError) as err:
        print(f'\norca-nav demo: {err}', file=sys.stderr)
        return 2
    except KeyboardInterrupt:       # before the run began: nothing was recorded
        print('\norca-nav demo: interrupted while starting; nothing was recorded',
              file=sys.stderr)
        return 0
    print(format_table(report))
    print(f'wrote {out_dir / "report.json"} and {out_dir / "trajectories.png"}')
    if record is not None:
        total = sum(report['recording']['messages'].values())
        print(f'recorded {total} messages on {len(report["recording"]["messages"])} topics in '
              f'{record} (rosbag2, MCAP); `orca-nav replay {out_dir}` animates the run')
    return demo_exit_status(report)


def replay_command(args) -> int:
    from orca_nav.bringup.replay import animate, default_output, load_run
    source = Path(args.source)
    out = Path(args.out) if args.out else default_output(source)
    try:
        run = load_run(source)
        frames = animate(run, out, fps=args.fps, max_frames=args.max_frames)
    except (ValueError, OSError) as err:
        print(f'orca-nav replay: {err}', file=sys.stderr)
        return 2
    print(f'wrote {out}: {frames} frames, {len(run.tracks)} robots, {run.duration:.1f} s of the '
          'run')
    return 0


def bench_command(args) -> int:
    """Runs `python -m bench.run [options] [area ...]` in the source checkout."""
    from orca_nav.bringup.graph import share_dir
    root = share_dir()
    if not (root / 'bench' / 'run.py').is_file():
        print(f'orca-nav bench: {root / "bench" / "run.py"} not found (the benchmarks ship with '
              'the source checkout, not the installed package)', file=sys.stderr)
        return 2
    return subprocess.call([sys.executable, '-m', 'bench.run'] + list(args.bench_args),
                           cwd=str(root))


# The commands and their one-line help; `orca-nav --help` needs nothing more.
COMMANDS = {
    'demo': 'run a fleet scenario on the embedded simulator',
    'faults': 'run a fleet under injected faults and count the outcomes',
    'replay': 'animate a recorded run (GIF, or MP4 with ffmpeg)',
    'bench': 'run benchmarks (bench/run.py)',
}


def add_demo_parser(commands) -> None:
    from orca_nav.bringup.scenarios import scenario_names
    from orca_nav.parameters.orca_node import MODES
    scenarios = ', '.join(scenario_names())
    demo = commands.add_parser(
        'demo', help=COMMANDS['demo'],
        description='Runs a fleet over real ROS 2 topics on the embedded simulator, sends every '
        'robot its goals, writes OUT/report.json and OUT/trajectories.png and prints a summary. '
        f'Built-in scenarios: {scenarios}.',
        epilog='Exit status: 0 when every robot reached every goal and is at its last goal at '
        'the end, without a collision or a negative separation, 1 when the run ended '
        'otherwise, 2 for a fleet file with problems or another start-up error. Ctrl-C ends the '
        'run early and still writes the report (the exit status then judges what was '
        'recorded); Ctrl-C while starting exits with 0.')
    demo.add_argument('--scenario', default='circle',
                      help='a built-in scenario (listed above) or the path of a fleet config '
                           'YAML (default: circle)')
    demo.add_argument('--robots', type=int, help='number of robots of a generated scenario')
    demo.add_argument('--out', help='output folder (default: orca_nav_demo/<scenario>)')
    demo.add_argument('--duration', type=float, help='time limit in seconds (default: scenario)')
    demo.add_argument('--mode', choices=MODES, default='centralized',
                      help='one ORCA node for the fleet, or one per robot namespace')
    demo.add_argument('--seed', type=int, help='seed of the simulator noise')
    demo.add_argument('--real-time-factor', type=float, default=0.0, metavar='RTF',
                      help='simulated seconds per wall second (default 0: as fast as the machine '
                           'allows; 1: real time, e.g. to watch in RViz)')
    demo.add_argument('--wall-clock', action='store_true',
                      help='run the nodes on the wall clock instead of simulated time (no '
                           'lockstep: results then depend on the machine\'s load)')
    demo.add_argument('--record', action='store_true',
                      help='record the run into OUT/recording as a rosbag2 bag (MCAP storage: '
                           'odometry, cmd_vel, plans, markers, /clock, TF, the map), readable by '
                           '`ros2 bag info/play` and any MCAP reader')
    demo.add_argument('--executor', help='events (default where rclpy has it: fastest, but its '
                      'nodes answer no services, so no `ros2 param set`) or single_threaded')
    demo.set_defaults(run=demo_command)


def add_bench_parser(commands) -> None:
    bench = commands.add_parser('bench', help=COMMANDS['bench'])
    bench.add_argument('areas', nargs='*', help='benchmark areas (default: all); options such '
                       'as --quick are passed on to bench/run.py too')
    bench.set_defaults(run=bench_command)


def add_replay_parser(commands) -> None:
    replay = commands.add_parser(
        'replay', help=COMMANDS['replay'],
        description='Writes an animation of a run: robots with their names, traces and goals, '
        'people, the map and the time. SOURCE: a demo output folder (its recording, else its '
        'tracks.npz), a rosbag2 bag folder or an .mcap file.')
    replay.add_argument('source', metavar='SOURCE')
    replay.add_argument('--out', help='the animation file, .gif or .mp4 (default: replay.gif in '
                        'a demo folder, <bag>.gif beside a bag)')
    replay.add_argument('--fps', type=float, default=10.0,
                        help='frames per second of the run\'s time (default 10)')
    replay.add_argument('--max-frames', type=int, default=300,
                        help='at most this many frames; a longer run is shown faster (default 300)')
    replay.set_defaults(run=replay_command)


def add_faults_parser(commands) -> None:
    from orca_nav.bringup.faults import add_parser
    add_parser(commands, COMMANDS['faults'])


_ADD_PARSER = {'demo': add_demo_parser, 'faults': add_faults_parser,
               'replay': add_replay_parser, 'bench': add_bench_parser}


def build_parser(full: Sequence[str] = tuple(COMMANDS)) -> argparse.ArgumentParser:
    """orca-nav's parser. Only the commands in `full` get their options (building them imports
    what the command needs); the others are listed with their help line."""
    parser = argparse.ArgumentParser(
        prog='orca-nav', description='Multi-robot navigation with ORCA on ROS 2: run a fleet '
        'scenario on the embedded simulator, or the benchmarks.',
        epilog='`orca-nav COMMAND --help` shows the options of a command.')
    commands = parser.add_subparsers(dest='command', required=True, title='commands',
                                     metavar='COMMAND')
    for name, help_text in COMMANDS.items():
        if name in full:
            _ADD_PARSER[name](commands)
        else:
            commands.add_parser(name, help=help_text, add_help=False)
    return parser


def _interrupt_once(signum, frame):
    signal.signal(signal.SIGINT, signal.SIG_IGN)       # a second Ctrl-C must not cut the report
    raise KeyboardInterrupt


def console_main() -> None:
    """The `orca-nav` console script: `main()`, the first Ctrl-C only (a second one, as a
    terminal and a wrapper may both send, is ignored), then the process ends at once
    (`orca_nav.process`)."""
    signal.signal(signal.SIGINT, _interrupt_once)
    try:
        status = main()
    except KeyboardInterrupt:       # before a command's own handling began (imports, loading)
        print('\norca-nav: interrupted while starting; nothing was run', file=sys.stderr)
        status = 0
    end_process(status)


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(full=argv[:1])       # the command is the first argument
    args, extra = parser.parse_known_args(argv)
    if args.command == 'bench':
        args.bench_args = list(args.areas) + extra
    elif extra:
        parser.error(f'unrecognized arguments: {" ".join(extra)}')
    return args.run(args)


if __name__ == '__main__':
    console_main()
