"""Running a fleet demo in this process: a scenario or fleet file, the whole node graph over real
DDS topics on the embedded simulator, the mission, and the report and picture of the run.

`orca-nav demo` (`orca_nav.bringup.cli`) and `orca-nav faults` (`orca_nav.bringup.faults`) both
run their fleets through `run_demo`.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Callable, Optional

if TYPE_CHECKING:
    from orca_nav.bringup.fleet_file import FleetConfig

# Wall-clock limit for start-up: every robot's odometry must arrive by then.
ODOM_WAIT_S = 60.0


def load_scenario(scenario: str, robots: Optional[int] = None) -> FleetConfig:
    """A built-in scenario by name, or a fleet config file by path."""
    from orca_nav.bringup.fleet_file import load_fleet_config
    from orca_nav.bringup.scenarios import scenario_config
    if scenario.endswith(('.yaml', '.yml')) or os.sep in scenario:
        if robots is not None:
            raise ValueError(f'robots: --robots resizes built-in scenarios only, not {scenario}')
        return load_fleet_config(scenario)
    return scenario_config(scenario, robots)


def with_overrides(cfg: FleetConfig, duration: Optional[float] = None,
                   seed: Optional[int] = None) -> FleetConfig:
    """`cfg` with the demo duration and/or the simulator's noise seed replaced."""
    if duration is not None:
        if not duration > 0:
            raise ValueError(f'duration: must be > 0 s, got {duration!r}')
        cfg = dataclasses.replace(cfg, demo=dataclasses.replace(cfg.demo, duration=duration))
    if seed is not None:
        sections = dict(cfg.node_parameters)
        sections['fleet_sim_node'] = MappingProxyType({**sections['fleet_sim_node'], 'seed': seed})
        cfg = dataclasses.replace(cfg, node_parameters=MappingProxyType(sections))
    return cfg


class Progress:
    """One updating status line on a terminal; a plain line every few seconds otherwise."""

    def __init__(self, stream=None, plain_every_s: float = 5.0):
        self._stream = stream if stream is not None else sys.stderr
        try:
            self._tty = self._stream.isatty()
        except (AttributeError, ValueError, OSError):     # captured or closed streams
            self._tty = False
        self._plain_every = plain_every_s
        self._last_plain = -float('inf')

    def update(self, elapsed: float, at_goal: int, robots: int, collisions: int,
               goals: Optional[tuple] = None, planning_failed: int = 0) -> None:
        """goals: (reached, total) over all robots, shown when robots have several goals;
        planning_failed: robots the planner could not plan for, shown when there are any."""
        line = f't = {elapsed:6.1f} s   at goal {at_goal:3d}/{robots:<3d}   collisions {collisions}'
        if goals is not None and goals[1] > robots:
            line += f'   goals {goals[0]}/{goals[1]}'
        if planning_failed:
            line += f'   planning failed {planning_failed}'
        if self._tty:
            self._stream.write('\r' + line + '\x1b[K')
            self._stream.flush()
        elif elapsed - self._last_plain >= self._plain_every:
            self._last_plain = elapsed
            print(line, file=self._stream, flush=True)

    def close(self) -> None:
        if self._tty:
            self._stream.write('\n')
            self._stream.flush()


