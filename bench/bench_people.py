"""Robots among people, over many pedestrian seeds: contacts in the `people` scenario.

The scenario (6 robots crossing the warehouse's top lane both ways, 10 scripted people, robots
at 1 m/s and 2 m/s^2) is run closed loop in the core, without ROS: FleetSim with the pedestrians
and the map, FleetController with the map prepared and the people as non-cooperative agents
(their true states, as fleet_sim_node publishes them), control at 20 Hz, simulation steps of at
most 20 ms. Over DDS orca_node adds one control period of latency; the demo
(`orca-nav demo --scenario people --seed S`) is the same run over real topics.

Each seed is run twice: the baseline with people who avoid no one (`stop_gap` 0), and the
scenario as shipped (people stop `stop_gap` short of a robot they close on). Reported per
variant: runs with a robot-person contact, runs with a robot-robot contact, contact counts, the
smallest robot-person and robot-robot gaps (m, negative: overlap) and the median makespan.

Usage: python -m bench.bench_people [--quick] [--seeds 16]
"""
import argparse
import json
from pathlib import Path

import numpy as np

from orca_nav.bringup.scenarios import people
from orca_nav.core.avoidance import NonCooperative
from orca_nav.core.fleet.controller import ControllerParams, FleetController, prepare_map
from orca_nav.core.fleet.kinematics import RobotLimits
from orca_nav.core.sim.pedestrians import PedestrianParams, Pedestrians
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.sim.fleet_sim import ROBOT_PERSON, ROBOT_ROBOT, FleetSim
from orca_nav.core.geometry import body_to_world
from orca_nav.core.grid import OccupancyGrid

RESULTS = Path(__file__).resolve().parent / 'results' / 'people.json'
PERIOD = 0.05           # s: orca_node's control_rate 20 Hz
SIM_STEP = 0.02         # s: fleet_sim_node's sim_rate 50 Hz


def run_people(seed: int, stop_gap: float) -> dict:
    """One run of the people scenario with pedestrian seed `seed` and the given stop_gap."""
    cfg = people()
    grid = OccupancyGrid.from_map_yaml(cfg.map_path)
    walk = cfg.node_parameters['fleet_sim_node']
    walkers = Pedestrians(walk['pedestrians.lines'], walk['pedestrians.walkers'],
                          PedestrianParams(speed=walk['pedestrians.speed'],
                                           radius=walk['pedestrians.radius'],
                                           area=tuple(walk['pedestrians.area']),
                                           stop_gap=stop_gap),
                          grid=grid, seed=seed)
    robots = cfg.robots
    limits = RobotLimits.create([r.kinematics for r in robots], [r.max_speed for r in robots],
                                [r.max_accel for r in robots], [r.max_yaw_rate for r in robots],
                                [r.min_turning_radius for r in robots])
    radii = np.array([r.radius for r in robots])
    sim = FleetSim(limits, radii, np.array([r.start for r in robots]), grid=grid,
                   pedestrians=walkers)
    controller = FleetController([RobotSpec(r.name, **r.field_values()) for r in robots],
                                 ControllerParams(require_map=True))
    goals = np.array([r.goals[0][:2] for r in robots])
    controller.set_map(prepare_map(grid, 0.0, True, goals, radii))
    for i, goal in enumerate(goals):
        controller.set_goal(i, goal)
    person_radius = cfg.node_parameters['orca_node']['tracked_agent_radius']
    person_contacts = robot_contacts = 0
    person_gap = robot_gap = np.inf
    arrived = np.full(len(robots), np.nan)
    now = 0.0
    while now < cfg.demo.duration and np.isnan(arrived).any():
        pose, twist = sim.odometry()
        velocity = body_to_world(twist[:, :2], pose[:, 2])
        for i in range(len(robots)):
            controller.set_state(i, now, pose[i, :2], velocity[i], pose[i, 2])
        controller.set_others(NonCooperative(walkers.positions.copy(),
                                             walkers.velocities.copy(),
                                             np.full(len(walkers), person_radius)))
        sim.set_commands(controller.step(now).twists)
        for event in sim.advance(PERIOD, SIM_STEP):
            person_contacts += event.kind == ROBOT_PERSON
            robot_contacts += event.kind == ROBOT_ROBOT
        now = round(now + PERIOD, 9)
        xy = sim.poses[:, :2]
        person_gap = min(person_gap, float(np.min(np.linalg.norm(
            xy[:, None] - walkers.positions[None], axis=2) - radii[:, None] - walkers.radius)))
        pair = np.linalg.norm(xy[:, None] - xy[None], axis=2) - radii[:, None] - radii[None]
        robot_gap = min(robot_gap, float(np.min(pair[np.triu_indices(len(robots), 1)])))
        at_goal = np.linalg.norm(xy - goals, axis=1) <= cfg.demo.goal_tolerance
        arrived[at_goal & np.isnan(arrived)] = now
    return {'seed': seed, 'person_contacts': person_contacts, 'robot_contacts': robot_contacts,
            'min_person_gap': person_gap, 'min_robot_gap': robot_gap,
            'makespan': None if np.isnan(arrived).any() else float(arrived.max())}


def summary(runs) -> dict:
    makespans = [r['makespan'] for r in runs if r['makespan'] is not None]
    return {'runs': len(runs),
            'runs_with_person_contact': sum(r['person_contacts'] > 0 for r in runs),
            'runs_with_robot_contact': sum(r['robot_contacts'] > 0 for r in runs),
            'person_contacts': sum(r['person_contacts'] for r in runs),
            'robot_contacts': sum(r['robot_contacts'] for r in runs),
            'min_person_gap': min(r['min_person_gap'] for r in runs),
            'min_robot_gap': min(r['min_robot_gap'] for r in runs),
            'all_arrived': len(makespans), 'median_makespan':
                float(np.median(makespans)) if makespans else None}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='4 seeds')
    parser.add_argument('--seeds', type=int, default=16, help='pedestrian seeds 0..N-1')
    args = parser.parse_args(argv)
    seeds = range(4 if args.quick else args.seeds)
    shipped = people().node_parameters['fleet_sim_node']['pedestrians.stop_gap']
    variants = {'avoid no one (stop_gap 0)': 0.0, f'as shipped (stop_gap {shipped:g})': shipped}
    results = {}
    print(f'{"people":<28} {"runs":>4} {"w/ person":>9} {"w/ robot":>8} {"contacts":>9} '
          f'{"min gap person":>14} {"min gap robot":>13} {"arrived":>7} {"makespan":>8}')
    for name, stop_gap in variants.items():
        runs = [run_people(seed, stop_gap) for seed in seeds]
        s = summary(runs)
        results[name] = {'stop_gap': stop_gap, 'summary': s, 'runs': runs}
        makespan = f'{s["median_makespan"]:.1f}' if s['median_makespan'] is not None else '-'
        print(f'{name:<28} {s["runs"]:>4} {s["runs_with_person_contact"]:>9} '
              f'{s["runs_with_robot_contact"]:>8} '
              f'{s["person_contacts"]:>4}/{s["robot_contacts"]:<4} '
              f'{s["min_person_gap"]:>14.3f} {s["min_robot_gap"]:>13.3f} '
              f'{s["all_arrived"]:>7} {makespan:>8}')
    print('w/ person, w/ robot: runs with a robot-person / robot-robot contact; contacts: '
          'person/robot; gaps in m (negative: overlap); makespan: median over runs where every '
          'robot arrived (s)')
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({'seeds': list(seeds), 'variants': results}, indent=2) + '\n')
    print(f'wrote {RESULTS}')


if __name__ == '__main__':
    main()
