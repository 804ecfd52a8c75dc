"""core.fleet.controller: the fleet controller driven with injected time, closed loop with the
core simulator. Default behaviour (deadlock breaker on) is what these tests exercise."""
import math

import numpy as np
import pytest

from orca_nav.core.fleet.controller import FleetController
from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.deadlock import DeadlockParams
from orca_nav.core.fleet.fleet_state import JUMP_MARGIN_HOLD_S, LOCALIZATION_JUMP_M
from orca_nav.core.fleet.kinematics import RobotLimits
from orca_nav.core.fleet.map_model import prepare_map
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.fleet.status import Level
from orca_nav.core.geometry import body_to_world
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.planning.reference import Reference
from orca_nav.core.sim.fleet_sim import FleetSim

from scenes import parallel_park

PERIOD = 0.05


def specs(count, **fields):
    return [RobotSpec(f'robot{i}', **fields) for i in range(count)]


def closed_loop(controller, starts, seconds, grid=None, start_time=100.0):
    """Runs controller + core simulator for `seconds` of simulated time at the control rate;
    returns (poses (T, N, 3), commanded twists (T, N, 3), collision events)."""
    robots = controller.robots
    limits = RobotLimits.create([r.kinematics for r in robots], [r.max_speed for r in robots],
                                [r.max_accel for r in robots], [r.max_yaw_rate for r in robots],
                                [r.min_turning_radius for r in robots])
    sim = FleetSim(limits, [r.radius for r in robots], np.asarray(starts, dtype=float), grid=grid)
    now, poses, twists, events = start_time, [], [], []
    for _ in range(int(round(seconds / PERIOD))):
        pose, twist = sim.odometry()
        velocity = body_to_world(twist[:, :2], pose[:, 2])
        for i in range(len(robots)):
            controller.set_state(i, now, pose[i, :2], velocity[i], pose[i, 2])
        out = controller.step(now)
        events += sim.step(PERIOD, out.twists)
        poses.append(sim.poses)
        twists.append(out.twists)
        now += PERIOD
    return np.array(poses), np.array(twists), events


def test_commands_head_for_the_goal_in_the_body_frame():
    robots = specs(2) + [RobotSpec('robot2', kinematics='diff_drive')]
    fleet = FleetController(robots)
    fleet.set_state(0, 1.0, (0.0, 0.0), (0.0, 0.0), 0.0)
    fleet.set_state(1, 1.0, (0.0, 20.0), (0.0, 0.0), math.pi / 2)
    fleet.set_state(2, 1.0, (-3.0, -2.0), (0.0, 0.0), 0.0)
    for i, goal in enumerate([(5.0, 0.0), (0.0, 25.0), (-3.0, -10.0)]):
        assert fleet.set_goal(i, goal) is None
    out = fleet.step(1.0)
    # robot1 faces +y: its goal straight ahead is +x in its body frame (REP-103).
    assert out.twists[0, 0] > 0.05 and abs(out.twists[0, 1]) < 1e-9
    assert out.twists[1, 0] > 0.05 and abs(out.twists[1, 1]) < 1e-6
    # Diff-drive facing +x with its goal at -y: turns clockwise, never sideways.
    assert out.twists[2, 2] < -0.1 and out.twists[2, 1] == 0.0
    assert out.ran.all() and out.newly_stale == []


def test_circle_swap_with_the_default_deadlock_breaker_arrives_without_contact():
    count, ring = 8, 3.0
    angle = 2 * np.pi * np.arange(count) / count
    starts = np.column_stack([ring * np.cos(angle), ring * np.sin(angle), angle + np.pi])
    fleet = FleetController(specs(count, radius=0.25, max_speed=1.0))
    for i in range(count):
        fleet.set_goal(i, -starts[i, :2])
    poses, _, events = closed_loop(fleet, starts, 25.0)
    assert events == []
    final = np.hypot(*(poses[-1, :, :2] + starts[:, :2]).T)
    assert np.all(final <= fleet.params.goal_tolerance + 0.05), final
    gaps = [np.min(np.hypot(*(p[:, None, :2] - p[None, :, :2]).transpose(2, 0, 1))
                   + 1e9 * np.eye(count)) for p in poses]
    assert min(gaps) >= 0.5 - 1e-6


