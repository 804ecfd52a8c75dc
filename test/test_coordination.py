"""Coordination of planned paths and stuck detection: the core parts, then closed loops that
deadlock without them (a one-lane swap of six robots, two cars meeting in a lane)."""
from dataclasses import replace

import numpy as np
import pytest

from orca_nav.core.fleet.coordination import (
    CoordinationParams,
    Coordinator,
    arc_lengths,
    stop_before,
    waiting_spot,
    with_discs,
)
from orca_nav.core.fleet.fleet_planner import FleetPlanner, Level, ReplanPolicy
from orca_nav.core.fleet.plan_jobs import PlanOutcome, PlanSettings, StartState
from orca_nav.core.fleet.robots import RobotSpec
from orca_nav.core.fleet.stuck import LADDER, StuckWatch
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.planning.path_timing import time_path
from orca_nav.core.planning.result import PlanResult, PlanStats, PlanStatus
from orca_nav.core.sim.closed_loop import Scene, _Loop, run
from orca_nav.core.traffic_rules import TrafficRules

from scenes import room


def straight(x0, y0, x1, y1, speed=1.0):
    yaw = float(np.arctan2(y1 - y0, x1 - x0))
    return time_path([x0, x1], [y0, y1], [yaw, yaw], [1, 1], max_speed=speed, max_accel=1.0)


def at(coordinator, name, reference, s):
    """Robot `name` at arc length s of `reference`."""
    arc = arc_lengths(reference.positions)
    time = float(np.interp(s, arc, reference.times))
    coordinator.set_progress(name, time, reference.position_at(time)[0])


def two_robots(a, b, params=CoordinationParams()):
    """A coordinator with robot 'a' on path a (the older goal) and 'b' on path b, both at their
    paths' starts."""
    coordinator = Coordinator(params)
    coordinator.set_path('a', a, 0.3, (0.0, 0))
    coordinator.set_path('b', b, 0.3, (1.0, 1))
    at(coordinator, 'a', a, 0.0)
    at(coordinator, 'b', b, 0.0)
    return coordinator


# ---------------------------------------------------------------------- coordination core
def test_the_later_goal_waits_before_a_crossing_until_the_earlier_has_crossed():
    a, b = straight(0.0, 5.0, 10.0, 5.0), straight(5.0, 0.0, 5.0, 10.0)
    coordinator = two_robots(a, b)
    gates = coordinator.update()
    assert gates['a'].stop_s is None
    reach = 0.3 + 0.3 + CoordinationParams().clearance
    assert gates['b'].waits_for == 'a' and gates['b'].stop_s < 5.0 - reach
    at(coordinator, 'a', a, 5.0)        # on the crossing: b still waits
    assert coordinator.update()['b'].stop_s is not None
    at(coordinator, 'a', a, 5.0 + reach + 0.3)      # past it: b goes
    assert coordinator.update()['b'].stop_s is None


def test_the_later_goal_crosses_first_where_it_clears_the_crossing_long_before_the_other():
    """b is 1 m from the crossing, a (the earlier goal) 12 m: b clears it in about 3.5 s of
    its plan, well before a gets there (about 11 s); from 7 m away a would be too close."""
    a, b = straight(0.0, 5.0, 24.0, 5.0), straight(12.0, 4.0, 12.0, 10.0)
    coordinator = two_robots(a, b)
    assert coordinator.update()['b'].stop_s is None
    at(coordinator, 'a', a, 5.0)
    assert coordinator.update()['b'].waits_for == 'a'
    pure_order = two_robots(a, b, CoordinationParams(pass_margin=np.inf))
    assert pure_order.update()['b'].waits_for == 'a'


def test_a_robot_follows_one_ahead_on_the_same_path_at_a_distance():
    coordinator = Coordinator()
    lead, follow = straight(2.0, 5.0, 12.0, 5.0), straight(0.0, 5.0, 10.0, 5.0)
    coordinator.set_path('lead', lead, 0.3, (0.0, 0))
    coordinator.set_path('follow', follow, 0.3, (1.0, 1))
    for s_lead in (0.0, 3.0, 6.0):
        at(coordinator, 'lead', lead, s_lead)
        at(coordinator, 'follow', follow, 0.0)
        stop = coordinator.update()['follow'].stop_s
        # The follower may come up to where the leader's disc and clearance begin.
        assert stop == pytest.approx(2.0 + s_lead - (0.3 + 0.3 + 0.4) - 0.2, abs=0.25)


def test_the_later_robot_waits_outside_a_lane_the_earlier_one_drives_through():
    coordinator = Coordinator()
    east, west = straight(0.0, 5.0, 12.0, 5.0), straight(12.0, 5.0, 0.0, 5.0)
    coordinator.set_path('east', east, 0.3, (0.0, 0))
    coordinator.set_path('west', west, 0.3, (1.0, 1))
    at(coordinator, 'east', east, 1.0)
    at(coordinator, 'west', west, 0.0)
    gates = coordinator.update()
    assert gates['west'].waits_for == 'east' and gates['west'].stop_s == pytest.approx(0.0)
    assert gates['east'].stop_s is None


def crossroads():
    """A 10 m room filled but for two 1.2 m corridors crossing at (5, 5): too narrow for two
    robots of 0.25 - 0.3 m to pass each other."""
    return room(blocks=[(0.0, 0.0, 4.4, 4.4), (5.6, 0.0, 10.0, 4.4), (0.0, 5.6, 4.4, 10.0),
                        (5.6, 5.6, 10.0, 10.0)])


def test_paths_take_turns_only_where_the_map_is_too_narrow_for_the_robots_to_pass():
    """The same crossing: in an open room ORCA passes them (no turns); where two corridors
    cross, the later goal waits; without a map, as everywhere."""
    a, b = straight(0.0, 5.0, 10.0, 5.0), straight(5.0, 0.0, 5.0, 10.0)
    for grid, waits in ((room(), False), (crossroads(), True), (None, True)):
        coordinator = Coordinator()
        if grid is not None:
            coordinator.set_map(grid)
        coordinator.set_path('a', a, 0.3, (0.0, 0))
        coordinator.set_path('b', b, 0.3, (1.0, 1))
        at(coordinator, 'a', a, 0.0)
        at(coordinator, 'b', b, 0.0)
        assert (coordinator.update()['b'].waits_for == 'a') == waits, grid
    everywhere = Coordinator(CoordinationParams(narrow_only=False))
    everywhere.set_map(room())
    everywhere.set_path('a', a, 0.3, (0.0, 0))
    everywhere.set_path('b', b, 0.3, (1.0, 1))
    at(everywhere, 'a', a, 0.0)
    at(everywhere, 'b', b, 0.0)
    assert everywhere.update()['b'].waits_for == 'a'


def test_free_width_is_a_corridors_width_across_it_and_large_in_a_room():
    from orca_nav.core.fleet.coordination import free_width

    def width_at(grid, x, y):
        ix, iy = grid.world_to_cell([[x, y]])[0]
        return free_width(grid)[iy, ix]
    corridor = width_at(crossroads(), 5.2, 2.0)
    assert corridor == pytest.approx(1.2, abs=0.15)     # off its centre line too
    assert width_at(crossroads(), 5.0, 5.0) > corridor   # where the corridors cross
    assert width_at(room(), 5.0, 5.0) > 8.0


