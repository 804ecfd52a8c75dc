"""A fleet closed loop without ROS: simulator, fleet controller and (optionally) the fleet
planner in one process, stepped together on simulated time.

The same loop the ROS graph runs in lockstep (fleet_sim_node -> odometry -> orca_node ->
cmd_vel, planner_node on goals), minus the transport: every control period the controller gets
every robot's odometry, plans run to completion before the cycle that needed them, the
controller's commands drive the simulator for one period. So a run depends only on its `Scene`
(seeded), never on the machine. What ROS adds, one period of latency, can be put back with
`cmd_latency`; a starved control computer with `late_cycles` (a cycle comes up to
`late_periods` periods late, at random), lost odometry with `odom_drop_rate`.

`run` returns what happened: every contact (classified: robot-robot, robot-obstacle,
robot-person, and whether a robot in it was moving), goals reached, robots that got stuck (no
progress toward their goal for `stuck_time`, not counting turns waited or standing for a
person; progress is a new least distance to the goal, in a straight line or over the map's free
cells keeping its lanes, `map_distance`, so a robot going round a wall makes it), robots held
by people at the end and when the last robot finished. A run ends at its duration, when every
robot finished, or when every robot still under way is stuck or held without progress for
`stuck_time` and got no nearer the place the fleet planner sent it off the others' way
either (backing out takes it away from its goal, and it may yet get there).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Sequence

import numpy as np

from orca_nav.core.avoidance import NonCooperative
from orca_nav.core.fleet.controller import FleetController
from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.drones import prepare_map_3d
from orca_nav.core.fleet.fleet_planner import Actions, FleetPlanner, ReplanPolicy
from orca_nav.core.fleet.kinematics import RobotLimits
from orca_nav.core.fleet.map_model import prepare_map
from orca_nav.core.fleet.plan_jobs import PlanSettings, StartState, run_request
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.fleet.safety import PERSON
from orca_nav.core.geometry import body_to_world
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.sim.faults import Faults
from orca_nav.core.sim.fleet_sim import CollisionEvent, FleetSim
from orca_nav.core.sim.map_distance import DistanceOverMap
from orca_nav.core.sim.pedestrians import Pedestrians
from orca_nav.core.traffic_rules import TrafficRules

_PROGRESS = 0.1         # m a robot must get closer to its goal within stuck_time (either way)
_PERSON_NEXT_TO = 0.5   # m: a robot without progress with a person this close is held by them
_PLAN_RETRY = 5.0       # s before a failed plan is tried again


@dataclass
class Scene:
    """One closed-loop run: robots, where they start, the goals each visits in turn ((x, y),
    or (x, y, z) for a drone), the maps, people, and how the loop runs."""

    name: str
    robots: Sequence[RobotSpec]
    starts: np.ndarray                      # (N, 3) x, y, yaw
    goals: Sequence[Sequence[tuple]]
    grid: Optional[OccupancyGrid] = None
    grid_3d: Optional[OccupancyGrid] = None
    start_altitudes: Optional[np.ndarray] = None
    pedestrians: Optional[Pedestrians] = None
    person_radius: float = 0.25             # what the controller is told of each person
    planner: bool = False                   # robots follow the fleet planner's trajectories
    coordinate: bool = True                 # ... taking turns where their paths meet
    escalation_time: float = 10.0           # ... and the planner's stuck ladder (0: off)
    duration: float = 120.0                 # s of simulated time at the most
    params: ControllerParams = field(default_factory=ControllerParams)
    goal_tolerance: float = 0.25
    sim_step: float = 0.02
    cmd_latency: float = 0.0
    late_cycles: float = 0.0                # probability that a control cycle comes late
    late_periods: int = 4                   # ... by up to this many periods
    odom_drop_rate: float = 0.0
    seed: int = 0
    stuck_time: float = 30.0
    traffic: Optional[TrafficRules] = None  # one-way lanes the fleet planner keeps


@dataclass
class RunResult:
    """What happened in one run."""

    scene: str
    contacts: List[CollisionEvent]
    goals: int                              # goals in all
    reached: int                            # goals reached
    robots: int
    finished: int                           # robots that reached every goal
    stuck: List[str]                        # robots without progress for stuck_time, ever
    makespan: Optional[float]               # when the last robot finished (None: not all did)
    duration: float                         # simulated time run
    plan_failures: int = 0
    longest_wait: float = 0.0               # s the longest one robot waited its turns, in all
    # s the longest one robot stood at a gate without progress toward its goal, in one stretch
    # (the 30 s; `longest_wait` adds up every turn it waited).
    longest_stalled_wait: float = 0.0
    # s the longest a robot at a gate and the head of its queue (the robot it waits for, through
    # robots that wait themselves) both went without progress: a queue that did not move. A
    # wait in a queue that moves is a turn by design, said in the robot's status.
    longest_queue_stall: float = 0.0
    # Robots that did not finish, were not stuck, and at the end stood for a person (the
    # passive guarantee) or had one next to them: blocked by design.
    held: List[str] = field(default_factory=list)

    def count(self, category: str, moving: bool) -> int:
        return sum(e.category == category and e.moving() == moving for e in self.contacts)

    @property
    def moving_contacts(self) -> int:
        return sum(e.moving() for e in self.contacts)


def run(scene: Scene) -> RunResult:
    """Runs `scene` to its end (every goal reached, or its duration)."""
    return _Loop(scene).run()


class _Loop:
    def __init__(self, scene: Scene):
        self.scene = s = scene
        robots = list(s.robots)
        self.names = [r.name for r in robots]
        self.flying = np.array([r.flies for r in robots])
        limits = RobotLimits.create([r.kinematics for r in robots], [r.max_speed for r in robots],
                                    [r.max_accel for r in robots], [r.max_yaw_rate for r in robots],
                                    [r.min_turning_radius for r in robots])
        self.radii = np.array([r.radius for r in robots])
        self.sim = FleetSim(limits, self.radii, np.asarray(s.starts, dtype=float), grid=s.grid,
                            cmd_latency=s.cmd_latency, seed=s.seed, pedestrians=s.pedestrians,
                            start_altitudes=s.start_altitudes, faults=Faults(seed=s.seed))
        if s.grid_3d is not None:
            self.sim.set_grid_3d(s.grid_3d)
        params = replace(s.params, trajectories_only=s.planner, require_map=s.grid is not None)
        self.controller = FleetController(robots, params)
        self.goals = [[tuple(map(float, g)) for g in seq] for seq in s.goals]
        self.index = np.zeros(len(robots), dtype=int)
        self.finish_time = np.full(len(robots), np.nan)
        if s.grid is not None:
            first = np.array([seq[0][:2] if seq else (np.nan, np.nan) for seq in self.goals])
            known = np.isfinite(first[:, 0]) & ~self.flying
            self.controller.set_map(prepare_map(s.grid, params.map_inflation, not s.planner,
                                                first[known], self.radii[known]))
        if s.grid_3d is not None:
            self.controller.set_map_3d(prepare_map_3d(s.grid_3d))
        self.planner = None
        if s.planner:
            self.planner = FleetPlanner(dict(zip(self.names, robots)),
                                        PlanSettings(safety_margin=params.safety_margin),
                                        ReplanPolicy(goal_tolerance=s.goal_tolerance,
                                                     stuck_time=s.escalation_time,
                                                     coordinate=s.coordinate),
                                        s.traffic)
            for grid in (s.grid, s.grid_3d):
                if grid is not None:
                    self.planner.set_map(grid, 0.0)
        self.rng = np.random.default_rng([s.seed, 11])
        # Least distance to the current goal so far: in a straight line, and over the map.
        self.closest = np.full((len(robots), 2), np.inf)
        self.over_map = DistanceOverMap(s.grid, s.traffic) if s.grid is not None else None
        self.closer_at = np.zeros(len(robots))     # progress, or a wait that is not stuck
        self.progress_at = np.zeros(len(robots))   # progress only
        # Least distance to the place off the others' way the planner sends it to (if any),
        # that place, and when it last got nearer it.
        self.waypoint_closest = np.full(len(robots), np.inf)
        self.waypoint: List[Optional[np.ndarray]] = [None] * len(robots)
        self.waypoint_at = np.zeros(len(robots))
        self.stuck = np.zeros(len(robots), dtype=bool)
        self.waited = np.zeros(len(robots))     # s spent waiting for another robot's turn
        self.stalled_wait = np.zeros(len(robots))   # longest wait at a gate since progress
        self.queue_stall = np.zeros(len(robots))    # ... while its queue's head made none
        self.held_by_person = np.zeros(len(robots), dtype=bool)    # in the last cycle
        self.retry_at: Dict[int, float] = {}
        self.plan_failures = 0

    def run(self) -> RunResult:
        s = self.scene
        period = s.params.period
        now = 0.0
        contacts: List[CollisionEvent] = []
        self._send_goals(range(len(self.names)), now)
        while now < s.duration - 1e-9 and not self._over(now):
            self._observe(now)
            if self.planner is not None:
                self._plan(now)
            out = self.controller.step(now)
            self.held_by_person = (out.safety_reasons == PERSON) | self._person_next_to()
            self.sim.set_commands(out.twists, climb_rates=out.climb_rates)
            late = 1
            if s.late_cycles > 0.0 and self.rng.random() < s.late_cycles:
                late += int(self.rng.integers(1, s.late_periods + 1))
            contacts += self.sim.advance(late * period, s.sim_step)
            now = round(now + late * period, 9)
            self._follow_goals(now)
        finished = ~np.isnan(self.finish_time)
        held = ~finished & self.held_by_person & ~self.stuck
        return RunResult(
            s.name, contacts, sum(len(g) for g in self.goals),
            int(sum(min(k, len(g)) for k, g in zip(self.index, self.goals))), len(self.names),
            int(finished.sum()), [n for n, bad in zip(self.names, self.stuck) if bad],
            float(np.nanmax(self.finish_time)) if finished.all() else None, now,
            self.plan_failures, float(self.waited.max(initial=0.0)),
            float(self.stalled_wait.max(initial=0.0)),
            held=[n for n, bad in zip(self.names, held) if bad],
            longest_queue_stall=float(self.queue_stall.max(initial=0.0)))

    def _over(self, now: float) -> bool:
        """Every robot finished, or every robot still under way has made no progress for
        stuck_time, stuck or held by a person, nor toward a place off the others' way (the
        rest of the run would change nothing but the clock)."""
        going = np.isnan(self.finish_time)
        still = np.maximum(np.where(self.held_by_person, self.progress_at, self.closer_at),
                           self.waypoint_at)
        return not going.any() or bool((now - still[going] > self.scene.stuck_time).all())

    # ------------------------------------------------------------------ the loop's parts
    def _observe(self, now: float) -> None:
        """Odometry (some of it lost) and the people, as the controller would hear them."""
        s = self.scene
        pose, twist = self.sim.odometry()
        velocity = body_to_world(twist[:, :2], pose[:, 2])
        heard = np.ones(len(pose), dtype=bool)
        if s.odom_drop_rate > 0.0:
            heard = self.rng.random(len(pose)) >= s.odom_drop_rate
        rows = np.flatnonzero(heard)
        altitude, climb = self.sim.altitudes, self.sim.climb_rates
        self.controller.set_states(
            rows, np.full(len(rows), now), np.column_stack([pose[rows, :2], altitude[rows]]),
            np.column_stack([velocity[rows], climb[rows]]), pose[rows, 2],
            np.zeros((len(rows), 2, 2)))
        people = s.pedestrians
        if people is not None and len(people):
            self.controller.set_others(NonCooperative(people.positions.copy(),
                                                      people.velocities.copy(),
                                                      np.full(len(people), s.person_radius)))
        if self.planner is not None:
            for i in rows:
                position = [pose[i, 0], pose[i, 1]] + ([altitude[i]] if self.flying[i] else [])
                speed = list(velocity[i]) + ([climb[i]] if self.flying[i] else [])
                self._apply(self.planner.set_start_state(
                    self.names[i], StartState(position + [pose[i, 2]], speed, now), now), now)

    def _person_next_to(self) -> np.ndarray:
        """(N,) robots with a person within _PERSON_NEXT_TO of their edge (in x, y: a drone
        above a person cannot come down through them)."""
        people = self.scene.pedestrians
        if people is None or not len(people):
            return np.zeros(len(self.names), dtype=bool)
        gap = np.linalg.norm(self.sim.poses[:, None, :2] - people.positions[None], axis=2)
        return (gap.min(axis=1) - self.radii - self.scene.person_radius) < _PERSON_NEXT_TO

    def _plan(self, now: float) -> None:
        self._apply(self.planner.check_progress(now), now)
        for i, when in list(self.retry_at.items()):
            if now >= when:
                del self.retry_at[i]
                self._send_goal(i, now)

    def _apply(self, actions, now: float) -> None:
        """Plans run here and now; trajectories go to the controller."""
        while actions.plan or actions.publish or actions.ended:
            for update in actions.publish:
                self.controller.set_trajectory(self.names.index(update.robot), update.reference,
                                               update.start_s)
            for ended in actions.ended:
                i = self.names.index(ended.robot)
                if not ended.reached and self.index[i] < len(self.goals[i]):
                    self.plan_failures += 1
                    self.retry_at[i] = now + _PLAN_RETRY
            requests = actions.plan
            actions = type(actions)()
            for request in requests:
                actions += self.planner.finish(run_request(request), now)

    def _send_goal(self, i: int, now: float) -> None:
        self._send_goals([i], now)

    def _send_goals(self, rows, now: float) -> None:
        """The current goals of robots `rows`, all given before any is planned (a fleet
        manager's batch: no robot is planned around others about to leave)."""
        if self.planner is not None:
            actions = Actions()
            for i in rows:
                if self.index[i] < len(self.goals[i]):
                    self.closest[i], self.closer_at[i], self.progress_at[i] = np.inf, now, now
                    goal = tuple(self.goals[i][self.index[i]]) + (0.0,)       # yaw 0
                    actions += self.planner.set_goal(self.names[i], goal, now)
            self._apply(actions, now)
            return
        for i in rows:
            self._send_controller_goal(i, now)

    def _queue_head(self, i: int) -> int:
        """The robot at the head of robot i's queue: whom it waits for, through the robots
        that wait themselves."""
        seen = {i}
        leader = self.planner.gate(self.names[i])
        while leader is not None:
            i = self.names.index(leader)
            if i in seen:
                break
            seen.add(i)
            leader = self.planner.gate(leader)
        return i

    def _toward_waypoint(self, i: int, here: np.ndarray, now: float) -> None:
        """Notes when robot i got _PROGRESS nearer the place the fleet planner sends it off
        the others' way (a new place starts afresh)."""
        place = None if self.planner is None else self.planner.waypoint(self.names[i])
        if place is None:
            self.waypoint[i] = None
            return
        if self.waypoint[i] is None or not np.array_equal(place, self.waypoint[i]):
            self.waypoint[i], self.waypoint_closest[i] = place, np.inf
        distance = float(np.linalg.norm(here[:len(place)] - place))
        if distance <= self.waypoint_closest[i] - _PROGRESS:
            self.waypoint_closest[i], self.waypoint_at[i] = distance, now

    def _send_controller_goal(self, i: int, now: float) -> None:
        if self.index[i] >= len(self.goals[i]):
            return
        goal = self.goals[i][self.index[i]]
        self.closest[i], self.closer_at[i], self.progress_at[i] = np.inf, now, now
        altitude = goal[2] if len(goal) > 2 else None
        problem = self.controller.set_goal(i, goal[:2], altitude)
        if problem is not None:
            raise ValueError(f'{self.scene.name}: {self.names[i]} goal {goal}: {problem}')

    def _follow_goals(self, now: float) -> None:
        """Next goals for the robots at theirs; the stuck ones noted."""
        pose, altitude = self.sim.poses, self.sim.altitudes
        s_period = self.scene.params.period
        for i in np.flatnonzero(np.isnan(self.finish_time)):
            goal = np.asarray(self.goals[i][self.index[i]]) if self.goals[i] else None
            if goal is None:
                self.finish_time[i] = now
                continue
            here = np.r_[pose[i, :2], altitude[i]][:len(goal)]
            distance = float(np.linalg.norm(here - goal))
            if distance <= self.scene.goal_tolerance:
                self.index[i] += 1
                if self.index[i] >= len(self.goals[i]):
                    self.finish_time[i] = now
                else:
                    self._send_goal(i, now)
                continue
            self._toward_waypoint(i, here, now)
            around = distance if self.flying[i] or self.over_map is None else \
                self.over_map(here, goal)
            now_at = np.array([distance, around])
            closer = (now_at <= self.closest[i] - _PROGRESS) & (now_at < np.inf)   # inf: no way
            if closer.any():
                self.closest[i, closer] = now_at[closer]
                self.closer_at[i], self.progress_at[i] = now, now
            elif self.held_by_person[i]:
                # Standing for a person (passive safety) is blocked by design, not stuck.
                self.closer_at[i] = now
            elif self.planner is not None and self.planner.gate(self.names[i]) is not None:
                # Waiting its turn (coordination) is not being stuck; it is counted apart.
                self.waited[i] += now - max(self.closer_at[i], now - s_period)
                self.stalled_wait[i] = max(self.stalled_wait[i], now - self.progress_at[i])
                since = max(self.progress_at[i], self.progress_at[self._queue_head(i)])
                self.queue_stall[i] = max(self.queue_stall[i], now - since)
                self.closer_at[i] = now
            elif now - self.closer_at[i] > self.scene.stuck_time:
                self.stuck[i] = True
