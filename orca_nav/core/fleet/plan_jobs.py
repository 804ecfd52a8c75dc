"""Plan jobs: what one planning query is (`PlanRequest`, plain data), how it runs on any thread
(`run_request`: the planner built or taken from the fleet's `PlannerCache`, a query within its
expansion budget, retried once with RETRY_BUDGET_FACTOR times it, around robots standing in the
way) and what it returns (`PlanOutcome`). The supervisor (`fleet_planner`) decides when to plan
and what the outcome means; nothing here touches it.

Drones plan in 3-D (`planning_dim`): a ``quadrotor`` robot's poses are (x, y, z, yaw) and its
start velocity (vx, vy, vz); every other robot's poses are (x, y, yaw) on the 2-D map.

Ground robots keep the request's one-way lanes (`TrafficRules`, `traffic`). The lanes are an
annotation, not walls: when no plan keeps them (no path, or the budget spent after the retry),
the request is planned once more without them, and a plan found so says in its message (and in
``PlanOutcome.lanes_broken``) that it breaks them, and why.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields, replace
from typing import Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np

from orca_nav.core.avoidance.voxel_obstacles import voxel_ball_radius
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.planning.path_timing import reference_from_samples, time_path
from orca_nav.core.planning.reference import Reference
from orca_nav.core.planning.result import PlanResult, PlanStats, PlanStatus
from orca_nav.core.traffic_rules import TrafficRules

_START_SPEED_FRACTION = 0.95     # odometry may overshoot the speed limit a little
RETRY_BUDGET_FACTOR = 4     # a query that spent its expansion budget is retried with this many


def dataclass_from_values(cls, values: Mapping[str, object]):
    """An instance of dataclass `cls` from the entries of `values` named like its fields."""
    return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})


@dataclass(frozen=True)
class PlanSettings:
    """What one planning query depends on besides the map and the robot."""

    safety_margin: float                # clearance added to the robot radius (m)
    plan_max_expansions: int = 5000     # budget of one query: search nodes expanded
    plan_time_budget: float = 60.0      # wall-time cap of one query (s): a safety net
    allow_reverse: bool = True          # cars and diff-drive robots may reverse
    sample_period: float = 0.1          # time between kinodynamic trajectory samples (s)
    cusp_dwell: float = 0.5             # stop at each direction switch (s)

    from_values = classmethod(dataclass_from_values)


def planning_dim(spec: RobotSpec) -> int:
    """3 for robots that fly (their poses are x, y, z, yaw), 2 for ground robots (x, y, yaw)."""
    return 3 if spec.flies else 2


def pose_fields(dim: int) -> str:
    return 'x, y, z, yaw' if dim == 3 else 'x, y, yaw'


@dataclass(frozen=True)
class StartState:
    """Where a robot is: pose (x, y, yaw), or (x, y, z, yaw) for a drone, and velocity (the
    first len(pose) - 1 components of `velocity` are kept) in the global frame, measured at
    ``stamp_s`` (the time a plan from this state starts at)."""

    pose: np.ndarray        # (d + 1,) position, yaw
    velocity: np.ndarray    # (d,)
    stamp_s: float

    def __post_init__(self):
        pose = np.array(self.pose, dtype=float).reshape(-1)       # copies: the state is a value
        if pose.size not in (3, 4):
            raise ValueError(f'start state pose must be 3 (x, y, yaw) or 4 (x, y, z, yaw) '
                             f'values, got {pose.tolist()}')
        dim = pose.size - 1
        velocity = np.array(self.velocity, dtype=float).reshape(-1)[:dim]
        for name, arr, size in (('pose', pose, dim + 1), ('velocity', velocity, dim)):
            if arr.size != size or not np.all(np.isfinite(arr)):
                raise ValueError(f'start state {name} must be {size} finite values, '
                                 f'got {arr.tolist()}')
        if not np.isfinite(self.stamp_s):
            raise ValueError(f'start state stamp_s must be finite, got {self.stamp_s}')
        object.__setattr__(self, 'pose', pose)
        object.__setattr__(self, 'velocity', velocity)
        object.__setattr__(self, 'stamp_s', float(self.stamp_s))

    @property
    def dim(self) -> int:
        return self.pose.size - 1

    @property
    def position(self) -> np.ndarray:
        return self.pose[:-1]

    @property
    def yaw(self) -> float:
        return float(self.pose[-1])


PlannerKey = Tuple[int, int, Tuple[Tuple[str, object], ...], PlanSettings,
                   Optional[TrafficRules]]


class PlannerCache:
    """The fleet's built planners, shared by its plan jobs on any thread: one per map (its
    dimension and generation), robot parameters (not the robot's name), settings and lanes.
    Building a planner (inflation, distance fields, coarse graphs) costs far more than a query
    on the 3-D forest, so a dozen drones with one spec build it once: the first job builds it under
    the lock while the others wait for it. A query does not change its planner, so jobs share
    it freely."""

    def __init__(self):
        self._lock = threading.Lock()
        self._planners: Dict[PlannerKey, object] = {}

    def get(self, key: PlannerKey, build: Callable[[], object]) -> object:
        with self._lock:
            planner = self._planners.get(key)
            if planner is None:
                planner = self._planners[key] = build()
            return planner

    def put(self, key: PlannerKey, planner) -> None:
        with self._lock:
            self._planners[key] = planner

    def keep_maps(self, generations: Mapping[int, int]) -> None:
        """Drops the planners of maps other than the current ones ({dimension: generation})."""
        with self._lock:
            self._planners = {key: planner for key, planner in self._planners.items()
                              if generations.get(key[0]) == key[1]}

    def keys(self) -> List[PlannerKey]:
        with self._lock:
            return list(self._planners)


@dataclass(frozen=True)
class PlanRequest:
    """One planning job, plain data: everything :func:`run_request` needs, nothing shared."""

    robot: str
    generation: int                     # the robot's request generation when it was asked
    grid: OccupancyGrid
    map_generation: int
    start: StartState
    goal: np.ndarray                    # (d + 1,) x, y, (z,) yaw
    spec: RobotSpec
    settings: PlanSettings
    planners: PlannerCache              # the fleet's (shared, thread-safe)
    query: int = 0                      # > 0: a path query's id (`path_request`), not a plan
    # Robots standing where the plan should not go: (K, 3) x, y, radius (`run_request`).
    obstacles: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    retry: bool = True                  # a spent budget is tried again with a larger one
    traffic: Optional[TrafficRules] = None     # one-way lanes a ground robot keeps (None: none)


@dataclass(frozen=True)
class PlanOutcome:
    """What a job returns to :meth:`FleetPlanner.finish`."""

    request: PlanRequest
    result: PlanResult
    reference: Optional[Reference]      # None unless the planner succeeded
    planners: Mapping[PlannerKey, object] = field(default_factory=dict)   # the ones it used
    retried: bool = False               # the first attempt spent its budget (RETRY_BUDGET_FACTOR)
    blocked: int = 0                    # standing robots the plan could not go around
    lanes_broken: str = ''              # why the plan breaks the one-way lanes ('': it keeps
                                        # them, or there are none)


def lanes_of(grid: OccupancyGrid, traffic: Optional[TrafficRules]) -> Optional[TrafficRules]:
    """The rules a plan on `grid` keeps: those with lanes, on a 2-D map (drones fly over
    lanes); None otherwise."""
    return traffic if traffic is not None and traffic.lanes and grid.ndim == 2 else None


def planner_key(grid: OccupancyGrid, map_generation: int, spec: RobotSpec,
                settings: PlanSettings, traffic: Optional[TrafficRules] = None) -> PlannerKey:
    """What a built planner depends on: the map, the robot's planning parameters (robots
    that differ only by name share it) and the lanes it keeps (the rules object itself: rules
    set anew build new planners)."""
    return (grid.ndim, map_generation, tuple(spec.field_values().items()), settings,
            lanes_of(grid, traffic))


def build_planner(grid: OccupancyGrid, spec: RobotSpec, settings: PlanSettings,
                  refine_on_failure: bool = True, traffic: Optional[TrafficRules] = None):
    """The core planner for the robot's kinematics (`refine_on_failure`: a hybrid A* search
    that found no path is repeated on a finer lattice), keeping `traffic`'s one-way lanes on
    a 2-D map."""
    traffic = lanes_of(grid, traffic)
    if not spec.non_holonomic:     # holonomic robots and drones
        from orca_nav.core.planning.kinodynamic_astar import KinodynamicAStar, KinodynamicParams
        margin = settings.safety_margin
        if grid.ndim == 3 and margin > 0.0:
            # The planner measures clearance to voxel centres, 3-D ORCA to the voxels' balls: a
            # gap planned narrower than ORCA's is one ORCA holds the drone in, wedged for good.
            # The ball goes with the margin: a start inside both is planned with the bare body.
            margin += voxel_ball_radius(grid.resolution)
        return KinodynamicAStar(grid, KinodynamicParams(
            max_vel=spec.max_speed, max_acc=spec.max_accel, max_speed=spec.max_speed,
            max_acc_norm=spec.max_accel, robot_radius=spec.radius,
            safety_margin=margin, max_expansions=settings.plan_max_expansions,
            max_time=settings.plan_time_budget), traffic)
    from orca_nav.core.planning.hybrid_astar import HybridAStar, HybridParams
    return HybridAStar(grid, HybridParams(
        wheelbase=spec.wheelbase, min_turning_radius=spec.min_turning_radius,
        robot_radius=spec.radius, allow_reverse=settings.allow_reverse,
        model='diff_drive' if spec.kinematics == 'diff_drive' else 'car',
        collision_margin=max(settings.safety_margin, 1e-3),
        max_expansions=settings.plan_max_expansions, timeout=settings.plan_time_budget,
        refine_on_failure=refine_on_failure), traffic)


def plan_reference(planner, spec: RobotSpec, settings: PlanSettings, start: StartState,
                   goal) -> Tuple[PlanResult, Optional[Reference]]:
    """Runs the planner from `start` to `goal` (x, y, yaw; x, y, z, yaw for a drone); on
    success also returns the time-parametrised reference (t = 0 at the start state), 3-D for a
    drone."""
    goal = np.asarray(goal, dtype=float)
    try:
        if not spec.non_holonomic:
            dim = start.dim
            speed = float(np.linalg.norm(start.velocity))
            limit = _START_SPEED_FRACTION * spec.max_speed
            start_vel = start.velocity * (min(1.0, limit / speed) if speed > 0.0 else 0.0)
            result = planner.plan(start.position, start_vel, goal[:dim], np.zeros(dim))
            if not result.success:
                return result, None
            t, pos, vel, acc = result.trajectory.sample(settings.sample_period)
            return result, reference_from_samples(t, pos[:, :dim], vel[:, :dim], acc[:, :dim],
                                                  start_yaw=start.yaw)
        result = planner.plan(tuple(start.pose), tuple(goal))
        if not result.success:
            return result, None
        path = result.path
        return result, time_path(path.x, path.y, path.yaw, path.direction,
                                 max_speed=spec.max_speed, max_accel=spec.max_accel,
                                 max_yaw_rate=spec.max_yaw_rate, cusp_dwell=settings.cusp_dwell)
    except ValueError as err:       # the planners raise for starts/goals outside the map
        return PlanResult(PlanStatus.OUT_OF_MAP, str(err), PlanStats()), None


def run_request(request: PlanRequest) -> PlanOutcome:
    """Plans one request. Pure with respect to the supervisor: safe on any thread.

    A robot standing inside the safety margin (tracking error, pushed aside by others) is not in
    collision: when the start is in collision with the margin, it is planned again without it. A
    query that spent its expansion budget is planned again with RETRY_BUDGET_FACTOR times it.
    One that then found no plan keeping the one-way lanes is planned once more without them.
    """
    planners: Dict[PlannerKey, object] = {}
    traffic = lanes_of(request.grid, request.traffic)

    def attempt(settings: PlanSettings):
        key = planner_key(request.grid, request.map_generation, request.spec, settings, traffic)
        planner = request.planners.get(
            key, lambda: build_planner(request.grid, request.spec, settings, traffic=traffic))
        planners[key] = planner
        return plan_reference(planner, request.spec, settings, request.start, request.goal)

    settings, retried, lanes_broken = request.settings, False, ''
    try:
        result, reference = attempt(settings)
        if result.status is PlanStatus.START_IN_COLLISION and settings.safety_margin > 0:
            settings = replace(settings, safety_margin=0.0)
            result, reference = attempt(settings)
        if result.status is PlanStatus.TIMEOUT and request.retry and \
                result.stats.expanded_nodes >= settings.plan_max_expansions:
            retried = True
            result, reference = attempt(replace(
                settings, plan_max_expansions=RETRY_BUDGET_FACTOR * settings.plan_max_expansions))
        if traffic is not None and result.status in (PlanStatus.NO_PATH, PlanStatus.TIMEOUT):
            # The lanes are an annotation: a robot is not left without a path for them.
            kept = f'no path keeps the one-way lanes ({result.status.value}: {result.message})'
            traffic = None
            result, reference = attempt(settings)
            if result.success:
                lanes_broken = kept
                result = replace(result, message=f'lanes broken: {kept}; planned without them: '
                                                 f'{result.message}')
            else:
                result = replace(result, message=f'{result.message} (without the one-way lanes '
                                                 f'too; with them: {kept})')
        blocked = 0
        if reference is not None and len(request.obstacles):
            reference, blocked = _around_standing(request, settings, reference, traffic)
    except Exception as err:    # noqa: BLE001 -- a planner bug fails this plan, not the worker
        result = PlanResult(PlanStatus.INTERNAL_ERROR, f'planner error: {err!r}', PlanStats())
        reference, blocked, lanes_broken = None, 0, ''
    return PlanOutcome(request, result, reference, planners, retried, blocked, lanes_broken)


def _standing_in_way(request: PlanRequest, reference: Reference) -> np.ndarray:
    """(K,) bool: the request's standing robots the reference passes through (their discs and
    the robot's, with the safety margin, overlap)."""
    discs = request.obstacles
    reach = discs[:, 2] + request.spec.radius + request.settings.safety_margin
    gaps = np.linalg.norm(reference.positions[:, None, :2] - discs[None, :, :2], axis=2)
    return (gaps < reach[None, :]).any(axis=0)