def test_a_later_robot_merging_well_ahead_leads_the_earlier_one_down_the_corridor():
    """A 1.4 m corridor (y 4.3..5.7) with doors below (x 5, 9) and above (x 9, 13); a (the
    earlier goal) drives it east from x 0.5. b comes in by the door at x 9, 6 m ahead of a:
    turning east (out at the top at x 13) it goes first and leads; turning west towards a (out
    by the door at x 5) it waits for a; crossing straight over, it waits too."""
    grid = room(16.0, blocks=[(0.0, 0.0, 4.4, 4.3), (5.6, 0.0, 8.4, 4.3), (9.6, 0.0, 16.0, 4.3),
                              (0.0, 5.7, 8.4, 16.0), (9.6, 5.7, 12.4, 16.0),
                              (13.6, 5.7, 16.0, 16.0)])
    a = straight(0.5, 5.0, 15.5, 5.0)

    def b_path(xs, ys):
        yaws = np.arctan2(np.diff(ys), np.diff(xs))
        return time_path(xs, ys, np.append(yaws, yaws[-1]), [1] * len(xs), max_speed=1.0,
                         max_accel=1.0)
    for b, leads in ((b_path([9.0, 9.0, 13.0, 13.0], [2.5, 5.0, 5.0, 8.0]), True),
                     (b_path([9.0, 9.0, 5.0, 5.0], [2.5, 5.0, 5.0, 2.5]), False),
                     (b_path([9.0, 9.0], [2.5, 8.0]), False)):
        coordinator = Coordinator()
        coordinator.set_map(grid)
        coordinator.set_path('a', a, 0.3, (0.0, 0))
        coordinator.set_path('b', b, 0.3, (1.0, 1))
        at(coordinator, 'a', a, 0.0)
        at(coordinator, 'b', b, 0.0)
        gates = coordinator.update()
        assert (gates['b'].waits_for is None) == leads, b.positions[-1]
        assert gates['a'].waits_for is None
    follow_only = Coordinator(CoordinationParams(lead_same_way=False))
    follow_only.set_map(grid)
    follow_only.set_path('a', a, 0.3, (0.0, 0))
    east = b_path([9.0, 9.0, 13.0, 13.0], [2.5, 5.0, 5.0, 8.0])
    follow_only.set_path('b', east, 0.3, (1.0, 1))
    at(follow_only, 'a', a, 0.0)
    at(follow_only, 'b', east, 0.0)
    assert follow_only.update()['b'].waits_for == 'a'


def test_a_robot_standing_in_the_way_goes_first_whatever_its_rank():
    """b (the later goal) already stands on a's path: a waits for it to get out of the way."""
    a, b = straight(0.0, 5.0, 10.0, 5.0), straight(6.0, 5.0, 6.0, 10.0)
    coordinator = two_robots(a, b)
    gates = coordinator.update()
    assert coordinator.order == ['b', 'a']
    assert gates['b'].stop_s is None and gates['a'].waits_for == 'b'
    assert gates['a'].stop_s < 6.0 - 1.0


@pytest.mark.parametrize('along, in_way', [(0.47, True), (0.0, False), (-0.5, False)])
def test_a_robot_waiting_diagonally_ahead_of_the_mover_stands_in_its_way(along, in_way):
    """b (the later goal) stands 0.63 m beside a's path, 0.03 m more than the two radii (the
    0.6 m aisle of warehouse_aisles seed 46, where a stood for good and b waited for it) and
    waits for a: diagonally ahead of a it boxes a in, so it goes first, and stays first while
    it stands there; beside or behind a, a drives on."""
    a = straight(0.0, 5.0, 10.0, 5.0)
    b = straight(1.0 + along, 4.37, 1.0 + along, 0.0)
    coordinator = two_robots(a, b)
    at(coordinator, 'a', a, 1.0)
    assert coordinator.update()['b'].waits_for == 'a'
    for _ in range(2):
        gates = coordinator.update()
        assert (coordinator.order == ['b', 'a']) == in_way
        assert (gates['a'].waits_for == 'b') == in_way


def test_two_robots_each_on_the_others_path_are_locked_and_the_later_backs_out():
    a, b = straight(0.0, 5.0, 10.0, 5.0), straight(4.0, 5.0, -4.0, 5.0)
    coordinator = two_robots(a, b)
    gates = coordinator.update()
    assert gates['b'].locked_with == 'a' and gates['a'].locked_with is None


def test_who_stands_in_whose_way_is_the_same_asked_for_all_pairs_at_once_as_pair_by_pair():
    """The fleet-wide query (one kd-tree query per robot) answers as the definition does for
    each pair: the stander within the two radii and half the clearance of a point of the
    mover's path that lies more than their reach beyond the mover's progress (no robot waits
    yet, so none boxes another in)."""
    rng = np.random.default_rng(7)
    coordinator = Coordinator()
    refs = {}
    for k in range(14):
        x0, y0, x1, y1 = rng.uniform(0.0, 12.0, 4)
        refs[f'r{k}'] = straight(x0, y0, x1, y1)
        coordinator.set_path(f'r{k}', refs[f'r{k}'], float(rng.uniform(0.2, 0.5)), (k, k))
        arc = arc_lengths(refs[f'r{k}'].positions)
        at(coordinator, f'r{k}', refs[f'r{k}'], float(rng.uniform(0.0, arc[-1])))
    pairs = coordinator._near()
    clearance = CoordinationParams().clearance

    def in_way(stander, mover):
        j, i = coordinator._paths[stander], coordinator._paths[mover]
        gap = np.linalg.norm(i.points - coordinator._here(stander), axis=1)
        near = gap <= i.radius + j.radius + 0.5 * clearance
        return near.any() and i.s[near].max() > i.progress + i.radius + j.radius + clearance
    expected = {(a, b) for x, y in pairs for a, b in ((x, y), (y, x)) if in_way(a, b)}
    assert len(pairs) > 20 and expected
    assert coordinator._in_way(pairs) == expected


# A door 3 m long (x 3.5 to 6.5) that holds one robot, wide enough for paths 2 m apart (twice
# the reach of two 0.3 m robots: they never conflict by distance in it).
DOOR = TrafficRules.from_dict({'zones': [{'name': 'door', 'polygon': [
    [3.5, 2.0], [6.5, 2.0], [6.5, 8.0], [3.5, 8.0]]}]})


def in_door(reference, s):
    """Whether a robot at arc length s of `reference` (None: nowhere) stands in the door."""
    if s is None:
        return False
    position = reference.positions[np.searchsorted(arc_lengths(reference.positions), s)]
    return bool(DOOR.in_zones(position[None, :2])[0, 0])


