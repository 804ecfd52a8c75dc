"""3-D ORCA parity with RVO2-3D: the recorded reference runs, and rvo23d (jt-pyrvo23d, which
bundles RVO2-3D) on runs of our own, step by step from the peer's own state."""
import numpy as np
import pytest
import rvo23d

from orca_nav.core import OrcaParams, compute_velocities, solve
from orca_nav.core.avoidance.neighbors3d import agent_neighbors_3d

from conftest import SHARED

REFDATA = SHARED / 'refdata' / 'orca3d'
RUNS = ('sphere_64', 'cube_crossing_125')


def params_of(run):
    return OrcaParams(time_step=float(run['time_step']), neighbor_dist=float(run['neighbor_dist']),
                      max_neighbors=int(run['max_neighbors']),
                      time_horizon=float(run['time_horizon']), time_horizon_obst=1.0,
                      radius=run['radius'].astype(np.float64),
                      max_speed=run['max_speed'].astype(np.float64))


def report(name, errors):
    errors = np.concatenate(errors)
    within_1e3 = float(np.mean(errors <= 1e-3))
    within_005 = float(np.mean(errors <= 0.05))
    print(f'{name}: {errors.size} agent-steps, exact (float32): {np.mean(errors == 0.0):.6f}, '
          f'<=1e-3: {within_1e3:.6f}, <=0.05: {within_005:.6f}, max error {errors.max():.3g}')
    assert within_1e3 >= 0.999
    assert within_005 >= 0.9999
    return errors


@pytest.mark.slow
@pytest.mark.parametrize('name', RUNS)
def test_replay_every_recorded_step(name):
    run = dict(np.load(REFDATA / f'{name}.npz'))
    params = params_of(run)
    errors = []
    fallback_agents = 0
    for step in range(run['pos'].shape[0]):
        solution = solve(run['pos'][step], run['vel'][step], run['pref'][step], params)
        errors.append(np.linalg.norm(solution.velocities - run['new_vel'][step], axis=1))
        fallback = run['lp3_plane_fail'][step] >= 0
        np.testing.assert_array_equal(solution.infeasible, fallback)
        fallback_agents += int(fallback.sum())
        # Neighbours (hence planes) in RVO2-3D's order, padding excluded.
        used = run['num_orca_planes'][step]
        assert (solution.planes.valid.sum(axis=1) == used).all()
    assert fallback_agents > 1000  # the fallback (linearProgram4) is exercised
    report(name, errors)


def test_recorded_planes_match_on_one_congested_step():
    run = dict(np.load(REFDATA / 'cube_crossing_125.npz'))
    step = int(np.argmax((run['lp3_plane_fail'] >= 0).sum(axis=1)))
    solution = solve(run['pos'][step], run['vel'][step], run['pref'][step], params_of(run))
    planes = solution.planes
    width = planes.valid.shape[1]
    recorded = run['orca_planes'][step][:, :width]
    ours = np.concatenate([planes.point, planes.normal], axis=2)
    used = planes.valid
    np.testing.assert_array_equal(ours[used].astype(np.float32), recorded[used])
    np.testing.assert_array_equal(solution.velocities.astype(np.float32), run['new_vel'][step])


@pytest.mark.parametrize('name', RUNS)
def test_neighbours_in_rvo2_3d_order(name):
    """The lattice starts with every distance tied: the kd-tree's visiting order decides
    which neighbours are kept and in what order (plain distance order gets them wrong)."""
    run = dict(np.load(REFDATA / f'{name}.npz'))
    count = run['pos'].shape[1]
    for step in range(0, run['pos'].shape[0], 10):
        neighbors, keep = agent_neighbors_3d(run['pos'][step],
                                             np.full(count, float(run['neighbor_dist'])),
                                             np.full(count, int(run['max_neighbors'])))
        ours = np.where(keep, neighbors, -1)
        recorded = run['neighbors'][step][:, :ours.shape[1]]
        assert (run['neighbors'][step][:, ours.shape[1]:] == -1).all()
        np.testing.assert_array_equal(ours, recorded, err_msg=f'step {step}')