def test_plain_orca_stalls_where_the_deadlock_breaker_gets_through():
    # Four robots swapping across a small circle: mirror-image half-planes stall plain ORCA.
    angle = 2 * np.pi * np.arange(4) / 4
    starts = np.column_stack([2.0 * np.cos(angle), 2.0 * np.sin(angle), angle + np.pi])
    remaining = {}
    for breaker in (None, DeadlockParams()):
        fleet = FleetController(specs(4, radius=0.3), ControllerParams(deadlock=breaker))
        for i in range(4):
            fleet.set_goal(i, -starts[i, :2])
        poses, _, events = closed_loop(fleet, starts, 20.0)
        assert events == []
        remaining[breaker is not None] = np.hypot(*(poses[-1, :, :2] + starts[:, :2]).T).max()
    assert remaining[False] > 1.0
    assert remaining[True] <= fleet.params.goal_tolerance


def test_stale_robot_gets_zero_once_reported_and_is_a_static_agent():
    fleet = FleetController(specs(2), ControllerParams(odom_timeout=0.5))
    fleet.set_state(0, 10.0, (0.0, 0.0), (0.0, 0.0), 0.0)
    fleet.set_state(1, 10.0, (2.0, 0.0), (0.0, 0.0), 0.0)
    fleet.set_goal(0, (4.0, 0.0))
    fleet.set_goal(1, (2.0, 5.0))
    assert fleet.step(10.0).twists[1, 1] > 0.0
    fleet.set_state(0, 10.6, (0.0, 0.0), (0.0, 0.0), 0.0)
    out = fleet.step(10.6)
    assert out.newly_stale == [1]
    assert np.all(out.twists[1] == 0.0)
    assert fleet.step(10.65).newly_stale == []      # reported once
    # robot0 heads at the stale robot 2 m ahead: ORCA keeps it from driving into it.
    one = fleet.status(10.65, rows=[1])     # a part of the fleet: its counts restart alone
    assert [s.robot for s in one] == ['robot1'] and one[0].values['orca_cycles'] == '1'
    status = {s.robot: s for s in fleet.status(10.65)}
    assert status['robot1'].level is Level.WARN and 'stale odometry' in status['robot1'].message
    assert status['robot0'].level is Level.OK
    assert (status['robot0'].values['orca_cycles'], status['robot1'].values['orca_cycles']) == \
        ('3', '0')


def test_a_late_state_is_ignored():
    fleet = FleetController(specs(1))
    fleet.set_state(0, 5.0, (1.0, 0.0), (0.0, 0.0), 0.0)
    fleet.set_state(0, 4.0, (9.0, 9.0), (0.0, 0.0), 0.0)
    assert np.allclose(fleet.view(5.0).positions[0], (1.0, 0.0))


def test_require_map_holds_everyone_until_the_map_is_set():
    fleet = FleetController(specs(1), ControllerParams(require_map=True))
    fleet.set_state(0, 1.0, (1.0, 1.0), (0.0, 0.0), 0.0)
    fleet.set_goal(0, (3.0, 1.0))
    assert np.all(fleet.step(1.0).twists == 0.0)
    assert 'waiting for the map' in fleet.status(1.0)[0].message
    grid = OccupancyGrid(np.zeros((50, 50), dtype=bool), 0.1, (0.0, 0.0))
    fleet.set_map(prepare_map(grid, 0.0, fleet.guided))
    assert fleet.step(1.1).twists[0, 0] > 0.0


def test_a_robot_is_commanded_from_the_first_cycle_it_is_ready_and_then_every_cycle():
    fleet = FleetController(specs(2), ControllerParams(require_map=True, trajectories_only=True))
    for i in range(2):
        fleet.set_state(i, 1.0, (1.0 + 2 * i, 1.0), (0.0, 0.0), 0.0)
    assert not fleet.step(1.0).publish.any()        # no map: nobody has been commanded
    grid = OccupancyGrid(np.zeros((50, 50), dtype=bool), 0.1, (0.0, 0.0))
    fleet.set_map(prepare_map(grid, 0.0, fleet.guided))
    assert fleet.engage(1.0).tolist() == []         # trajectories_only: still waiting for plans
    fleet.set_trajectory(1, None, 1.0)              # an empty plan: hold still, but commanded
    assert fleet.engage(1.0).tolist() == [1] and fleet.engage(1.0).tolist() == []
    out = fleet.step(1.0)
    assert out.publish.tolist() == [False, True] and np.all(out.twists[1] == 0.0)
    # Once commanded, always: a stale robot gets its zero.
    fleet.set_state(0, 2.0, (1.0, 1.0), (0.0, 0.0), 0.0)
    assert fleet.step(2.0).publish.tolist() == [False, True]


