"""Robots among people, over many pedestrian seeds: contacts in the `people` scenario.

The scenario (6 robots crossing the warehouse's top lane both ways, 10 scripted people who
avoid no one, robots at 1 m/s and 2 m/s^2) runs closed loop in the core
(`orca_nav.core.sim.closed_loop`, the people's true states as the tracked agents, as
fleet_sim_node publishes them), on simulated time at 20 Hz. Over DDS orca_node adds one control
period of latency; the demo (`orca-nav demo --scenario people --seed S`) is the same run over
real topics.

Each seed runs twice: as shipped (the safety layer and acceleration-aware ORCA), and without
them (RVO2's choice, no safety layer): the baseline. Reported per variant: runs with a contact
while a robot moved, robot-person and robot-robot contacts while moving / at rest, arrivals and
the median makespan.

Usage: python -m bench.bench_people [--quick] [--seeds 32]
"""
import argparse
import json
from pathlib import Path

import numpy as np

from orca_nav.bringup.scenarios import people
from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.sim.closed_loop import Scene, run
from orca_nav.core.sim.fleet_sim import ROBOT_PERSON, ROBOT_ROBOT
from orca_nav.core.sim.pedestrians import PedestrianParams, Pedestrians

RESULTS = Path(__file__).resolve().parent / 'results' / 'people.json'
VARIANTS = {'as shipped (safety layer)': ControllerParams(),
            'without the safety layer': ControllerParams(safety=None, acceleration_aware=False)}


def people_scene(seed: int, params: ControllerParams) -> Scene:
    """The people scenario with pedestrian seed `seed`."""
    cfg = people()
    grid = OccupancyGrid.from_map_yaml(cfg.map_path)
    walk = cfg.node_parameters['fleet_sim_node']
    walkers = Pedestrians(walk['pedestrians.lines'], walk['pedestrians.walkers'],
                          PedestrianParams(speed=walk['pedestrians.speed'],
                                           radius=walk['pedestrians.radius'],
                                           area=tuple(walk['pedestrians.area'])),
                          grid=grid, seed=seed)
    return Scene('people', [RobotSpec(r.name, **r.field_values()) for r in cfg.robots],
                 np.array([r.start for r in cfg.robots]),
                 [[g[:2] for g in r.goals] for r in cfg.robots], grid=grid,
                 pedestrians=walkers,
                 person_radius=cfg.node_parameters['orca_node']['tracked_agent_radius'],
                 duration=cfg.demo.duration, goal_tolerance=cfg.demo.goal_tolerance,
                 params=params, seed=seed)


def run_people(seed: int, params: ControllerParams) -> dict:
    result = run(people_scene(seed, params))
    return {'seed': seed, 'moving_contacts': result.moving_contacts,
            **{f'{kind}_{state}': result.count(kind, moving=state == 'moving')
               for kind in (ROBOT_PERSON, ROBOT_ROBOT) for state in ('moving', 'rest')},
            'arrived': result.finished, 'robots': result.robots, 'makespan': result.makespan}


def summary(runs) -> dict:
    makespans = [r['makespan'] for r in runs if r['makespan'] is not None]
    total = {key: sum(r[key] for r in runs) for key in runs[0]
             if key.endswith(('_moving', '_rest')) or key in ('arrived', 'robots')}
    return {'runs': len(runs), 'runs_with_moving_contact': sum(r['moving_contacts'] > 0
                                                               for r in runs),
            **total, 'all_arrived': len(makespans),
            'median_makespan': float(np.median(makespans)) if makespans else None}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='4 seeds')
    parser.add_argument('--seeds', type=int, default=32, help='pedestrian seeds 0..N-1')
    args = parser.parse_args(argv)
    seeds = range(4 if args.quick else args.seeds)
    results = {}
    print(f'{"people who avoid no one":<28} {"runs":>4} {"moving":>6} {"person mov/rest":>15} '
          f'{"robot mov/rest":>14} {"arrived":>9} {"all in":>6} {"makespan":>8}')
    for name, params in VARIANTS.items():
        runs = [run_people(seed, params) for seed in seeds]
        s = summary(runs)
        results[name] = {'summary': s, 'runs': runs}
        makespan = f'{s["median_makespan"]:.1f}' if s['median_makespan'] is not None else '-'
        print(f'{name:<28} {s["runs"]:>4} {s["runs_with_moving_contact"]:>6} '
              f'{s["robot_person_moving"]:>7}/{s["robot_person_rest"]:<7} '
              f'{s["robot_robot_moving"]:>6}/{s["robot_robot_rest"]:<7} '
              f'{s["arrived"]:>4}/{s["robots"]:<4} {s["all_arrived"]:>6} {makespan:>8}')
    print('moving: runs with a contact while a robot moved; contacts as while moving / at rest; '
          'all in: runs in which every robot arrived; makespan: their median (s)')
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({'seeds': list(seeds), 'variants': results}, indent=2) + '\n')
    print(f'wrote {RESULTS}')


if __name__ == '__main__':
    main()
