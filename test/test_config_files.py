"""Every node parameter YAML in config/ names only parameters its node declares, with valid
values."""
from pathlib import Path

import pytest
import yaml

rclpy = pytest.importorskip('rclpy')
from rclpy.parameter import Parameter  # noqa: E402

from orca_nav.ros.fleet_sim_node import FleetSimNode  # noqa: E402
from orca_nav.ros.map_3d_publisher import Map3dPublisher  # noqa: E402
from orca_nav.ros.map_publisher import MapPublisher  # noqa: E402
from orca_nav.ros.mission_node import MissionNode  # noqa: E402
from orca_nav.ros.orca_node import OrcaNode  # noqa: E402
from orca_nav.ros.params import warn_undeclared_overrides  # noqa: E402
from orca_nav.ros.planner_node import PlannerNode  # noqa: E402

pytestmark = pytest.mark.ros
REPO = Path(__file__).resolve().parents[1]
NODE_CLASSES = {'orca_node': OrcaNode, 'fleet_sim': FleetSimNode, 'planner_node': PlannerNode,
                'map_publisher': MapPublisher, 'mission_node': MissionNode,
                'map_3d_publisher': Map3dPublisher}
PARAM_FILES = sorted(p for p in (REPO / 'config').glob('*.yaml')
                     if 'ros__parameters' in p.read_text())


def flatten(tree, prefix=''):
    """A params-file section as rclpy reads it: nested maps become dotted names."""
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from flatten(value, f'{prefix}{key}.')
        else:
            yield f'{prefix}{key}', value


def test_every_node_has_a_parameter_file():
    sections = {name for path in PARAM_FILES for name in yaml.safe_load(path.read_text())}
    assert sections == set(NODE_CLASSES)


@pytest.mark.parametrize('path', PARAM_FILES, ids=lambda p: p.name)
def test_parameter_file_matches_the_node(path, monkeypatch):
    monkeypatch.chdir(REPO)             # map paths in the examples are relative to the checkout
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        for node_name, section in yaml.safe_load(path.read_text()).items():
            values = dict(flatten(section['ros__parameters']))
            overrides = [Parameter(name, value=value) for name, value in values.items()]
            node = NODE_CLASSES[node_name](context=context, parameter_overrides=overrides)
            try:
                assert warn_undeclared_overrides(node) == []
                for name, value in values.items():
                    assert node.get_parameter(name).value == value, name
            finally:
                node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