@pytest.mark.parametrize('stop_buffer', [0.0, 0.2])
def test_the_later_robot_waits_outside_a_one_robot_zone_until_the_earlier_has_left(stop_buffer):
    east, west = straight(0.0, 4.0, 10.0, 4.0), straight(10.0, 6.0, 0.0, 6.0)
    params = CoordinationParams(stop_buffer=stop_buffer)
    assert all(g.stop_s is None for g in two_robots(east, west, params).update().values())
    coordinator = two_robots(east, west, params)
    coordinator.set_traffic_rules(DOOR)
    gates = coordinator.update()
    assert gates['a'].stop_s is None and gates['b'].waits_for == 'a'
    # Short of the door by the stop buffer at least, never in it (its edge is 3.5 m along).
    assert gates['b'].stop_s <= 3.5 - stop_buffer and not in_door(west, gates['b'].stop_s)
    at(coordinator, 'a', east, 6.0)         # in the door: b still waits
    assert coordinator.update()['b'].waits_for == 'a'
    at(coordinator, 'a', east, 6.9)         # out of it: b goes
    assert coordinator.update()['b'].stop_s is None
    coordinator.set_traffic_rules(None)     # and without the door's rule b never waited
    at(coordinator, 'a', east, 1.0)
    assert coordinator.update()['b'].stop_s is None


def test_a_robot_standing_in_a_zone_goes_first_and_one_whose_path_enters_it_waits():
    """b (the later goal) stands in the door on its way out; a's path enters the door 2 m from
    b's place, further than any distance conflict: a waits outside for b to come out."""
    a, b = straight(0.0, 3.0, 10.0, 3.0), straight(5.0, 5.0, 5.0, 10.0)
    coordinator = two_robots(a, b, CoordinationParams(pass_margin=0.0, pass_slack=0.0))
    coordinator.set_traffic_rules(DOOR)
    gates = coordinator.update()
    assert coordinator.order == ['b', 'a']
    assert gates['b'].stop_s is None and gates['a'].waits_for == 'b'
    assert gates['a'].stop_s <= 3.5 - 0.2
    at(coordinator, 'b', b, 2.5)            # out at y = 7.5 < 8: still in the door
    assert coordinator.update()['a'].waits_for == 'b'
    at(coordinator, 'b', b, 3.5)
    assert coordinator.update()['a'].stop_s is None
    no_zone = two_robots(a, b, CoordinationParams(pass_margin=0.0, pass_slack=0.0))
    assert no_zone.update()['a'].stop_s is None and no_zone.order == ['a', 'b']


def test_a_chain_of_robots_through_one_zone_goes_one_at_a_time_in_their_turns():
    """Three robots (paths 2 m apart in the door, two eastwards, one westwards between them)
    drive at 1 m/s up to their gates: the door never holds two, each gets through, in the
    order of their goals."""
    paths = {'r0': straight(0.0, 3.0, 10.0, 3.0), 'r1': straight(10.5, 5.0, 0.0, 5.0),
             'r2': straight(-1.0, 7.0, 10.0, 7.0)}
    coordinator = Coordinator(rules=DOOR)
    s = {}
    for k, (name, reference) in enumerate(paths.items()):
        coordinator.set_path(name, reference, 0.3, (float(k), k))
        s[name] = 0.0
        at(coordinator, name, reference, 0.0)
    ends = {name: arc_lengths(reference.positions)[-1] for name, reference in paths.items()}
    entered = []
    for _ in range(200):
        gates = coordinator.update()
        for name, reference in paths.items():
            stop = gates[name].stop_s
            s[name] = max(s[name], min(s[name] + 0.25, ends[name] if stop is None else stop))
            at(coordinator, name, reference, s[name])
        inside = [n for n, reference in paths.items() if in_door(reference, s[n])]
        assert len(inside) <= 1
        entered += [n for n in inside if n not in entered]
        if all(s[n] >= ends[n] for n in paths):
            break
    assert all(s[n] >= ends[n] for n in paths) and entered == ['r0', 'r1', 'r2']


def test_zones_no_path_enters_change_no_gate():
    """Fourteen robots on random paths in a 12 m room, with a zone beyond it: the same order
    and gates as without zones."""
    rng = np.random.default_rng(3)
    far = TrafficRules.from_dict({'zones': [{'name': 'far', 'polygon': [
        [20.0, 20.0], [21.0, 20.0], [21.0, 21.0]]}]})
    plain, zoned = Coordinator(), Coordinator(rules=far)
    for k in range(14):
        x0, y0, x1, y1 = rng.uniform(0.0, 12.0, 4)
        reference, s = straight(x0, y0, x1, y1), float(rng.uniform(0.0, 1.0))
        for coordinator in (plain, zoned):
            coordinator.set_path(f'r{k}', reference, 0.3, (k, k))
            at(coordinator, f'r{k}', reference, s * arc_lengths(reference.positions)[-1])
    assert zoned.update() == plain.update() and zoned.order == plain.order
    assert any(g.stop_s is not None for g in plain.update().values())


def test_a_gated_reference_brakes_to_a_stand_at_the_gate():
    reference = straight(0.0, 0.0, 10.0, 0.0)
    piece, offset = stop_before(reference, 2.0, 6.0, decel=1.0)
    assert offset == pytest.approx(2.0, abs=0.11)
    assert piece.positions[-1, 0] == pytest.approx(6.0, abs=0.11)
    speed = np.linalg.norm(piece.velocities, axis=1)
    assert speed[-1] == 0.0
    left = 6.0 - piece.positions[:, 0]
    assert (speed ** 2 <= 2.0 * 1.0 * left + 1e-9).all()     # can always stop by the gate
    # Before braking begins it keeps the original timing (its clock is the original's).
    early = piece.positions[:, 0] < 3.0
    np.testing.assert_allclose(piece.times[early] + offset,
                               np.interp(piece.positions[early, 0], reference.positions[:, 0],
                                         reference.times), atol=1e-6)


def _stand(planner, places, now):
    """Each robot of `places` ({name: (x, y)}) stands there, facing +x, as observed at `now`."""
    for n, (x, y) in places.items():
        planner.set_start_state(n, StartState([x, y, 0.0], [0.0, 0.0], now), now)


def test_a_waiting_spot_is_off_the_kept_out_points_and_reached_around_walls():
    grid = room(10.0, blocks=[(4.0, 0.0, 4.4, 8.0)])        # a wall with a gap at the top
    path = np.column_stack([np.linspace(0.5, 3.5, 31), np.full(31, 5.0)])
    spot = waiting_spot(grid, np.array([2.0, 5.0]), 0.35, path, 1.0)
    assert spot is not None and spot[0] < 4.0               # not through the wall
    assert np.min(np.linalg.norm(path - spot, axis=1)) >= 1.0 - 0.1
    assert grid.clearance_at(spot[None])[0] > 0.35


def test_a_waiting_spot_lies_outside_every_one_robot_zone():
    grid = room(10.0)
    path = np.column_stack([np.linspace(0.5, 9.5, 91), np.full(91, 5.0)])
    start = np.array([5.0, 5.0])
    nearest = waiting_spot(grid, start, 0.35, path, 1.0)
    # A zone around the nearest spot (and the whole band beside the path on that side).
    side = np.sign(nearest[1] - 5.0)
    band = sorted((5.0 + side * 0.5, 5.0 + side * 2.5))
    zone = TrafficRules.from_dict({'zones': [{'name': 'bay', 'polygon': [
        [3.0, band[0]], [7.0, band[0]], [7.0, band[1]], [3.0, band[1]]]}]})
    assert zone.in_zones(nearest[None]).any()
    spot = waiting_spot(grid, start, 0.35, path, 1.0, rules=zone)
    assert spot is not None and not zone.in_zones(spot[None]).any()
    assert np.min(np.linalg.norm(path - spot, axis=1)) >= 1.0 - 0.1
    assert grid.clearance_at(spot[None])[0] > 0.35


