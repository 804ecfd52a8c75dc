"""A fleet split over several orca_node shards: the rule which robots a shard commands, the
graph that starts the shards, and closed loops over real DDS in which every encounter is
between robots of different shards: each takes half of the avoidance, as in per_robot mode, and
planner_node's turns in a one-robot lane hold whichever shard commands a robot."""
import itertools
import math

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402

from orca_nav.bringup.fleet_file import load_fleet_config  # noqa: E402
from orca_nav.bringup.graph import describe_graph, shard_name  # noqa: E402
from orca_nav.bringup.runner import run_graph  # noqa: E402
from orca_nav.bringup.scenarios import circle  # noqa: E402
from orca_nav.core.grid import OccupancyGrid  # noqa: E402
from orca_nav.ros.orca_params import commanded_robots, shard_block  # noqa: E402

from ros_harness import contact_reports  # noqa: E402


def shard_params(robots, index, count):
    return {'robots': robots, 'mode': 'shard', 'shard_index': index, 'shard_count': count,
            'robot_name': ''}


@pytest.mark.parametrize('robots, shards', [(1, 1), (7, 1), (7, 3), (8, 4), (10, 4), (9, 9),
                                            (1000, 4), (1001, 7)])
def test_shards_split_the_robots_into_contiguous_blocks_of_nearly_equal_size(robots, shards):
    blocks = [shard_block(robots, k, shards) for k in range(shards)]
    assert list(itertools.chain(*blocks)) == list(range(robots))    # each robot once, in order
    sizes = [len(b) for b in blocks]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1


def test_a_shard_commands_its_block_by_name():
    robots = [f'r{i}' for i in range(5)]
    assert [commanded_robots(shard_params(robots, k, 2)) for k in range(2)] == [
        ['r0', 'r1', 'r2'], ['r3', 'r4']]
    assert commanded_robots({'robots': robots, 'mode': 'centralized'}) == robots


@pytest.mark.parametrize('index, count, message', [
    (2, 2, 'shard_index: 2 is not below shard_count 2'),
    (0, 4, 'shard_count: 4 shards for 3 robots'),
])
def test_impossible_shards_are_refused_naming_the_parameter(index, count, message):
    with pytest.raises(ValueError, match=message):
        commanded_robots(shard_params(['a', 'b', 'c'], index, count))


def test_bad_shard_parameters_stop_the_node_at_start():
    from rclpy.parameter import Parameter

    from orca_nav.ros.orca_node import OrcaNode
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        for params, name in (({'shard_index': 3, 'shard_count': 2}, 'shard_index'),
                             ({'shard_count': 3}, 'shard_count'),
                             ({'shard_index': -1, 'shard_count': 2}, 'shard_index')):
            overrides = [Parameter('robots', value=['a', 'b']), Parameter('mode', value='shard')]
            overrides += [Parameter(k, value=v) for k, v in params.items()]
            with pytest.raises(ValueError, match=name):
                OrcaNode(context=context, parameter_overrides=overrides)
    finally:
        rclpy.try_shutdown(context=context)


def sharded(cfg, shards):
    raw = cfg.to_dict()
    raw['shards'] = shards
    return load_fleet_config(raw)


def test_the_graph_starts_one_named_orca_node_per_shard():
    cfg = sharded(circle(10), 3)
    specs = describe_graph(cfg, sim_overrides={'lockstep': True, 'real_time_factor': 0.0})
    orca = [s for s in specs if s.executable == 'orca_node']
    assert [(s.name, s.namespace) for s in orca] == [(shard_name(k), '') for k in range(3)]
    assert [s.full_name for s in orca] == ['/orca_node_shard0', '/orca_node_shard1',
                                           '/orca_node_shard2']
    for k, spec in enumerate(orca):
        params = spec.parameters[-1]
        assert (params['mode'], params['shard_index'], params['shard_count']) == ('shard', k, 3)
        assert params['robots'] == list(cfg.robot_names)       # every shard sees every robot
    commanded = [commanded_robots(s.parameters[-1]) for s in orca]
    assert [len(c) for c in commanded] == [4, 3, 3]
    assert sorted(itertools.chain(*commanded)) == sorted(cfg.robot_names)
    sim = next(s for s in specs if s.executable == 'fleet_sim_node').parameters[-1]
    assert sim['lockstep_subscribers'] == 3     # every shard reads every robot's odometry


def test_one_shard_and_per_robot_mode_keep_their_graphs():
    cfg = circle(4)
    assert describe_graph(sharded(cfg, 1)) == describe_graph(cfg)
    # per_robot is sharding's limit: one node per robot, whatever the fleet file says.
    assert describe_graph(sharded(cfg, 2), mode='per_robot') == \
        describe_graph(cfg, mode='per_robot')


# ------------------------------------------------------------------ closed loop over DDS
ROBOTS, RING, RADIUS = 8, 2.5, 0.25


def boundary_fleet():
    """Eight robots on a circle swap to the antipode; two shards take the halves of the circle,
    so every robot's head-on partner (and the crowd at the centre) belongs to the other shard."""
    angles = 2.0 * math.pi * np.arange(ROBOTS) / ROBOTS
    points = RING * np.column_stack([np.cos(angles), np.sin(angles)])
    return load_fleet_config({
        'name': 'shard_boundary', 'shards': 2,
        'defaults': {'kinematics': 'holonomic', 'radius': RADIUS, 'max_speed': 1.0,
                     'max_accel': 2.0},
        'robots': [{'name': f'robot{i}', 'start': [float(x), float(y), 0.0],
                    'goal': [float(-x), float(-y), 0.0]} for i, (x, y) in enumerate(points)],
        'orca_node': {'safety_margin': 0.05, 'diagnostics_rate': 5.0},
        'demo': {'goal_tolerance': 0.2}})