# ---------------------------------------------------------------------------------------
# rvo23d on runs of our own

def peer_simulator(positions, params):
    sim = rvo23d.PyRVOSimulator(params.time_step, params.neighbor_dist, params.max_neighbors,
                                params.time_horizon, float(np.max(params.radius)),
                                float(np.max(params.max_speed)), (0.0, 0.0, 0.0))
    radius = np.broadcast_to(params.radius, len(positions))
    max_speed = np.broadcast_to(params.max_speed, len(positions))
    for position, r, s in zip(positions, radius, max_speed):
        sim.addAgent(tuple(float(c) for c in position), params.neighbor_dist, params.max_neighbors,
                     params.time_horizon, float(r), float(s), (0.0, 0.0, 0.0))
    return sim


def replay_against_peer(positions, goals, params, steps, jitter=0.0, seed=0):
    """Run rvo23d; at every step compare compute_velocities on the peer's own state (the
    preferred velocity is the reference rule, plus an optional random perturbation)."""
    rng = np.random.default_rng(seed)
    sim = peer_simulator(positions, params)
    count = len(positions)
    max_speed = np.broadcast_to(params.max_speed, count).astype(np.float32)
    errors = []
    for _ in range(steps):
        pos = np.array([sim.getAgentPosition(i) for i in range(count)], dtype=np.float32)
        vel = np.array([sim.getAgentVelocity(i) for i in range(count)], dtype=np.float32)
        to_goal = (goals - pos).astype(np.float32)
        dist_sq = (to_goal * to_goal).sum(axis=1)
        far = dist_sq > 1.0
        pref = to_goal.copy()
        pref[far] = to_goal[far] / np.sqrt(dist_sq[far])[:, None] * max_speed[far, None]
        pref += (rng.normal(size=pref.shape) * jitter).astype(np.float32)
        for i in range(count):
            sim.setAgentPrefVelocity(i, tuple(float(c) for c in pref[i]))
        ours = compute_velocities(pos, vel, pref, params)
        sim.doStep()
        theirs = np.array([sim.getAgentVelocity(i) for i in range(count)])
        errors.append(np.linalg.norm(ours - theirs, axis=1))
    return errors


def random_cloud(count, extent, min_gap, rng):
    points = []
    while len(points) < count:
        p = rng.uniform(-extent, extent, size=3)
        if all(np.linalg.norm(p - q) >= min_gap for q in points):
            points.append(p)
    return np.array(points)


@pytest.mark.slow
def test_random_swap_matches_peer():
    """Agents scattered in a box swap through the centre (goal = -start), per-agent radii and
    speeds, a perturbed preferred velocity."""
    rng = np.random.default_rng(7)
    starts = random_cloud(90, 9.0, 1.6, rng)
    params = OrcaParams(time_step=0.2, neighbor_dist=8.0, max_neighbors=8, time_horizon=3.0,
                        time_horizon_obst=1.0, radius=rng.uniform(0.4, 0.7, 90),
                        max_speed=rng.uniform(1.0, 2.0, 90))
    report('random swap', replay_against_peer(starts, -starts, params, 200, jitter=0.05, seed=3))


@pytest.mark.slow
def test_two_layer_crossing_matches_peer():
    """Two square layers fly through each other head on (a lattice: many equal distances, so
    RVO2-3D's tie order decides the neighbours), short horizon, many neighbours."""
    grid = np.stack(np.meshgrid(np.arange(6), np.arange(6), indexing='ij'), -1).reshape(-1, 2)
    grid = grid * 2.0 - 5.0
    top = np.column_stack([grid, np.full(36, 6.0)])
    bottom = np.column_stack([grid + 0.5, np.full(36, -6.0)])
    starts = np.vstack([top, bottom])
    goals = starts * np.array([1.0, 1.0, -1.0])
    params = OrcaParams(time_step=0.1, neighbor_dist=6.0, max_neighbors=16, time_horizon=2.0,
                        time_horizon_obst=1.0, radius=0.7, max_speed=2.5)
    report('two-layer crossing', replay_against_peer(starts, goals, params, 200))