def test_a_waiting_spot_is_not_beyond_a_robot_standing_in_a_one_lane_aisle():
    """In a 1.4 m aisle the nearest place off the path is behind the robot standing west of
    the start; with that robot in the way, the place is at the aisle's east end instead."""
    grid = room(10.0, blocks=[(2.0, 0.0, 8.0, 4.3), (2.0, 5.7, 8.0, 10.0)])
    path = np.column_stack([np.linspace(4.0, 9.5, 56), np.full(56, 5.0)])    # from the robot
    start = np.array([5.0, 5.0])
    assert waiting_spot(grid, start, 0.35, path, 1.0)[0] < 4.0
    spot = waiting_spot(grid, start, 0.35, path, 1.0, robots=np.array([[4.0, 5.0, 0.8]]))
    assert spot is not None and spot[0] > 8.0
    assert np.min(np.linalg.norm(path - spot, axis=1)) >= 1.0 - 0.1


def test_standing_robots_become_obstacles_on_a_copy_of_the_map():
    grid = room(10.0)
    marked = with_discs(grid, np.array([[5.0, 5.0]]), np.array([0.4]))
    assert marked.occupied_at(np.array([[5.0, 5.3]]))[0]
    assert not marked.occupied_at(np.array([[5.0, 5.6]]))[0]
    assert not grid.occupied_at(np.array([[5.0, 5.0]]))[0]      # the map itself is untouched


# ---------------------------------------------------------------------- stuck detection
def test_stuck_watch_climbs_the_ladder_every_stuck_time_without_progress():
    watch = StuckWatch()
    watch.reset(0.0)
    watch.observe(0.0, 10.0)
    rungs = []
    for now in np.arange(0.5, 31.0, 0.5):
        watch.observe(now, 10.0 - 0.05)         # never 0.1 m closer
        step = watch.climb(now, 10.0)
        if step is not None:
            rungs.append((now, step))
    assert rungs == [(10.0, LADDER[0]), (20.0, LADDER[1]), (30.0, LADDER[2])]
    watch.observe(31.0, 9.0)                    # progress: back to the bottom
    assert watch.rung == 0 and watch.climb(35.0, 10.0) is None


def test_a_manoeuvre_that_ends_where_it_began_does_not_step_back_down_the_ladder():
    """A car 0.45 m from its goal: each replan gives it a 2 m manoeuvre that it drives (progress
    along the new path: the clock stops) and that ends 0.45 m from the goal again. Only getting
    nearer the goal than ever steps back to the bottom, so the ladder goes on to back out."""
    watch = StuckWatch()
    watch.reset(0.0)
    watch.observe(0.0, 0.45, straight=0.45)
    rungs, now = [], 0.0
    while now < 80.0:
        now += 0.5
        step = watch.climb(now, 10.0)
        if step is not None:
            rungs.append((now, step))
            watch.rebase()
            for k, left in enumerate((2.0, 1.5, 1.0, 0.5)):     # the manoeuvre, driven
                now += 0.5
                watch.observe(now, left, straight=0.45 + 0.1 * (k % 2))
        watch.observe(now, 0.45, straight=0.45)
    assert [step for _, step in rungs][:3] == list(LADDER)
    assert rungs[1][0] - rungs[0][0] == pytest.approx(10.0 + 2.0, abs=0.6)
    watch.observe(now + 0.5, 0.3, straight=0.3)     # nearer than ever: bottom again
    assert watch.rung == 0


def test_waiting_ones_turn_is_not_being_stuck():
    watch = StuckWatch()
    watch.reset(0.0)
    for now in np.arange(0.0, 60.0, 0.5):
        watch.observe(now, 10.0, waiting=True)
        assert watch.climb(now, 10.0) is None


def test_a_wait_is_by_design_for_one_and_a_half_stuck_times_then_the_clock_runs():
    """Turns that change hands among robots standing on each other's paths held robots at
    their gates for minutes in the generated fleets: after 1.5 stuck_times of one wait the robot
    is on the ladder like any robot without progress (stuck_time later), and a new wait starts
    the bound again."""
    watch = StuckWatch()
    watch.reset(0.0)
    rungs = []
    for now in np.arange(0.0, 45.0, 0.5):
        watch.observe(now, 10.0, waiting=True, stuck_time=10.0)
        step = watch.climb(now, 10.0)
        if step is not None:
            rungs.append((now, step))
    # The clock runs from the wait's 15 s on: a rung every stuck_time after that.
    assert rungs == [(25.0, LADDER[0]), (35.0, LADDER[1])]
    watch.observe(45.0, 10.0, waiting=False, stuck_time=10.0)
    watch.observe(45.5, 9.0, waiting=False, stuck_time=10.0)    # progress: bottom again
    for now in np.arange(46.0, 60.0, 0.5):
        watch.observe(now, 9.0, waiting=True, stuck_time=10.0)
        assert watch.climb(now, 10.0) is None


def test_a_turn_given_and_taken_back_every_second_counts_as_one_wait():
    """Two cars nose to nose, each on the other's path (blocks_mixed seed 26): the go changed
    hands every second and neither could move on it, and each new wait started the bound
    again, so neither ever climbed the ladder (110 s). The bound counts from the first wait
    since the last progress."""
    watch = StuckWatch()
    watch.reset(0.0)
    rungs = []
    for k, now in enumerate(np.arange(0.0, 45.0, 0.5)):
        watch.observe(now, 10.0, waiting=k % 2 == 0, stuck_time=10.0)
        step = watch.climb(now, 10.0)
        if step is not None:
            rungs.append((now, step))
    assert rungs == [(25.0, LADDER[0]), (35.0, LADDER[1])]


ROBOT = RobotSpec('robot0', kinematics='holonomic', radius=0.25, max_speed=1.0, max_accel=1.0)


def _supervisor(names=('robot0',), rules=None, **policy):
    """The planning supervisor of holonomic robots `names` (0.05 m safety margin, 0.15 m goal
    tolerance, `policy`'s other fields), with the one-robot zones of `rules`."""
    return FleetPlanner({n: replace(ROBOT, name=n) for n in names},
                        PlanSettings(safety_margin=0.05),
                        ReplanPolicy(goal_tolerance=0.15, **policy), rules)


def _outcome(request, reference):
    return PlanOutcome(request, PlanResult(PlanStatus.SUCCESS, 'ok', PlanStats()), reference, {})