@pytest.mark.ros
def test_robots_of_two_shards_swap_across_a_circle_without_contact():
    cfg = boundary_fleet()
    specs = describe_graph(cfg, sim_overrides={'lockstep': True, 'real_time_factor': 0.0})
    shard_of = {}
    for spec in specs:
        if spec.executable == 'orca_node':
            shard_of.update(dict.fromkeys(commanded_robots(spec.parameters[-1]), spec.name))
    partners = [(i, (i + ROBOTS // 2) % ROBOTS) for i in range(ROBOTS // 2)]
    assert all(shard_of[f'robot{i}'] != shard_of[f'robot{j}'] for i, j in partners)
    goals = np.array([r.goals[0][:2] for r in cfg.robots])
    shards = np.array([shard_of[name] for name in cfg.robot_names])
    other_shard = shards[:, None] != shards[None]
    # each robot's closest approach to a robot of the other shard, over the run
    closest = np.full(ROBOTS, np.inf)
    with run_graph(specs) as graph:
        sim = graph.nodes['/fleet_sim']
        contacts = contact_reports(graph)
        cycle_status = set()
        probe = graph.add_node(rclpy.create_node('shard_probe', context=graph.context))
        probe.create_subscription(
            DiagnosticArray, '/diagnostics',
            lambda msg: cycle_status.update(s.name for s in msg.status
                                            if s.name.endswith(': control cycle')), 10)

        def arrived():
            xy = sim.sim.poses[:, :2].copy()
            apart = np.linalg.norm(xy[:, None] - xy[None], axis=2)
            np.minimum(closest, np.where(other_shard, apart, np.inf).min(axis=1), out=closest)
            return bool(np.all(np.hypot(*(xy - goals).T) < 0.25))
        assert graph.wait_for(arrived, timeout=120.0), sim.sim.poses
        # Each robot's cmd_vel comes from its shard alone.
        for robot, node in shard_of.items():
            publishers = probe.get_publishers_info_by_topic(f'/{robot}/cmd_vel')
            assert [p.node_name for p in publishers if p.node_name.startswith('orca_node')] == \
                [node]
        assert graph.wait_for(lambda: {f'{shard_name(k)}: control cycle' for k in range(2)}
                              <= cycle_status, 30.0), cycle_status
        assert graph.error is None
    assert contacts == []
    # Every robot met one of the other shard: they passed within 0.4 m, surface to surface.
    assert np.all(closest < 2 * RADIUS + 0.4), closest


def lane_fleet(map_stem):
    """Two rooms joined by an 8 m lane 1 m wide, planned: three diff-drive robots in each room go
    to the other. Shard 0 commands the left room's robots and shard 1 the right room's, so the
    planner's turns in the lane are taken by robots of different shards."""
    grid = OccupancyGrid.from_rectangles((0.0, 0.0, 20.0, 8.0), 0.1,
                                         [(6.0, 0.0, 14.0, 3.5), (6.0, 4.5, 14.0, 8.0)], wall=0.3)
    map_yaml, _ = grid.save_map_yaml(map_stem)
    rows = (2.0, 4.0, 6.0)
    robots = [{'name': f'robot{i}', 'start': [2.0, y, 0.0], 'goal': [16.0, y, 0.0]}
              for i, y in enumerate(rows)]
    robots += [{'name': f'robot{i + 3}', 'start': [18.0, y, math.pi], 'goal': [4.0, y, 0.0]}
               for i, y in enumerate(rows)]
    return load_fleet_config({
        'name': 'shard_lane', 'shards': 2, 'map': str(map_yaml),
        'defaults': {'kinematics': 'diff_drive', 'radius': 0.3, 'max_speed': 1.0,
                     'max_accel': 1.5, 'max_yaw_rate': 2.0},
        'robots': robots, 'planner': {'enabled': True},
        'demo': {'goal_tolerance': 0.3}})


@pytest.mark.ros
@pytest.mark.slow
def test_planned_robots_of_two_shards_take_turns_in_a_one_robot_lane(tmp_path):
    """planner_node coordinates the whole fleet whichever shard commands a robot: the six
    robots cross the one-robot lane in turns (never robots of both rooms in it at once) and all
    arrive, without contact."""
    cfg = lane_fleet(tmp_path / 'lane')
    specs = describe_graph(cfg, sim_overrides={'lockstep': True, 'real_time_factor': 0.0})
    shard_of = {}
    for spec in specs:
        if spec.executable == 'orca_node':
            shard_of.update(dict.fromkeys(commanded_robots(spec.parameters[-1]), spec.name))
    assert [shard_of[f'robot{i}'] for i in range(6)] == [shard_name(0)] * 3 + [shard_name(1)] * 3
    goals = np.array([r.goals[0][:2] for r in cfg.robots])
    with run_graph(specs) as graph:
        sim = graph.nodes['/fleet_sim']
        contacts = contact_reports(graph)
        in_lane_at_once = set()

        def arrived():
            xy = sim.sim.poses[:, :2].copy()
            in_lane = (xy[:, 0] > 6.0) & (xy[:, 0] < 14.0)
            in_lane_at_once.add((bool(in_lane[:3].any()), bool(in_lane[3:].any())))
            return bool(np.all(np.hypot(*(xy - goals).T) < 0.3))
        assert graph.wait_for(arrived, timeout=300.0), sim.sim.poses
        assert graph.error is None
    assert (True, False) in in_lane_at_once and (False, True) in in_lane_at_once
    assert (True, True) not in in_lane_at_once
    assert contacts == []
