"""launch/multi_robot.launch.py builds exactly the nodes of bringup.describe_graph.

launch_ros cannot be installed in this environment, so this test injects a tiny stand-in for
the `launch` and `launch_ros` modules into sys.modules ONLY to capture what the launch file
passes to `launch_ros.actions.Node`; it then compares those keyword arguments with the
description (this is "test the description"; the file's use of the real launch_ros API is
checked separately, wherever real launch_ros is installed). The stand-in keeps the real
signatures (keyword-only Node arguments, OpaqueFunction(function=...)), so a misspelt keyword
fails here too.
"""
import importlib.util
import sys
import types
from pathlib import Path

import pytest

from orca_nav.bringup.fleet_file import load_fleet_config
from orca_nav.bringup.graph import describe_graph, share_dir

LAUNCH_FILE = Path(__file__).resolve().parents[1] / 'launch' / 'multi_robot.launch.py'


class LaunchDescription:
    def __init__(self, initial_entities=None):
        self.entities = list(initial_entities or [])


class DeclareLaunchArgument:
    def __init__(self, name, *, default_value=None, description=None, choices=None, **kwargs):
        self.name, self.default_value, self.choices = name, default_value, choices


class OpaqueFunction:
    def __init__(self, *, function, args=None, kwargs=None, **left_over_kwargs):
        self.function, self.args, self.kwargs = function, args or [], kwargs or {}


class LaunchConfiguration:
    def __init__(self, variable_name, *, default=None):
        self.variable_name = variable_name

    def perform(self, context):
        return context.launch_configurations[self.variable_name]


class Node:
    """Captures the keyword arguments; same keyword-only signature as launch_ros's Node."""

    def __init__(self, *, executable, package=None, name=None, namespace=None, exec_name=None,
                 parameters=None, remappings=None, ros_arguments=None, arguments=None, **kwargs):
        self.kwargs = dict(executable=executable, package=package, name=name,
                           namespace=namespace, parameters=parameters, remappings=remappings,
                           arguments=arguments, **kwargs)


