"""One-way lanes in the planners (hybrid A* for diff-drive robots and cars, kinodynamic A*) and
through the fleet's plan jobs: paths keep the lanes, go around them the way the lanes allow,
and a goal the lanes make unreachable still gets a plan that says it breaks them."""
import math

import numpy as np
import pytest

from orca_nav.core.coarse_geodesic import CoarseGeodesic
from orca_nav.core.fleet.fleet_planner import FleetPlanner, ReplanPolicy
from orca_nav.core.fleet.plan_jobs import PlanSettings, StartState, planner_key, run_request
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.fleet.status import Level
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.planning.hybrid_astar import HybridAStar, HybridParams
from orca_nav.core.planning.kinodynamic_astar import KinodynamicAStar, KinodynamicParams
from orca_nav.core.planning.result import PlanStatus
from orca_nav.core.sim.closed_loop import Scene, run
from orca_nav.core.traffic_rules import Lane, TrafficRules

from scenes import EAST_AISLE, SHELF, room, shelf_aisle

EAST = TrafficRules.from_dict(EAST_AISLE)
DIFF = dict(wheelbase=0.5, min_turning_radius=0.5, robot_radius=0.3, model='diff_drive')
CAR = dict(wheelbase=0.5, min_turning_radius=1.0, footprint_length=0.8, footprint_width=0.5,
           rear_overhang=0.15)
HOLONOMIC = dict(max_vel=1.0, max_acc=1.0, max_speed=1.0, max_acc_norm=1.0, robot_radius=0.3,
                 safety_margin=0.05, max_time=60.0)
# West across the shelf's east end, facing north (a car can only turn that way there).
WEST = {'diff_drive': ((11.0, 1.1, math.pi), (1.0, 1.1, math.pi)),
        'car': ((11.0, 1.1, math.pi / 2), (1.0, 1.1, math.pi / 2))}
HYBRID = {'diff_drive': DIFF, 'car': CAR}


@pytest.fixture(scope='module')
def aisle():
    return shelf_aisle()


def against(points, rules=EAST):
    """How many steps between consecutive points go against a lane."""
    points = np.asarray(points)[:, :2]
    return int(rules.against_motion(points[:-1], np.diff(points, axis=0)).sum())


def hybrid_points(result):
    assert result.status is PlanStatus.SUCCESS, result.message
    return np.column_stack([result.path.x, result.path.y])


def kinodynamic_points(result):
    assert result.status is PlanStatus.SUCCESS, result.message
    _, pos, _, _ = result.trajectory.sample(0.02)
    return pos


@pytest.mark.parametrize('model', ['diff_drive', 'car'])
def test_hybrid_paths_go_around_a_one_way_aisle_they_would_take_against_it(aisle, model):
    start, goal = WEST[model]
    free = HybridAStar(aisle, HybridParams(**HYBRID[model]))
    short = hybrid_points(free.plan(start, goal))
    assert short[:, 1].max() < SHELF[1] and against(short) > 0      # through the aisle
    # A small budget: the lane-aware distance field leads the search around at once.
    kept = HybridAStar(aisle, HybridParams(**HYBRID[model], max_expansions=2000), EAST)
    around = hybrid_points(kept.plan(start, goal))
    assert around[:, 1].max() > SHELF[3] and against(around) == 0   # north of the shelf
    np.testing.assert_allclose(around[-1], goal[:2], atol=0.1)


@pytest.mark.parametrize('model', ['diff_drive', 'car'])
def test_hybrid_reaches_a_goal_inside_a_lane_from_its_upstream_end(aisle, model):
    planner = HybridAStar(aisle, HybridParams(**HYBRID[model], max_expansions=5000), EAST)
    start, goal = (11.0, 1.1, math.pi / 2), (6.0, 1.1, 0.0)
    points = hybrid_points(planner.plan(start, goal))
    assert against(points) == 0
    # Around the shelf's west end, then east along the aisle to the goal.
    west_end = np.flatnonzero(points[:, 0] < SHELF[0])
    assert west_end.size and np.all(points[west_end[-1]:, 0] <= goal[0] + 0.1)
    np.testing.assert_allclose(points[-1], goal[:2], atol=0.1)