def test_a_robot_without_progress_is_reported_stuck_at_stuck_time_and_replanned_around_others():
    """robot0 stands still (something unseen holds it). robot1 stands idle, robot2 drives
    elsewhere: robot0's plans always go around robot1; at stuck_time it is reported stuck and
    planned again around every other robot."""
    names = ('robot0', 'robot1', 'robot2')
    planner = _supervisor(names, stuck_time=4.0)
    planner.set_map(room(), 0.0)
    places = {'robot0': (2.0, 5.0), 'robot1': (5.0, 8.0), 'robot2': (8.0, 2.0)}

    _stand(planner, places, 0.0)
    (request,) = planner.set_goal('robot0', [8.0, 5.0, 0.0], 0.0).plan
    # Discs as wide as ORCA keeps the others (radius + safety margin; holonomic: no more).
    np.testing.assert_allclose(request.obstacles, [[5.0, 8.0, 0.3], [8.0, 2.0, 0.3]])
    (other,) = planner.set_goal('robot2', [9.0, 1.0, 0.0], 0.0).plan
    planner.finish(_outcome(request, straight(2.0, 5.0, 8.0, 5.0)), 0.0)
    planner.finish(_outcome(other, straight(8.0, 2.0, 9.0, 1.0)), 0.0)
    escalated = None
    for now in np.arange(0.25, 6.0, 0.25):
        _stand(planner, places, now)
        actions = planner.check_progress(now)
        assert planner.gate('robot0') is None       # nobody it waits for: it is stuck
        replans = [r for r in actions.plan if r.robot == 'robot0']
        if replans:
            escalated = now
            break
    assert escalated == pytest.approx(4.25)          # the first check after 4 s standing
    (replan,) = replans
    np.testing.assert_allclose(replan.obstacles, [[5.0, 8.0, 0.3], [8.0, 2.0, 0.3]])
    status = next(s for s in actions.status if s.robot == 'robot0')
    assert status.level is Level.WARN and 'stuck 4 s' in status.message


def test_a_goal_arriving_later_replans_that_robot_alone_and_takes_its_turn_after_the_others():
    """robot0 and robot1 follow their plans, crossing nowhere; robot0 gets a new goal across
    robot1's path: only robot0 is planned again, and as the newer goal it waits for robot1."""
    names = ('robot0', 'robot1')
    planner = _supervisor(names)
    # robot1's path runs through a 1.2 m gap (x 4.4..5.6, y 2.6..4.6) where robot0's crosses.
    planner.set_map(room(blocks=[(3.9, 2.6, 4.4, 4.6), (5.6, 2.6, 6.1, 4.6)]), 0.0)
    places = {'robot0': (2.0, 2.0), 'robot1': (5.0, 1.5)}

    _stand(planner, places, 0.0)
    (first,) = planner.set_goal('robot0', [3.0, 2.0, 0.0], 0.0).plan
    (other,) = planner.set_goal('robot1', [5.0, 8.5, 0.0], 0.0).plan
    planner.finish(_outcome(first, straight(2.0, 2.0, 3.0, 2.0)), 0.0)
    planner.finish(_outcome(other, straight(5.0, 1.5, 5.0, 8.5)), 0.0)
    _stand(planner, places, 0.25)
    assert planner.check_progress(0.25).plan == []
    places['robot1'] = (5.0, 3.0)
    _stand(planner, places, 1.0)
    actions = planner.set_goal('robot0', [8.0, 5.0, 0.0], 1.0)
    assert [r.robot for r in actions.plan] == ['robot0']      # one robot replanned
    published = planner.finish(_outcome(actions.plan[0], straight(2.0, 2.0, 8.0, 5.0)), 1.0)
    actions = planner.check_progress(1.25)
    assert actions.plan == []
    assert planner.gate('robot0') == 'robot1' and planner.gate('robot1') is None
    gated = [u for u in published.publish + actions.publish if u.robot == 'robot0'][-1]
    assert gated.reference.positions[-1][0] < 4.5        # stops short of robot1's path


def test_a_stuck_robot_takes_its_turns_last_and_nobody_waits_behind_it_for_good():
    """robot1 (the older goal) stands still before the crossing; robot0 waits for it, which is
    not being stuck. At stuck_time robot1 climbs the ladder and ranks last: robot0 goes."""
    names = ('robot0', 'robot1')
    planner = _supervisor(names, stuck_time=4.0)
    planner.set_map(crossroads(), 0.0)
    places = {'robot0': (3.5, 5.0), 'robot1': (5.0, 1.5)}       # robot0 near its gate

    _stand(planner, places, 0.0)
    (older,) = planner.set_goal('robot1', [5.0, 8.5, 0.0], 0.0).plan
    planner.finish(_outcome(older, straight(5.0, 1.5, 5.0, 8.5)), 0.0)
    (newer,) = planner.set_goal('robot0', [8.0, 5.0, 0.0], 0.5).plan
    planner.finish(_outcome(newer, straight(3.5, 5.0, 8.0, 5.0)), 0.5)
    gates = {}
    for now in np.arange(0.75, 6.0, 0.25):
        _stand(planner, places, now)
        actions = planner.check_progress(now)
        for replan in actions.plan:
            assert replan.robot == 'robot1'         # the waiting robot0 is not stuck
            planner.finish(_outcome(replan, straight(5.0, 1.5, 5.0, 8.5)), now)
        gates[float(now)] = planner.gate('robot0')
    assert gates[1.0] == gates[4.5] == 'robot1'
    assert gates[5.0] is None and gates[5.75] is None    # robot1 stuck since 0.75 s: last
    assert planner.gate('robot1') == 'robot0'


def test_a_jammed_goal_says_what_the_stuck_ladder_tried_last():
    """A navigate_to_pose goal (jam_timeout) of a robot that stands still: at stuck_time it is
    replanned around the others (WARN), at jam_timeout the goal ends saying so."""
    planner = _supervisor(stuck_time=4.0)
    planner.set_map(room(), 0.0)
    planner.set_start_state('robot0', StartState([2.0, 5.0, 0.0], [0.0, 0.0], 0.0), 0.0)
    (request,) = planner.set_goal('robot0', [8.0, 5.0, 0.0], 0.0, jam_timeout=6.0).plan
    planner.finish(_outcome(request, straight(2.0, 5.0, 8.0, 5.0)), 0.0)
    ended = []
    for now in np.arange(0.25, 8.0, 0.25):
        planner.set_start_state('robot0', StartState([2.0, 5.0, 0.0], [0.0, 0.0], now), now)
        actions = planner.check_progress(now)
        for replan in actions.plan:
            planner.finish(_outcome(replan, straight(2.0, 5.0, 8.0, 5.0)), now)
        ended += actions.ended
        if ended:
            break
    (end,) = ended
    assert end.reason == 'jammed' and now == pytest.approx(6.5)    # 6 s after the first check
    assert 'last: stuck 4 s' in end.message and 'replanning around the other robots' in \
        end.message


