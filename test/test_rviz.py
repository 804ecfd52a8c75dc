"""The RViz config of a fleet: a display only for what the fleet's graph publishes (with QoS its
publishers match), every robot in one fixed frame (TF fleets too), checked against the topics of
a real in-process run."""
import dataclasses

import pytest
import yaml

from orca_nav.bringup.fleet_file import load_fleet_config
from orca_nav.bringup.graph import describe_graph, share_dir
from orca_nav.bringup.rviz import rviz_config, rviz_remappings, write_rviz_config
from orca_nav.bringup.scenarios import circle, corridor, drones

TEMPLATE = share_dir() / 'config' / 'orca_nav.rviz'


def shown(config):
    return {d['Name']: d for d in config['Visualization Manager']['Displays']}


def test_a_fleet_without_planner_map_or_tf_gets_markers_and_every_robots_odometry():
    names = shown(rviz_config(circle(16), TEMPLATE))
    assert list(names) == ['Grid', 'ORCA markers'] + [f'Odometry robot{i}' for i in range(16)]
    assert names['ORCA markers']['Topic']['Value'] == '/orca_nav/markers'
    assert names['Odometry robot15']['Topic']['Value'] == '/robot15/odom'
    assert len({names[f'Odometry robot{i}']['Shape']['Color'] for i in range(8)}) == 8
    assert all(d['Enabled'] for d in names.values())


def test_plans_and_the_map_appear_with_the_planner_and_a_map():
    cfg = dataclasses.replace(corridor(4), planner_enabled=True)
    names = shown(rviz_config(cfg, TEMPLATE))
    assert names['Map']['Topic']['Value'] == '/map'
    assert names['Map']['Topic']['Durability Policy'] == 'Transient Local'
    assert [names[f'Plan {r}']['Topic']['Value'] for r in cfg.robot_names] == \
        [f'/{r}/plan' for r in cfg.robot_names]
    assert 'Map' not in shown(rviz_config(circle(2), TEMPLATE))


def test_per_robot_orca_nodes_markers_and_no_markers_at_rate_zero():
    cfg = circle(3)
    names = shown(rviz_config(cfg, TEMPLATE, mode='per_robot'))
    assert [d['Topic']['Value'] for n, d in names.items() if n.startswith('ORCA markers')] == \
        ['/robot0/orca_nav/markers', '/robot1/orca_nav/markers', '/robot2/orca_nav/markers']
    quiet = dataclasses.replace(cfg, node_parameters={**cfg.node_parameters,
                                                      'orca_node': {'marker_rate': 0.0}})
    assert not any(n.startswith('ORCA markers') for n in shown(rviz_config(quiet, TEMPLATE)))


def test_tf_fleets_show_tf_in_one_tree():
    prefixed = dataclasses.replace(corridor(4), tf_layout='prefixed')
    assert 'TF' in shown(rviz_config(prefixed, TEMPLATE)) and rviz_remappings(prefixed) == []
    namespaced = dataclasses.replace(prefixed, tf_layout='namespaced')
    names = shown(rviz_config(namespaced, TEMPLATE))
    assert 'TF' in names
    # Odometry in each robot's own plain `odom`: one tree cannot place it (markers show them).
    assert not any(n.startswith('Odometry') for n in names)
    assert rviz_remappings(namespaced) == [('/tf', '/orca_nav/tf'),
                                           ('/tf_static', '/orca_nav/tf_static')]
    specs = describe_graph(namespaced, rviz=True)
    relay, rviz = specs[-2:]
    assert (relay.executable, rviz.executable) == ('tf_relay', 'rviz2')
    assert relay.parameters[0]['robots'] == list(namespaced.robot_names)
    assert rviz.remappings == rviz_remappings(namespaced)
    assert 'tf_relay' not in [s.executable for s in describe_graph(prefixed, rviz=True)]


def test_the_package_config_is_the_default_fleets_and_keeps_the_template_parts(tmp_path):
    """config/orca_nav.rviz, what `rviz2 -d` opens, is the circle's generated config."""
    written = write_rviz_config(circle(), TEMPLATE, tmp_path / 'circle.rviz')
    assert written.read_text() == TEMPLATE.read_text()
    config = yaml.safe_load(TEMPLATE.read_text())
    (goal,) = [t for t in config['Visualization Manager']['Tools']
               if t['Class'] == 'rviz_default_plugins/SetGoal']
    assert goal['Topic']['Value'] == '/robot0/goal_pose'
    assert config['Visualization Manager']['Global Options']['Fixed Frame'] == 'map'
    assert {p['Class'] for p in config['Panels']} >= {'rviz_common/Displays',
                                                      'rviz_common/Tool Properties'}


