"""The fleet planning supervisor: goals, start states and maps in; plan jobs and plans out.

Per robot, :class:`FleetPlanner` keeps the goal, the latest start state (pose, velocity and the
stamp it was measured at) and the current plan, and decides when to plan:

* a new goal plans from the latest start state; so does the first map or start state a waiting
  goal needed;
* a new map that blocks the rest of the trajectory replans; so does a robot farther than
  ``replan_deviation`` from its trajectory, or a car standing at its trajectory's end farther
  than ``goal_tolerance`` from it (the tracker leaves a sideways error to the planner: a car
  closes it only by a manoeuvre; at the end: at its last sample, or on its last segment after the
  trajectory's time ran out; again only once the last such manoeuvre brought it nearer the
  goal, else the stuck ladder climbs), at most once per ``min_replan_interval``;
* a robot that parks at its goal replans the robots whose paths pass it closer than ORCA keeps
  two robots apart (their ORCA radii); plans go around robots standing without a plan that far;
* a plan that cannot go around a robot idle at its goal (the only way goes through it) sends
  that robot to the nearest place off the way (outside every one-robot zone), taking its turns
  just before the other; it waits there and returns to its goal once the other has passed (the
  goal ended when first reached; its status says ``making way for robotN``): Open-RMF's
  responsive wait;
* a robot within ``goal_tolerance`` of the end of its trajectory, once its last driving-direction
  segment has started (or standing there after the trajectory's time ran out: the tracker takes
  a cusp as passed within its tolerance), is done and no longer replanned.

Planning itself runs elsewhere (a thread pool in the node): every input returns
:class:`Actions`, whose ``plan`` requests are plain data that ``plan_jobs.run_request`` turns
into a :class:`PlanOutcome` on any thread, without touching the supervisor. The outcome goes
back to :meth:`FleetPlanner.finish` on the supervisor's own thread. Each robot has at most one job
running; a newer goal or replan bumps the robot's generation, so the running job's outcome is
stale when it comes back: it is dropped and the newest request is planned instead.

A query's budget is ``plan_max_expansions`` search nodes expanded, so it plans alike on a loaded
machine and a quiet one; ``plan_time_budget`` (wall clock) only caps it. A query that spent its
budget is tried once more with RETRY_BUDGET_FACTOR times the budget, on the same worker.

Every failure (no map, no free cell, no start state, bad goal, no path, budget spent) holds the
robot still (a ``TrajectoryUpdate`` without reference) and says why in the robot's status, at
ERROR level.

Drones plan in 3-D (:func:`planning_dim`): a ``quadrotor`` robot's poses are (x, y, z, yaw), its
start velocity (vx, vy, vz), and it plans with the 3-D kinodynamic A* on the 3-D map; every other
robot's poses are (x, y, yaw) on the 2-D map. The supervisor keeps one map per dimension
(``set_map`` files a grid by its ``ndim``), so a mixed fleet plans ground robots on ``/map`` and
drones through the 3-D map at once. A drone goal at z = 0 (a goal pose from a 2-D tool such as
RViz's) keeps the altitude the drone flies at when the goal is planned, as orca_node does. A goal
outside its map's bounds or in an occupied cell ends at once (``out_of_map`` /
``goal_in_collision``), naming the robot's goal field and value.

A goal ends (``Actions.ended``, what a navigate_to_pose server reports): reached; planning
failed (the planner's status says why: goal in an obstacle, outside the map, no path, budget
spent); jammed, for a goal set with a ``jam_timeout``, when the distance still to go has not
shrunk by ``JAM_PROGRESS`` within that time; or cancelled (``cancel``), which holds the robot.
``progress`` gives what feedback reports: distance and time still to go along the trajectory and
the number of replans since the goal was set (the recoveries).

Ground robots keep the fleet's one-way lanes (``traffic``, `set_traffic_rules`): every ground
request carries them. A plan that had to break them (`plan_jobs.run_request`) is followed,
with the robot's status at WARN saying so. The rules' one-robot zones go to the coordinator.

``path_request`` plans a path nobody executes (Nav2's ComputePathToPose): the request carries a
query id, runs like any other, and its outcome goes back to the caller, never to ``finish``.

Time is passed in (seconds, the caller's one clock); numpy only.

One file: every decision here (plan, replan, escalate, finish, report) reads and writes the
same per-robot record (`_Robot`); what it calls lives elsewhere (the queries `plan_jobs`, the
order `coordination`, the ladder's clock `stuck`, tasks `navigation_task`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Dict, List, Mapping, Optional, Tuple

import numpy as np

from orca_nav.core.fleet.bodies import FleetBodies
from orca_nav.core.fleet.controller_params import ControllerParams
from orca_nav.core.fleet.coordination import (
    Coordinator,
    Gate,
    arc_lengths,
    remaining,
    stop_before,
    waiting_spot,
)
from orca_nav.core.fleet.plan_jobs import (
    RETRY_BUDGET_FACTOR,
    PlannerCache,
    PlanOutcome,
    PlanRequest,
    PlanSettings,
    StartState,
    dataclass_from_values,
    goal_problem,
    planning_dim,
    pose_fields,
)
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.fleet.status import Level, RobotStatus
from orca_nav.core.fleet.stuck import StuckWatch
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.planning.reference import Reference
from orca_nav.core.traffic_rules import TrafficRules

JAM_PROGRESS = 0.1      # m the distance to go must shrink by within a goal's jam_timeout
_STANDING = 0.05        # m/s: slower than this, a robot at its trajectory's end has stopped there
_NEARER = 2.0           # m nearer the earlier of two locked robots' place must be to back out
_STUCK_REACH = 2.0      # m of its way ahead a stuck robot asks parked robots off
# A way to a place off the others' way longer than this many times the place's distance plus
# _DETOUR_SLACK m is a tour around the shelves, not a step aside: taken as no way (a tour keeps
# the robot, and everyone waiting for it, out of the traffic for half a minute).
_DETOUR_FACTOR = 2.0
_DETOUR_SLACK = 4.0     # m
_GATE_STEP = 0.5        # m a gate moves on before the shortened reference is sent again
_GATE_TIGHTER = 0.05    # m a gate moves back before it is
BACK_OUT_BUDGET_DIVISOR = 5     # a plan to back out to a place nearby gets this much less


@dataclass(frozen=True)
class ReplanPolicy:
    """When the supervisor replans, and when a robot is done."""

    goal_tolerance: float               # this close to the end of its trajectory: done (m)
    replan_deviation: float = 1.0       # replan when farther than this from the trajectory (m)
    min_replan_interval: float = 2.0    # at most one deviation replan per robot in this time (s)
    stuck_time: float = 10.0            # s without 0.1 m of progress: the next rung of stuck.LADDER
    # Ground robots take turns where their paths meet and go around robots standing without a
    # plan (coordination); False: each robot is planned on its own.
    coordinate: bool = True

    from_values = classmethod(dataclass_from_values)


@dataclass(frozen=True)
class TrajectoryUpdate:
    """Publish for `robot`: `reference` whose t = 0 is `start_s`, or None = hold still."""

    robot: str
    reference: Optional[Reference]
    start_s: float


@dataclass(frozen=True)
class GoalEnd:
    """A robot's goal ended: `reached`, or why not (`reason`: a PlanStatus value of the failed
    plan, or 'jammed'), with a message for people."""

    robot: str
    reached: bool
    reason: str
    message: str


@dataclass(frozen=True)
class Progress:
    """How a robot's goal goes: where it is (x, y, yaw, or x, y, z, yaw for a drone), distance
    and time still to go, the replans since the goal was set."""

    pose: np.ndarray
    distance_remaining: float
    time_remaining: float
    recoveries: int


@dataclass
class Actions:
    """What the caller does after an input: run `plan`, publish `publish`, report `status`,
    end the goals of `ended`."""

    plan: List[PlanRequest] = field(default_factory=list)
    publish: List[TrajectoryUpdate] = field(default_factory=list)
    status: List[RobotStatus] = field(default_factory=list)
    ended: List[GoalEnd] = field(default_factory=list)

    def __iadd__(self, other: 'Actions') -> 'Actions':
        self.plan += other.plan
        self.publish += other.publish
        self.status += other.status
        self.ended += other.ended
        return self


# ---------------------------------------------------------------------- planning (any thread)
def last_segment_start(reference: Reference) -> float:
    """Start time of the reference's last driving-direction segment."""
    switches = np.flatnonzero(reference.direction[1:] != reference.direction[:-1])
    return float(reference.times[switches[-1] + 1]) if switches.size else 0.0