def test_without_rules_the_hybrid_planner_is_unchanged(aisle):
    start, goal = WEST['diff_drive']
    a = HybridAStar(aisle, HybridParams(**DIFF)).plan(start, goal)
    b = HybridAStar(aisle, HybridParams(**DIFF), TrafficRules()).plan(start, goal)
    assert a.stats.expanded_nodes == b.stats.expanded_nodes
    np.testing.assert_array_equal(a.path.x, b.path.x)
    np.testing.assert_array_equal(a.path.yaw, b.path.yaw)


def test_kinodynamic_trajectories_keep_the_lanes(aisle):
    start, goal = (11.0, 1.1), (1.0, 1.1)
    zero = (0.0, 0.0)
    short = kinodynamic_points(KinodynamicAStar(aisle, KinodynamicParams(**HOLONOMIC))
                               .plan(start, zero, goal, zero))
    assert short[:, 1].max() < SHELF[1] and against(short) > 0
    planner = KinodynamicAStar(aisle, KinodynamicParams(**HOLONOMIC), EAST)
    around = kinodynamic_points(planner.plan(start, zero, goal, zero))
    assert around[:, 1].max() > SHELF[3] and against(around) == 0
    # A goal inside the lane: entered at its upstream (west) end.
    inside = kinodynamic_points(planner.plan(start, zero, (6.0, 1.1), zero))
    assert against(inside) == 0 and inside[:, 0].min() < SHELF[0]


def test_the_coarse_distance_keeps_the_lanes(aisle):
    inflated = aisle.inflated(0.35)
    plain = CoarseGeodesic(inflated, 4, optimistic=False)
    lanes = CoarseGeodesic(inflated, 4, optimistic=False, traffic=EAST)
    west, east = np.array([[1.0, 1.1]]), np.array([[11.0, 1.1]])
    # Westwards the way is around the shelf; eastwards along the aisle as without lanes.
    assert lanes.lookup(lanes.from_goal(west), east)[0] > \
        plain.lookup(plain.from_goal(west), east)[0] + 2.5
    assert lanes.lookup(lanes.from_goal(east), west)[0] == \
        pytest.approx(plain.lookup(plain.from_goal(east), west)[0])
    with pytest.raises(ValueError, match='2-D lattice'):
        CoarseGeodesic(inflated, 4, optimistic=True, traffic=EAST)


# A dead-end corridor (y 1.0..2.0, from x 4 to the east wall) whose lane leads out of it: its
# far end is unreachable keeping the lane.
CORRIDOR = room(12.0, [(4.0, 0.0, 12.0, 1.0), (4.0, 2.0, 12.0, 2.8)])
OUTWARD = TrafficRules([Lane('way_out', (11.8, 1.5), (4.0, 1.5), 2.4)])
ROBOTS = {'diff_drive': RobotSpec('robot0', kinematics='diff_drive', radius=0.3, max_speed=1.0,
                                  max_accel=1.0),
          'holonomic': RobotSpec('robot0', kinematics='holonomic', radius=0.3, max_speed=1.0,
                                 max_accel=1.0)}
SETTINGS = PlanSettings(safety_margin=0.05, plan_max_expansions=300)
POLICY = ReplanPolicy(goal_tolerance=0.15)


def fleet(spec, traffic=None, grid=CORRIDOR):
    planner = FleetPlanner({'robot0': spec}, SETTINGS, POLICY, traffic)
    planner.set_map(grid, now=1.0)
    planner.set_start_state('robot0', StartState([2.0, 6.0, 0.0], [0.0, 0.0], 1.0), now=1.0)
    return planner


@pytest.mark.parametrize('kinematics', ['diff_drive', 'holonomic'])
def test_a_goal_the_lanes_make_unreachable_gets_a_plan_saying_it_breaks_them(kinematics):
    planner = fleet(ROBOTS[kinematics], OUTWARD)
    (request,) = planner.set_goal('robot0', [10.0, 1.5, 0.0], now=1.0).plan
    assert request.traffic is OUTWARD
    outcome = run_request(request)
    assert outcome.result.success and outcome.reference is not None
    assert outcome.result.message.startswith('lanes broken: no path keeps the one-way lanes')
    assert outcome.lanes_broken.startswith('no path keeps the one-way lanes (')
    # The plan found without the lanes goes against them; the robot follows it, warned.
    assert against(outcome.reference.positions, OUTWARD) > 0
    actions = planner.finish(outcome, now=2.0)
    assert actions.status[-1].level is Level.WARN
    assert 'lanes broken: no path keeps the one-way lanes' in actions.status[-1].message