def _around_standing(request: PlanRequest, settings: PlanSettings, reference: Reference,
                     traffic: Optional[TrafficRules]) -> Tuple[Reference, int]:
    """The reference planned on the map, or one planned again around the standing robots it
    passes through (on a copy of the map with their discs occupied; a planner built for it, not
    cached; keeping the lanes `traffic` the plan on the map kept). Robots standing on the start
    or the goal cannot be gone around and stay out of it. Returns the reference and how many
    standing robots it still passes through."""
    from orca_nav.core.fleet.coordination import with_discs
    hit = _standing_in_way(request, reference)
    if not hit.any():
        return reference, 0
    discs = request.obstacles
    reach = discs[:, 2] + request.spec.radius + settings.safety_margin
    ends = np.vstack([request.start.position[:2], request.goal[:2]])
    on_ends = (np.linalg.norm(discs[:, None, :2] - ends[None], axis=2) < reach[:, None]).any(1)
    around = discs[~on_ends]
    if not len(around):
        return reference, int(hit.sum())
    grid = with_discs(request.grid, around[:, :2], around[:, 2])
    # Where the standing robots close every way the search is exhausted: one budget, no finer
    # lattice, then the plan on the map stands.
    result, detour = plan_reference(build_planner(grid, request.spec, settings, False, traffic),
                                    request.spec, settings, request.start, request.goal)
    if detour is None:
        return reference, int(hit.sum())
    return detour, int(_standing_in_way(request, detour).sum())


def goal_problem(grid: OccupancyGrid, goal: np.ndarray) -> Optional[Tuple[PlanStatus, str]]:
    """Why the goal's position cannot be planned to on `grid`, before any search: outside the
    map's bounds, or in an occupied cell. None when it may be."""
    position = goal[:grid.ndim]
    field = 'goal ' + ', '.join('xyz'[:grid.ndim])
    text = '(' + ', '.join(f'{v:g}' for v in position) + ')'
    if not grid.in_bounds(position[None])[0]:
        lower, upper = grid.extent
        spans = ', '.join(f'{axis} {round(lo, 3) + 0.0:g}..{round(hi, 3) + 0.0:g}'
                          for axis, lo, hi in zip('xyz', lower, upper))
        return PlanStatus.OUT_OF_MAP, f'{field} {text} is outside the map (it spans {spans})'
    if grid.occupied_at(position[None])[0]:
        return PlanStatus.GOAL_IN_COLLISION, f'{field} {text} is in an occupied cell'
    return None