rclpy = pytest.importorskip('rclpy')
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from orca_nav.bringup.runner import run_graph  # noqa: E402
from orca_nav.ros.tf_listener import TF_QOS, TF_STATIC_QOS  # noqa: E402

MESSAGE_TYPES = {'Map': 'nav_msgs/msg/OccupancyGrid', 'PointCloud2': 'sensor_msgs/msg/PointCloud2',
                 'MarkerArray': 'visualization_msgs/msg/MarkerArray', 'Path': 'nav_msgs/msg/Path',
                 'Odometry': 'nav_msgs/msg/Odometry'}


def tf_fleet(layout):
    return load_fleet_config({
        'name': f'tf_{layout}', 'tf_layout': layout,
        'map': str(share_dir() / 'config' / 'maps' / 'open_40x40.yaml'),
        'defaults': {'kinematics': 'holonomic', 'radius': 0.25, 'max_speed': 1.0},
        'robots': [{'name': f'robot{i}', 'start': [0.0, 2.0 * i, 0.0],
                    'goal': [3.0, 2.0 * i, 0.0]} for i in range(3)],
        'planner': {'enabled': True}})


@pytest.mark.ros
@pytest.mark.parametrize('cfg, mode', [
    (circle(3), 'per_robot'), (tf_fleet('prefixed'), 'centralized'),
    (tf_fleet('namespaced'), 'centralized'), (drones(2), 'centralized')],
    ids=['per_robot', 'prefixed', 'namespaced', 'drones'])
def test_every_display_has_a_publisher_in_the_running_graph_and_tf_reaches_every_robot(cfg,
                                                                                        mode):
    specs = describe_graph(cfg, mode=mode, rviz=True)
    (rviz,) = [s for s in specs if s.executable == 'rviz2']
    config = yaml.safe_load(open(rviz.arguments[rviz.arguments.index('-d') + 1]).read())
    remapped = dict(rviz.remappings)
    with run_graph([s for s in specs if s is not rviz]) as graph:
        # Subscribed before the graph spins it: an executor spinning on another thread may be
        # iterating over the node's subscriptions.
        probe = rclpy.create_node('rviz_probe', context=graph.context)
        received = []
        if cfg.tf_layout != 'none':
            for topic, qos in (('/tf', TF_QOS), ('/tf_static', TF_STATIC_QOS)):
                probe.create_subscription(TFMessage, remapped.get(topic, topic),
                                          lambda msg: received.extend(msg.transforms), qos)
        graph.add_node(probe)

        def publishers(topic):
            return probe.get_publishers_info_by_topic(topic)

        for display in config['Visualization Manager']['Displays']:
            kind = display['Class'].rpartition('/')[2]
            if kind in ('Grid', 'TF'):
                continue
            topic = display['Topic']['Value']
            assert graph.wait_for(lambda: publishers(topic), timeout=30.0), \
                f'{display["Name"]}: nobody publishes {topic}'
            assert {p.topic_type for p in publishers(topic)} == {MESSAGE_TYPES[kind]}, topic
            if display['Topic']['Durability Policy'] == 'Transient Local':
                assert all(p.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL
                           for p in publishers(topic)), f'{topic} is not latched'
            if display['Topic']['Reliability Policy'] == 'Reliable':
                assert all(p.qos_profile.reliability == ReliabilityPolicy.RELIABLE
                           for p in publishers(topic)), f'{topic} is best effort'
        if cfg.tf_layout == 'none':
            assert 'TF' not in shown(config)
            return
        assert 'TF' in shown(config)
        frame = config['Visualization Manager']['Global Options']['Fixed Frame']

        def reaches_fixed_frame(robot):
            parents = {t.child_frame_id: t.header.frame_id for t in list(received)}
            child, seen = f'{robot}/base_link', set()
            while child in parents and child not in seen:
                seen.add(child)
                child = parents[child]
            return child == frame
        for robot in cfg.robot_names:
            assert graph.wait_for(lambda: reaches_fixed_frame(robot), timeout=30.0), \
                f"{robot}/base_link is not in RViz's tree under {frame}"