def _tour(reference: Reference) -> bool:
    """The reference's path is more than _DETOUR_FACTOR times as long as the way from its
    start to its end, plus _DETOUR_SLACK m."""
    points = reference.positions[:, :2]
    return float(arc_lengths(points)[-1]) > \
        _DETOUR_FACTOR * float(np.linalg.norm(points[-1] - points[0])) + _DETOUR_SLACK


def _fmt_pose(pose) -> str:
    return '(' + ', '.join(f'{v:.2f}' for v in pose) + ')'


# ---------------------------------------------------------------------- the supervisor
@dataclass
class _Map:
    grid: OccupancyGrid
    generation: int
    has_free_cell: bool


@dataclass
class _Robot:
    spec: RobotSpec
    goal: Optional[np.ndarray] = None
    start: Optional[StartState] = None
    generation: int = 0                  # bumped by every plan request (new goal, replan)
    running: bool = False                # a job of this robot is out
    waiting: bool = False                # the goal waits for a map / start state / free cell
    holding: bool = False                # the last update was "hold still"
    reference: Optional[Reference] = None
    progress_time: float = 0.0
    done: bool = True
    last_request: float = -np.inf
    status: Optional[RobotStatus] = None
    replans: int = 0                     # since the goal was set
    jam_timeout: Optional[float] = None  # s without progress that ends the goal (None: never)
    watch: StuckWatch = field(default_factory=lambda: StuckWatch(JAM_PROGRESS))
    order: int = 0                       # place in the fleet: breaks ties of goal age
    rank: Tuple[float, int] = (0.0, 0)   # who goes first (coordination): goal age, order
    start_s: float = 0.0                 # the reference's t = 0 on the caller's clock
    gate: Optional[float] = None         # published: stop at this arc length (None: go)
    published: bool = False              # the current reference went out (as gated)
    waypoint: Optional[np.ndarray] = None   # backing out: a place off the others' way first
    around: bool = False                 # the next plan goes around every other robot
    backed_out_at: float = -np.inf       # when it last tried to back out
    blocked_by: int = 0                  # standing robots the current plan could not go around
    escalated: str = ''                  # what the stuck ladder last did (said while rung > 0)
    # Idle at its reached goal, it left it for these robots to pass (its only way went through
    # it); it comes back once they have passed. Empty: at its goal, or under way to a goal.
    making_way_for: Tuple[str, ...] = ()
    # A car's least straight-line distance to the goal when it was last replanned for standing
    # beside its trajectory's end: it is again only once it came nearer (else the ladder climbs)
    beside_end_nearest: float = np.inf