@pytest.fixture
def launch_module(monkeypatch):
    modules = {
        'launch': types.ModuleType('launch'),
        'launch.actions': types.ModuleType('launch.actions'),
        'launch.substitutions': types.ModuleType('launch.substitutions'),
        'launch_ros': types.ModuleType('launch_ros'),
        'launch_ros.actions': types.ModuleType('launch_ros.actions'),
    }
    modules['launch'].LaunchDescription = LaunchDescription
    modules['launch.actions'].DeclareLaunchArgument = DeclareLaunchArgument
    modules['launch.actions'].OpaqueFunction = OpaqueFunction
    modules['launch.substitutions'].LaunchConfiguration = LaunchConfiguration
    modules['launch_ros.actions'].Node = Node
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    spec = importlib.util.spec_from_file_location('multi_robot_launch', LAUNCH_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launched_nodes(module, **overrides):
    description = module.generate_launch_description()
    arguments = [e for e in description.entities if isinstance(e, DeclareLaunchArgument)]
    (opaque,) = [e for e in description.entities if isinstance(e, OpaqueFunction)]
    context = types.SimpleNamespace(launch_configurations={
        a.name: a.default_value for a in arguments})
    context.launch_configurations.update(overrides)
    return opaque.function(context, *opaque.args, **opaque.kwargs)


def expected_kwargs(spec):
    return dict(executable=spec.executable, package=spec.package, name=spec.name,
                namespace=spec.namespace or None, parameters=spec.parameters,
                remappings=spec.remappings, arguments=spec.arguments,
                additional_env=dict(spec.env) or None, output='screen')


def test_launch_arguments(launch_module):
    description = launch_module.generate_launch_description()
    arguments = {e.name: e for e in description.entities if isinstance(e, DeclareLaunchArgument)}
    assert set(arguments) == {'fleet_config', 'use_sim', 'use_sim_time', 'rviz', 'mode',
                              'record'}
    assert arguments['record'].default_value == ''         # no recorder unless asked
    assert arguments['use_sim_time'].default_value == ''      # the fleet file decides
    assert arguments['fleet_config'].default_value == str(
        share_dir() / 'config' / 'fleets' / 'circle.yaml')
    assert arguments['use_sim'].default_value == 'true'
    assert arguments['rviz'].default_value == 'false'
    assert arguments['mode'].choices == ['centralized', 'per_robot']


@pytest.mark.parametrize('overrides, use_sim, mode, rviz, use_sim_time, record', [
    ({}, True, 'centralized', False, None, None),
    ({'use_sim': 'false', 'rviz': 'true'}, False, 'centralized', True, None, None),
    ({'mode': 'per_robot', 'use_sim': 'True'}, True, 'per_robot', False, None, None),
    ({'use_sim': 'false', 'use_sim_time': 'true'}, False, 'centralized', False, True, None),
    ({'record': '/tmp/run1'}, True, 'centralized', False, None, '/tmp/run1'),
])
def test_launched_nodes_equal_the_description(launch_module, overrides, use_sim, mode, rviz,
                                              use_sim_time, record):
    nodes = launched_nodes(launch_module, **overrides)
    cfg = load_fleet_config(share_dir() / 'config' / 'fleets' / 'circle.yaml')
    specs = describe_graph(cfg, use_sim=use_sim, mode=mode, rviz=rviz, use_sim_time=use_sim_time,
                           record=record)
    assert [n.kwargs for n in nodes] == [expected_kwargs(s) for s in specs]
    recorders = [n.kwargs for n in nodes if n.kwargs['executable'] == 'recorder_node']
    assert [r['parameters'][0]['output'] for r in recorders] == ([record] if record else [])


def test_launch_with_another_fleet_file(launch_module, tmp_path):
    path = tmp_path / 'pair.yaml'
    path.write_text('robots:\n  - {name: left, start: [0, 0], goal: [2, 0]}\n'
                    '  - {name: right, start: [2, 0], goal: [0, 0]}\n'
                    'planner: {enabled: true}\n')
    nodes = launched_nodes(launch_module, fleet_config=str(path), mode='per_robot')
    specs = describe_graph(load_fleet_config(path), mode='per_robot')
    assert [n.kwargs for n in nodes] == [expected_kwargs(s) for s in specs]
    assert [(n.kwargs['executable'], n.kwargs['namespace']) for n in nodes] == [
        ('fleet_sim_node', None), ('orca_node', 'left'), ('orca_node', 'right'),
        ('planner_node', None)]


def test_a_sharded_fleet_launches_one_orca_node_per_shard(launch_module, tmp_path):
    path = tmp_path / 'trio.yaml'
    path.write_text('shards: 2\nrobots:\n  - {name: a, start: [0, 0], goal: [2, 0]}\n'
                    '  - {name: b, start: [2, 0], goal: [0, 0]}\n'
                    '  - {name: c, start: [4, 0], goal: [0, 2]}\n')
    nodes = launched_nodes(launch_module, fleet_config=str(path))
    assert [n.kwargs for n in nodes] == [expected_kwargs(s)
                                         for s in describe_graph(load_fleet_config(path))]
    assert [(n.kwargs['executable'], n.kwargs['name']) for n in nodes] == [
        ('fleet_sim_node', 'fleet_sim'), ('orca_node', 'orca_node_shard0'),
        ('orca_node', 'orca_node_shard1')]


def test_bad_fleet_file_stops_the_launch(launch_module, tmp_path, capsys):
    path = tmp_path / 'bad.yaml'
    path.write_text('robots:\n  - {name: a, start: [0, 0], radius: -1}\n'
                    '  - {name: b, start: [0.1, 0]}\n  - {name: c, start: [0.2, 0]}\n')
    with pytest.raises(SystemExit) as info:
        launched_nodes(launch_module, fleet_config=str(path))
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f'multi_robot.launch.py: fleet config {path}: robots[0].radius: -1 is below the '
        'minimum 0.01',
        f'multi_robot.launch.py: fleet config {path}: robots[2].start: [0.2, 0, 0] overlaps '
        'robots[1] (b at [0.1, 0, 0]): centres 0.1 m apart, radii 0.3 + 0.3 m']


def test_a_large_fleet_launches_its_nodes_with_the_dds_profile(launch_module, tmp_path,
                                                                monkeypatch):
    from orca_nav.bringup.graph import DDS_PROFILE_VARIABLES, LARGE_FLEET_ROBOTS
    for variable in DDS_PROFILE_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    path = tmp_path / 'large.yaml'
    path.write_text('shards: 2\nrobots:\n' + ''.join(
        f'  - {{name: r{i}, start: [{2 * (i % 30)}, {2 * (i // 30)}]}}\n'
        for i in range(LARGE_FLEET_ROBOTS + 1)))
    nodes = launched_nodes(launch_module, fleet_config=str(path))
    assert [n.kwargs for n in nodes] == [expected_kwargs(s)
                                         for s in describe_graph(load_fleet_config(path))]
    profile = str(share_dir() / 'config' / 'dds' / 'fastdds_large_fleet.xml')
    assert all(n.kwargs['additional_env'] == dict.fromkeys(DDS_PROFILE_VARIABLES, profile)
               for n in nodes)