def test_goals_inside_obstacles_are_refused_and_dropped_when_a_map_walls_them_in():
    occupied = np.zeros((40, 40), dtype=bool)
    occupied[10:20, 10:20] = True              # a block 1 m..2 m
    grid = OccupancyGrid(occupied, 0.1, (0.0, 0.0))
    fleet = FleetController(specs(2))
    fleet.set_goal(1, (1.5, 1.5))              # accepted: no map yet
    fleet.set_map(prepare_map(grid, 0.0, fleet.guided))
    assert 'inside an obstacle' in fleet.set_goal(0, (1.5, 1.2))
    assert fleet.set_goal(0, (3.5, 3.5)) is None
    dropped = fleet.set_map(prepare_map(grid, 0.0, fleet.guided))
    assert [i for i, _ in dropped] == [] and np.isnan(fleet.view(0.0).goals[1, 0])


def test_a_map_routes_a_robot_around_a_block_to_its_goal():
    occupied = np.zeros((60, 60), dtype=bool)
    occupied[20:40, 28:32] = True              # a wall between start and goal
    grid = OccupancyGrid(occupied, 0.1, (0.0, 0.0))
    fleet = FleetController(specs(1, radius=0.2))
    fleet.set_goal(0, (5.0, 3.0))
    fleet.set_map(prepare_map(grid, 0.0, fleet.guided, *fleet.goals_to_prepare()))
    poses, _, events = closed_loop(fleet, [(1.0, 3.0, 0.0)], 20.0, grid=grid)
    assert events == []
    assert np.hypot(*(poses[-1, 0, :2] - (5.0, 3.0))) <= 0.2


def test_trajectories_drive_tracked_robots_and_an_empty_one_holds_still():
    fleet = FleetController(specs(2), ControllerParams(trajectories_only=True))
    fleet.set_state(0, 0.0, (0.0, 0.0), (0.0, 0.0), 0.0)
    fleet.set_state(1, 0.0, (0.0, 5.0), (0.0, 0.0), 0.0)
    fleet.set_goal(1, (5.0, 5.0))              # a goal alone does not move a tracked robot
    assert np.all(fleet.step(0.0).twists == 0.0)
    t = np.linspace(0.0, 4.0, 41)
    line = Reference(times=t, positions=np.column_stack([0.5 * t, 0 * t]),
                     velocities=np.tile([0.5, 0.0], (41, 1)), accelerations=np.zeros((41, 2)),
                     yaw=np.zeros(41), yaw_rate=np.zeros(41), direction=np.ones(41))
    fleet.set_trajectory(0, line, start_time=0.0)
    for i, y in ((0, 0.0), (1, 5.0)):         # fresh states: an old one would slow it
        fleet.set_state(i, 0.5, (0.0, y), (0.0, 0.0), 0.0)
    out = fleet.step(0.5)
    assert out.twists[0, 0] > 0.1 and np.all(out.twists[1] == 0.0)
    fleet.set_trajectory(0, None, start_time=0.5)
    for k in range(1, 4):       # decelerates within max_accel, then stands
        twist = fleet.step(0.5 + k * PERIOD).twists[0]
    assert np.all(twist == 0.0)
    assert fleet.status(0.5)[0].message == 'holding still: no trajectory'


def test_a_cycle_steps_the_trackers_once_with_drones_on_2d_plans_among_ground_robots(monkeypatch):
    """A tracker's step advances its progress along the plan (a cusp, once passed, is left
    behind): the ground robots and the drones share one step per cycle, at the same positions."""
    from orca_nav.core.fleet.tracking import FleetTracker
    fleet = FleetController([RobotSpec('robot0'), RobotSpec('drone0', kinematics='quadrotor')],
                            ControllerParams(trajectories_only=True))
    t = np.linspace(0.0, 4.0, 41)
    for i, y in ((0, 0.0), (1, 3.0)):
        fleet.set_state(i, 0.0, (0.0, y, 1.0), (0.0, 0.0, 0.0), 0.0)
        fleet.set_trajectory(i, Reference(
            times=t, positions=np.column_stack([0.5 * t, 0 * t + y]),
            velocities=np.tile([0.5, 0.0], (41, 1)), accelerations=np.zeros((41, 2)),
            yaw=np.zeros(41), yaw_rate=np.zeros(41), direction=np.ones(41)), start_time=0.0)
    steps, update = [], FleetTracker.update

    def counted(self, *args, **kwargs):
        steps.append(self.dim)
        return update(self, *args, **kwargs)
    monkeypatch.setattr(FleetTracker, 'update', counted)
    out = fleet.step(0.0)
    assert steps == [2]
    assert out.twists[0, 0] > 0.0 and out.twists[1, 0] > 0.0


