"""ORCA core: API, simulator operations, bad input, overlap handling and properties."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orca_nav.core.avoidance import (
    ObstacleSet,
    OrcaParams,
    OrcaSimulator,
    compute_velocities,
    prepare_obstacles,
    solve,
)

PARAMS = OrcaParams(time_step=0.25, neighbor_dist=15.0, max_neighbors=10, time_horizon=10.0,
                    time_horizon_obst=10.0, radius=1.5, max_speed=2.0)
SQUARE = np.array([[0.0, 0.0], [2.0, 0.0], [2.0, 2.0], [0.0, 2.0]])


def test_head_on_pair_swerves_and_keeps_speed_limit():
    # Slightly off-centre: an exactly symmetric head-on pair only slows down (RVO2's stall).
    positions = np.array([[-6.0, -0.05], [6.0, 0.05]])
    velocities = np.array([[2.0, 0.0], [-2.0, 0.0]])
    new_v = compute_velocities(positions, velocities, velocities, PARAMS)
    assert new_v.shape == (2, 2)
    assert np.all(np.hypot(*new_v.T) <= 2.0 + 1e-9)
    assert abs(new_v[0, 1]) > 1e-3 and abs(new_v[1, 1]) > 1e-3  # both sidestep
    np.testing.assert_allclose(new_v[0], -new_v[1], atol=1e-6)  # reciprocal: equal shares


def test_per_agent_radius_and_speed_arrays():
    params = OrcaParams(0.1, 5.0, 4, 2.0, 2.0, radius=np.array([0.3, 0.6, 0.4]),
                        max_speed=np.array([1.0, 0.5, 2.0]))
    positions = np.array([[0.0, 0.0], [20.0, 0.0], [40.0, 0.0]])
    pref = np.array([[3.0, 0.0], [0.0, 3.0], [1.0, 1.0]])
    new_v = compute_velocities(positions, np.zeros((3, 2)), pref, params)
    np.testing.assert_allclose(np.hypot(*new_v.T), [1.0, 0.5, np.sqrt(2.0)])


def test_prepared_obstacles_give_the_same_answer():
    rng = np.random.default_rng(0)
    positions = rng.uniform(-4, 6, (12, 2))
    positions = positions[~((positions > -1.5) & (positions < 3.5)).all(axis=1)]
    pref = rng.uniform(-2, 2, positions.shape)
    plain = compute_velocities(positions, np.zeros_like(pref), pref, PARAMS, obstacles=[SQUARE])
    prepared = compute_velocities(positions, np.zeros_like(pref), pref, PARAMS,
                                  obstacles=prepare_obstacles([SQUARE]))
    np.testing.assert_array_equal(plain, prepared)


def test_obstacle_blocks_straight_motion():
    wall = np.array([[5.0, -10.0], [6.0, -10.0], [6.0, 10.0], [5.0, 10.0]])
    new_v = compute_velocities([[3.0, 0.0]], [[0.0, 0.0]], [[2.0, 0.0]], PARAMS, obstacles=[wall])
    # The agent (radius 1.5) is 0.5 m from the wall: it may close at most that gap within
    # time_horizon_obst (10 s).
    assert new_v[0, 0] <= 0.05 + 1e-9


def test_segment_obstacle_blocks_both_sides():
    segment = np.array([[5.0, -10.0], [5.0, 10.0]])
    left = compute_velocities([[3.0, 0.0]], [[0.0, 0.0]], [[2.0, 0.0]], PARAMS, obstacles=[segment])
    right = compute_velocities([[7.0, 0.0]], [[0.0, 0.0]], [[-2.0, 0.0]], PARAMS,
                               obstacles=[segment])
    assert left[0, 0] <= 0.05 + 1e-9 and right[0, 0] >= -0.05 - 1e-9


def test_simulator_add_remove_and_ids():
    sim = OrcaSimulator(PARAMS)
    a = sim.add_agent((0.0, 0.0))
    b = sim.add_agent((50.0, 0.0), velocity=(1.0, 0.0), radius=0.5, max_speed=1.0)
    c = sim.add_agent((100.0, 0.0))
    assert (a, b, c) == (0, 1, 2)
    np.testing.assert_array_equal(sim.velocities[1], [1.0, 0.0])
    sim.remove_agent(b)
    np.testing.assert_array_equal(sim.agent_ids, [a, c])
    np.testing.assert_array_equal(sim.positions, [[0.0, 0.0], [100.0, 0.0]])
    sim.set_pref_velocities([[1.0, 0.0], [0.0, -1.0]])
    sim.step()
    sim.step()
    np.testing.assert_allclose(sim.positions, [[0.5, 0.0], [100.0, -0.5]])
    assert sim.global_time == pytest.approx(0.5)
    d = sim.add_agent((-50.0, 0.0))
    assert d == 3 and sim.num_agents == 3
    with pytest.raises(ValueError, match='agent_id 1'):
        sim.remove_agent(b)
    with pytest.raises(ValueError, match='unknown parameter'):
        sim.add_agent((0.0, 5.0), speed=3.0)


def test_simulator_overrides_apply_per_agent():
    sim = OrcaSimulator(PARAMS)
    sim.add_agent((0.0, 0.0), max_speed=0.5)
    sim.add_agent((100.0, 0.0))
    sim.set_pref_velocities([[2.0, 0.0], [2.0, 0.0]])
    sim.step()
    np.testing.assert_allclose(sim.velocities, [[0.5, 0.0], [2.0, 0.0]])


def test_simulator_step_equals_compute_velocities():
    rng = np.random.default_rng(5)
    sim = OrcaSimulator(PARAMS)
    for p in rng.uniform(-10, 10, (15, 2)):
        sim.add_agent(p)
    sim.add_obstacle(SQUARE + 20.0)
    pref = rng.uniform(-2, 2, (15, 2))
    sim.set_pref_velocities(pref)
    before_pos, before_vel = sim.positions, sim.velocities
    sim.step()
    expected = compute_velocities(before_pos, before_vel, pref, PARAMS, obstacles=[SQUARE + 20.0])
    np.testing.assert_array_equal(sim.velocities, expected)
    np.testing.assert_allclose(sim.positions, before_pos + 0.25 * expected)


def test_simulator_replaces_obstacles_at_run_time():
    sim = OrcaSimulator(PARAMS)
    sim.add_agent((3.0, 0.0))
    wall = np.array([[5.0, -10.0], [6.0, -10.0], [6.0, 10.0], [5.0, 10.0]])
    sim.add_obstacle(wall)
    sim.set_pref_velocities([[2.0, 0.0]])
    sim.step()
    assert sim.velocities[0, 0] <= 0.05 + 1e-9
    sim.set_obstacles([])
    sim.step()
    np.testing.assert_allclose(sim.velocities, [[2.0, 0.0]])
    sim.set_obstacles(prepare_obstacles([wall + [3.0, 0.0]]))
    assert len(sim.obstacles) == 4


def test_obstacle_neighbour_prefilter_matches_brute_force(monkeypatch):
    from orca_nav.core.avoidance import obstacles as obstacle_module
    rng = np.random.default_rng(2)
    polygons = [SQUARE * rng.uniform(0.5, 3.0) + rng.uniform(-40, 40, 2) for _ in range(40)]
    polygons.append(np.array([[-60.0, -50.0], [60.0, -50.0]]))  # a long wall (segment)
    prepared = prepare_obstacles(polygons)
    assert isinstance(prepared, ObstacleSet)
    positions = rng.uniform(-50, 50, (300, 2))
    range_sq = rng.uniform(1.0, 12.0, 300) ** 2
    brute = prepared.neighbors(positions, range_sq)
    monkeypatch.setattr(obstacle_module, '_BRUTE_FORCE_PAIRS', 0)  # force the kd-tree prefilter
    prefiltered = prepared.neighbors(positions, range_sq)
    assert brute[0].size > 100
    np.testing.assert_array_equal(brute[0], prefiltered[0])
    np.testing.assert_array_equal(brute[1], prefiltered[1])


def test_dense_and_per_line_linear_program_2_agree(monkeypatch):
    """linearProgram2 on few agents and lines solves linearProgram1 for every line at once,
    otherwise only where a line is hit: same points, same failing line, bit for bit, for
    both objectives (closest point, furthest along a direction)."""
    from orca_nav.core.avoidance import linear_program
    rng = np.random.default_rng(1)
    for trial in range(60):
        width, count = int(rng.integers(1, 13)), 150
        angle = rng.uniform(0.0, 2.0 * np.pi, (width, count))
        dx, dy = np.cos(angle), np.sin(angle)
        if trial % 3 == 0:  # parallel lines
            dx[-1], dy[-1] = dx[0], dy[0]
        offset = rng.uniform(-1.0, 2.5, (width, count))  # > 0: origin on the feasible side
        px, py = offset * dy, -offset * dx
        valid = rng.random((width, count)) < 0.9
        direction = trial % 2 == 0
        opt_x, opt_y = rng.normal(0.0, 2.0, (2, count))
        if direction:
            norm = np.hypot(opt_x, opt_y)
            opt_x, opt_y = opt_x / norm, opt_y / norm
        radius = np.full(count, 2.0)
        args = (px, py, dx, dy, valid, radius, opt_x, opt_y, opt_x * 2.0, opt_y * 2.0, direction)
        dense = linear_program._incremental(*args)
        monkeypatch.setattr(linear_program, '_DENSE_MAX_ENTRIES', 0)
        per_line = linear_program._incremental(*args)
        monkeypatch.undo()
        for a, b in zip(dense, per_line):  # failing line, vx, vy
            np.testing.assert_array_equal(a, b)
        if width > 3:
            assert 0 < (dense[0] == width).sum() < count, 'want feasible and infeasible cases'


def test_enclosures_only_through_prepare_obstacles():
    room = np.array([[-5.0, -5.0], [5.0, -5.0], [5.0, 5.0], [-5.0, 5.0]])[::-1]  # clockwise
    with pytest.raises(ValueError, match=r'obstacles\[0\]: vertices must be counter-clockwise'):
        compute_velocities([[4.0, 0.0]], [[0.0, 0.0]], [[2.0, 0.0]], PARAMS, obstacles=[room])
    with pytest.raises(ValueError, match='counter-clockwise'):
        prepare_obstacles([room], allow_enclosures=False)
    # As an enclosure the walls are solid outside: the agent inside may not leave.
    new_v = compute_velocities([[3.0, 0.0]], [[0.0, 0.0]], [[2.0, 0.0]], PARAMS,
                               obstacles=prepare_obstacles([room]))
    assert new_v[0, 0] <= 0.05 + 1e-9


# ---------------------------------------------------------------------------------------
# Bad input

def good_state(count=3):
    positions = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0]])[:count]
    return positions, np.zeros((count, 2)), np.ones((count, 2))


@pytest.mark.parametrize('argument, index',
                         [(0, 'positions'), (1, 'velocities'), (2, 'pref_velocities')])
@pytest.mark.parametrize('bad', [np.nan, np.inf, -np.inf])
def test_non_finite_state_names_argument_and_index(argument, index, bad):
    state = list(good_state())
    state[argument] = state[argument].copy()
    state[argument][2, 1] = bad
    with pytest.raises(ValueError, match=rf'{index}\[2\]'):
        compute_velocities(*state, PARAMS)


@pytest.mark.parametrize('field, value, message', [
    ('radius', np.array([0.5, -0.1, 0.5]), r'params\.radius\[1\]'),
    ('max_speed', np.array([1.0, 1.0, -2.0]), r'params\.max_speed\[2\]'),
    ('max_speed', np.array([1.0, np.nan, 1.0]), r'params\.max_speed\[1\]'),
    ('radius', -1.0, r'params\.radius\[0\]'),
    ('max_neighbors', -1, r'params\.max_neighbors\[0\]'),
    ('max_neighbors', 2.5, r'params\.max_neighbors\[0\]'),
    ('time_horizon', 0.0, r'params\.time_horizon\[0\]'),
    ('neighbor_dist', np.inf, r'params\.neighbor_dist\[0\]'),
    ('radius', np.array([1.0, 1.0]), r'params\.radius: expected'),
    ('time_step', 0.0, r'params\.time_step'),
])
def test_bad_params_name_field_and_index(field, value, message):
    settings_ = dict(PARAMS.__dict__)
    settings_[field] = value
    with pytest.raises(ValueError, match=message):
        compute_velocities(*good_state(), OrcaParams(**settings_))


def test_mismatched_shapes():
    positions, velocities, pref = good_state()
    with pytest.raises(ValueError, match=r'velocities: expected shape \(3, 2\)'):
        compute_velocities(positions, velocities[:2], pref, PARAMS)
    with pytest.raises(ValueError, match=r'pref_velocities: expected shape \(3, 2\)'):
        compute_velocities(positions, velocities, pref[:, :1], PARAMS)
    with pytest.raises(ValueError, match=r'positions: expected shape'):
        compute_velocities(positions.ravel(), velocities, pref, PARAMS)


@pytest.mark.parametrize('polygons, message', [
    ([SQUARE, np.array([[1.0, 1.0]])], r'obstacles\[1\]: needs at least 2 vertices'),
    ([SQUARE, SQUARE[::-1] + 5.0], r'obstacles\[1\]: vertices must be counter-clockwise'),
    ([SQUARE, SQUARE + 5, np.array([[0.0, 0.0], [np.nan, 1.0], [1.0, 1.0]])],
     r'obstacles\[2\]: vertex 1'),
    ([np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])],
     r'obstacles\[0\]: vertex 1 repeats'),
    ([np.zeros((3, 3))], r'obstacles\[0\]: expected shape'),
])
def test_bad_obstacles_name_polygon_and_vertex(polygons, message):
    with pytest.raises(ValueError, match=message):
        compute_velocities(*good_state(), PARAMS, obstacles=polygons)
    with pytest.raises(ValueError, match=message):
        prepare_obstacles(polygons, allow_enclosures=False)


def test_simulator_rejects_bad_obstacle_and_agent():
    sim = OrcaSimulator(PARAMS)
    with pytest.raises(ValueError, match=r'counter-clockwise'):
        sim.add_obstacle(SQUARE[::-1])
    with pytest.raises(ValueError, match=r'params\.radius'):
        sim.add_agent((0.0, 0.0), radius=-1.0)
    with pytest.raises(ValueError, match=r'position is not finite'):
        sim.add_agent((np.nan, 0.0))
    with pytest.raises(ValueError, match=r'velocity: expected 2 numbers'):
        sim.add_agent((0.0, 0.0), velocity=(1.0, 2.0, 3.0))
    sim.add_agent((0.0, 0.0))
    with pytest.raises(ValueError, match=r'pref: expected shape \(1, 2\)'):
        sim.set_pref_velocities(np.zeros((2, 2)))


# ---------------------------------------------------------------------------------------
# Overlap: agents that start inside each other or an obstacle

def test_overlapping_agents_separate():
    sim = OrcaSimulator(OrcaParams(0.1, 5.0, 10, 2.0, 2.0, radius=0.5, max_speed=1.0))
    rng = np.random.default_rng(11)
    for p in rng.uniform(-0.6, 0.6, (8, 2)):
        sim.add_agent(p)
    sim.add_agent((0.2, 0.2))
    sim.add_agent((0.2, 0.2))  # exactly coincident pair: RVO2 would divide by zero here
    count = sim.num_agents
    for _ in range(80):
        sim.set_pref_velocities(np.zeros((count, 2)))
        velocities = sim.step()
        assert np.isfinite(velocities).all()
    positions = sim.positions
    gaps = np.hypot(*(positions[:, None] - positions[None]).transpose(2, 0, 1))
    gaps[np.diag_indices(count)] = np.inf
    assert gaps.min() >= 1.0 - 1e-3


def test_agent_overlapping_obstacle_does_not_go_further_in():
    wall = np.array([[5.0, -10.0], [6.0, -10.0], [6.0, 10.0], [5.0, 10.0]])
    sim = OrcaSimulator(PARAMS)
    sim.add_agent((4.0, 0.0))  # radius 1.5 reaches 0.5 m into the wall
    sim.add_obstacle(wall)
    for _ in range(20):
        sim.set_pref_velocities([[2.0, 0.3]])
        velocities = sim.step()
        assert velocities[0, 0] <= 1e-9
    assert sim.positions[0, 0] <= 4.0 + 1e-9


# ---------------------------------------------------------------------------------------
# Properties

finite = st.floats(-20.0, 20.0, allow_nan=False, allow_infinity=False)
vectors = st.lists(st.tuples(finite, finite), min_size=1, max_size=14)


@settings(max_examples=60, deadline=None)
@given(positions=vectors, data=st.data())
def test_never_faster_than_max_speed(positions, data):
    count = len(positions)
    velocities = data.draw(st.lists(st.tuples(finite, finite), min_size=count, max_size=count))
    pref = data.draw(st.lists(st.tuples(finite, finite), min_size=count, max_size=count))
    max_speed = np.array(data.draw(st.lists(st.floats(0.0, 3.0), min_size=count, max_size=count)))
    radius = np.array(data.draw(st.lists(st.floats(0.0, 2.0), min_size=count, max_size=count)))
    with_obstacle = data.draw(st.booleans())
    params = OrcaParams(0.25, 10.0, 6, 3.0, 3.0, radius=radius, max_speed=max_speed)
    new_v = compute_velocities(np.array(positions), np.array(velocities), np.array(pref), params,
                               obstacles=[SQUARE * 3.0] if with_obstacle else [])
    assert np.isfinite(new_v).all()
    assert np.all(np.hypot(*new_v.T) <= max_speed + 1e-9)


@settings(max_examples=60, deadline=None)
@given(count=st.integers(1, 12), data=st.data())
def test_unconstrained_agents_keep_preferred_velocity(count, data):
    # Agents farther apart than neighbor_dist and no obstacles: nothing constrains them.
    positions = np.stack([np.arange(count) * 16.0, np.zeros(count)], axis=1)
    angles = np.array(data.draw(st.lists(st.floats(0, 2 * np.pi), min_size=count, max_size=count)))
    speeds = np.array(data.draw(st.lists(st.floats(0.0, 2.0), min_size=count, max_size=count)))
    pref = speeds[:, None] * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    velocities = np.array(data.draw(st.lists(st.tuples(finite, finite), min_size=count,
                                             max_size=count)))
    new_v = compute_velocities(positions, velocities, pref, PARAMS)
    np.testing.assert_array_equal(new_v, pref)


@settings(max_examples=25, deadline=None)
@given(offset=st.floats(-1.0, 1.0), speed=st.floats(0.5, 2.0), distance=st.floats(4.0, 20.0),
       angle=st.floats(0.0, 2 * np.pi))
def test_two_agents_on_collision_course_keep_apart(offset, speed, distance, angle):
    direction = np.array([np.cos(angle), np.sin(angle)])
    normal = np.array([-direction[1], direction[0]])
    start_a = -0.5 * distance * direction
    start_b = 0.5 * distance * direction + offset * normal
    sim = OrcaSimulator(OrcaParams(0.1, 15.0, 10, 5.0, 5.0, radius=1.0, max_speed=2.0))
    sim.add_agent(start_a)
    sim.add_agent(start_b)
    goals = np.array([start_b, start_a])
    closest = np.inf
    for _ in range(int(2 * distance / (0.1 * speed)) + 20):
        offset_to_goal = goals - sim.positions
        length = np.hypot(*offset_to_goal.T)[:, None]
        sim.set_pref_velocities(offset_to_goal * np.minimum(1.0, speed / np.maximum(length, 1e-9)))
        sim.step()
        closest = min(closest, float(np.hypot(*(sim.positions[0] - sim.positions[1]))))
    assert closest >= 2.0 - 1e-6


def test_solve_reports_the_agents_whose_constraints_are_infeasible():
    # The middle agent overlaps both neighbours by 0.3 m: within one 0.25 s step it must leave
    # each at 0.6 m/s (its half), in opposite directions, so linearProgram2 fails and LP3
    # decides. The outer agents only have to leave the middle one, which they can.
    params = OrcaParams(0.25, 5.0, 10, 2.0, 2.0, radius=0.5, max_speed=1.0)
    positions = np.array([[-0.7, 0.0], [0.0, 0.0], [0.7, 0.0], [20.0, 0.0]])
    pref = np.array([[0.0, 0.0], [0.3, 0.0], [0.0, 0.0], [1.0, 0.0]])
    solution = solve(positions, np.zeros((4, 2)), pref, params)
    assert solution.infeasible.tolist() == [False, True, False, False]
    np.testing.assert_array_equal(solution.velocities,
                                  compute_velocities(positions, np.zeros((4, 2)), pref, params))
    np.testing.assert_allclose(solution.velocities[3], [1.0, 0.0])  # alone: keeps its preference
    assert not solve(np.zeros((0, 2)), np.zeros((0, 2)), np.zeros((0, 2)), params).infeasible.size


def test_solve_returns_lines_the_feasible_agents_satisfy():
    # A jittered 1.2 m lattice (no overlaps) heading for the centre, and a block to one side.
    ix, iy = np.meshgrid(np.arange(8), np.arange(8))
    positions = 1.2 * np.stack([ix.ravel(), iy.ravel()], axis=1) - 4.2
    positions += np.random.default_rng(3).uniform(-0.2, 0.2, positions.shape)
    count = len(positions)
    pref = -positions / np.maximum(np.hypot(*positions.T), 1e-9)[:, None]
    square = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]]) + [6.0, 0.0]
    params = OrcaParams(0.25, 4.0, 6, 3.0, 2.0, radius=0.3, max_speed=1.0)
    solution = solve(positions, np.zeros_like(pref), pref, params, obstacles=[square])
    lines = solution.lines
    assert lines.point_x.shape == lines.valid.shape and lines.valid.shape[1] == count
    assert lines.valid.sum(axis=0).max() > 1
    vx, vy = solution.velocities.T
    side = lines.dir_x * (vy - lines.point_y) - lines.dir_y * (vx - lines.point_x)
    feasible = ~solution.infeasible
    assert feasible.sum() > count // 2
    assert (side[:, feasible][lines.valid[:, feasible]] >= -1e-5).all()


def test_linear_program_3_skips_bisectors_of_same_direction_lines():
    """RVO2's linearProgram3 leaves out the bisector of a line parallel to line i in the same
    direction: batched (with the line standing in for "none") the answer is the one without
    that line, on both the dense and the per-line path."""
    from orca_nav.core.avoidance import linear_program
    rng = np.random.default_rng(5)
    width, count, line = 7, 300, 6
    angle = rng.uniform(0.0, 2.0 * np.pi, (width, count))
    skip = rng.random(count) < 0.5
    angle[3, skip] = angle[line, skip]  # line 3 parallel to line 6, same direction
    dx, dy = np.cos(angle), np.sin(angle)
    offset = rng.uniform(-1.0, 1.5, (width, count))
    px, py = offset * dy, -offset * dx
    radius = np.full(count, 2.0)
    agents = np.arange(count)
    for batch in (agents, agents[:100]):  # per-line path, dense path
        problem = linear_program._bisector_problem(px, py, dx, dy, np.zeros(count, dtype=int),
                                                   batch, np.full(batch.size, line))
        assert (~problem[4][3] == skip[batch]).all()
        vx, vy, ok = linear_program._best_direction(*problem[:5], radius[batch], *problem[5:])
        for k in range(0, batch.size, 7):
            keep = [j for j in range(line) if problem[4][j, k]]
            one = [a[keep][:, k:k + 1] for a in problem[:5]]
            ref_x, ref_y, ref_ok = linear_program._best_direction(
                *one, radius[:1], problem[5][k:k + 1], problem[6][k:k + 1])
            assert ok[k] == ref_ok[0]
            if ok[k]:
                assert (vx[k], vy[k]) == (ref_x[0], ref_y[0])


def test_agents_without_any_neighbour_skip_the_kd_tree_with_the_same_answer(monkeypatch):
    """Small fleets check every pair first: nobody within neighbor_dist gives the kd-tree's
    empty answer without building it; anybody near gives the kd-tree's answer."""
    from orca_nav.core.avoidance import neighbors as neighbor_module
    rng = np.random.default_rng(5)
    for spread in (2.0, 20.0, 200.0):
        positions = rng.uniform(0.0, spread, (12, 2))
        args = (positions, np.full(12, 5.0), np.full(12, 4, dtype=np.int64))
        checked = neighbor_module.agent_neighbors(*args)
        monkeypatch.setattr(neighbor_module, '_ALONE_CHECK_MAX_AGENTS', 0)
        tree_only = neighbor_module.agent_neighbors(*args)
        monkeypatch.undo()
        for a, b in zip(checked, tree_only):
            np.testing.assert_array_equal(a, b)
    assert checked[0].shape == (12, 0)      # the last spread leaves everybody alone