def test_small_ring_matches_peer():
    """A ring of 12 agents swapping across its centre in a tilted plane (few neighbours)."""
    angle = np.arange(12) * 2 * np.pi / 12
    starts = np.column_stack([8 * np.cos(angle), 8 * np.sin(angle), 3 * np.sin(angle)])
    params = OrcaParams(time_step=0.25, neighbor_dist=10.0, max_neighbors=4, time_horizon=5.0,
                        time_horizon_obst=1.0, radius=0.8, max_speed=1.5)
    report('tilted ring', replay_against_peer(starts, -starts, params, 80))


def test_degenerate_inputs():
    params = OrcaParams(time_step=0.1, neighbor_dist=5.0, max_neighbors=5, time_horizon=2.0,
                        time_horizon_obst=1.0, radius=0.5, max_speed=1.0)
    none = np.zeros((0, 3))
    assert compute_velocities(none, none, none, params).shape == (0, 3)
    # Coincident agents at rest: RVO2-3D's planes are NaN, ignored; the velocity is the preferred
    # one.
    pos = np.zeros((2, 3))
    pref = np.array([[0.5, 0.0, 0.0], [0.0, 0.0, -0.5]])
    out = compute_velocities(pos, np.zeros((2, 3)), pref, params)
    np.testing.assert_allclose(out, pref, atol=1e-7)
    # No neighbours: the preferred velocity clamped to max_speed.
    one = compute_velocities([[0, 0, 0]], [[0, 0, 0]], [[3.0, 0, 4.0]], params)
    np.testing.assert_allclose(one, [[0.6, 0.0, 0.8]], atol=1e-6)
    with pytest.raises(ValueError, match='velocities'):
        compute_velocities(np.zeros((2, 3)), np.zeros((2, 2)), np.zeros((2, 3)), params)
    with pytest.raises(ValueError, match='positions'):
        compute_velocities(np.zeros((2, 4)), np.zeros((2, 4)), np.zeros((2, 4)), params)
    with pytest.raises(ValueError, match=r'pref_velocities\[1\]'):
        compute_velocities(np.zeros((2, 3)), np.zeros((2, 3)), [[0, 0, 0], [np.nan, 0, 0]], params)


def test_neighbours_of_a_coincident_cluster_match_peer():
    """60 agents on one point (every distance 0 ties; RVO2-3D's tree gets one level per agent
    there, too deep for one packed sort key) and 40 around them: neighbour ids and order as
    rvo23d reports them."""
    rng = np.random.default_rng(11)
    positions = np.vstack([np.zeros((60, 3)), rng.uniform(-3.0, 3.0, (40, 3))]).astype(np.float32)
    params = OrcaParams(time_step=0.1, neighbor_dist=4.0, max_neighbors=10, time_horizon=2.0,
                        time_horizon_obst=1.0, radius=0.3, max_speed=1.0)
    sim = peer_simulator(positions, params)
    sim.doStep()
    count = len(positions)
    neighbors, keep = agent_neighbors_3d(positions, np.full(count, 4.0), np.full(count, 10))
    for agent in range(count):
        theirs = [sim.getAgentAgentNeighbor(agent, j)
                  for j in range(sim.getAgentNumAgentNeighbors(agent))]
        assert neighbors[agent][keep[agent]].tolist() == theirs, f'agent {agent}'


def test_many_plane_path_of_linear_program2_is_exact_too(monkeypatch):
    """linearProgram2 takes another path with more than 16 planes (obstacle planes): forced
    onto it, the most congested recorded steps still come out bit for bit."""
    import orca_nav.core.avoidance.linear_program3d as linear_program3d
    monkeypatch.setattr(linear_program3d, '_DENSE_MAX_PLANES', 0)
    run = dict(np.load(REFDATA / 'cube_crossing_125.npz'))
    for step in np.argsort((run['lp3_plane_fail'] >= 0).sum(axis=1))[-5:]:
        velocities = compute_velocities(run['pos'][step], run['vel'][step], run['pref'][step],
                                        params_of(run))
        np.testing.assert_array_equal(velocities.astype(np.float32), run['new_vel'][step])