def test_per_robot_mode_commands_one_robot_and_sees_the_others_as_agents():
    fleet = FleetController(specs(2), commanded=['robot1'])
    fleet.set_goal(1, (3.0, 0.0))
    robot1 = np.array([-1.0, 0.0])
    velocity1 = np.zeros(2)
    sidestep = 0.0
    for k in range(10):                         # robot0 keeps coming straight at robot1
        t = 1.0 + 0.05 * k
        fleet.set_state(0, t, (1.0 - (t - 1.0), 0.0), (-1.0, 0.0), math.pi)
        fleet.set_state(1, t, robot1, velocity1, 0.0)
        out = fleet.step(t)
        assert list(out.ran) == [False, True]
        assert np.all(out.twists[0] == 0.0)
        velocity1 = out.twists[1, :2]           # holonomic at yaw 0: body = world
        robot1 = robot1 + 0.05 * velocity1
        sidestep = max(sidestep, abs(velocity1[1]))
    assert sidestep > 0.05                      # sidesteps rather than meeting head-on
    assert [s.robot for s in fleet.status(1.5)] == ['robot1']


def test_cycle_triggering_on_complete_states_and_the_clock():
    fleet = FleetController(specs(2), ControllerParams(control_rate=20.0))
    assert not fleet.states_complete(1.0)      # nobody has a state yet
    fleet.set_state(0, 1.0, (0.0, 0.0), (0.0, 0.0), 0.0)
    assert fleet.states_complete(1.0)          # robot1 is not live: only robot0 counts
    fleet.set_state(1, 1.0, (3.0, 0.0), (0.0, 0.0), 0.0)
    fleet.step(1.0)
    fleet.set_state(0, 1.05, (0.0, 0.0), (0.0, 0.0), 0.0)
    assert not fleet.states_complete(1.05)     # robot1's newer state is missing
    fleet.set_state(1, 1.05, (3.0, 0.0), (0.0, 0.0), 0.0)
    assert fleet.states_complete(1.05)
    # /clock still says 1.04 while the states of 1.05 are in: the cycle runs at 1.05.
    assert fleet.cycle_time(1.04) == pytest.approx(1.05)
    # ... and while it says 1.0, the tick before (lockstep: the next tick's states came first).
    assert fleet.cycle_time(1.0) == pytest.approx(1.05)
    assert fleet.cycle_time(0.5) == 0.5        # a stamp far ahead of the clock is not followed
    assert not fleet.due(1.0 + 0.04)


def test_jammed_robots_are_reported_infeasible():
    # Overlapping by 0.5 m: leaving each other within one cycle needs several m/s.
    robots = [RobotSpec('robot0', radius=0.5), RobotSpec('robot1', radius=0.5), RobotSpec('robot2')]
    fleet = FleetController(robots)
    for i, (x, goal) in enumerate([(0.0, 5.0), (0.5, -5.0), (10.0, 15.0)]):
        fleet.set_state(i, 0.0, (x, 0.0), (0.0, 0.0), 0.0)
        fleet.set_goal(i, (goal, 0.0))
    for k in range(10):
        for i, x in enumerate((0.0, 0.5, 10.0)):
            fleet.set_state(i, k * PERIOD, (x, 0.0), (0.0, 0.0), 0.0)
        fleet.step(k * PERIOD)
    status = {s.robot: s for s in fleet.status(0.5)}
    assert status['robot0'].level is Level.WARN and 'infeasible' in status['robot0'].message
    assert status['robot2'].level is Level.OK
    assert status['robot0'].values['orca_infeasible_cycles'] == '10'
    assert fleet.status(0.5)[0].values['orca_cycles'] == '0'   # counts restart per report


