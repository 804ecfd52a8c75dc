"""Reeds-Shepp and Dubins paths: known lengths, exact end poses, sampling, OMPL parity."""
import math

import numpy as np
import pytest

from orca_nav.core.geometry import wrap_angle
from orca_nav.core.planning import reeds_shepp as rs

R = 2.5


def _random_pairs(n, seed, span=12.0):
    rng = np.random.default_rng(seed)
    a, b = (np.column_stack([rng.uniform(-span, span, n), rng.uniform(-span, span, n),
                             rng.uniform(-7, 7, n)]) for _ in range(2))
    return a, b


@pytest.mark.parametrize('distance', [rs.reeds_shepp_distance, rs.dubins_distance])
def test_known_lengths(distance):
    # Straight ahead.
    ahead = (1.0 + 7 * math.cos(0.3), 2.0 + 7 * math.sin(0.3), 0.3)
    assert distance((1.0, 2.0, 0.3), ahead, R)[0] == pytest.approx(7.0, abs=1e-9)
    # A left arc of angle a: the arc itself is the shortest path.
    for a in (0.4, 1.2, 2.5):
        goal = (R * math.sin(a), R * (1 - math.cos(a)), a)
        assert distance((0, 0, 0), goal, R)[0] == pytest.approx(R * a, abs=1e-9)
    # Same pose: zero.
    assert distance((3.0, -1.0, 2.0), (3.0, -1.0, 2.0 - 4 * math.pi), R)[0] == \
        pytest.approx(0.0, abs=1e-9)


def test_reverse_is_straight_back_for_reeds_shepp_but_a_loop_for_dubins():
    assert rs.reeds_shepp_distance((0, 0, 0), (-4.0, 0, 0), R)[0] == pytest.approx(4.0)
    path = rs.reeds_shepp_path((0, 0, 0), (-4.0, 0, 0), R)
    assert path.word == 'S' and path.lengths[0] == pytest.approx(-4.0)
    # Dubins must drive forward around: at least a full 2*pi*R turn-around plus the offset.
    assert rs.dubins_distance((0, 0, 0), (-4.0, 0, 0), R)[0] > 2 * math.pi * R
    # Half circle left: pi * R for Dubins; Reeds-Shepp cannot be longer.
    assert rs.dubins_distance((0, 0, 0), (0, 2 * R, math.pi), R)[0] == pytest.approx(math.pi * R)
    assert rs.reeds_shepp_distance((0, 0, 0), (0, 2 * R, math.pi), R)[0] <= math.pi * R + 1e-9


@pytest.mark.parametrize('paths,distance', [(rs.reeds_shepp_paths, rs.reeds_shepp_distance),
                                            (rs.dubins_paths, rs.dubins_distance)])
def test_paths_end_exactly_at_goal_and_match_distance(paths, distance):
    a, b = _random_pairs(400, seed=1)
    result = paths(a, b, R)
    d = distance(a, b, R)
    for path, goal, expected in zip(result, b, d):
        end = path.end()
        assert np.hypot(*(end[:2] - goal[:2])) < 1e-9
        assert abs(wrap_angle(end[2] - goal[2])) < 1e-9
        assert path.length == pytest.approx(expected, abs=1e-9)
        assert np.all(np.isin(np.round(np.abs(path.curvatures) * R, 12), (0.0, 1.0)))


def test_metric_properties():
    a, b = _random_pairs(300, seed=2)
    d_rs = rs.reeds_shepp_distance(a, b, R)
    d_du = rs.dubins_distance(a, b, R)
    euclid = np.hypot(*(b[:, :2] - a[:, :2]).T)
    assert np.all(d_rs >= euclid - 1e-9)
    assert np.all(d_du >= d_rs - 1e-9)                                  # reversing never hurts
    assert np.allclose(rs.reeds_shepp_distance(b, a, R), d_rs, atol=1e-9)   # symmetric
    assert np.allclose(rs.reeds_shepp_distance(a * [2, 2, 1], b * [2, 2, 1], 2 * R), 2 * d_rs,
                       atol=1e-9)
    c = _random_pairs(300, seed=3)[0]
    via_c = rs.reeds_shepp_distance(a, c, R) + rs.reeds_shepp_distance(c, b, R)
    assert np.all(d_rs <= via_c + 1e-9)