def test_a_stuck_robot_sends_parked_robots_beside_its_way_just_ahead_off_it():
    """robot0 stands still, its path passing 0.7 m from robot1 parked at its goal: more than
    the two ORCA radii (0.6 m, the plan may pass), less than those plus the coordination
    clearance (1 m). With a shelf on the other side ORCA cannot drive that pass (warehouse_aisles
    seed 0: its radius off the map is more than the plan's); at stuck_time robot1 makes way.
    robot2, parked as near the path 4 m on, stays."""
    names = ('robot0', 'robot1', 'robot2')
    planner = _supervisor(names, stuck_time=4.0)
    planner.set_map(room(), 0.0)
    places = {'robot0': (2.0, 5.0), 'robot1': (3.0, 5.7), 'robot2': (6.0, 5.7)}
    _stand(planner, places, 0.0)
    for parked in ('robot1', 'robot2'):
        x, y = places[parked]
        (parking,) = planner.set_goal(parked, [x, y, 0.0], 0.0).plan
        planner.finish(_outcome(parking, straight(x - 0.1, y, x, y)), 0.0)
    assert sorted(e.robot for e in planner.check_progress(0.0).ended) == ['robot1', 'robot2']
    (request,) = planner.set_goal('robot0', [8.0, 5.0, 0.0], 0.0).plan
    planner.finish(_outcome(request, straight(2.0, 5.0, 8.0, 5.0)), 0.0)
    for now in np.arange(0.25, 6.0, 0.25):
        _stand(planner, places, now)
        actions = planner.check_progress(now)
        if actions.plan:
            break
    assert now == pytest.approx(4.25)
    assert sorted(r.robot for r in actions.plan) == ['robot0', 'robot1']
    (leave,) = [r for r in actions.plan if r.robot == 'robot1']
    assert abs(leave.goal[1] - 5.0) >= 1.0      # off the way by ORCA's distance + clearance
    assert 'making way for robot0' in planner.statuses()[1].message


def test_a_stuck_robot_sends_robots_waiting_their_turn_beside_its_way_just_ahead_off_it():
    """robot1 waits at its gate for robot2 to leave a one-robot zone, 0.7 m beside the way
    just ahead of robot0, which stands still: as near as a parked robot ORCA would not let
    robot0 pass (warehouse_shipped seed 34: three robots, each waiting for or held by the
    next). At stuck_time robot1 backs out of robot0's way; robot2, under way, goes on."""
    names = ('robot0', 'robot1', 'robot2')
    zone = TrafficRules.from_dict({'zones': [{'name': 'bay', 'polygon': [
        [6.0, 2.0], [9.0, 2.0], [9.0, 6.0], [6.0, 6.0]]}]})
    planner = _supervisor(names, zone, stuck_time=4.0)
    planner.set_map(room(), 0.0)
    places = {'robot0': (5.0, 2.5), 'robot1': (5.7, 4.0), 'robot2': (7.5, 5.5)}
    _stand(planner, places, 0.0)
    for name, goal in (('robot2', (7.5, 0.5)), ('robot1', (9.5, 4.0)), ('robot0', (5.0, 9.0))):
        (request,) = planner.set_goal(name, [*goal, 0.0], 0.0).plan
        planner.finish(_outcome(request, straight(*places[name], *goal)), 0.0)
    for now in np.arange(0.25, 6.0, 0.25):
        places['robot2'] = (7.5, 5.5 - 0.25 * now)      # through the zone, slowly
        _stand(planner, places, now)
        actions = planner.check_progress(now)
        assert planner.gate('robot1') == 'robot2'
        if actions.plan:
            break
    assert now == pytest.approx(4.25)
    assert sorted(r.robot for r in actions.plan) == ['robot0', 'robot1']
    (leave,) = [r for r in actions.plan if r.robot == 'robot1']
    # Off robot0's way by ORCA's distance and the clearance (to half a map cell).
    assert abs(leave.goal[0] - 5.0) >= 1.0 - 0.05
    assert 'in the way of robot0, which is stuck: backing out' in \
        planner.statuses()[1].message


def test_a_parked_robot_in_the_only_way_makes_way_off_it_outside_zones_and_comes_back():
    """robot1 stands at its reached goal in a 1.2 m corridor; robot0's plan could not go around
    it. robot1 leaves for the nearest place off robot0's path (not in the zone at the corridor's
    west end), waits there until robot0 has passed, and comes back; its goal ends only once."""
    names = ('robot0', 'robot1')
    west_end = TrafficRules.from_dict({'zones': [{'name': 'west', 'polygon': [
        [0.0, 0.0], [3.0, 0.0], [3.0, 10.0], [0.0, 10.0]]}]})
    planner = _supervisor(names, west_end)
    planner.set_map(room(blocks=[(3.0, 0.0, 7.0, 4.4), (3.0, 5.6, 7.0, 10.0)]), 0.0)
    places = {'robot0': (1.0, 5.0), 'robot1': (4.9, 5.0)}

    _stand(planner, places, 0.0)
    (parking,) = planner.set_goal('robot1', [5.0, 5.0, 0.0], 0.0).plan
    planner.finish(_outcome(parking, straight(4.9, 5.0, 5.0, 5.0)), 0.0)
    places['robot1'] = (5.0, 5.0)
    _stand(planner, places, 1.0)
    assert [e.robot for e in planner.check_progress(1.0).ended] == ['robot1']

    (passing,) = planner.set_goal('robot0', [9.0, 5.0, 0.0], 1.0).plan
    path = straight(1.0, 5.0, 9.0, 5.0)
    actions = planner.finish(replace(_outcome(passing, path), blocked=1), 1.0)
    (leave,) = [r for r in actions.plan if r.robot == 'robot1']
    spot = leave.goal[:2]
    assert not west_end.in_zones(spot[None]).any() and spot[0] > 7.0
    assert np.min(np.linalg.norm(path.positions[:, :2] - spot, axis=1)) >= 0.6  # ORCA radii
    assert 'making way for robot0' in planner.statuses()[1].message

    planner.finish(_outcome(leave, straight(5.0, 5.0, *spot)), 1.0)
    places['robot1'] = tuple(spot)
    _stand(planner, places, 10.0)
    actions = planner.check_progress(10.0)
    assert not actions.ended and not actions.plan
    assert planner.statuses()[1].message.startswith('making way for robot0: waiting at')
    places['robot0'] = (4.0, 5.0)       # in the corridor: not passed yet
    _stand(planner, places, 12.0)
    assert not [r for r in planner.check_progress(12.0).plan if r.robot == 'robot1']
    places['robot0'] = (8.0, 5.0)       # past robot1's goal
    _stand(planner, places, 14.0)
    (back,) = [r for r in planner.check_progress(14.0).plan if r.robot == 'robot1']
    np.testing.assert_allclose(back.goal, [5.0, 5.0, 0.0])

    planner.finish(_outcome(back, straight(*spot, 5.0, 5.0)), 14.0)
    places['robot1'] = (5.0, 5.0)
    _stand(planner, places, 20.0)
    actions = planner.check_progress(20.0)
    assert not [e for e in actions.ended if e.robot == 'robot1']     # ended when reached
    assert planner.statuses()[1].message == 'back at its goal after making way for robot0'