def run_demo(cfg: FleetConfig, out_dir: Optional[Path], mode: str = 'centralized',
             progress: Optional[Progress] = None, executor: Optional[str] = None,
             real_time_factor: Optional[float] = 0.0, lockstep: bool = True,
             sim_overrides: Optional[dict] = None,
             during: Optional[Callable[..., None]] = None,
             record: Optional[Path] = None) -> dict:
    """Runs the fleet to completion (or its demo duration); writes report.json and
    trajectories.png into out_dir (unless None) and returns the report.

    real_time_factor: simulated seconds per wall second, the simulator in lockstep with the
    controller (0: as fast as the machine allows; the same run whatever the machine's load);
    None: no simulated time, the nodes run on the wall clock. lockstep False: simulated time
    paced by real_time_factor (> 0) alone. sim_overrides: more simulator parameters (faults).
    during(graph, mission): called about every 0.1 s of the run (e.g. to stop and restart a
    node); the report's `tracks` entry is not written to the file. record: a folder (that does
    not exist) where the recorder node writes the run as a rosbag2 bag (MCAP); the report then
    says how many messages of each topic it recorded (`recording`)."""
    # Most of what the picture needs, loaded before the run rather than after a Ctrl-C (which
    # must end the run, picture included, within 2 s).
    import matplotlib.backends.backend_agg  # noqa: F401
    import numpy as np
    from rclpy.parameter import Parameter

    from orca_nav.bringup.graph import RECORDER, describe_graph
    from orca_nav.bringup.maps import load_map, load_map_3d
    from orca_nav.bringup.mission import DemoMission
    from orca_nav.bringup.replay import TRACKS_FILE, write_tracks
    from orca_nav.bringup.report import fleet_report
    from orca_nav.bringup.report_plot import plot_trajectories
    from orca_nav.bringup.runner import run_graph
    from orca_nav.core.sim.pedestrians import PedestrianParams

    progress = progress or Progress()
    simulated = real_time_factor is not None
    if simulated and not lockstep and not real_time_factor:
        raise ValueError('real_time_factor: without lockstep simulated time needs a pace > 0')
    overrides = dict(sim_overrides or {})
    if simulated:
        overrides.update({'lockstep': lockstep, 'real_time_factor': real_time_factor})
    specs = describe_graph(cfg, use_sim=True, mode=mode, use_sim_time=simulated, observers=1,
                           sim_overrides=overrides or None,
                           record=str(record) if record is not None else None)
    wall_start = time.monotonic()
    with run_graph(specs, executor=executor) as graph:
        recorder = graph.nodes.get('/' + RECORDER)
        mission = graph.add_node(DemoMission(cfg, context=graph.context,
                                             parameter_overrides=[
                                                 Parameter('use_sim_time', value=simulated)]))
        if not graph.wait_for(mission.started, ODOM_WAIT_S):
            if graph.error:
                raise RuntimeError('a node failed: ' + graph.error.strip().splitlines()[-1])
            missing = mission.missing_odometry()
            raise RuntimeError(f'no odometry from {", ".join(missing[:3])} after '
                               f'{ODOM_WAIT_S:.0f} s: did fleet_sim start?')
        # Odometry time drives the run; the wall-clock cap only guards against a stalled sim.
        slowest = cfg.demo.duration / real_time_factor if real_time_factor else cfg.demo.duration
        wall_cap = time.monotonic() + 2.0 * slowest + 30.0
        try:
            while not mission.over() and time.monotonic() < wall_cap:
                if mission.error():
                    raise RuntimeError(mission.error())
                if graph.error:
                    raise RuntimeError('a node failed: ' + graph.error.strip().splitlines()[-1])
                if during is not None:
                    during(graph, mission)
                state = mission.progress()
                progress.update(mission.elapsed(), state['at_goal'], state['robots'],
                                state['collisions'], (state['goals_reached'], state['goals']),
                                state['planning_failed'])
                # Wakes for the end of the run, or every 0.1 s for the progress line.
                graph.wait_for(lambda: mission.over() or mission.error() is not None, 0.1)
        except KeyboardInterrupt:       # Ctrl-C ends the run early; report what was recorded
            print('\norca-nav demo: interrupted: writing the report of what was recorded',
                  file=sys.stderr)
    # The record is read once the graph has stopped: nothing runs beside the report then.
    state = mission.progress()
    progress.update(mission.elapsed(), state['at_goal'], state['robots'], state['collisions'],
                    (state['goals_reached'], state['goals']), state['planning_failed'])
    progress.close()
    tracks, plans = mission.tracks(), mission.plans()
    collisions = mission.collision_events()
    sim_cfg = cfg.node_parameters['fleet_sim_node']
    people = mission.people(sim_cfg.get('pedestrians.radius', PedestrianParams().radius))
    boxes = np.asarray(sim_cfg.get('boxes', []), dtype=float).reshape(-1, 4)
    person_contacts = mission.person_contacts()
    grid = load_map(cfg.map_path) if cfg.map_path is not None else None
    grid_3d = load_map_3d(cfg.map_3d_path) if cfg.map_3d_path is not None else None
    report = fleet_report(tracks, grid=grid, grid_3d=grid_3d, collision_events=collisions,
                          people=people, person_contacts=person_contacts, boxes=boxes,
                          contacts=mission.contacts(),
                          goal_tolerance=cfg.demo.goal_tolerance, meta={
        'scenario': cfg.name, 'mode': mode, 'map': str(cfg.map_path) if cfg.map_path else None,
        'map_3d': str(cfg.map_3d_path) if cfg.map_3d_path else None,
        'duration_limit': cfg.demo.duration, 'goal_tolerance': cfg.demo.goal_tolerance,
        'clock': 'simulated, lockstep' if simulated else 'wall',
        'time_origin': mission.origin()})
    if recorder is not None:    # closed with the graph: these are the messages in the bag
        report['recording'] = {'bag': str(recorder.output), 'storage': 'rosbag2, MCAP, CDR',
                               'messages': recorder.counts(), 'not_recorded': recorder.skipped()}
    print(f'orca-nav demo: {mission.elapsed():.1f} s of {"simulated " if simulated else ""}time '
          f'in {time.monotonic() - wall_start:.1f} s of wall time', file=sys.stderr)
    if out_dir is None:
        return {**report, 'tracks': tracks}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / 'report.json').write_text(json.dumps(report, indent=2) + '\n')
    write_tracks(out_dir / TRACKS_FILE, tracks, people, boxes)
    fleet = report['fleet']
    makespan = f'{fleet["makespan"]:.1f} s' if fleet['makespan'] is not None else 'not all reached'
    plot_trajectories(out_dir / 'trajectories.png', tracks,
                      starts=[(*r.start[:2], r.start_z) if r.flies else r.start[:2]
                              for r in cfg.robots], grid=grid,
                      grid_3d=grid_3d, plans=plans,
                      title=f'{cfg.name}: {len(tracks)} robots, makespan {makespan}, '
                            f'collisions {fleet["collisions"]}', people=people, boxes=boxes)
    return report


def fresh_recording_folder(out_dir: Path) -> Path:
    """OUT/recording for a new bag: an earlier demo's bag there (a folder with a rosbag2
    metadata.yaml) is replaced; anything else there is a ValueError naming it."""
    from orca_nav.bringup.replay import RECORDING_FOLDER
    folder = out_dir / RECORDING_FOLDER
    if folder.exists():
        if not (folder / 'metadata.yaml').is_file():
            raise ValueError(f'--record: {folder} exists and is not a recording of an earlier '
                             'run; move it or choose another --out')
        import shutil
        shutil.rmtree(folder)
    return folder


def demo_exit_status(report: dict) -> int:
    """0 only when every robot reached every goal and is at its last one at the end (see
    `report`), with no contact but a person walking into a robot at rest (`failed_contacts`)
    and no negative separation between two robots in the record; else 1."""
    from orca_nav.bringup.report import failed_contacts
    fleet = report['fleet']
    separation = fleet['min_separation']
    touched = failed_contacts(fleet['contacts']) > 0 or \
        (separation is not None and separation < 0.0)
    return 0 if fleet['all_reached'] and not touched else 1