def test_sample_spacing_direction_and_curvature():
    a, b = _random_pairs(60, seed=4, span=8.0)
    step = 0.05
    for path in rs.reeds_shepp_paths(a, b, R):
        poses, direction = path.sample(step)
        assert np.allclose(poses[0], path.start) and np.allclose(poses[-1], path.end())
        ds = np.hypot(*np.diff(poses[:, :2], axis=0).T)
        assert ds.max() <= step + 1e-9
        # Heading changes at most 1/R per metre of travel.
        dyaw = np.abs(wrap_angle(np.diff(poses[:, 2])))
        assert np.all(dyaw <= ds / R * (1 + 1e-4) + 1e-12)   # ds is a chord: slightly short
        # Motion agrees with the direction flag: displacement projected on the heading has its sign.
        proj = (np.diff(poses[:, 0]) * np.cos(poses[:-1, 2])
                + np.diff(poses[:, 1]) * np.sin(poses[:-1, 2]))
        moving = ds > 1e-6
        assert np.all(np.sign(proj[moving]) == direction[:-1][moving])
        flips = np.count_nonzero(np.diff(direction[:-1]) != 0)
        assert flips == path.direction_switches


def test_in_place_turn_segment_samples_by_angle():
    path = rs.CurvePath(np.zeros(3), np.array([0.0, 2.0]), np.array([0.0, 0.0]),
                        np.array([math.pi / 2, 0.0]), 'TS')
    poses, direction = path.sample(0.1)
    assert np.allclose(path.end(), (0.0, 2.0, math.pi / 2))
    assert np.all(np.abs(np.diff(poses[:, 2])) <= 0.1 + 1e-12)
    assert path.length == pytest.approx(2.0) and np.all(direction == 1)


@pytest.mark.parametrize('kind,exact', [('reeds_shepp', rs.reeds_shepp_distance),
                                        ('dubins', rs.dubins_distance)])
def test_distance_table_close_to_exact(kind, exact):
    table = rs.DistanceTable(kind, 5.0)
    rng = np.random.default_rng(5)
    goal = np.array([3.0, -2.0, 2.9])
    poses = np.column_stack([rng.uniform(-20, 25, 500), rng.uniform(-20, 20, 500),
                             rng.uniform(-9, 9, 500)])
    got = table(poses, goal)
    ref = exact(poses, goal, 5.0)
    inside = np.hypot(poses[:, 0] - goal[0], poses[:, 1] - goal[1]) < 14.0
    # Nearest-entry lookup: off by about one lattice step (0.5 m) plus one heading step (5 deg * R).
    tol = 0.5 * math.sqrt(2) + math.radians(5) * 5.0 + 0.1
    if kind == 'reeds_shepp':
        assert np.all(np.abs(got[inside] - ref[inside]) < tol)
    else:   # Dubins jumps where the best word changes; most entries still agree closely
        assert np.mean(np.abs(got[inside] - ref[inside]) < tol) > 0.95
    # Far away: straight line plus a detour taken from the table's rim; close to exact.
    far = np.hypot(poses[:, 0] - goal[0], poses[:, 1] - goal[1]) > 16.0
    if kind == 'reeds_shepp':
        assert np.all(np.abs(got[far] - ref[far]) < 0.1 * ref[far] + tol)
    else:   # forward-only detours shrink with distance: the far value stays below the exact one
        assert np.all(got[far] <= ref[far] + tol)
        assert np.all(got[far] >= np.hypot(poses[far, 0] - goal[0], poses[far, 1] - goal[1]) - 1e-9)


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match='radius'):
        rs.reeds_shepp_distance((0, 0, 0), (1, 0, 0), 0.0)
    with pytest.raises(ValueError, match=r'goals\[0\]'):
        rs.reeds_shepp_path((0, 0, 0), (1, float('nan'), 0), 1.0)
    with pytest.raises(ValueError, match='starts'):
        rs.dubins_distance(np.zeros((2, 2)), (1, 0, 0), 1.0)
    with pytest.raises(ValueError, match='pair up'):
        rs.dubins_distance(np.zeros((2, 3)), np.zeros((3, 3)), 1.0)
    with pytest.raises(ValueError, match='step'):
        rs.reeds_shepp_path((0, 0, 0), (1, 0, 0), 1.0).sample(0.0)


@pytest.mark.parametrize('kind', ['reeds_shepp', 'dubins'])
def test_matches_ompl_state_space_distance(kind):
    ob = pytest.importorskip('ompl.base')
    space = ob.ReedsSheppStateSpace(R) if kind == 'reeds_shepp' else ob.DubinsStateSpace(R)
    ours = rs.reeds_shepp_distance if kind == 'reeds_shepp' else rs.dubins_distance
    a, b = _random_pairs(500, seed=6)
    s1, s2 = space.allocState(), space.allocState()
    theirs = []
    for p, q in zip(a, b):
        for state, pose in ((s1, p), (s2, q)):
            state.setX(float(pose[0]))
            state.setY(float(pose[1]))
            state.setYaw(float(wrap_angle(pose[2])))
        theirs.append(space.distance(s1, s2))
    assert np.allclose(ours(a, b, R), theirs, atol=1e-7)
