"""tf_layout in fleet files and the graph, and the RViz config generated for a fleet."""
import dataclasses

import pytest
import yaml

from orca_nav.bringup.fleet_file import load_fleet_config
from orca_nav.bringup.graph import describe_graph, share_dir
from orca_nav.bringup.rviz import rviz_config, rviz_remappings, write_rviz_config
from orca_nav.bringup.scenarios import circle, corridor

TEMPLATE = share_dir() / 'config' / 'orca_nav.rviz'


def fleet_dict(**top):
    return {'robots': [{'name': 'a', 'start': [0, 0]}, {'name': 'b', 'start': [2, 0]}], **top}


def test_fleet_files_name_the_tf_layout_and_default_to_none():
    assert load_fleet_config(fleet_dict()).tf_layout == 'none'
    cfg = load_fleet_config(fleet_dict(tf_layout='prefixed'))
    assert cfg.tf_layout == 'prefixed'
    assert load_fleet_config(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="tf_layout: 'flat' is not one of none, namespaced"):
        load_fleet_config(fleet_dict(tf_layout='flat'))
    with pytest.raises(ValueError, match='fleet_sim_node.tf_layout'):
        load_fleet_config(fleet_dict(fleet_sim_node={'tf_layout': 'prefixed'}))


def params_of(specs, executable):
    (spec,) = [s for s in specs if s.executable == executable]
    merged = {}
    for p in spec.parameters:
        merged.update(p)
    return merged


def test_the_graph_passes_the_layout_to_the_simulator_and_every_odometry_reader():
    cfg = load_fleet_config(fleet_dict(tf_layout='namespaced', planner={'enabled': True}))
    specs = describe_graph(cfg)
    for node in ('fleet_sim_node', 'orca_node', 'planner_node'):
        assert params_of(specs, node)['tf_layout'] == 'namespaced', node
    plain = describe_graph(load_fleet_config(fleet_dict(planner={'enabled': True})))
    assert params_of(plain, 'fleet_sim_node')['tf_layout'] == 'none'
    # every odometry reader is told, none included (the nodes' default too)
    assert params_of(plain, 'orca_node')['tf_layout'] == 'none'
    assert params_of(plain, 'planner_node')['tf_layout'] == 'none'


def displays(config):
    return {d['Name']: d for d in config['Visualization Manager']['Displays']}


def test_rviz_config_covers_every_robot_and_enables_only_what_shows_something():
    cfg = circle(16)                                     # no map, no planner, no TF
    shown = displays(rviz_config(cfg, TEMPLATE))
    assert [f'Odometry robot{i}' in shown for i in range(16)] == [True] * 16
    assert [shown[f'Odometry robot{i}']['Topic']['Value'] for i in (0, 15)] == \
        ['/robot0/odom', '/robot15/odom']
    assert all(shown[f'Odometry robot{i}']['Enabled'] for i in range(16))
    assert not any(shown[f'Plan robot{i}']['Enabled'] for i in range(16))   # no planner
    assert not shown['Map']['Enabled'] and shown['ORCA markers']['Enabled']
    assert 'TF' not in shown
    colors = {shown[f'Plan robot{i}']['Color'] for i in range(8)}
    assert len(colors) == 8
    planned = displays(rviz_config(dataclasses.replace(cfg, planner_enabled=True), TEMPLATE))
    assert all(planned[f'Plan robot{i}']['Enabled'] for i in range(16))
    assert planned['Plan robot7']['Topic']['Value'] == '/robot7/plan'


def test_rviz_config_shows_the_map_and_tf_of_the_layout():
    mapped = corridor(4)
    assert displays(rviz_config(mapped, TEMPLATE))['Map']['Enabled']
    prefixed = dataclasses.replace(mapped, tf_layout='prefixed')
    config = rviz_config(prefixed, TEMPLATE)
    assert displays(config)['TF']['Enabled']
    assert config['Visualization Manager']['Global Options']['Fixed Frame'] == 'map'
    assert rviz_remappings(prefixed) == []
    # namespaced: RViz reads the first robot's own tree, and shows that robot's odometry
    namespaced = dataclasses.replace(mapped, tf_layout='namespaced')
    first = mapped.robot_names[0]
    assert rviz_remappings(namespaced) == [('/tf', f'/{first}/tf'),
                                           ('/tf_static', f'/{first}/tf_static')]
    shown = displays(rviz_config(namespaced, TEMPLATE))
    assert [shown[f'Odometry {r}']['Enabled'] for r in mapped.robot_names] == \
        [True] + [False] * (len(mapped.robots) - 1)


def test_the_written_config_loads_with_the_template_panels_and_goal_tool(tmp_path):
    cfg = circle(3)
    path = write_rviz_config(cfg, TEMPLATE, tmp_path / 'x' / 'fleet.rviz')
    written = yaml.safe_load(path.read_text())
    template = yaml.safe_load(TEMPLATE.read_text())
    assert written['Panels'] == template['Panels']
    (goal,) = [t for t in written['Visualization Manager']['Tools']
               if t['Class'] == 'rviz_default_plugins/SetGoal']
    assert goal['Topic']['Value'] == '/robot0/goal_pose'
    spec = describe_graph(dataclasses.replace(cfg, tf_layout='namespaced'), rviz=True)[-1]
    assert spec.remappings == [('/tf', '/robot0/tf'), ('/tf_static', '/robot0/tf_static')]
    assert displays(yaml.safe_load(open(spec.arguments[1]).read()))['TF']['Enabled']