def test_a_parked_robot_the_plan_passes_between_two_path_points_makes_way():
    """robot1 stands beside robot0's path just closer than their ORCA radii to one of its
    samples (the plan job's verdict: blocked), yet no nearer than that to the coordinator's
    points 0.2 m apart on either side of it: it is asked to make way all the same."""
    names = ('robot0', 'robot1')
    planner = _supervisor(names)
    planner.set_map(room(), 0.0)
    reach = 2.0 * (ROBOT.radius + 0.05)             # two holonomic robots' ORCA radii
    beside = (5.1, 5.0 + reach - 0.003)             # the samples are 0.1 m apart, at x = 5.1 too
    places = {'robot0': (1.0, 5.0), 'robot1': beside}
    _stand(planner, places, 0.0)
    (parking,) = planner.set_goal('robot1', [*beside, 0.0], 0.0).plan
    planner.finish(_outcome(parking, straight(5.1, 5.7, *beside)), 0.0)
    _stand(planner, places, 1.0)
    assert [e.robot for e in planner.check_progress(1.0).ended] == ['robot1']

    (passing,) = planner.set_goal('robot0', [9.0, 5.0, 0.0], 1.0).plan
    path = straight(1.0, 5.0, 9.0, 5.0)
    gaps = np.linalg.norm(path.positions[:, :2] - beside, axis=1)
    assert gaps.min() < reach <= np.hypot(0.1, reach - 0.003)
    actions = planner.finish(replace(_outcome(passing, path), blocked=1), 1.0)
    assert [r.robot for r in actions.plan] == ['robot1']
    assert 'making way for robot0' in planner.statuses()[1].message


# ---------------------------------------------------------------------- closed loops
def _lane_swap(coordinate, escalation_time=10.0):
    """Two rooms joined by an 8 m lane 1 m wide (one robot at a time); three diff-drive robots
    in each room go to the other."""
    grid = OccupancyGrid.from_rectangles((0.0, 0.0, 20.0, 8.0), 0.1,
                                         [(6.0, 0.0, 14.0, 3.5), (6.0, 4.5, 14.0, 8.0)], wall=0.3)
    robots = [RobotSpec(f'robot{i}', kinematics='diff_drive', radius=0.3, max_speed=1.0,
                        max_accel=1.5, max_yaw_rate=2.0) for i in range(6)]
    rows = (2.0, 4.0, 6.0)
    starts = np.array([(2.0, y, 0.0) for y in rows] + [(18.0, y, np.pi) for y in rows])
    goals = [[(16.0, y)] for y in rows] + [[(4.0, y)] for y in rows]
    return Scene('lane_swap', robots, starts, goals, grid=grid, planner=True, duration=120.0,
                 coordinate=coordinate, escalation_time=escalation_time)


def _cars_in_a_lane(coordinate, escalation_time=10.0):
    """Two cars (1.2 m wide) cross a 12 m lane 2.4 m wide from opposite ends."""
    grid = OccupancyGrid.from_rectangles((0.0, 0.0, 24.0, 9.0), 0.1,
                                         [(6.0, 0.0, 18.0, 3.0), (6.0, 5.4, 18.0, 9.0)], wall=0.3)
    robots = [RobotSpec(f'car{i}', kinematics='car', radius=0.6, max_speed=1.5, max_accel=1.0,
                        max_yaw_rate=1.0, wheelbase=0.8, min_turning_radius=2.0)
              for i in range(2)]
    starts = np.array([(2.5, 2.0, 0.0), (21.5, 2.0, np.pi)])
    goals = [[(21.5, 7.0)], [(2.5, 7.0)]]
    return Scene('car_lane', robots, starts, goals, grid=grid, planner=True, duration=90.0,
                 coordinate=coordinate, escalation_time=escalation_time)


@pytest.mark.slow
@pytest.mark.parametrize('make', [_lane_swap, _cars_in_a_lane], ids=['six_robot_swap', 'cars'])
def test_robots_take_turns_in_a_one_robot_lane(make):
    result = run(make(coordinate=True))
    assert result.finished == result.robots and result.stuck == []
    assert result.moving_contacts == 0
    # Someone waited its turn; its longest wait without progress is a part of all its waits.
    assert 0.0 < result.longest_stalled_wait <= result.longest_wait, result
    # Its queue moved meanwhile (the robots it waited for got on): a turn, not a stall.
    assert result.longest_queue_stall < result.longest_stalled_wait, result


@pytest.mark.slow
@pytest.mark.parametrize('make', [_lane_swap, _cars_in_a_lane], ids=['six_robot_swap', 'cars'])
def test_without_coordination_the_lane_deadlocks(make):
    """The same scenes with every robot planned on its own (and no stuck ladder): they meet
    in the lane and nobody arrives."""
    result = run(make(coordinate=False, escalation_time=0.0))
    assert result.finished == 0 and len(result.stuck) == result.robots


class _Said(_Loop):
    """The closed loop going on until every robot is back at its last goal (a robot that made
    way says so), keeping every status the planner gave."""

    def __init__(self, scene):
        super().__init__(scene)
        self.said, self.away = set(), set()

    def _observe(self, now):
        super()._observe(now)
        for status in self.planner.statuses():
            self.said.add((status.robot, status.message))
            if status.message.startswith('making way'):
                self.away.add(status.robot)
            elif status.message.startswith('back at its goal'):
                self.away.discard(status.robot)

    def _over(self, now):
        return super()._over(now) and not self.away


@pytest.mark.slow
def test_a_robot_parked_in_a_one_lane_corridor_makes_way_and_comes_back():
    """robot0 parks at its goal in the middle of the 1 m lane between two rooms; robot1's only
    way to the other room goes through it. robot0 leaves for a place off robot1's way, robot1
    passes, robot0 comes back to its goal (reached once, when it first got there)."""
    scene = _lane_swap(coordinate=True)
    scene = replace(scene, robots=scene.robots[:2], starts=np.array([(8.0, 4.0, 0.0),
                                                                    (2.0, 4.0, 0.0)]),
                    goals=[[(10.0, 4.0)], [(18.0, 4.0)]], name='parked_in_lane')
    loop = _Said(scene)
    result = loop.run()
    assert result.finished == 2 and result.reached == 2 and result.stuck == []
    assert result.moving_contacts == 0
    np.testing.assert_allclose(loop.sim.poses[0, :2], (10.0, 4.0), atol=scene.goal_tolerance)
    said = {message for robot, message in loop.said if robot == 'robot0'}
    assert any(m.startswith('making way for robot1: waiting at') for m in said), said
    assert 'back at its goal after making way for robot1' in said, said


PASSAGE = TrafficRules.from_dict({'zones': [{'name': 'passage', 'polygon': [
    [8.0, 2.5], [11.0, 2.5], [11.0, 5.5], [8.0, 5.5]]}]})


class _ZoneWatch(_Loop):
    """The closed loop counting the most robot centres in the passage at once, every control
    period."""

    def __init__(self, scene):
        super().__init__(scene)
        self.most_in_passage = 0

    def _observe(self, now):
        super()._observe(now)
        inside = PASSAGE.in_zones(self.sim.poses[:, :2]).sum(axis=0)
        self.most_in_passage = max(self.most_in_passage, int(inside.max()))