def test_resending_a_goal_keeps_the_stall_history_and_a_kinematics_change_drops_trajectories():
    fleet = FleetController(specs(2))
    assert fleet.set_goal(0, (1.0, 1.0)) is None
    fleet.steering.breaker._reference_time[0] = 7.0     # some stall history
    assert fleet.set_goal(0, (1.0, 1.0)) is None
    assert fleet.steering.breaker._reference_time[0] == 7.0
    assert 'not finite' in fleet.set_goal(0, (math.nan, 1.0))
    t = np.array([0.0, 1.0])
    ref = Reference(times=t, positions=np.zeros((2, 2)), velocities=np.zeros((2, 2)),
                    accelerations=np.zeros((2, 2)), yaw=np.zeros(2), yaw_rate=np.zeros(2),
                    direction=np.ones(2))
    fleet.set_trajectory(1, ref, 0.0)
    notes = fleet.configure(robots=[RobotSpec('robot0'), RobotSpec('robot1', kinematics='car')])
    assert notes == ['robot1: kinematics changed; current trajectories dropped']
    with pytest.raises(ValueError, match='cannot change at run time'):
        fleet.configure(robots=specs(3))


def test_bad_construction_names_the_problem():
    with pytest.raises(ValueError, match='must name at least one robot'):
        FleetController([])
    with pytest.raises(ValueError, match='unique'):
        FleetController([RobotSpec('a'), RobotSpec('a')])
    with pytest.raises(ValueError, match="'ghost' is not in robots"):
        FleetController(specs(1), commanded=['ghost'])
    with pytest.raises(ValueError, match='control_rate must be finite and > 0'):
        ControllerParams(control_rate=0.0)


@pytest.mark.parametrize('kinematics', ['car', 'diff_drive'])
def test_a_reversing_trajectory_is_driven_backward_closed_loop(kinematics):
    from orca_nav.core.planning.path_timing import time_path
    reference = time_path(*parallel_park(), max_speed=1.0, max_accel=1.0, max_yaw_rate=1.0)
    robots = [RobotSpec('robot0', kinematics=kinematics, min_turning_radius=1.0),
              RobotSpec('robot1')]
    fleet = FleetController(robots, ControllerParams(trajectories_only=True))
    # Stamped 0.2 s before the first cycle (it started from an earlier state): the tracker
    # starts 0.2 s into it.
    fleet.set_trajectory(0, reference, start_time=99.8)
    poses, twists, events = closed_loop(fleet, [(0.0, 0.0, 0.0), (5.0, 5.0, 0.0)], 30.0)
    assert events == [] and (twists[:, 0, 0] < -0.05).any()     # drove backward
    assert np.linalg.norm(poses[-1, 0, :2] - reference.positions[-1]) <= 0.4
    np.testing.assert_allclose(poses[-1, 1], [5.0, 5.0, 0.0])   # trajectories_only: holds
    assert fleet.status(129.95)[0].message == 'goal reached'


@pytest.mark.parametrize('odom_rate', [20.0, 27.0, 50.0, 100.0])
def test_cycles_come_at_the_control_rate_whatever_the_odometry_rate(odom_rate):
    """Each complete round of odometry triggers a cycle when one is due: over 20 s the cycle
    rate is the control rate (20 Hz) within 1 %, not rounded down to the odometry's phase."""
    fleet = FleetController(specs(2), ControllerParams(control_rate=20.0))
    cycles = 0
    for k in range(int(20.0 * odom_rate)):
        now = 100.0 + k / odom_rate
        for i in range(2):
            fleet.set_state(i, now, (3.0 * i, 0.0), (0.0, 0.0), 0.0)
        if fleet.states_complete(now):
            fleet.step(now)
            cycles += 1
    assert cycles / 20.0 == pytest.approx(20.0, rel=0.01)


