"""The node-graph description: which nodes, their namespaces, names and parameters."""
import sys
from pathlib import Path

import pytest

from orca_nav.bringup.fleet_file import load_fleet_config
from orca_nav.bringup.graph import NodeSpec, describe_graph, fleet_parameters, share_dir
from orca_nav.bringup.scenarios import circle

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def fleet_with_map(tmp_path):
    # 3 m x 3 m of free space from (-1, -1): the robots stand clear of its border.
    (tmp_path / 'room.pgm').write_bytes(b'P5\n6 6\n255\n' + bytes([254] * 36))
    (tmp_path / 'room.yaml').write_text('image: room.pgm\nresolution: 0.5\norigin: [-1, -1, 0]\n'
                                        'negate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n')
    return load_fleet_config({
        'global_frame': 'world', 'map': 'room.yaml',
        'robots': [{'name': 'a', 'start': [0, 0], 'goal': [1, 1, 0.5]},
                   {'name': 'b', 'kinematics': 'diff_drive', 'start': [1, 0]}],
        'planner': {'enabled': True, 'plan_time_budget': 0.5},
        'orca_node': {'time_horizon': 4.0}, 'fleet_sim_node': {'sim_rate': 40.0},
        'map_publisher': {'topic': '/site_map'}}, base_dir=tmp_path)


def by_executable(specs):
    out = {}
    for spec in specs:
        out.setdefault(spec.executable, []).append(spec)
    return out


def test_centralized_graph(fleet_with_map):
    cfg = fleet_with_map
    specs = describe_graph(cfg)
    assert [s.executable for s in specs] == ['map_publisher', 'fleet_sim_node', 'orca_node',
                                             'planner_node']
    assert all(s.package == 'orca_nav' and s.namespace == '' for s in specs)
    assert [s.full_name for s in specs] == ['/map_publisher', '/fleet_sim', '/orca_node',
                                            '/planner_node']
    nodes = by_executable(specs)
    (map_params,) = nodes['map_publisher'][0].parameters
    assert map_params == {'yaml_filename': str(cfg.map_path), 'frame_id': 'world',
                          'use_sim_time': True, 'topic': '/site_map'}
    (orca,) = nodes['orca_node'][0].parameters
    assert orca['robots'] == ['a', 'b'] and orca['global_frame'] == 'world'
    assert orca['a.goal'] == [1.0, 1.0, 0.5] and 'b.goal' not in orca
    assert orca['b.kinematics'] == 'diff_drive' and orca['a.start'] == [0.0, 0.0, 0.0]
    assert orca['time_horizon'] == 4.0 and 'sim_rate' not in orca
    (sim,) = nodes['fleet_sim_node'][0].parameters
    assert sim['sim_rate'] == 40.0 and sim['a.radius'] == 0.3
    # The embedded simulator is the clock source; every other node follows /clock.
    assert sim['publish_clock'] is True and 'use_sim_time' not in sim
    assert orca['use_sim_time'] is True and planner_params(nodes)['use_sim_time'] is True
    (planner,) = nodes['planner_node'][0].parameters
    assert planner['plan_time_budget'] == 0.5 and planner['robots'] == ['a', 'b']
    # every per-robot field of TEAM.md, for every robot, with a ROS-typed value
    for name in ('a', 'b'):
        assert isinstance(orca[f'{name}.kinematics'], str)
        for field in ('radius', 'max_speed', 'max_accel', 'max_yaw_rate', 'wheelbase',
                      'min_turning_radius'):
            assert type(orca[f'{name}.{field}']) is float     # an int would not fit a double
        assert all(type(v) is float for v in orca[f'{name}.start'])


def planner_params(nodes):
    return nodes['planner_node'][0].parameters[0]


@pytest.mark.parametrize('use_sim, file_value, asked, expected', [
    (True, None, None, True), (False, None, None, False), (False, True, None, True),
    (True, False, None, False), (True, None, False, False), (False, None, True, True)])
def test_simulated_time_follows_the_embedded_simulator_unless_told(use_sim, file_value, asked,
                                                                   expected):
    raw = {'robots': [{'name': 'a', 'start': [0, 0], 'goal': [1, 0]}]}
    if file_value is not None:
        raw['use_sim_time'] = file_value
    specs = describe_graph(load_fleet_config(raw), use_sim=use_sim, use_sim_time=asked)
    nodes = by_executable(specs)
    assert nodes['orca_node'][0].parameters[0]['use_sim_time'] is expected
    if use_sim:
        assert nodes['fleet_sim_node'][0].parameters[0]['publish_clock'] is expected