@pytest.mark.parametrize('spread, move, reused', [(200.0, 0.02, True), (20.0, 0.02, True),
                                                  (20.0, 1.0, False)],
                         ids=['sparse', 'dense', 'churning'])
def test_a_kept_neighbor_list_answers_as_a_fresh_kd_tree(monkeypatch, spread, move, reused):
    """Over a moving crowd whose size and non-cooperative agents change, the Verlet list gives
    agent_neighbors' answer at every call. Sparse or dense, a crowd that moves little reuses
    one kd-tree for many calls; one that moves more than its list can hold asks fresh ones."""
    from orca_nav.core.avoidance import neighbors as neighbor_module
    trees = []
    real_tree = neighbor_module.cKDTree
    monkeypatch.setattr(neighbor_module, 'cKDTree',
                        lambda *a, **k: trees.append(1) or real_tree(*a, **k))
    rng = np.random.default_rng(11)
    kept = neighbor_module.AgentNeighborList()
    positions = rng.uniform(0.0, spread, (150, 2))
    others_start = rng.uniform(0.0, spread, (3, 2))
    all_neighbor_dist = rng.uniform(4.0, 6.0, len(positions))
    all_max_neighbors = rng.integers(1, 9, len(positions))
    calls = fresh_trees = 0
    for call in range(60):
        if call == 20:
            positions = positions[:140]                        # agents leave
        others = others_start + 0.01 * call if call >= 40 else None
        neighbor_dist = all_neighbor_dist[:len(positions)]
        max_neighbors = all_max_neighbors[:len(positions)]
        before = len(trees)
        listed = kept.neighbors(positions, neighbor_dist, max_neighbors, others)
        from_list = len(trees) - before
        fresh = neighbor_module.agent_neighbors(positions, neighbor_dist, max_neighbors, others)
        calls += 1
        fresh_trees += from_list
        np.testing.assert_array_equal(listed[1], fresh[1])     # indices outside keep: no meaning
        np.testing.assert_array_equal(listed[0][listed[1]], fresh[0][fresh[1]])
        positions = positions + rng.normal(0.0, move, positions.shape)
    if reused:
        assert fresh_trees < calls / 4
    else:
        assert fresh_trees >= calls - 4