@pytest.mark.slow
def test_robots_go_through_a_one_robot_passage_one_at_a_time():
    """Two rooms joined by a passage 3 m long and 3 m wide (two robots pass each other in it);
    two robots in each room go to the other. As a one-robot zone, the passage never holds two
    of them, and all arrive without contact; without it, more than one is in it at once."""
    grid = OccupancyGrid.from_rectangles((0.0, 0.0, 19.0, 8.0), 0.1,
                                         [(8.0, 0.0, 11.0, 2.5), (8.0, 5.5, 11.0, 8.0)], wall=0.3)
    robots = [RobotSpec(f'robot{i}', kinematics='diff_drive', radius=0.3, max_speed=1.0,
                        max_accel=1.5, max_yaw_rate=2.0) for i in range(4)]
    starts = np.array([(2.0, 2.5, 0.0), (2.0, 5.5, 0.0), (17.0, 2.5, np.pi),
                       (17.0, 5.5, np.pi)])
    goals = [[(16.0, 5.5)], [(16.0, 2.5)], [(3.0, 5.5)], [(3.0, 2.5)]]
    counts = {}
    for rules in (PASSAGE, None):
        loop = _ZoneWatch(Scene('passage', robots, starts, goals, grid=grid, planner=True,
                                duration=90.0, traffic=rules))
        result = loop.run()
        assert result.finished == result.robots and result.stuck == []
        assert result.moving_contacts == 0
        counts[rules is not None] = loop.most_in_passage
    assert counts[True] == 1 and counts[False] > 1


def _head_on_in_a_corridor(**policy):
    """robot0 (3, 5) and robot1 (6, 5) head-on in a 1.2 m corridor (x 2..8), robot0 the older
    goal, each planned straight to the other end: the supervisor, their places, and the actions
    of robot1's plan (which sends it back out)."""
    planner = _supervisor(('robot0', 'robot1'), **policy)
    planner.set_map(room(blocks=[(2.0, 0.0, 8.0, 4.4), (2.0, 5.6, 8.0, 10.0)]), 0.0)
    places = {'robot0': (3.0, 5.0), 'robot1': (6.0, 5.0)}
    _stand(planner, places, 0.0)
    (older,) = planner.set_goal('robot0', [9.0, 5.0, 0.0], 0.0).plan
    planner.finish(_outcome(older, straight(3.0, 5.0, 9.0, 5.0)), 0.0)
    (newer,) = planner.set_goal('robot1', [1.0, 5.0, 0.0], 0.5).plan
    return planner, places, planner.finish(_outcome(newer, straight(6.0, 5.0, 1.0, 5.0)), 0.5)


def test_a_robot_backing_out_that_is_still_locked_is_sent_again_after_stuck_time():
    """robot1 (the newer goal) meets robot0 head-on in a 1.2 m corridor and backs out; its way
    out still runs into robot0 (each stands on the other's path again: warehouse_aisles seed
    29, where the third robot came into the back-out's way). A robot already backing out used
    to get nothing more, and both stood until the stuck ladder; it is sent off again once
    stuck_time has passed since it last backed out."""
    planner, places, actions = _head_on_in_a_corridor(stuck_time=4.0)
    backing = []
    now = 0.5
    while now < 7.0:
        for request in actions.plan:
            if request.robot == 'robot0':   # its stuck ladder: the same way again
                planner.finish(_outcome(request, straight(3.0, 5.0, 9.0, 5.0)), now)
                continue
            assert request.goal[0] > 6.0    # off robot0's way
            backing.append(now)
            # A way out that runs back through robot0 (who stands where it is), nearly to the
            # corridor's end: robot0 has no much nearer place off it.
            planner.finish(_outcome(request, straight(6.0, 5.0, 2.5, 5.0)), now)
        now += 0.25
        _stand(planner, places, now)
        actions = planner.check_progress(now)
    assert backing[0] == pytest.approx(0.5)
    assert backing[1:] == [pytest.approx(4.5)]       # stuck_time after the first, not later


def test_a_robot_backing_out_goes_on_to_its_place_until_it_stands_near_it():
    """A place to back out to counts as reached within the robot's radius only once the robot
    stands there; still moving, it goes on (warehouse_aisles seed 23: a robot that turned back
    0.29 m short of its place stood 0.75 m beside the other's path, nearer than ORCA keeps two
    robots, and the other could not pass between it and a shelf)."""
    planner, places, actions = _head_on_in_a_corridor()
    (leave,) = actions.plan
    place = np.asarray(leave.goal[:2])
    planner.finish(_outcome(leave, straight(6.0, 5.0, *place)), 0.5)
    way = (place - [6.0, 5.0]) / np.linalg.norm(place - [6.0, 5.0])
    short = place - 0.2 * way         # within the radius (0.25 m), beyond the goal tolerance
    yaw = float(np.arctan2(way[1], way[0]))
    requests = {}
    for now, speed in ((1.0, 0.3), (1.25, 0.0)):
        _stand(planner, {'robot0': places['robot0']}, now)
        planner.set_start_state('robot1', StartState([*short, yaw], [speed, 0.0], now), now)
        requests[speed] = [r for r in planner.check_progress(now).plan if r.robot == 'robot1']
    assert requests[0.3] == []
    (again,) = requests[0.0]
    np.testing.assert_allclose(again.goal[:2], [1.0, 5.0])


def test_of_two_locked_robots_the_one_with_the_much_nearer_place_off_the_way_backs_out():
    """robot1 (the newer goal) is 4 m into a 15 m corridor, robot0 0.5 m from its far end,
    head-on: robot0 backs out of the corridor (1.3 m) rather than robot1 driving 4 m back
    (warehouse_aisles seed 5: back-outs of 10 m down an aisle, the other robot following)."""
    planner = _supervisor(('robot0', 'robot1'))
    planner.set_map(room(20.0, blocks=[(2.0, 0.0, 17.0, 4.4), (2.0, 5.6, 17.0, 20.0)]), 0.0)
    places = {'robot0': (16.5, 5.0), 'robot1': (6.0, 5.0)}
    _stand(planner, places, 0.0)
    (older,) = planner.set_goal('robot0', [0.5, 5.0, 0.0], 0.0).plan
    planner.finish(_outcome(older, straight(16.5, 5.0, 0.5, 5.0)), 0.0)
    (newer,) = planner.set_goal('robot1', [19.5, 5.0, 0.0], 0.5).plan
    (leave,) = planner.finish(_outcome(newer, straight(6.0, 5.0, 19.5, 5.0)), 0.5).plan
    assert leave.robot == 'robot0' and leave.goal[0] > 17.0     # out of the corridor's end
    assert 'robot1 and it stand on each other\'s path: backing out' in \
        planner.statuses()[0].message


def test_a_way_out_that_tours_the_map_is_no_way_out():
    """robot1's plan to its place off robot0's way (a few metres off) runs 10 m away and back
    (warehouse_aisles seed 10: a 32 m way around the shelves to a place 3.9 m ahead, 35 s in
    which the robots waiting for it waited too): it is taken as no way out, and robot1 plans
    to its goal again, saying why."""
    planner, places, actions = _head_on_in_a_corridor()
    (leave,) = actions.plan
    place = np.asarray(leave.goal[:2])
    tour = time_path([6.0, 16.0, place[0]], [5.0, 5.0, place[1]], [0.0, 0.0, np.pi], [1, 1, 1],
                     max_speed=1.0, max_accel=1.0)
    (again,) = planner.finish(_outcome(leave, tour), 0.5).plan
    np.testing.assert_allclose(again.goal[:2], [1.0, 5.0])
    assert planner.waypoint('robot1') is None
    assert planner.statuses()[-1].message == 'planning (no short way to back out)'