class FleetPlanner:
    """Plans for a fleet of robots (see the module docstring). Not thread-safe: every method
    runs on one thread; only :func:`run_request` runs elsewhere."""

    def __init__(self, robots: Mapping[str, RobotSpec], settings: PlanSettings,
                 policy: ReplanPolicy, traffic: Optional[TrafficRules] = None):
        self.settings, self.policy = settings, policy
        self._robots = {name: _Robot(spec, order=k) for k, (name, spec) in
                        enumerate(robots.items())}
        self._maps: Dict[int, _Map] = {}      # by dimension: 2 (/map), 3 (the 3-D map)
        self._planners = PlannerCache()
        self._coordinator = Coordinator()
        self.set_traffic_rules(traffic)
        self._waits_for: Dict[str, str] = {}
        for name, robot in self._robots.items():
            robot.status = RobotStatus(name, Level.OK, 'idle: no goal yet', self._values(robot))

    # -------------------------------------------------------------- configuration
    def configure(self, settings: PlanSettings, policy: ReplanPolicy) -> None:
        """New settings apply to the next plan request."""
        self.settings, self.policy = settings, policy

    def set_traffic_rules(self, traffic: Optional[TrafficRules]) -> None:
        """The one-way lanes every later ground-robot plan keeps (plans made before stay) and
        the one-robot zones the coordinator lets one robot at a time into, from now on (None:
        none)."""
        if traffic is not None and not isinstance(traffic, TrafficRules):
            raise ValueError(f'traffic rules must be TrafficRules or None, got '
                             f'{type(traffic).__name__}')
        self.traffic = traffic
        self._coordinator.set_traffic_rules(traffic)

    def set_robot(self, name: str, spec: RobotSpec) -> None:
        """New robot parameters apply to the robot's next plan request."""
        self._robots[name].spec = spec

    def spec(self, name: str) -> RobotSpec:
        return self._robots[name].spec

    def map_has_free_cell(self, dim: int = 2) -> bool:
        """The `dim`-D map has arrived and has a free cell."""
        held = self._maps.get(dim)
        return held is not None and held.has_free_cell

    def dim(self, name: str) -> int:
        """The robot's planning dimension (:func:`planning_dim`)."""
        return planning_dim(self._robots[name].spec)

    def statuses(self) -> List[RobotStatus]:
        return [robot.status for robot in self._robots.values()]

    # -------------------------------------------------------------- inputs
    def set_goal(self, name: str, goal, now: float, jam_timeout: Optional[float] = None) -> Actions:
        """A new goal (x, y, yaw; x, y, z, yaw for a drone) for robot `name`: plans to it, or
        rejects it saying why. With `jam_timeout` (s) the goal ends as jammed when the robot
        stops getting closer."""
        goal = np.asarray(goal, dtype=float).reshape(-1)
        dim = self.dim(name)
        if goal.size != dim + 1 or not np.all(np.isfinite(goal)):
            return self.reject_goal(name, f'goal must be {dim + 1} finite values '
                                          f'({pose_fields(dim)}), got {goal.tolist()}')
        robot = self._robots[name]
        robot.goal, robot.done = goal, False
        robot.replans, robot.jam_timeout = 0, jam_timeout
        robot.watch.reset(now)
        robot.rank, robot.waypoint, robot.around = (now, robot.order), None, False
        robot.beside_end_nearest, robot.making_way_for = np.inf, ()
        return self._request(name, f'new goal {_fmt_pose(goal)}', now)

    def cancel(self, name: str, now: float) -> Actions:
        """Drops the robot's goal and holds it still (a running plan is dropped when it ends)."""
        robot = self._robots[name]
        robot.goal, robot.done, robot.making_way_for = None, True, ()
        robot.generation += 1
        return self._hold(name, Level.OK, 'goal cancelled: holding still', now, waiting=False)

    def gate(self, name: str) -> Optional[str]:
        """Whom the robot waits for (coordination), None when it may go."""
        return self._waits_for.get(name)

    def waypoint(self, name: str) -> Optional[np.ndarray]:
        """The place (x, y) off the others' way the robot drives to before its goal (backing
        out, making way), None when it drives to its goal."""
        waypoint = self._robots[name].waypoint
        return None if waypoint is None else waypoint[:-1].copy()

    def progress(self, name: str) -> Optional[Progress]:
        """How the robot's goal goes; None without a goal or before its first odometry."""
        robot = self._robots[name]
        if robot.goal is None or robot.start is None:
            return None
        position = robot.start.position
        ref = robot.reference
        if ref is None or robot.done:
            distance = self._straight_to_goal(robot)
            duration = distance / robot.spec.max_speed
        else:
            ahead = ref.positions[ref.times > robot.progress_time]
            path = np.vstack([position[None, :], ahead])
            distance = float(np.sum(np.linalg.norm(np.diff(path, axis=0), axis=1)))
            duration = max(ref.duration - robot.progress_time, 0.0)
        return Progress(robot.start.pose.copy(), distance, duration, robot.replans)

    @staticmethod
    def _straight_to_goal(robot) -> float:
        """The straight-line distance from where the robot is to its goal (x, y; z too)."""
        return float(np.linalg.norm(robot.goal[:-1] - robot.start.position))

    def path_request(self, name: str, goal, query: int,
                     start: Optional[StartState] = None) -> Tuple[Optional[PlanRequest],
                                                                  Optional[GoalEnd]]:
        """A plan for robot `name` to `goal` (x, y, yaw; x, y, z, yaw for a drone) from its
        latest start state, or from `start`, that nobody executes (Nav2's ComputePathToPose):
        the request to run (its outcome goes back to the caller, not to `finish`), or, when it
        cannot be planned, the GoalEnd that says why. The robot's own goal and plan stay."""
        if query <= 0:
            raise ValueError(f'query id must be > 0, got {query}')
        robot = self._robots[name]
        dim = self.dim(name)
        goal = np.array(goal, dtype=float).reshape(-1)
        start = robot.start if start is None else start
        held = self._maps.get(dim)
        problem = None
        if goal.size != dim + 1 or not np.all(np.isfinite(goal)):
            problem = ('bad_goal', f'goal must be {dim + 1} finite values '
                                   f'({pose_fields(dim)}), got {goal.tolist()}')
        elif held is None:
            problem = ('no_map', f'no {"3-D " if dim == 3 else ""}map yet')
        elif not held.has_free_cell:
            problem = ('no_map', 'the map has no free cell')
        elif start is None:
            problem = ('no_start', f'no odometry of {name} yet')
        elif start.dim != dim:
            problem = ('bad_start', f'start pose must be {dim + 1} values ({pose_fields(dim)}), '
                                    f'got {start.pose.tolist()}')
        else:
            if dim == 3 and goal[2] == 0.0:      # a 2-D tool's goal: keep flying level
                goal[2] = start.position[2]
            found = goal_problem(held.grid, goal)
            if found is not None:
                problem = (found[0].value, found[1])
        if problem is not None:
            reason, message = problem
            return None, GoalEnd(name, False, reason, f'no path ({reason}): {message}')
        return PlanRequest(robot=name, generation=robot.generation, grid=held.grid,
                           map_generation=held.generation, start=start, goal=goal,
                           spec=robot.spec, settings=self.settings, planners=self._planners,
                           query=query, traffic=self._traffic_for(name)), None

    def reject_goal(self, name: str, reason: str) -> Actions:
        """Reports a goal the caller could not accept; the current plan stays."""
        actions = Actions()
        self._set_status(actions, name, Level.WARN, f'goal rejected: {reason}')
        return actions

    def set_start_state(self, name: str, state: StartState, now: float) -> Actions:
        """The robot's latest state (odometry). Its first one plans a goal that waited for it."""
        dim = self.dim(name)
        if state.dim != dim:
            raise ValueError(f'{name}: start state pose must be {dim + 1} values '
                             f'({pose_fields(dim)}), got {state.pose.tolist()}')
        robot = self._robots[name]
        first = robot.start is None
        robot.start = state
        if first and robot.waiting:
            return self._request(name, 'start state arrived', now)
        return Actions()

    def set_map(self, grid: OccupancyGrid, now: float) -> Actions:
        """A new map (2-D for ground robots, 3-D for drones: by ``grid.ndim``): plans waiting
        goals, replans robots whose trajectory it blocks."""
        previous = self._maps.get(grid.ndim)
        first = previous is None
        held = self._maps[grid.ndim] = _Map(grid, 1 if first else previous.generation + 1,
                                            bool((~grid.occupied).any()))
        self._planners.keep_maps({dim: m.generation for dim, m in self._maps.items()})
        if grid.ndim == 2:
            self._coordinator.set_map(grid)
        actions = Actions()
        for name, robot in self._robots.items():
            if robot.goal is None or self.dim(name) != grid.ndim:
                continue
            if robot.waiting or not held.has_free_cell:
                actions += self._request(name, 'map arrived' if first else 'new map', now)
            elif robot.reference is not None and not robot.done and \
                    not self._free_ahead(robot, robot.reference, robot.progress_time):
                robot.replans += 1
                actions += self._request(name, 'the new map blocks the trajectory', now)
        return actions

    def check_progress(self, now: float) -> Actions:
        """Follows each robot along its trajectory: done at the goal, replan when off it; a
        robot that made way goes back to its goal once the others have passed."""
        actions = Actions()
        for name, robot in self._robots.items():
            ref = robot.reference
            if ref is None or robot.start is None or robot.done or robot.running:
                continue
            position = robot.start.position
            robot.progress_time = ref.nearest_time(position, after=robot.progress_time)
            deviation = float(np.linalg.norm(position - ref.position_at(robot.progress_time)[0]))
            to_end = float(np.linalg.norm(position - ref.positions[-1]))
            standing = float(np.linalg.norm(robot.start.velocity)) < _STANDING
            # A place to back out to need not be hit exactly: standing within the robot's
            # radius will do (still moving, it goes on: the place is off the way by the two
            # radii and the clearance, and where it slows down short of that, ORCA's
            # distance to the robot passing can leave that robot no way between it and a wall).
            tolerance = self.policy.goal_tolerance if robot.waypoint is None or not standing \
                else max(self.policy.goal_tolerance, robot.spec.radius)
            # Standing after its reference's time ran out, not held at a gate: the controller
            # is through with the reference (its tracker skips a cusp it came near and stops a
            # car with a sideways error), though the nearest sample need not be the last one.
            ran_out = standing and robot.gate is None and now >= robot.start_s + ref.duration
            on_last = robot.progress_time >= last_segment_start(ref)
            if to_end <= tolerance and (on_last or ran_out):
                if robot.waypoint is not None and robot.making_way_for:
                    # Off the way: it stands here (others plan around it) until they passed.
                    robot.waypoint, robot.done = None, True
                    self._coordinator.drop(name)
                    spot = _fmt_pose(position[:2])
                    self._set_status(actions, name, Level.OK, f'{self._errand(robot)}: waiting '
                                     f'at {spot} until it has passed')
                    actions += self._replan_around(name, now)
                    continue
                if robot.waypoint is not None:      # out of the others' way: now the goal
                    robot.waypoint = None
                    actions += self._request(name, 'backed out; to the goal again', now)
                    continue
                robot.done = True
                self._coordinator.drop(name)
                if robot.making_way_for:    # back where it was sent: that goal ended already
                    self._set_status(actions, name, Level.OK, f'back at its goal after '
                                     f'{self._errand(robot)}')
                    robot.making_way_for = ()
                else:
                    self._set_status(actions, name, Level.OK, 'goal reached')
                    actions.ended.append(GoalEnd(name, True, 'reached', 'goal reached'))
                actions += self._replan_around(name, now)
                continue
            robot.watch.observe(now, self.progress(name).distance_remaining,
                                waiting=self._waiting_turn(name),
                                stuck_time=self.policy.stuck_time,
                                straight=self._straight_to_goal(robot))
            if robot.jam_timeout is not None and \
                    robot.watch.stalled_for(now) > robot.jam_timeout:
                actions += self._jam(name, now)
            elif deviation > self.policy.replan_deviation and \
                    now - robot.last_request >= self.policy.min_replan_interval:
                robot.replans += 1
                actions += self._request(name, f'{deviation:.2f} m off the trajectory', now)
            elif robot.spec.steered and standing and \
                    (robot.progress_time >= ref.times[-1] or on_last and ran_out) and \
                    now - robot.last_request >= self.policy.min_replan_interval and \
                    robot.watch.nearest <= robot.beside_end_nearest - JAM_PROGRESS:
                # Each manoeuvre makes progress along its own path, which keeps the stuck
                # ladder from climbing: another one only after this one brought the car nearer.
                robot.beside_end_nearest = robot.watch.nearest
                robot.replans += 1
                actions += self._request(name, f'stopped {to_end:.2f} m from the end of its '
                                               'trajectory', now)
            else:
                actions += self._escalate(name, now)
        actions += self._coordinate(now)     # everyone's progress, which _come_back reads
        actions += self._come_back(now)
        return actions

    # -------------------------------------------------------------- liveness
    def _waiting_turn(self, name: str) -> bool:
        """The robot stands at (or brakes for) its gate: it waits its turn, by design, as
        long as the robot it waits for gets on (behind a stuck one it is stuck too)."""
        robot = self._robots[name]
        if robot.gate is None or not self._coordinator.has_path(name):
            return False
        leader = self._robots.get(self._waits_for.get(name))
        if leader is not None and leader.watch.rung > 0:    # on the stuck ladder itself
            return False
        return self._coordinator.progress(name) >= robot.gate - 1.0

    def _escalate(self, name: str, now: float) -> Actions:
        """The next rung of the stuck ladder (`stuck.LADDER`) when the robot is stuck."""
        robot = self._robots[name]
        step = robot.watch.climb(now, self.policy.stuck_time)
        if step is None:
            return Actions()
        stalled = robot.watch.stalled_for(now)
        robot.replans += 1
        # A stuck robot takes its turns last from now on (as if its goal were new): the robots
        # waiting for it go first, and none waits behind it for good.
        robot.rank = (now, robot.order)
        if self._coordinator.has_path(name):
            self._coordinator.set_rank(name, robot.rank)
        why = f'stuck {stalled:.0f} s: no {JAM_PROGRESS:g} m closer to the goal'
        back = self._straight_back(name) if step == 'replan_around' else None
        if back is not None:
            # A back-out too: a lock's back-out must not replace it in the same check (its plan
            # would start toward what holds the car, as every plan from here does).
            robot.waypoint, robot.around, robot.backed_out_at = back, True, now
            actions = self._request(name, f'{why}: backing straight off to '
                                          f'{_fmt_pose(back[:2])}', now)
            self._set_status(actions, name, Level.WARN, f'{why}; backing straight off the way '
                                                        'it was driving, then replanning')
        elif step == 'replan_around':
            robot.around = True
            actions = self._request(name, why, now)
            if self.dim(name) == 2 and robot.reference is not None:
                # ORCA keeps its radius off the map, more than the plan does: a pass between a
                # parked robot and a shelf the plan found wide enough may not be for ORCA.
                way, slack = self._way_just_ahead(name), self._coordinator.params.clearance
                actions += self._clear_the_way(name, now, way, slack=slack)
                actions += self._waiting_off_the_way(name, now, way, slack)
            self._set_status(actions, name, Level.WARN, f'{why}; replanning around the other '
                                                        'robots')
        elif step == 'back_out' and self.dim(name) == 2:
            actions = self._back_out(name, now, why, self._place_off_the_way(name, None))
            self._set_status(actions, name, Level.WARN, f'{why}; backing out of the others\' '
                                                        'way' if robot.waypoint is not None else
                             f'{why}; no place to back out to; waiting')
        else:
            actions = Actions()
            self._set_status(actions, name, Level.WARN, f'{why}; replanning around the others '
                             'and backing out did not help; waiting')
        robot.escalated = robot.status.message
        return actions

    def _straight_back(self, name: str) -> Optional[np.ndarray]:
        """For a car standing on its trajectory (held by the safety layer where it nosed up to
        a pillar or a parked car): the pose twice its radius straight back from the way it was
        driving, when the map is free up to there; else None. A plan from where it stands may
        start toward what holds it (the planner keeps its margin, the safety layer lets a car
        that close move only away); from there, it plans to its goal again. Twice the radius:
        a place to back out to counts as reached within the radius."""
        robot = self._robots[name]
        ref = robot.reference
        if not robot.spec.steered or ref is None or robot.start is None or \
                self.dim(name) != 2 or np.linalg.norm(robot.start.velocity) >= _STANDING:
            return None
        driving = float(ref.direction[ref.sample_at(robot.progress_time)])
        yaw = robot.start.yaw
        here = robot.start.position[:2]
        there = here - driving * 2.0 * robot.spec.radius * np.array([np.cos(yaw), np.sin(yaw)])
        if not self._maps[2].grid.segment_free(here[None], there[None], robot.spec.radius)[0]:
            return None
        return np.array([there[0], there[1], yaw])

    def _back_out(self, name: str, now: float, why: str,
                  place: Optional[np.ndarray]) -> Actions:
        """Leaves for `place` (`_place_off_the_way`), then plans to the goal again, in its
        turn; says so when there is no such place."""
        robot = self._robots[name]
        robot.backed_out_at = now
        actions = Actions()
        if place is None:
            self._set_status(actions, name, Level.WARN, f'{why}: no place off the others\' way '
                             'to back out to; waiting')
            return actions
        robot.waypoint = place
        robot.around = True
        return self._request(name, f'{why}: backing out to {_fmt_pose(place[:2])}', now)

    def _may_back_out(self, name: str, now: float) -> bool:
        robot = self._robots[name]
        return not robot.running and now - robot.backed_out_at >= self.policy.stuck_time

    def _unlock(self, late: str, early: str, now: float) -> Actions:
        """Of two robots each standing on the other's path, the one with the nearer place off
        the other's way backs out: the later goal, unless the earlier one's place is nearer by
        more than `_NEARER` (a robot at an aisle's far end need not drive its length back)."""
        place = self._place_off_the_way(late, early)
        backer, partner = late, early
        if self._may_back_out(early, now):
            other = self._place_off_the_way(early, late)
            if other is not None and (place is None or self._away(early, other) + _NEARER <
                                      self._away(late, place)):
                backer, partner, place = early, late, other
        return self._back_out(backer, now, f'{partner} and it stand on each other\'s path',
                              place)

    def _away(self, name: str, place: np.ndarray) -> float:
        return float(np.linalg.norm(place[:2] - self._robots[name].start.position[:2]))

    def _place_off_the_way(self, name: str, partner: Optional[str],
                           reach: float = 0.0) -> Optional[np.ndarray]:
        """The nearest place (x, y, yaw) off the other robots' way: off the whole rest of
        `partner`'s path and the nearby paths of the others, at least `reach` (and the two
        robots' radii and the coordination clearance) from each of them and from where the
        others stand, outside every one-robot zone, reached without passing through any of
        them (not beyond `partner` in a one-lane aisle); None when there is none."""
        robot = self._robots[name]
        here = robot.start.position[:2]
        others = [n for n, r in self._robots.items() if n != name and r.start is not None
                  and self.dim(n) == 2]
        keep_out = [self._robots[n].start.position[None, :2] for n in others]
        keep_out += [self._coordinator.remaining_points(n) for n in others
                     if self._coordinator.has_path(n) and (n == partner or np.min(np.linalg.norm(
                         self._coordinator.remaining_points(n) - here, axis=1)) < 5.0)]
        radius = robot.spec.radius
        reach = max(reach, radius + self._coordinator.params.clearance + max(
            (self._robots[n].spec.radius for n in others), default=radius))
        # Its way there goes around the others where they stand, as its plan will (the
        # planner's discs, `_standing`: the two robots' ORCA radii apart, centre to centre).
        orca = self._orca_radii()
        robots = np.array([(*self._robots[n].start.position[:2], orca[name] + orca[n])
                           for n in others]).reshape(-1, 3)
        spot = waiting_spot(self._maps[2].grid, here, radius + self.settings.safety_margin + 0.15,
                            np.vstack(keep_out) if keep_out else np.zeros((0, 2)), reach,
                            rules=self.traffic, robots=robots)
        if spot is None:
            return None
        # A car backs out as it stands (straight back where it can); the others face the place.
        heading = robot.start.yaw if robot.spec.steered else \
            float(np.arctan2(*(spot - here)[::-1]))
        return np.array([spot[0], spot[1], heading])

    # -------------------------------------------------------------- making way
    def _parked(self, name: str) -> bool:
        """Robot `name` is a ground robot idle at its reached goal (or at a place it made way
        to), without a plan: it may make way."""
        robot = self._robots[name]
        return robot.done and robot.goal is not None and not robot.running and \
            robot.start is not None and self.dim(name) == 2 and \
            not self._coordinator.has_path(name)

    @staticmethod
    def _errand(robot: _Robot) -> str:
        return 'making way for ' + ', '.join(robot.making_way_for)

    def _clear_the_way(self, mover: str, now: float, path: Optional[np.ndarray] = None,
                       slack: float = 0.0) -> Actions:
        """`mover`'s new plan could not go around the robots standing on it (its only way goes
        through them): each parked one it passes closer than ORCA lets them (`_parked`,
        `_orca_radii`), plus `slack`, leaves for the nearest place off its way (Open-RMF's
        responsive wait). `path`: by default its reference's own samples, as the plan job found
        them in the way (the coordinator's points, 0.2 m apart, can miss a pass at just under
        that distance)."""
        if path is None:
            path = self._robots[mover].reference.positions[:, :2]
        actions = Actions()
        for name, reach in self._beside(mover, path, slack):
            if self._parked(name):
                actions += self._make_way(name, mover, reach, now)
        return actions

    def _waiting_off_the_way(self, mover: str, now: float, path: np.ndarray,
                             slack: float) -> Actions:
        """Robots waiting their turn at a gate beside `path` (a stuck `mover`'s way just
        ahead), closer than ORCA lets them plus `slack`, back out of `mover`'s way: waiting
        for a third robot there, they hold `mover` as surely as a parked robot would."""
        actions = Actions()
        for name, reach in self._beside(mover, path, slack):
            if self._robots[name].waypoint is None and self._waiting_turn(name):
                actions += self._back_out(name, now, f'in the way of {mover}, which is stuck',
                                          self._place_off_the_way(name, mover, reach))
        return actions

    def _beside(self, mover: str, path: np.ndarray, slack: float) -> List[Tuple[str, float]]:
        """(name, reach) of each other robot standing closer to `path` (K, 2) than ORCA keeps
        it from `mover` (`_orca_radii`) plus `slack`: reach, that distance."""
        if not len(path):
            return []
        orca = self._orca_radii()
        near = []
        for name, robot in self._robots.items():
            reach = orca[name] + orca[mover] + slack
            if name != mover and robot.start is not None and np.min(np.linalg.norm(
                    path - robot.start.position[:2], axis=1)) < reach:
                near.append((name, reach))
        return near

    def _way_just_ahead(self, name: str) -> np.ndarray:
        """(K, 2) the samples of the robot's reference from its progress on, within
        `_STUCK_REACH` of where it stands: where what holds a stuck robot stands."""
        robot = self._robots[name]
        ref = robot.reference
        ahead = ref.positions[ref.times >= robot.progress_time, :2]
        return ahead[np.linalg.norm(ahead - robot.start.position[:2], axis=1) <= _STUCK_REACH]

    def _make_way(self, name: str, mover: str, reach: float, now: float) -> Actions:
        """Parked robot `name` leaves for a place at least `reach` off `mover`'s way; it takes
        its turns just before `mover` (it has to get out first) and comes back to its goal
        once `mover` has passed (`_come_back`)."""
        robot = self._robots[name]
        place = self._place_off_the_way(name, mover, reach)
        actions = Actions()
        if place is None:
            self._set_status(actions, name, Level.WARN, f'in the way of {mover}, but no place '
                             'off its way to make way to; staying')
            return actions
        robot.making_way_for = tuple(sorted({*robot.making_way_for, mover}))
        robot.waypoint, robot.jam_timeout = place, None     # its goal ended already
        robot.watch.reset(now)
        first, order = self._robots[mover].rank
        robot.rank = (first, order - 0.5)
        return self._request(name, f'{self._errand(robot)}: leaving its goal for '
                                   f'{_fmt_pose(place[:2])}', now)

    def _come_back(self, now: float) -> Actions:
        """Each robot waiting off the way goes back to its goal once every robot it made way
        for has passed it (no path of theirs left that passes its goal closer than ORCA lets
        them) and no robot stands there; it takes its turns last, as with a new goal."""
        actions = Actions()
        away = [name for name, robot in self._robots.items()
                if robot.making_way_for and self._parked(name)]
        orca = self._orca_radii() if away else {}
        for name in away:
            robot = self._robots[name]
            home = robot.goal[:2]
            passing = [n for n in robot.making_way_for if self._coordinator.has_path(n) and
                       np.min(np.linalg.norm(self._coordinator.remaining_points(n) - home,
                                             axis=1)) < orca[name] + orca[n]]
            standing = [n for n, other in self._robots.items() if n != name and
                        other.start is not None and self.dim(n) == 2 and
                        np.linalg.norm(other.start.position[:2] - home) < orca[name] + orca[n]]
            if passing or standing:
                continue
            robot.rank = (now, robot.order)
            robot.watch.reset(now)
            actions += self._request(name, f'{self._errand(robot)}: it has passed; back to '
                                           'the goal', now)
        return actions

    def _replan_around(self, name: str, now: float) -> Actions:
        """Robot `name` stands (goal reached, held): the robots whose paths pass it closer
        than ORCA lets them (`_orca_radii`) plan again, around it."""
        actions = Actions()
        if self.dim(name) != 2 or self._robots[name].start is None or \
                not self.policy.coordinate:
            return actions
        here = self._robots[name].start.position[:2]
        orca = self._orca_radii()
        for other, robot in self._robots.items():
            if other == name or not self._coordinator.has_path(other) or robot.running:
                continue
            ahead = self._coordinator.remaining_points(other)
            if np.min(np.linalg.norm(ahead - here, axis=1)) < orca[name] + orca[other]:
                robot.replans += 1
                actions += self._request(other, f'{name} stands on the path', now)
        return actions

    def _coordinate(self, now: float) -> Actions:
        """Every coordinated robot's turn (`coordination`): publishes a reference that stops
        at its gate, or the rest of its reference when the gate opened."""
        actions = Actions()
        coordinator = self._coordinator
        for name, robot in self._robots.items():
            if coordinator.has_path(name):
                coordinator.set_progress(name, robot.progress_time, robot.start.position)
        gates = coordinator.update() if self.policy.coordinate else {
            name: Gate() for name, robot in self._robots.items() if coordinator.has_path(name)}
        self._waits_for = {}
        for name, gate in gates.items():
            robot = self._robots[name]
            if gate.waits_for is not None:
                self._waits_for[name] = gate.waits_for
            partner = self._robots.get(gate.locked_with)
            # Also a robot already backing out whose way out is locked in turn: sent again.
            if partner is not None and partner.waypoint is None and self._may_back_out(name, now):
                actions += self._unlock(name, gate.locked_with, now)
                continue
            stop = gate.stop_s
            if robot.published and (stop is None) == (robot.gate is None) and (
                    stop is None or -_GATE_TIGHTER < stop - robot.gate < _GATE_STEP):
                continue
            ref = robot.reference
            if stop is None:
                piece, offset = remaining(ref, robot.progress_time)
            else:
                piece, offset = stop_before(ref, robot.progress_time, stop, robot.spec.max_accel)
            robot.gate, robot.published = stop, True
            actions.publish.append(TrajectoryUpdate(name, piece, robot.start_s + offset))
            if stop is not None:
                self._set_status(actions, name, Level.OK, f'waiting for {gate.waits_for} to '
                                                          'pass (coordination)')
            elif robot.status is not None and robot.status.message.startswith('waiting for'):
                self._set_status(actions, name, Level.OK, 'following its trajectory again')
        return actions

    def _jam(self, name: str, now: float) -> Actions:
        robot = self._robots[name]
        # What the stuck ladder tried since the last progress goes with it (error_msg says it).
        tried = f' (last: {robot.escalated})' if robot.watch.rung > 0 else ''
        message = (f'jammed: not {JAM_PROGRESS:g} m closer to the goal in '
                   f'{robot.jam_timeout:g} s{tried}; holding still')
        robot.goal, robot.done = None, True
        robot.generation += 1
        actions = self._hold(name, Level.WARN, message, now, waiting=False)
        actions.ended.append(GoalEnd(name, False, 'jammed', message))
        return actions

    def finish(self, outcome: PlanOutcome, now: float) -> Actions:
        """A job's outcome: publishes its plan, or holds the robot saying why it failed, or
        drops it when a newer request was made meanwhile (and plans that one)."""
        request = outcome.request
        if request.query:
            raise ValueError(f'finish: request of {request.robot} is path query '
                             f'{request.query}: its outcome goes to the caller that asked')
        name = request.robot
        robot = self._robots[name]
        robot.running = False
        actions = Actions()
        if request.generation != robot.generation:      # stale: a newer goal or replan
            if robot.goal is not None and not robot.waiting:
                actions.plan.append(self._submit(name))
            return actions
        reference = outcome.reference
        if reference is not None and robot.waypoint is not None and _tour(reference):
            reference = None        # a tour is no way out: as if there were none
        again = (f' (tried again with {RETRY_BUDGET_FACTOR}x the budget of '
                 f'{request.settings.plan_max_expansions} expansions)') if outcome.retried else ''
        if reference is None and robot.waypoint is not None and robot.done:
            # Parked, it found no way off the others' way: it stays where it is (at its goal:
            # done with making way; at a place it made way to before: back once they passed).
            robot.waypoint, errand = None, self._errand(robot)
            if self._straight_to_goal(robot) <= self.policy.goal_tolerance:
                robot.making_way_for = ()
            self._set_status(actions, name, Level.WARN, f'{errand}: no short way to a place '
                             'off its way; staying where it is')
            return actions
        if reference is None and robot.waypoint is not None:    # no way out: the goal again
            robot.waypoint = None
            return self._request(name, 'no short way to back out', now)
        if reference is None:
            result = outcome.result
            message = f'planning failed ({result.status.value}): {result.message}{again}'
            actions = self._hold(name, Level.ERROR, message, now, waiting=False)
            actions.ended.append(GoalEnd(name, False, result.status.value, message))
            return actions
        if request.map_generation != self._maps[request.grid.ndim].generation and \
                not self._free_ahead(robot, reference, 0.0):
            robot.replans += 1
            return self._request(name, 'a new map blocks the planned trajectory', now)
        robot.reference, robot.progress_time, robot.done = reference, 0.0, False
        robot.holding = False
        robot.start_s, robot.blocked_by = request.start.stamp_s, outcome.blocked
        robot.watch.rebase()
        if reference.dim == 2:      # published by _coordinate, stopping at its gate
            self._coordinator.set_path(name, reference, robot.spec.radius, robot.rank)
            robot.published = False
        else:
            self._coordinator.drop(name)
            actions.publish.append(TrajectoryUpdate(name, reference, request.start.stamp_s))
        stats = outcome.result.stats
        broken = f'; lanes broken: {outcome.lanes_broken}' if outcome.lanes_broken else ''
        errand = f'{self._errand(robot)}: ' if robot.making_way_for else ''
        self._set_status(actions, name, Level.WARN if broken else Level.OK,
                         f'{errand}following a {reference.duration:.1f} s trajectory to '
                         f'{_fmt_pose(request.goal)}, planned in '
                         f'{stats.plan_time * 1e3:.0f} ms{again}{broken}', values=(
                             ('plan_time', f'{stats.plan_time:.3f}'),
                             ('expanded_nodes', str(stats.expanded_nodes)),
                             ('duration', f'{reference.duration:.2f}'),
                             ('samples', str(len(reference)))))
        if reference.dim == 2:
            if outcome.blocked and self.policy.coordinate:
                actions += self._clear_the_way(name, now)
            actions += self._coordinate(now)
        return actions

    # -------------------------------------------------------------- internals
    def _request(self, name: str, reason: str, now: float) -> Actions:
        """Plans (again) for the robot's goal, or holds it still saying why it cannot."""
        robot = self._robots[name]
        robot.generation += 1
        robot.last_request = now
        dim = self.dim(name)
        held = self._maps.get(dim)
        which = 'the 3-D map' if dim == 3 else 'the map'
        if held is None:
            return self._hold(name, Level.OK, f'no {"3-D " if dim == 3 else ""}map yet: holding '
                                              'still until one arrives', now, waiting=True)
        if not held.has_free_cell:
            return self._hold(name, Level.ERROR, f'{which} has no free cell: holding still',
                              now, waiting=True)
        if robot.start is None:
            return self._hold(name, Level.OK, 'no odometry yet: holding still until it '
                                              'arrives', now, waiting=True)
        if dim == 3 and robot.goal[2] == 0.0:      # a 2-D tool's goal: keep flying level
            robot.goal[2] = robot.start.position[2]
        problem = goal_problem(held.grid, robot.goal)
        if problem is not None:
            status, message = problem
            message = f'planning failed ({status.value}): {message}'
            actions = self._hold(name, Level.ERROR, message, now, waiting=False)
            actions.ended.append(GoalEnd(name, False, status.value, message))
            return actions
        robot.waiting = False
        actions = Actions()
        self._set_status(actions, name, Level.OK, f'planning ({reason})')
        if not robot.running:       # else the running job is stale; its finish submits this
            actions.plan.append(self._submit(name))
        return actions

    def _submit(self, name: str) -> PlanRequest:
        robot = self._robots[name]
        robot.running = True
        held = self._maps[self.dim(name)]
        goal, settings = robot.goal, self.settings
        if robot.waypoint is not None:      # a place nearby, or none: a small budget
            goal = robot.waypoint
            settings = replace(settings, plan_max_expansions=max(
                1, settings.plan_max_expansions // BACK_OUT_BUDGET_DIVISOR))
        return PlanRequest(robot=name, generation=robot.generation, grid=held.grid,
                           map_generation=held.generation, start=robot.start,
                           goal=goal.copy(), spec=robot.spec, settings=settings,
                           planners=self._planners, obstacles=self._standing(name),
                           retry=robot.waypoint is None, traffic=self._traffic_for(name))

    def _traffic_for(self, name: str) -> Optional[TrafficRules]:
        """The lanes a plan of `name` keeps: the fleet's for a ground robot, none for a drone."""
        return self.traffic if self.dim(name) == 2 else None

    def _standing(self, name: str) -> np.ndarray:
        """(K, 3) x, y, radius of the ground robots a plan of `name` should go around: those
        standing without a plan, or, after `around` was asked for (stuck), all others where
        they are now."""
        robot = self._robots[name]
        everyone, robot.around = robot.around, False
        if self.dim(name) != 2 or not (everyone or self.policy.coordinate):
            return np.zeros((0, 3))
        # A disc the plan keeps its radius and safety margin from: the two robots' ORCA radii
        # apart, centre to centre (a plan closer than ORCA lets it pass stalls there).
        orca = self._orca_radii()
        reach = orca[name] - robot.spec.radius - self.settings.safety_margin
        rows = [(*other.start.position[:2], orca[n] + reach)
                for n, other in self._robots.items()
                if n != name and other.start is not None and self.dim(n) == 2 and
                (everyone or not self._coordinator.has_path(n))]
        return np.array(rows, dtype=float).reshape(-1, 3)

    def _orca_radii(self) -> Dict[str, float]:
        """Each robot's radius as ORCA keeps it from others (`FleetBodies`: radius, safety
        margin, a non-holonomic robot's tracking bound at the controller's default rate)."""
        specs = [robot.spec for robot in self._robots.values()]
        bodies = FleetBodies.create(specs, ControllerParams(
            safety_margin=self.settings.safety_margin))
        return dict(zip(self._robots, bodies.orca_radius.tolist()))

    def _hold(self, name: str, level: Level, message: str, now: float,
              waiting: bool) -> Actions:
        """The robot holds still (no stale plan remains) and its status says why."""
        robot = self._robots[name]
        robot.waiting = waiting
        robot.reference = None
        robot.waypoint = None
        actions = Actions()
        if self._coordinator.has_path(name):
            self._coordinator.drop(name)
            actions += self._replan_around(name, now)
        if not robot.holding:
            robot.holding = True
            actions.publish.append(TrajectoryUpdate(name, None, now))
        self._set_status(actions, name, level, message)
        return actions

    def _free_ahead(self, robot: _Robot, reference: Reference, after: float) -> bool:
        """The reference from time `after` on is collision-free on the current map."""
        ahead = reference.positions[reference.times >= after]
        if ahead.shape[0] < 2:
            return True
        grid = self._maps[reference.dim].grid
        return bool(np.all(grid.segment_free(ahead[:-1], ahead[1:], robot.spec.radius)))

    def _values(self, robot: _Robot, extra=()) -> Dict[str, str]:
        goal = 'none' if robot.goal is None else ', '.join(f'{v:.3f}' for v in robot.goal)
        return {'goal': goal, **dict(extra)}

    def _set_status(self, actions: Actions, name: str, level: Level, message: str,
                    values=()) -> None:
        """Records the status; reports it when it changed (once per robot in `actions`:
        the last word counts)."""
        robot = self._robots[name]
        status = RobotStatus(name, level, message, self._values(robot, values))
        if (robot.status.level, robot.status.message) != (level, message):
            actions.status[:] = [s for s in actions.status if s.robot != name] + [status]
        robot.status = status
