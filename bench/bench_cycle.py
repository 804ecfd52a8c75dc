"""Control cycle cost: FleetController.step against navground's world update and RVO2, same scenes.

A fleet of N robots (4, 16, 20, 50, 100, 500) on a jittered 2.5 m lattice, each driving to
another robot's start (a seeded permutation: traffic in every direction at a constant density),
`ground` (diff-drive robots, 0.3 m, 1 m/s) or `mixed` (holonomic, diff-drive and car robots,
drawn at random), on an open floor (`nomap`) or inside walls with square pillars between the
lattice points (`map`, a 0.1 m occupancy grid). Every scene runs closed loop for `--cycles`
cycles at 20 Hz, three controllers stepped in turn so that they share the machine's load:

- orca_nav: `FleetController.step` with its defaults (goal guidance around the map's
  obstacles, deadlock breaker, acceleration-aware ORCA, the safety layer), driving
  orca_nav's FleetSim; only `step` is timed;
- navground 0.7 (C++ core, Python bindings): `World.update(0.05)`, its whole world step
  (state estimation, ORCA behaviour, kinematics, collisions), the same robots (Omni, 2WDiff,
  Bicycle kinematics) and tasks, ORCA with the same horizons and neighbours (navground's ORCA
  sees 2 x `horizon`), the map's polygons as walls;
- RVO2 (PyPI pyrvo): `do_step` over the same agents (holonomic discs of the robots' ORCA radii
  and speeds, the map's polygons as obstacles), preferred velocities straight to the goals set
  by the usual Python loop (`full` includes that loop).

A run's figure is its median ms per cycle after the first 5; the table gives min / median over
`--runs` runs, and the ratios orca_nav / peer taken within each run (median over runs).
`--node` adds orca_node's own cycle, in this process: the node built with the scene's robots,
fed the scene's odometry as serialized messages and stepped by them (`cycle_trigger:
odometry`), timed by its own cycle statistics (wall clock and thread CPU of `_cycle`: the
controller step, tracked agents, publishing N cmd_vel), plus the cost of taking the cycle's N
odometry messages.

`--profile N` prints cProfile's top functions of FleetController.step at N robots instead.

Usage: python -m bench.bench_cycle [--quick] [--sizes 4 20 100] [--fleets ground mixed]
       [--maps nomap map] [--cycles 60] [--runs 3] [--node] [--profile N]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import numpy as np

from bench.bench_generalize import ROBOT_KINDS
from orca_nav.core.avoidance.map_polygons import grid_to_polygons
from orca_nav.core.fleet.controller import FleetController
from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.kinematics import RobotLimits
from orca_nav.core.fleet.map_model import prepare_map
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.geometry import body_to_world
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.sim.fleet_sim import FleetSim

RESULTS = Path(__file__).resolve().parent / 'results' / 'cycle.json'
SIZES = (4, 16, 20, 50, 100, 500)
RATE = 20.0
SPACING = 2.5           # m between lattice points
PILLAR = 0.5            # m: side of a pillar
KINDS = {kind: ROBOT_KINDS[kind] for kind in ('holonomic', 'diff_drive', 'car')}
FLEETS = {'ground': ('diff_drive',), 'mixed': ('holonomic', 'diff_drive', 'car')}
WARMUP = 5              # cycles left out of each run's median


@dataclass
class CycleScene:
    name: str
    robots: List[RobotSpec]
    starts: np.ndarray          # (N, 3) x, y, yaw
    goals: np.ndarray           # (N, 2)
    grid: Optional[OccupancyGrid]


def cycle_scene(count: int, fleet: str, with_map: bool, seed: int = 0) -> CycleScene:
    """N robots on a jittered lattice, each heading for another one's start (see the module
    docstring); with a map: walls 1.5 m outside the lattice, pillars at a third of the lattice
    cells' centres."""
    rng = np.random.default_rng([seed, count, len(fleet), int(with_map)])
    side = math.ceil(math.sqrt(count))
    ix, iy = np.meshgrid(np.arange(side), np.arange(side))
    lattice = SPACING * np.column_stack([ix.ravel(), iy.ravel()])[:count].astype(float)
    starts = lattice + rng.uniform(-0.1, 0.1, lattice.shape)
    goals = lattice[rng.permutation(count)]
    kinds = rng.choice(FLEETS[fleet], count)
    robots = [RobotSpec(f'robot{i}', **KINDS[k]) for i, k in enumerate(kinds)]
    yaw = rng.uniform(-math.pi, math.pi, count)
    grid = None
    if with_map:
        cells = [(x, y) for x in range(side - 1) for y in range(side - 1)]
        chosen = rng.permutation(len(cells))[:len(cells) // 3]
        half = 0.5 * PILLAR
        rects = [((cells[k][0] + 0.5) * SPACING - half, (cells[k][1] + 0.5) * SPACING - half,
                  (cells[k][0] + 0.5) * SPACING + half, (cells[k][1] + 0.5) * SPACING + half)
                 for k in chosen]
        low, high = -1.8, (side - 1) * SPACING + 1.8
        grid = OccupancyGrid.from_rectangles((low, low, high, high), 0.1, rects, wall=0.3)
    name = f"{fleet} {'map' if with_map else 'nomap'} {count}"
    return CycleScene(name, robots, np.column_stack([starts, yaw]), goals, grid)


# ---------------------------------------------------------------------------- orca_nav
class OrcaNavLoop:
    """FleetController driving FleetSim; `cycle()` returns the seconds `step` took."""

    def __init__(self, scene: CycleScene, params: Optional[ControllerParams] = None):
        robots = scene.robots
        params = params or ControllerParams(require_map=scene.grid is not None)
        self.controller = FleetController(robots, params)
        for i, goal in enumerate(scene.goals):
            self.controller.set_goal(i, goal)
        if scene.grid is not None:
            goals, radii = self.controller.goals_to_prepare()
            self.controller.set_map(prepare_map(scene.grid, params.map_inflation, True, goals,
                                                radii))
        limits = RobotLimits.create([r.kinematics for r in robots], [r.max_speed for r in robots],
                                    [r.max_accel for r in robots],
                                    [r.max_yaw_rate for r in robots],
                                    [r.min_turning_radius for r in robots])
        self.sim = FleetSim(limits, [r.radius for r in robots], scene.starts, grid=scene.grid)
        self.period = params.period
        self.now = 0.0
        self.rows = np.arange(len(robots))

    def observe(self) -> None:
        pose, twist = self.sim.odometry()
        n = len(pose)
        self.controller.set_states(self.rows, np.full(n, self.now),
                                   np.column_stack([pose[:, :2], np.zeros(n)]),
                                   np.column_stack([body_to_world(twist[:, :2], pose[:, 2]),
                                                    np.zeros(n)]),
                                   pose[:, 2], np.zeros((n, 2, 2)))

    def cycle(self):
        """(wall, thread CPU) s of `step`."""
        self.observe()
        wall, cpu = time.perf_counter(), time.thread_time()
        out = self.controller.step(self.now)
        elapsed = time.perf_counter() - wall, time.thread_time() - cpu
        self.advance(out.twists)
        return elapsed

    def advance(self, twists) -> None:
        self.sim.set_commands(twists)
        self.sim.advance(self.period, self.period)
        self.now = round(self.now + self.period, 9)


# ---------------------------------------------------------------------------- peers
def navground_world(scene: CycleScene, params: ControllerParams):
    """The scene as a navground world (None when navground is not installed)."""
    try:
        import navground.sim as sim
    except ImportError:
        return None
    import yaml
    agents = []
    for robot, start, goal in zip(scene.robots, scene.starts, scene.goals):
        if robot.kinematics == 'holonomic':
            kinematics = dict(type='Omni', max_speed=robot.max_speed,
                              max_angular_speed=robot.max_yaw_rate)
        elif robot.kinematics == 'diff_drive':
            kinematics = dict(type='2WDiff', wheel_axis=2 * robot.radius,
                              max_speed=robot.max_speed, max_angular_speed=robot.max_yaw_rate)
        else:
            kinematics = dict(type='Bicycle', axis=robot.wheelbase, max_speed=robot.max_speed,
                              max_steering_angle=math.atan(robot.wheelbase
                                                           / robot.min_turning_radius))
        agents.append(dict(
            position=[float(start[0]), float(start[1])], orientation=float(start[2]),
            radius=robot.radius, control_period=params.period, kinematics=kinematics,
            behavior=dict(type='ORCA', horizon=0.5 * params.neighbor_dist,
                          time_horizon=params.time_horizon,
                          static_time_horizon=params.time_horizon_obst,
                          max_neighbors=params.max_neighbors, safety_margin=params.safety_margin,
                          optimal_speed=robot.max_speed),
            state_estimation=dict(type='Bounded', range=params.neighbor_dist),
            task=dict(type='Waypoints', waypoints=[[float(goal[0]), float(goal[1])]],
                      tolerance=params.goal_tolerance)))
    walls = []
    for polygon in (grid_to_polygons(scene.grid) if scene.grid is not None else []):
        for a, b in zip(polygon, np.roll(polygon, -1, axis=0)):
            walls.append(dict(line=[a.tolist(), b.tolist()]))
    world = sim.load_world(yaml.safe_dump(dict(agents=agents, walls=walls)))
    world.update(params.period)     # its first update prepares what later ones reuse
    return world


def navground_cycle(world, period: float):
    """(wall, thread CPU) s of one world update."""
    wall, cpu = time.perf_counter(), time.thread_time()
    world.update(period)
    return time.perf_counter() - wall, time.thread_time() - cpu


class Rvo2Loop:
    """pyrvo (RVO2 2.0.3) on the scene: holonomic agents of the robots' ORCA radii."""

    def __init__(self, pyrvo, scene: CycleScene, params: ControllerParams):
        self.sim = sim = pyrvo.RVOSimulator()
        sim.set_time_step(params.period)
        sim.set_agent_defaults(params.neighbor_dist, params.max_neighbors, params.time_horizon,
                               params.time_horizon_obst, 0.3, 1.0)
        for robot, start in zip(scene.robots, scene.starts):
            i = sim.add_agent((float(start[0]), float(start[1])))
            sim.set_agent_radius(i, robot.radius + params.safety_margin)
            sim.set_agent_max_speed(i, robot.max_speed)
        for polygon in (grid_to_polygons(scene.grid) if scene.grid is not None else []):
            sim.add_obstacle([tuple(map(float, v)) for v in polygon])
        sim.process_obstacles()
        self.goals = scene.goals.tolist()
        self.speeds = [r.max_speed for r in scene.robots]

    def cycle(self):
        """(full step, do_step, do_step's thread CPU) s."""
        sim = self.sim
        start = time.perf_counter()
        for i, (gx, gy) in enumerate(self.goals):
            p = sim.get_agent_position(i)
            vx, vy = gx - p.x, gy - p.y
            length = (vx * vx + vy * vy) ** 0.5
            if length > self.speeds[i]:
                vx, vy = vx * self.speeds[i] / length, vy * self.speeds[i] / length
            sim.set_agent_pref_velocity(i, (vx, vy))
        mid, cpu = time.perf_counter(), time.thread_time()
        sim.do_step()
        end = time.perf_counter()
        return end - start, end - mid, time.thread_time() - cpu


def _import_pyrvo():
    try:
        import pyrvo
        return pyrvo
    except ImportError:
        return None


# ---------------------------------------------------------------------------- orca_node
class NodeLoop(OrcaNavLoop):
    """orca_node in this process, fed the scene's odometry as serialized messages; its own
    cycle statistics time `_cycle`. `cycle()` returns the seconds taking the odometry took."""

    def __init__(self, scene: CycleScene, context):
        import rclpy
        from rclpy.parameter import Parameter

        from orca_nav.ros.orca_node import OrcaNode
        super().__init__(scene)
        self.controller = None          # the node's own
        overrides = [Parameter('robots', value=[r.name for r in scene.robots]),
                     Parameter('control_rate', value=RATE),
                     Parameter('cycle_trigger', value='odometry'),
                     Parameter('use_sim_time', value=True),
                     Parameter('marker_rate', value=0.0), Parameter('diagnostics_rate', value=0.1),
                     Parameter('require_map', value=scene.grid is not None)]
        for robot, goal in zip(scene.robots, scene.goals):
            for field, value in robot.field_values().items():
                if field != 'responsibility':
                    overrides.append(Parameter(f'{robot.name}.{field}', value=value))
            overrides.append(Parameter(f'{robot.name}.goal',
                                       value=[float(goal[0]), float(goal[1]), 0.0]))
        self.node = OrcaNode(context=context, parameter_overrides=overrides)
        self.rclpy = rclpy
        fleet = self.node.fleet
        if scene.grid is not None:
            goals, radii = fleet.goals_to_prepare()
            fleet.set_map(prepare_map(scene.grid, fleet.params.map_inflation, True, goals, radii))
        self._outputs = []
        step = fleet.step

        def recorded(now, *args, **kwargs):
            out = step(now, *args, **kwargs)
            self._outputs.append(out)
            return out
        fleet.step = recorded

    def observe_messages(self):
        from builtin_interfaces.msg import Time
        from rclpy.serialization import serialize_message

        from orca_nav.ros.convert import state_to_odom
        pose, twist = self.sim.odometry()
        sec, frac = divmod(self.now, 1.0)
        stamp = Time(sec=int(sec), nanosec=int(round(frac * 1e9)))
        return [serialize_message(state_to_odom(pose[i, :2], float(pose[i, 2]),
                                                (float(twist[i, 0]), float(twist[i, 1])),
                                                float(twist[i, 2]), stamp, 'map',
                                                f'robot{i}/base_link'))
                for i in range(len(pose))]

    def cycle(self) -> float:
        raw = self.observe_messages()
        self._set_clock(self.now)
        start = time.perf_counter()
        for i, message in enumerate(raw):
            self.node._odometry.add(i, message)
        self.node._after_inputs()       # takes the odometry, then the cycle (all states in)
        elapsed = time.perf_counter() - start
        out = self._outputs.pop() if self._outputs else None
        self._outputs.clear()
        self.advance(out.twists if out is not None else np.zeros((len(self.rows), 3)))
        return elapsed

    def _set_clock(self, seconds: float) -> None:
        from rclpy.time import Time
        self.node.get_clock().set_ros_time_override(Time(nanoseconds=int(round(seconds * 1e9))))

    def close(self):
        self.node.destroy_node()


# ---------------------------------------------------------------------------- runs
def run_once(scene: CycleScene, cycles: int, pyrvo, with_navground: bool):
    """One closed-loop run of the scene, the controllers stepped in turn; medians (ms)."""
    params = ControllerParams()
    ours = OrcaNavLoop(scene)
    world = navground_world(scene, params) if with_navground else None
    peer = Rvo2Loop(pyrvo, scene, params) if pyrvo is not None else None
    nothing = (math.nan, math.nan, math.nan)
    keys = ('orca_nav', 'orca_nav_cpu', 'navground', 'navground_cpu', 'rvo2_full',
            'rvo2_do_step', 'rvo2_do_step_cpu')
    times = {key: [] for key in keys}
    for k in range(cycles):
        figures = (ours.cycle() + (navground_cycle(world, params.period) if world is not None
                                   else nothing[:2])
                   + (peer.cycle() if peer is not None else nothing))
        if k >= WARMUP:
            for key, value in zip(keys, figures):
                times[key].append(value)
    return {key: 1e3 * float(np.median(v)) for key, v in times.items()}


def run_node_once(scene: CycleScene, cycles: int, context):
    """orca_node's cycle on the scene (ms): wall and CPU p50 of `_cycle`, and the odometry."""
    loop = NodeLoop(scene, context)
    try:
        odometry = []
        for k in range(cycles):
            elapsed = loop.cycle()
            if k >= WARMUP:
                odometry.append(elapsed)
        times = loop.node._cycle_times      # its own record of each cycle (ms)
        wall, cpu = times._wall_ms[WARMUP:], times._cpu_ms[WARMUP:]
    finally:
        loop.close()
    return {'node_cycle_ms': float(np.median(wall)), 'node_cycle_cpu_ms': float(np.median(cpu)),
            'node_odometry_and_cycle_ms': 1e3 * float(np.median(odometry))}


def summarize(name, runs):
    row = {'scene': name, 'runs': len(runs)}
    for key in runs[0]:
        values = np.array([r[key] for r in runs], dtype=float)
        row[key] = float(np.median(values))
        row[key + '_min'] = float(values.min())
    for ours, peer in (('orca_nav', 'navground'), ('orca_nav', 'rvo2_do_step'),
                       ('orca_nav', 'rvo2_full'), ('orca_nav_cpu', 'navground_cpu'),
                       ('orca_nav_cpu', 'rvo2_do_step_cpu')):
        ratio = np.array([r[ours] / r[peer] for r in runs])
        row['x_' + peer] = float(np.median(ratio))
    return row


def profile(count: int, fleet: str, with_map: bool, cycles: int) -> None:
    import cProfile
    import pstats
    loop = OrcaNavLoop(cycle_scene(count, fleet, with_map))
    for _ in range(WARMUP):
        loop.cycle()
    profiler = cProfile.Profile()
    for _ in range(cycles):
        loop.observe()
        profiler.enable()
        out = loop.controller.step(loop.now)
        profiler.disable()
        loop.advance(out.twists)
    pstats.Stats(profiler).sort_stats('tottime').print_stats(30)
    pstats.Stats(profiler).sort_stats('cumulative').print_stats(45)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.bench_cycle',
                                     description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='4, 20, 100 robots, 2 runs')
    parser.add_argument('--sizes', type=int, nargs='+')
    parser.add_argument('--fleets', nargs='+', choices=sorted(FLEETS), default=list(FLEETS))
    parser.add_argument('--maps', nargs='+', choices=('nomap', 'map'), default=['nomap', 'map'])
    parser.add_argument('--cycles', type=int, help='cycles per run (default 60, quick 30)')
    parser.add_argument('--runs', type=int, help='runs per scene (default 3, quick 2)')
    parser.add_argument('--node', action='store_true', help="orca_node's cycle too (rclpy)")
    parser.add_argument('--no-navground', action='store_true')
    parser.add_argument('--profile', type=int, metavar='N',
                        help='cProfile FleetController.step at N robots (first fleet and map)')
    args = parser.parse_args(argv)
    sizes = args.sizes or ((4, 20, 100) if args.quick else SIZES)
    cycles = args.cycles or (30 if args.quick else 60)
    runs = args.runs or (2 if args.quick else 3)
    if args.profile:
        profile(args.profile, args.fleets[0], args.maps[0] == 'map', cycles)
        return []
    pyrvo = _import_pyrvo()
    if pyrvo is None:
        print('pyrvo not installed: RVO2 columns empty (pip install pyrvo)')
    with_navground = not args.no_navground and _has_navground()
    if not with_navground:
        print('navground not installed: its columns empty (pip install navground==0.7.0)')
    context = None
    if args.node:
        import rclpy
        context = rclpy.Context()
        rclpy.init(context=context)
    print(f'load average at start {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores); '
          f'{runs} runs of {cycles} cycles, medians per run after {WARMUP}; min / median over runs')
    header = (f"{'scene':<17} {'orca_nav ms':>12} {'cpu':>5} {'navground ms':>13} {'cpu':>5} "
              f"{'x ng':>5} {'x cpu':>5} {'rvo2 do_step':>13} {'x do_step':>9} {'rvo2 full':>9}"
              + (f" {'node cyc':>8} {'node cpu':>8} {'+odom':>7}" if args.node else ''))
    print(header)
    print('-' * len(header))
    rows = []
    try:
        for fleet in args.fleets:
            for map_name in args.maps:
                for count in sizes:
                    scene = cycle_scene(count, fleet, map_name == 'map')
                    per_run = []
                    for _ in range(runs):
                        result = run_once(scene, cycles, pyrvo, with_navground)
                        if context is not None:
                            result.update(run_node_once(scene, cycles, context))
                        per_run.append(result)
                    row = summarize(scene.name, per_run)
                    row['load_average'] = os.getloadavg()[0]
                    rows.append(row)
                    line = (f"{scene.name:<17} {row['orca_nav_min']:5.2f}/{row['orca_nav']:6.2f} "
                            f"{row['orca_nav_cpu']:5.2f} "
                            f"{row['navground_min']:6.3f}/{row['navground']:6.3f} "
                            f"{row['navground_cpu']:5.3f} "
                            f"{row['x_navground']:5.0f} {row['x_navground_cpu']:5.0f} "
                            f"{row['rvo2_do_step_min']:6.3f}/{row['rvo2_do_step']:6.3f} "
                            f"{row['x_rvo2_do_step']:9.1f} {row['rvo2_full']:9.3f}")
                    if context is not None:
                        line += (f" {row['node_cycle_ms']:8.2f} {row['node_cycle_cpu_ms']:8.2f} "
                                 f"{row['node_odometry_and_cycle_ms']:7.2f}")
                    print(line, flush=True)
    finally:
        if context is not None:
            import rclpy
            rclpy.try_shutdown(context=context)
    print('ms: median per cycle of a run (wall clock), min/median over runs; cpu: the same in '
          'thread CPU time, median; x: orca_nav / peer within a run, median over runs (x cpu: '
          'of CPU times); rvo2 full: do_step plus its Python loop setting preferred '
          'velocities' + ('; node cyc / cpu: orca_node\'s _cycle, wall / thread CPU p50; +odom: '
                          'taking N odometry messages and the cycle, wall' if args.node else ''))
    print(f'load average at end {os.getloadavg()[0]:.1f}')
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({'rate_hz': RATE, 'cycles': cycles, 'runs': runs,
                                   'cores': os.cpu_count(), 'rows': rows}, indent=1))
    return rows


def _has_navground() -> bool:
    try:
        import navground.sim  # noqa: F401
        return True
    except ImportError:
        return False


if __name__ == '__main__':
    main()