def test_lockstep_ties_odometry_to_the_control_cycle_and_counts_its_listeners(fleet_with_map):
    specs = describe_graph(fleet_with_map, sim_overrides={'lockstep': True,
                                                          'real_time_factor': 0.0}, observers=1)
    nodes = by_executable(specs)
    sim = nodes['fleet_sim_node'][0].parameters[0]
    orca = nodes['orca_node'][0].parameters[0]
    assert sim['lockstep'] is True and sim['real_time_factor'] == 0.0
    assert sim['odom_rate'] == 20.0 and orca['cycle_trigger'] == 'odometry'
    assert sim['lockstep_subscribers'] == 3        # orca_node, planner_node, the observer
    per_robot = by_executable(describe_graph(fleet_with_map, mode='per_robot',
                                             sim_overrides={'lockstep': True}))
    # a, b and the planner
    assert per_robot['fleet_sim_node'][0].parameters[0]['lockstep_subscribers'] == 3
    with pytest.raises(ValueError, match='lockstep: needs simulated time'):
        describe_graph(fleet_with_map, use_sim_time=False, sim_overrides={'lockstep': True})


def test_per_robot_mode_namespaces_one_orca_node_per_robot(fleet_with_map):
    specs = describe_graph(fleet_with_map, mode='per_robot', use_sim=False)
    nodes = by_executable(specs)
    assert 'fleet_sim_node' not in nodes
    orcas = nodes['orca_node']
    assert [(s.namespace, s.name, s.full_name) for s in orcas] == [
        ('a', 'orca_node', '/a/orca_node'), ('b', 'orca_node', '/b/orca_node')]
    for spec in orcas:
        (params,) = spec.parameters
        # the whole fleet is known (reciprocal agents), only the namespace's robot is commanded
        assert params['robots'] == ['a', 'b']
        assert (params['mode'], params['robot_name']) == ('per_robot', spec.namespace)
        assert params['time_horizon'] == 4.0


def test_optional_nodes():
    cfg = circle(3)
    specs = describe_graph(cfg, use_sim=True, rviz=True)
    assert [s.executable for s in specs] == ['fleet_sim_node', 'orca_node', 'rviz2']
    rviz = specs[-1]
    assert (rviz.package, rviz.arguments[0]) == ('rviz2', '-d')
    # generated for the fleet from the package's config/orca_nav.rviz (test_tf_layout_bringup.py)
    generated = Path(rviz.arguments[1])
    assert generated.name == f'{cfg.name}.rviz' and generated.is_file()
    assert (share_dir() / 'config' / 'orca_nav.rviz').is_file()
    with pytest.raises(ValueError, match="mode: 'swarm' is not one of"):
        describe_graph(cfg, mode='swarm')


def test_fleet_parameters_are_flat_team_names():
    cfg = circle(2)
    params = fleet_parameters(cfg)
    assert params['robots'] == ['robot0', 'robot1']
    assert set(params) == {'robots', 'global_frame'} | {
        f'robot{i}.{f}' for i in range(2)
        for f in ('kinematics', 'radius', 'max_speed', 'max_accel', 'max_decel', 'max_yaw_rate',
                  'wheelbase', 'min_turning_radius', 'responsibility', 'start', 'goal')}


def test_specs_are_values():
    spec = NodeSpec('orca_node', 'orca_node', namespace='/r1/')
    assert spec.full_name == '/r1/orca_node'
    assert spec == NodeSpec('orca_node', 'orca_node', namespace='/r1/')
    with pytest.raises(Exception):
        spec.name = 'other'


def test_share_dir_is_the_checkout_when_not_installed():
    assert (share_dir() / 'config' / 'fleets' / 'circle.yaml').is_file()
    assert share_dir() == REPO or (share_dir() / 'package.xml').is_file()


def test_bringup_does_not_need_rclpy():
    """The launch file imports bringup; it must not pull in rclpy (or the ROS nodes)."""
    import subprocess
    code = ('import sys, orca_nav.bringup.graph, orca_nav.bringup.scenarios; '
            'sys.exit(1 if "rclpy" in sys.modules else 0)')
    assert subprocess.call([sys.executable, '-c', code], cwd=str(REPO)) == 0


