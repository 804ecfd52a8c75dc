"""ORCA parity with RVO2 2.0.3: the recorded reference runs, and pyrvo on scenarios of our own."""
import json

import numpy as np
import pytest

from orca_nav.core.avoidance import OrcaParams, compute_velocities, prepare_obstacles, solve
from orca_nav.core.avoidance.neighbors import AgentNeighborList
from orca_nav.core.avoidance.obstacles import ObstacleSet

from conftest import SHARED

REFDATA = SHARED / 'refdata' / 'orca'


def reference_runs():
    """Every recorded run: those in index.json plus any other .npz of the same format."""
    files = set(REFDATA.glob('*.npz'))
    index = REFDATA / 'index.json'
    if index.exists():
        for entry in json.loads(index.read_text())['scenarios'].values():
            files.add(REFDATA / entry['file'])
    return sorted(files)


def params_of(run):
    return OrcaParams(time_step=float(run['time_step']), neighbor_dist=float(run['neighbor_dist']),
                      max_neighbors=int(run['max_neighbors']),
                      time_horizon=float(run['time_horizon']),
                      time_horizon_obst=float(run['time_horizon_obst']),
                      radius=run['radius'].astype(np.float64),
                      max_speed=run['max_speed'].astype(np.float64))


def polygons_of(run):
    vertices = run['obstacle_vertices'].astype(np.float64)
    offsets = run['obstacle_offsets']
    return [vertices[offsets[k]:offsets[k + 1]] for k in range(len(offsets) - 1)]


def test_reference_runs_exist():
    assert reference_runs(), f'no reference runs in {REFDATA}'


@pytest.mark.slow
@pytest.mark.parametrize('kept_neighbors', [False, True], ids=['fresh', 'neighbor_list'])
@pytest.mark.parametrize('path', reference_runs(), ids=lambda p: p.stem)
def test_replay_every_recorded_step(path, kept_neighbors):
    """Every recorded step, with neighbours from a fresh kd-tree or from one Verlet list kept
    over the run (as OrcaSimulator keeps it)."""
    run = dict(np.load(path))
    params = params_of(run)
    obstacles = prepare_obstacles(polygons_of(run))
    neighbor_list = AgentNeighborList() if kept_neighbors else None
    errors = []
    for step in range(run['pos'].shape[0]):
        new_velocities = solve(run['pos'][step], run['vel'][step], run['pref'][step],
                               params, obstacles, neighbor_list=neighbor_list).velocities
        errors.append(np.hypot(*(new_velocities - run['new_vel'][step]).T))
    errors = np.concatenate(errors)
    within_1e3 = float(np.mean(errors <= 1e-3))
    within_005 = float(np.mean(errors <= 0.05))
    print(f'{path.name}: {errors.size} agent-steps, <=1e-3: {within_1e3:.6f}, '
          f'<=0.05: {within_005:.6f}, max error {errors.max():.3g}')
    assert within_1e3 >= 0.999
    assert within_005 >= 0.9999


# ---------------------------------------------------------------------------------------
# pyrvo (RVO2 2.0.3 bindings) on scenarios of our own

def pyrvo_simulator(pyrvo, positions, params, polygons):
    sim = pyrvo.RVOSimulator()
    sim.set_time_step(params.time_step)
    # pyrvo: defaults must be set before add_agent (otherwise it returns an invalid index).
    sim.set_agent_defaults(params.neighbor_dist, params.max_neighbors, params.time_horizon,
                           params.time_horizon_obst, params.radius, params.max_speed)
    for x, y in positions:
        sim.add_agent((float(x), float(y)))
    for polygon in polygons:
        sim.add_obstacle([(float(x), float(y)) for x, y in polygon])
    sim.process_obstacles()
    return sim


def replay_against_pyrvo(pyrvo, positions, goals, params, polygons, steps):
    """Run pyrvo; at every step compare compute_velocities on pyrvo's own state."""
    sim = pyrvo_simulator(pyrvo, positions, params, polygons)
    obstacles = prepare_obstacles(polygons)
    count = len(positions)
    errors = []
    for _ in range(steps):
        pos = np.array([sim.get_agent_position(i).to_tuple() for i in range(count)])
        vel = np.array([sim.get_agent_velocity(i).to_tuple() for i in range(count)])
        pref = goals - pos
        length = np.hypot(*pref.T)
        pref *= np.minimum(1.0, params.max_speed / np.maximum(length, 1e-9))[:, None]
        pref = pref.astype(np.float32).astype(np.float64)  # what RVO2 stores
        for i in range(count):
            sim.set_agent_pref_velocity(i, (float(pref[i, 0]), float(pref[i, 1])))
        sim.do_step()
        expected = np.array([sim.get_agent_velocity(i).to_tuple() for i in range(count)])
        ours = compute_velocities(pos, vel, pref, params, obstacles)
        errors.append(np.hypot(*(ours - expected).T))
    return np.concatenate(errors)


ROOM_PARAMS = OrcaParams(time_step=0.25, neighbor_dist=8.0, max_neighbors=8, time_horizon=4.0,
                         time_horizon_obst=3.0, radius=0.5, max_speed=1.5)


