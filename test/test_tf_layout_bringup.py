"""tf_layout in fleet files and the graph (the RViz config of TF fleets: test_rviz.py)."""
import pytest

from orca_nav.bringup.fleet_file import load_fleet_config
from orca_nav.bringup.graph import describe_graph


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