def test_orca_node_waits_for_trajectories_when_a_planner_is_enabled(fleet_with_map):
    for mode in ('centralized', 'per_robot'):
        for spec in by_executable(describe_graph(fleet_with_map, mode=mode))['orca_node']:
            assert spec.parameters[0]['trajectories_only'] is True
    plain = by_executable(describe_graph(circle(2)))['orca_node'][0]
    assert plain.parameters[0]['trajectories_only'] is False


def test_orca_node_waits_for_the_map_when_the_fleet_has_one(fleet_with_map):
    assert by_executable(describe_graph(fleet_with_map))['orca_node'][0] \
        .parameters[0]['require_map'] is True
    assert circle(2).map_path is None
    assert by_executable(describe_graph(circle(2)))['orca_node'][0] \
        .parameters[0]['require_map'] is False


def lattice_fleet(count):
    side = int(count ** 0.5) + 1
    return load_fleet_config({'robots': [
        {'name': f'r{i}', 'start': [2.0 * (i % side), 2.0 * (i // side)]} for i in range(count)],
        'shards': 2})


def test_a_large_fleet_runs_every_node_with_the_large_fleet_dds_profile():
    """Over LARGE_FLEET_ROBOTS robots every node (each shard, the simulator) gets the Fast DDS
    profile in both variables Fast DDS 2 and 3 read; a smaller fleet gets nothing."""
    from orca_nav.bringup.graph import DDS_PROFILE_VARIABLES, LARGE_FLEET_ROBOTS
    profile = str(share_dir() / 'config' / 'dds' / 'fastdds_large_fleet.xml')
    large = describe_graph(lattice_fleet(LARGE_FLEET_ROBOTS + 1), environ={})
    assert [s.name for s in large] == ['fleet_sim', 'orca_node_shard0', 'orca_node_shard1']
    assert all(s.env == dict.fromkeys(DDS_PROFILE_VARIABLES, profile) for s in large)
    assert all(s.env == {} for s in describe_graph(lattice_fleet(LARGE_FLEET_ROBOTS),
                                                   environ={}))


@pytest.mark.parametrize('variable', ['FASTRTPS_DEFAULT_PROFILES_FILE',
                                      'FASTDDS_DEFAULT_PROFILES_FILE'])
def test_a_dds_profile_of_the_users_own_wins(variable):
    from orca_nav.bringup.graph import LARGE_FLEET_ROBOTS, dds_environment
    assert dds_environment(LARGE_FLEET_ROBOTS + 1, {variable: '/etc/my_dds.xml'}) == {}
    assert dds_environment(LARGE_FLEET_ROBOTS + 1, {variable: ''}) != {}


def test_the_large_fleet_dds_profile_holds_a_burst_from_every_robot():
    """The profile parses, is Fast DDS's default participant profile, replaces the builtin
    transports with shared memory and UDP, and its queues hold thousands of messages."""
    import xml.etree.ElementTree as ET
    ns = {'p': 'http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles'}
    root = ET.parse(share_dir() / 'config' / 'dds' / 'fastdds_large_fleet.xml').getroot()
    assert root.tag == 'dds'
    profiles = root.find('p:profiles', ns)
    transports = {t.findtext('p:type', namespaces=ns): t
                  for t in profiles.findall('p:transport_descriptors/p:transport_descriptor', ns)}
    assert set(transports) == {'SHM', 'UDPv4'}
    assert int(transports['SHM'].findtext('p:port_queue_capacity', namespaces=ns)) >= 4096
    assert int(transports['SHM'].findtext('p:segment_size', namespaces=ns)) >= 4096 * 1024
    assert int(transports['UDPv4'].findtext('p:receiveBufferSize', namespaces=ns)) >= 2 ** 22
    (participant,) = profiles.findall('p:participant', ns)
    assert participant.get('is_default_profile') == 'true'
    rtps = participant.find('p:rtps', ns)
    assert rtps.findtext('p:useBuiltinTransports', namespaces=ns) == 'false'
    assert [t.text for t in rtps.findall('p:userTransports/p:transport_id', ns)] == [
        t.findtext('p:transport_id', namespaces=ns) for t in transports.values()]