def test_a_goal_the_lanes_allow_is_planned_keeping_them():
    planner = fleet(ROBOTS['diff_drive'], OUTWARD)
    planner.set_start_state('robot0', StartState([10.0, 1.5, math.pi], [0.0, 0.0], 1.0), now=1.0)
    (request,) = planner.set_goal('robot0', [2.0, 6.0, 0.0], now=1.0).plan
    outcome = run_request(request)
    assert outcome.result.success and not outcome.lanes_broken
    assert against(outcome.reference.positions, OUTWARD) == 0
    assert planner.finish(outcome, now=2.0).status[-1].level is Level.OK


def test_rules_set_later_apply_to_later_requests_and_key_the_planners():
    planner = fleet(ROBOTS['holonomic'])
    (before,) = planner.set_goal('robot0', [2.0, 8.0, 0.0], now=1.0).plan
    assert before.traffic is None
    planner.set_traffic_rules(OUTWARD)
    assert not planner.check_progress(now=1.5).plan        # nothing replans by itself
    request, _ = planner.path_request('robot0', [2.0, 9.0, 0.0], query=1)
    assert request.traffic is OUTWARD
    keys = {planner_key(r.grid, r.map_generation, r.spec, r.settings, r.traffic)
            for r in (before, request)}
    assert len(keys) == 2
    # Rules without lanes (zones only) build the same planner as no rules.
    zones_only = TrafficRules(zones=OUTWARD.zones)
    assert planner_key(before.grid, 1, before.spec, before.settings, zones_only) == \
        planner_key(before.grid, 1, before.spec, before.settings)


def test_rules_of_another_type_are_refused_naming_the_field(aisle):
    with pytest.raises(ValueError, match='traffic must be TrafficRules or None, got dict'):
        HybridAStar(aisle, HybridParams(**DIFF), EAST_AISLE)
    with pytest.raises(ValueError, match='traffic must be TrafficRules or None, got str'):
        KinodynamicAStar(aisle, KinodynamicParams(**HOLONOMIC), 'lanes.yaml')
    with pytest.raises(ValueError, match='traffic rules must be TrafficRules or None, got dict'):
        fleet(ROBOTS['holonomic']).set_traffic_rules(EAST_AISLE)


def test_drones_fly_over_lanes():
    drone = RobotSpec('drone0', kinematics='quadrotor', radius=0.2, max_speed=1.0, max_accel=1.0)
    planner = FleetPlanner({'drone0': drone, 'robot0': ROBOTS['holonomic']}, SETTINGS, POLICY,
                           OUTWARD)
    planner.set_map(CORRIDOR, now=1.0)
    planner.set_map(OccupancyGrid(np.zeros((10, 120, 120), bool), 0.1, (0.0, 0.0, 0.0)), now=1.0)
    planner.set_start_state('robot0', StartState([2.0, 6.0, 0.0], [0.0, 0.0], 1.0), now=1.0)
    planner.set_start_state('drone0', StartState([2.0, 6.0, 0.5, 0.0], [0.0, 0.0, 0.0], 1.0),
                            now=1.0)
    ground, _ = planner.path_request('robot0', [2.0, 9.0, 0.0], query=1)
    flying, _ = planner.path_request('drone0', [10.0, 1.5, 0.5, 0.0], query=2)
    assert ground.traffic is OUTWARD and flying.traffic is None
    assert run_request(flying).result.success

def test_a_closed_loop_scene_carries_its_lanes_to_the_fleet_planner(aisle):
    robot = RobotSpec('robot0', kinematics='holonomic', radius=0.3, max_speed=1.0, max_accel=1.0)

    def makespan(traffic):
        result = run(Scene('west', [robot], np.array([[11.0, 1.1, math.pi]]), [[(1.0, 1.1)]],
                           grid=aisle, planner=True, duration=60.0, traffic=traffic))
        assert result.finished == 1 and not result.contacts
        return result.makespan

    # Around the shelf (about 4 m more) rather than straight down the aisle.
    assert makespan(EAST) > makespan(None) + 2.0