def room_polygons():
    """Walls, a concave L and boxes arranged so that RVO2's obstacle tree cuts edges."""
    walls = [np.array([[-20.0, -20.0], [-20.0, 20.0], [-21.0, 20.0], [-21.0, -20.0]]),
             np.array([[20.0, -20.0], [21.0, -20.0], [21.0, 20.0], [20.0, 20.0]])]
    ell = np.array([[-6.0, -6.0], [2.0, -6.0], [2.0, -3.0], [-3.0, -3.0], [-3.0, 5.0], [-6.0, 5.0]])
    boxes = [np.array([[4.0, 1.0], [9.0, 2.0], [8.0, 6.0], [3.5, 5.0]]),
             np.array([[-2.0, 8.0], [10.0, 7.5], [10.5, 9.0], [-1.5, 10.0]])]
    segment = np.array([[-12.0, -10.0], [-8.0, 12.0]])
    return walls + [ell, segment] + boxes


def test_obstacle_tree_splits_match_pyrvo():
    pyrvo = pytest.importorskip('pyrvo')
    polygons = room_polygons()
    sim = pyrvo_simulator(pyrvo, [], ROOM_PARAMS, polygons)
    ours = ObstacleSet(polygons)
    original = sum(len(p) for p in polygons)
    assert len(ours) > original, 'scenario should make RVO2 split edges'
    assert sim.get_num_obstacle_vertices() == len(ours)
    theirs = np.array([sim.get_obstacle_vertex(i).to_tuple() for i in range(len(ours))])
    their_next = np.array([sim.get_next_obstacle_vertex(i) for i in range(len(ours))])
    np.testing.assert_allclose(ours.points, theirs, atol=1e-4)
    np.testing.assert_array_equal(ours.next_vertex, their_next)


def test_room_with_split_obstacles_matches_pyrvo():
    pyrvo = pytest.importorskip('pyrvo')
    rng = np.random.default_rng(3)
    starts = np.concatenate([rng.uniform([-18, -18], [-8, 18], (20, 2)),
                             rng.uniform([12, -18], [18, 18], (20, 2))])
    goals = -starts
    errors = replay_against_pyrvo(pyrvo, starts, goals, ROOM_PARAMS, room_polygons(), steps=150)
    print(f'room: <=1e-3 {np.mean(errors <= 1e-3):.5f}, max {errors.max():.3g}')
    assert np.mean(errors <= 1e-3) >= 0.999
    assert np.mean(errors <= 0.05) >= 0.999


def test_overlapping_start_matches_pyrvo():
    pyrvo = pytest.importorskip('pyrvo')
    rng = np.random.default_rng(7)
    starts = rng.uniform(-3.0, 3.0, (30, 2))  # radius 0.5: many agents start overlapping
    goals = rng.uniform(-15.0, 15.0, (30, 2))
    params = OrcaParams(time_step=0.1, neighbor_dist=6.0, max_neighbors=10, time_horizon=2.0,
                        time_horizon_obst=2.0, radius=0.5, max_speed=1.0)
    box = [np.array([[4.0, -1.0], [6.0, -1.0], [6.0, 1.0], [4.0, 1.0]])]
    errors = replay_against_pyrvo(pyrvo, starts, goals, params, box, steps=100)
    print(f'overlap: <=1e-3 {np.mean(errors <= 1e-3):.5f}, max {errors.max():.3g}')
    assert np.mean(errors <= 1e-3) >= 0.999
    assert np.mean(errors <= 0.05) >= 0.999


def test_linear_program_3_starts_where_rvo2_does(monkeypatch):
    """Where RVO2 fell back to linearProgram3, we do too, from the same failing line."""
    from orca_nav.core.avoidance import solver as orca
    path = REFDATA / 'blocks_100.npz'
    if not path.exists():
        pytest.skip('blocks_100.npz not in refdata')
    run = dict(np.load(path))
    params = params_of(run)
    obstacles = prepare_obstacles(polygons_of(run))
    begin_lines = []
    original = orca.min_max_penetration

    def recording(*args):
        begin_lines.append(np.sort(args[6]))
        return original(*args)

    monkeypatch.setattr(orca, 'min_max_penetration', recording)
    for step in range(0, run['pos'].shape[0], 2):
        begin_lines.clear()
        compute_velocities(run['pos'][step], run['vel'][step], run['pref'][step], params, obstacles)
        ours = begin_lines[0] if begin_lines else np.zeros(0, dtype=int)
        recorded = run['lp3_line_fail'][step]
        np.testing.assert_array_equal(ours, np.sort(recorded[recorded >= 0]),
                                      err_msg=f'step {step}')


def test_per_line_path_matches_rvo2(monkeypatch):
    """Large batches run linearProgram2 line by line, only where a line is hit; force that
    path on a small run."""
    from orca_nav.core.avoidance import linear_program
    path = REFDATA / 'blocks_100.npz'
    if not path.exists():
        pytest.skip('blocks_100.npz not in refdata')
    monkeypatch.setattr(linear_program, '_DENSE_MAX_ENTRIES', 0)
    run = dict(np.load(path))
    params = params_of(run)
    obstacles = prepare_obstacles(polygons_of(run))
    errors = [np.hypot(*(compute_velocities(run['pos'][step], run['vel'][step], run['pref'][step],
                                            params, obstacles) - run['new_vel'][step]).T)
              for step in range(0, run['pos'].shape[0], 2)]
    errors = np.concatenate(errors)
    assert np.mean(errors <= 1e-3) >= 0.999
    assert errors.max() < 1e-4
