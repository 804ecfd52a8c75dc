"""RVO2's RVOSimulator over numpy arrays: agents, obstacles, preferred velocities, doStep."""
import numpy as np

from .neighbors import AgentNeighborList
from .obstacles import ObstacleSet, signed_area, validate_polygons
from .params import PER_AGENT_FIELDS, OrcaParams, as_point, as_vectors, check_scalar
from .solver import new_velocities


class OrcaSimulator:
    """RVO2's RVOSimulator over numpy arrays, plus agent removal and obstacle replacement.

    Agents are kept in insertion order; `positions`, `velocities` and
    `set_pref_velocities` use that order (`agent_ids` lists the ids in it).
    """

    def __init__(self, params: OrcaParams):
        if not isinstance(params, OrcaParams):
            raise ValueError(f'params must be an OrcaParams, got {type(params).__name__}')
        self.time_step = check_scalar('params.time_step', params.time_step, positive=True)
        defaults = {}
        for name in PER_AGENT_FIELDS:
            value = np.asarray(getattr(params, name))
            if value.ndim != 0:
                raise ValueError(f'params.{name}: simulator defaults must be scalars')
            defaults[name] = value.item()
        # Validate the defaults once through the common path.
        self._default_params, _ = OrcaParams(self.time_step, **defaults).per_agent(1)
        self.defaults = defaults
        self.global_time = 0.0
        self._ids = np.zeros(0, dtype=np.int64)
        self._next_id = 0
        self._positions = np.zeros((0, 2))
        self._velocities = np.zeros((0, 2))
        self._pref = np.zeros((0, 2))
        self._agent_params = {name: np.zeros(0, dtype=np.int64 if name == 'max_neighbors'
                                              else np.float64) for name in PER_AGENT_FIELDS}
        self._pending = []
        self._polygons = []
        self._enclosures_allowed = False
        self._obstacle_set = ObstacleSet(())
        self._neighbor_list = AgentNeighborList()

    # -- agents --
    def add_agent(self, position, velocity=(0.0, 0.0), **overrides):
        """Add an agent; overrides: any of neighbor_dist, max_neighbors, time_horizon,
        time_horizon_obst, radius, max_speed. Returns its id (stable across removals)."""
        unknown = set(overrides) - set(PER_AGENT_FIELDS)
        if unknown:
            raise ValueError(f'add_agent: unknown parameter(s) {sorted(unknown)}; '
                             f'known: {list(PER_AGENT_FIELDS)}')
        if overrides:
            checked, _ = OrcaParams(self.time_step, **dict(self.defaults, **overrides)).per_agent(1)
        else:
            checked = self._default_params  # validated once in __init__
        position = as_point('position', position)
        velocity = as_point('velocity', velocity)
        agent_id = self._next_id
        self._next_id += 1
        self._pending.append((agent_id, position, velocity, checked))
        return agent_id

    def _flush(self):
        if not self._pending:
            return
        ids, positions, velocities, params = zip(*self._pending)
        self._pending = []
        self._ids = np.concatenate([self._ids, np.array(ids, dtype=np.int64)])
        self._positions = np.concatenate([self._positions, np.array(positions)])
        self._velocities = np.concatenate([self._velocities, np.array(velocities)])
        self._pref = np.concatenate([self._pref, np.zeros((len(ids), 2))])
        for name in PER_AGENT_FIELDS:
            self._agent_params[name] = np.concatenate(
                [self._agent_params[name], np.concatenate([p[name] for p in params])])

    def remove_agent(self, agent_id):
        """Remove the agent with this id; the others keep their order and ids."""
        self._flush()
        where = np.flatnonzero(self._ids == agent_id)
        if where.size == 0:
            raise ValueError(f'agent_id {agent_id!r} is not in the simulation')
        keep = self._ids != agent_id
        self._ids = self._ids[keep]
        self._positions = self._positions[keep]
        self._velocities = self._velocities[keep]
        self._pref = self._pref[keep]
        for name in PER_AGENT_FIELDS:
            self._agent_params[name] = self._agent_params[name][keep]

    @property
    def agent_ids(self):
        self._flush()
        return self._ids.copy()

    @property
    def num_agents(self):
        return len(self._ids) + len(self._pending)

    # -- obstacles --
    def add_obstacle(self, vertices):
        """Add a counter-clockwise polygon (or a 2-vertex segment); processed on the next step.
        Returns the polygon's index."""
        polygon = validate_polygons([vertices], argument='vertices')[0]
        self._polygons.append(polygon)
        self._obstacle_set = None
        return len(self._polygons) - 1

    def set_obstacles(self, polygons):
        """Replace all obstacles: a list of (M, 2) counter-clockwise arrays, or an ObstacleSet
        (from prepare_obstacles, which may include clockwise enclosures)."""
        if isinstance(polygons, ObstacleSet):
            self._obstacle_set = polygons
        else:
            self._obstacle_set = ObstacleSet(polygons, argument='polygons')
        self._polygons = list(self._obstacle_set.polygons)
        self._enclosures_allowed = any(signed_area(p) < 0.0 for p in self._polygons)

    @property
    def obstacles(self):
        """The processed ObstacleSet (RVO2's processObstacles runs lazily)."""
        if self._obstacle_set is None:
            self._obstacle_set = ObstacleSet(self._polygons,
                                             allow_enclosures=self._enclosures_allowed)
        return self._obstacle_set

    # -- state --
    def set_pref_velocities(self, pref):
        self._flush()
        self._pref = as_vectors('pref', pref, len(self._ids)).copy()

    @property
    def positions(self):
        self._flush()
        return self._positions.copy()

    @property
    def velocities(self):
        self._flush()
        return self._velocities.copy()

    @property
    def pref_velocities(self):
        self._flush()
        return self._pref.copy()

    def step(self):
        """One RVO2 doStep: new velocities for all agents, then move them."""
        self._flush()
        velocities = new_velocities(self._positions, self._velocities, self._pref,
                                    self._agent_params, self.time_step, self.obstacles,
                                    neighbor_list=self._neighbor_list).velocities
        self._velocities = velocities
        self._positions = self._positions + velocities * self.time_step
        self.global_time += self.time_step
        return velocities

    def params(self):
        """The current per-agent parameters as an OrcaParams (arrays in agent order)."""
        self._flush()
        return OrcaParams(self.time_step,
                          **{n: self._agent_params[n].copy() for n in PER_AGENT_FIELDS})