def test_a_localization_jump_widens_the_robot_for_a_while(monkeypatch):
    """A position far from where the last velocity leads is a localization jump: the robot's
    ORCA radius grows by the jump (everyone keeps that room) for JUMP_MARGIN_HOLD_S."""
    from orca_nav.core.fleet import avoidance_layers
    seen = []
    real_solve = avoidance_layers.solve

    def spy(positions, velocities, pref, params, obstacles, **responsibility):
        seen.append(np.array(params.radius, dtype=float))
        return real_solve(positions, velocities, pref, params, obstacles, **responsibility)
    monkeypatch.setattr(avoidance_layers, 'solve', spy)
    ctl = FleetController([RobotSpec('a', radius=0.3), RobotSpec('b', radius=0.3)],
                          ControllerParams())

    def cycle(t, a_x):
        ctl.set_state(0, t, np.array([a_x, 0.0]), np.array([1.0, 0.0]), 0.0)
        ctl.set_state(1, t, np.array([5.0, 0.0]), np.zeros(2), 0.0)
        ctl.step(t)
    cycle(0.0, 0.0)
    cycle(0.05, 0.05)                       # where the velocity leads: no jump
    base = seen[-1].copy()
    cycle(0.10, 0.10 + 0.6)                 # 0.6 m off: a jump
    assert seen[-1][0] == pytest.approx(base[0] + 0.6) and seen[-1][1] == base[1]
    t = 0.10 + JUMP_MARGIN_HOLD_S + 0.05
    cycle(t, 0.7 + (t - 0.10))              # consistent again, after the hold
    assert seen[-1][0] == pytest.approx(base[0])
    assert LOCALIZATION_JUMP_M < 0.6


def test_states_set_together_are_the_states_set_one_by_one():
    """set_states (a batch of odometry) leaves the controller as set_state row by row would:
    a late row is ignored, a robot's last row wins, a jump grows its margin."""
    one, many = (FleetController(specs(3), ControllerParams(control_rate=20.0)) for _ in range(2))
    for fleet in (one, many):
        fleet.set_state(0, 1.0, (0.0, 0.0, 0.0), (1.0, 0.0, 0.0), 0.0)
        fleet.set_state(1, 1.0, (3.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0)
    rows = [0, 1, 2, 1]
    stamps = [0.9, 1.05, 1.05, 1.1]          # robot0's row is late; robot1 twice
    positions = [(9.0, 9.0, 0.0), (3.0, 0.0, 0.0), (5.0, 5.0, 1.0), (3.6, 0.0, 0.0)]   # jump
    velocities = [(0.0, 0.0, 0.0)] * 3 + [(0.5, 0.0, 0.0)]
    yaws, cov = [0.1, 0.2, 0.3, 0.4], [np.eye(2) * 0.01] * 4
    for row, stamp, position, velocity, yaw, c in zip(rows, stamps, positions, velocities, yaws,
                                                       cov):
        assert one.set_state(row, stamp, position, velocity, yaw, c) is None
    many.set_states(rows, stamps, positions, velocities, yaws, cov)
    for name in ('position', 'velocity', 'altitude', 'climb', 'yaw', 'stamp',
                 'covariance', 'fresh', 'jump_margin', 'jump_until'):
        np.testing.assert_array_equal(getattr(many.state, name), getattr(one.state, name),
                                      err_msg=name)
    assert many.state.jump_margin[1] > 0.25 and many.state.stamp[0] == 1.0


def test_cars_nose_to_nose_back_off_where_orca_asks_them_to_give_way():
    """Two cars stand nose to nose inside each other's ORCA discs at the end of their
    trajectories: ORCA asks each to give way, which is behind it. A car keeps speed to turn, so
    driving on toward that velocity took both into each other, where the safety layer froze
    them at its margin for good (open_mixed_planned seed 8); they back off instead."""
    car = dict(kinematics='car', radius=0.6, max_speed=1.5, max_accel=1.0, max_yaw_rate=1.0,
               wheelbase=0.8, min_turning_radius=2.0)
    fleet = FleetController(specs(2, **car), ControllerParams(trajectories_only=True))
    starts = [(0.0, 0.0, 0.0), (1.35, 0.0, math.pi)]       # 0.15 m between the bodies
    for i, (x, y, yaw) in enumerate(starts):
        standing = Reference(times=np.array([0.0, 1.0]), positions=np.array([[x, y], [x, y]]),
                             velocities=np.zeros((2, 2)), accelerations=np.zeros((2, 2)),
                             yaw=np.full(2, yaw), yaw_rate=np.zeros(2), direction=np.ones(2))
        fleet.set_trajectory(i, standing, start_time=100.0)
    poses, twists, events = closed_loop(fleet, starts, 3.0)
    gap = np.linalg.norm(poses[:, 0, :2] - poses[:, 1, :2], axis=1) - 1.2
    assert events == []
    assert (twists[:, 0, 0] < -0.05).any() and (twists[:, 1, 0] < -0.05).any()   # backed off
    assert gap.min() > 0.1 and gap[-1] > 0.15
