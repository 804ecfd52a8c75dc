"""Fleet config loading and validation: good configs load, bad ones name the field or file."""
import math
from pathlib import Path

import pytest
import yaml

from orca_nav.bringup.fleet_file import DemoSettings, load_fleet_config
from orca_nav.bringup.scenarios import (
    GENERATORS,
    circle,
    fleets_dir,
    scenario_config,
    scenario_names,
    write_fleet_config,
)
from orca_nav.core.fleet.robots import ROBOT_FIELDS


def robot(name='robot0', **fields):
    return {'name': name, 'start': [0.0, 0.0, 0.0], **fields}


def fleet(*robots, **top):
    return {'robots': list(robots) or [robot()], **top}


def write_map(folder: Path, stem='room') -> Path:
    """A free 6 m x 6 m map from (-1, -1) with one occupied cell in its top-left corner (the
    robots of these tests start and end inside it, clear of that cell)."""
    pixels = bytearray([254] * 60 * 60)
    pixels[0] = 0
    (folder / f'{stem}.pgm').write_bytes(b'P5\n60 60\n255\n' + bytes(pixels))
    path = folder / f'{stem}.yaml'
    path.write_text(yaml.safe_dump({'image': f'{stem}.pgm', 'resolution': 0.1,
                                    'origin': [-1.0, -1.0, 0.0], 'negate': 0,
                                    'occupied_thresh': 0.65, 'free_thresh': 0.196}))
    return path


def test_full_config_from_file(tmp_path):
    maps = tmp_path / 'maps'
    maps.mkdir()
    write_map(maps)
    (tmp_path / 'fleets').mkdir()
    path = tmp_path / 'fleets' / 'two.yaml'
    path.write_text("""
global_frame: world
map: ../maps/room.yaml
defaults: {kinematics: diff_drive, radius: 0.2}
robots:
  - {name: alpha, start: [1, 2], goal: [3, 4, 0.5]}
  - {name: beta, kinematics: car, wheelbase: 0.4, start: [0, 0, 1.0],
     goals: [[1, 1], [2, 2, 3.0]]}
planner: {enabled: true, plan_time_budget: 0.5}
orca_node: {time_horizon: 4.0, deadlock: {stall_time: 2.0}}
demo: {duration: 20, goal_tolerance: 0.1}
""")
    cfg = load_fleet_config(path)
    assert cfg.name == 'two' and cfg.global_frame == 'world' and cfg.source == path
    assert cfg.map_path == (tmp_path / 'maps' / 'room.yaml').resolve()
    alpha, beta = cfg.robots
    assert (alpha.kinematics, alpha.radius, alpha.max_speed) == ('diff_drive', 0.2, 1.0)
    assert alpha.start == (1.0, 2.0, 0.0) and alpha.goals == ((3.0, 4.0, 0.5),)
    assert (beta.kinematics, beta.wheelbase, beta.radius) == ('car', 0.4, 0.2)
    assert beta.goals == ((1.0, 1.0, 0.0), (2.0, 2.0, 3.0))
    assert cfg.planner_enabled
    assert dict(cfg.node_parameters['planner_node']) == {'plan_time_budget': 0.5}
    # nested parameter dicts flatten to ROS's dotted names
    assert dict(cfg.node_parameters['orca_node']) == {'time_horizon': 4.0,
                                                      'deadlock.stall_time': 2.0}
    assert cfg.demo == DemoSettings(duration=20.0, goal_tolerance=0.1)
    assert alpha.ros_parameters() == {
        'kinematics': 'diff_drive', 'start': [1.0, 2.0, 0.0], 'goal': [3.0, 4.0, 0.5],
        'radius': 0.2, 'max_speed': 1.0, 'max_accel': 2.0, 'max_decel': 0.0, 'max_yaw_rate': 2.0,
        'wheelbase': 0.5, 'min_turning_radius': 1.0, 'responsibility': 0.5}
    assert cfg.robot('beta') is beta
    with pytest.raises(ValueError, match="robot 'gamma'"):
        cfg.robot('gamma')


def test_round_trip_through_yaml(tmp_path):
    write_map(tmp_path)
    cfg = load_fleet_config(fleet(robot('a', goals=[[1, 1], [2, 2]]),
                                  robot('b', radius=0.5, start=[2.0, 0.0, 0.0]),
                                  map='room.yaml', fleet_sim_node={'sim_rate': 50.0}),
                            base_dir=tmp_path)
    path = tmp_path / 'out.yaml'
    write_fleet_config(cfg, path)
    assert load_fleet_config(path) == cfg


def test_shards_default_to_one_and_round_trip(tmp_path):
    assert load_fleet_config(fleet()).shards == 1
    cfg = load_fleet_config(fleet(robot('a'), robot('b', start=[2.0, 0.0]), shards=2))
    assert cfg.shards == 2
    path = tmp_path / 'out.yaml'
    write_fleet_config(cfg, path)
    assert load_fleet_config(path) == cfg


def test_robot_without_goal_has_no_goal_parameter():
    cfg = load_fleet_config(fleet(robot()))
    assert cfg.robots[0].goals == () and 'goal' not in cfg.robots[0].ros_parameters()


@pytest.mark.parametrize('raw, message', [
    (None, 'empty config'),
    ([1, 2], 'expected a mapping at the top level'),
    ({}, 'robots: missing'),
    ({'robots': []}, 'robots: expected a non-empty list'),
    (fleet(robot(), extra=1), r'^fleet config: extra: unknown key'),
    (fleet(robot(colour='red')), r'robots\[0\]\.colour: unknown key'),
    (fleet(robot('r0'), robot('r0')), r"robots\[1\]\.name: duplicate robot name 'r0'"),
    (fleet(robot('0bad')), r"robots\[0\]\.name: '0bad' is not a valid robot name"),
    (fleet(robot('a/b')), r"robots\[0\]\.name"),
    (fleet(robot(kinematics='boat')), r"robots\[0\]\.kinematics: unknown kinematics 'boat'"),
    (fleet(robot(), robot('r1'), robot('r2'), robot('r3', radius=float('nan'))),
     r'robots\[3\]\.radius: nan is not finite'),
    (fleet(robot(radius=-1.0)), r'robots\[0\]\.radius: -1.0 is below the minimum'),
    (fleet(robot(max_speed='fast')), r"robots\[0\]\.max_speed: expected a number"),
    (fleet(robot(max_accel=True)), r"robots\[0\]\.max_accel: expected a number"),
    (fleet({'name': 'r0'}), r'robots\[0\]\.start: missing'),
    (fleet(robot(start=[0.0, float('inf')])), r'robots\[0\]\.start\[1\]: inf is not finite'),
    (fleet(robot(goal=[1.0])), r'robots\[0\]\.goal: expected \[x, y\]'),
    (fleet(robot(goals=[[0, 0], [1, 'x']])), r'robots\[0\]\.goals\[1\]\[1\]'),
    (fleet(robot(goal=[1, 1], goals=[[1, 1]])), r'robots\[0\]\.goals: give either'),
    (fleet(defaults={'kinematics': 'tank'}), r'defaults\.kinematics: unknown kinematics'),
    (fleet(defaults={'name': 'x'}), r'defaults\.name: unknown key'),
    (fleet(global_frame=''), 'global_frame: expected a non-empty string'),
    (fleet(planner={'enabled': 'yes'}), 'planner.enabled: expected true or false'),
    (fleet(planner={'rate': 1.0}, planner_node={'rate': 2.0}), 'planner.rate: also given'),
    (fleet(orca_node={'robot0.radius': 1.0}), r'orca_node\.robot0\.radius: set by the fleet'),
    (fleet(orca_node={'robots': ['x']}), r'orca_node\.robots: set by the fleet'),
    (fleet(orca_node={'rate': float('nan')}), r'orca_node\.rate: nan is not finite'),
    (fleet(orca_node={'gains': []}), r'orca_node\.gains: an empty list'),
    (fleet(orca_node={'gains': [1.0, 'a']}), r'orca_node\.gains: a list parameter'),
    (fleet(orca_node={'bad-name': 1}), r'orca_node\.bad-name: not a valid parameter name'),
    (fleet(orca_node=[1]), 'orca_node: expected a mapping'),
    (fleet(demo={'duration': 0}), r'demo\.duration: 0 is below the minimum'),
    (fleet(demo={'speedup': 2}), r'demo\.speedup: unknown key'),
    (fleet(map='missing.yaml'), r'map: file .*missing\.yaml not found'),
    (fleet(shards=0), r'^fleet config: shards: 0 is below the minimum 1$'),
    (fleet(shards=2.0), r'^fleet config: shards: expected an integer, got 2\.0$'),
    (fleet(shards=True), r'^fleet config: shards: expected an integer, got True$'),
    (fleet(shards='4'), r"^fleet config: shards: expected an integer, got '4'$"),
    (fleet(shards=5000), r'^fleet config: shards: 5000 is above the maximum 1024$'),
    (fleet(robot('a'), robot('b', start=[2.0, 0.0]), shards=3),
     r'^fleet config: shards: 3 shards for 2 robots \(each shard commands at least one robot\)$'),
    (fleet(orca_node={'shard_count': 2}), r'orca_node\.shard_count: set by the fleet config'),
    (fleet(orca_node={'mode': 'shard'}), r'orca_node\.mode: set by the fleet config'),
])
def test_bad_config_names_the_field(raw, message):
    with pytest.raises(ValueError, match=message):
        load_fleet_config(raw)


def test_file_errors_name_the_file(tmp_path):
    missing = tmp_path / 'nope.yaml'
    with pytest.raises(ValueError, match=f'fleet config: file {missing} not found'):
        load_fleet_config(missing)
    broken = tmp_path / 'broken.yaml'
    broken.write_text('robots: [\n')
    with pytest.raises(ValueError, match=f'fleet config: {broken} is not valid YAML'):
        load_fleet_config(broken)
    empty = tmp_path / 'empty.yaml'
    empty.write_text('')
    with pytest.raises(ValueError, match=f'fleet config {empty}: empty config'):
        load_fleet_config(empty)
    # a map YAML whose image is missing names the image and the YAML
    (tmp_path / 'm.yaml').write_text('image: gone.pgm\nresolution: 0.1\norigin: [0, 0, 0]\n')
    with pytest.raises(ValueError,
                       match=r'map: image .*gone\.pgm \(named in .*m\.yaml\) not found'):
        load_fleet_config(fleet(map='m.yaml'), base_dir=tmp_path)


def test_robot_fields_come_from_the_one_robot_schema():
    """Fleet files and the per-robot ROS parameters both derive from core.fleet.robots: the same
    fields, defaults and ranges, and a value the schema refuses is refused by both."""
    from orca_nav.parameters.shared import POSE_FIELDS, ROBOT_SPECS
    specs = {spec.name: spec for spec in ROBOT_SPECS}
    assert list(specs) == [f.name for f in ROBOT_FIELDS] + list(POSE_FIELDS)
    for field in ROBOT_FIELDS:
        spec = specs[field.name]
        assert (spec.default, spec.min, spec.max, spec.choices) == \
            (field.default, field.min, field.max, field.choices)
    loaded = load_fleet_config(fleet()).robots[0]
    assert loaded.field_values() == {f.name: f.default for f in ROBOT_FIELDS}
    with pytest.raises(ValueError, match=r'robots\[0\]\.radius: 60\.0 is above the maximum 50\.0'):
        load_fleet_config(fleet(robot('r', radius=60.0)))
    assert 'above the maximum 50.0' in specs['radius'].validate('r.radius', 60.0)


@pytest.mark.parametrize('name', list(GENERATORS))
def test_shipped_fleet_files_match_their_generators(name):
    assert load_fleet_config(fleets_dir() / f'{name}.yaml') == scenario_config(name)


@pytest.mark.parametrize('name, count', [
    ('circle', 2), ('circle', 16), ('circle', 60), ('crossing', 4), ('crossing', 16),
    ('crossing', 37), ('corridor', 2), ('corridor', 8), ('corridor', 32), ('blocks', 4),
    ('blocks', 30), ('blocks', 100)])
def test_generated_scenarios_are_well_posed(name, count):
    """Every robot has one goal; no two start or goal discs overlap (with a margin); on a map,
    starts and goals are in free space with room to spare."""
    import numpy as np
    from scipy.spatial.distance import pdist

    from orca_nav.core.grid import OccupancyGrid
    cfg = GENERATORS[name](count)
    assert len(cfg.robots) == count and len(set(cfg.robot_names)) == count
    starts = np.array([r.start[:2] for r in cfg.robots])
    goals = np.array([r.goals[0][:2] for r in cfg.robots])
    gap = 2 * max(r.radius for r in cfg.robots) + 0.2
    assert pdist(starts).min() > gap and pdist(goals).min() > gap
    travel = np.linalg.norm(goals - starts, axis=1)
    assert travel.min() > 1.0
    # the time limit leaves room for the longest trip at full speed, twice over
    assert cfg.demo.duration > 2 * travel.max() / min(r.max_speed for r in cfg.robots)
    if cfg.map_path is not None:
        grid = OccupancyGrid.from_map_yaml(cfg.map_path)
        radius = max(r.radius for r in cfg.robots)
        assert grid.clearance_at(starts).min() > radius + 0.3
        assert grid.clearance_at(goals).min() > radius + 0.3


def test_circle_robots_swap_to_the_antipode():
    cfg = circle(8)
    for r in cfg.robots:
        assert math.isclose(r.goals[0][0], -r.start[0], abs_tol=1e-3)
        assert math.isclose(r.goals[0][1], -r.start[1], abs_tol=1e-3)


def test_unknown_scenario_and_bad_sizes():
    with pytest.raises(ValueError, match="scenario 'nowhere': unknown"):
        scenario_config('nowhere')
    with pytest.raises(ValueError, match="robots: scenario 'circle' takes 2..500 robots, got 1"):
        scenario_config('circle', 1)
    assert scenario_names()[:4] == ['circle', 'crossing', 'corridor', 'blocks']
    with pytest.raises(ValueError, match="robots: scenario 'blocks' takes 4..100 robots"):
        scenario_config('blocks', 101)


def test_fixed_scenarios_come_from_fleet_files(tmp_path, monkeypatch):
    """A scenario without a generator is config/fleets/<name>.yaml (e.g. warehouse)."""
    import orca_nav.bringup.scenarios as scenarios
    monkeypatch.setattr(scenarios, 'fleets_dir', lambda: tmp_path)
    (tmp_path / 'yard.yaml').write_text(
        'robots:\n  - {name: r0, start: [0, 0], goals: [[1, 0], [1, 1]]}\n')
    cfg = scenarios.scenario_config('yard')
    assert cfg.name == 'yard' and cfg.robots[0].goals == ((1.0, 0.0, 0.0), (1.0, 1.0, 0.0))
    assert 'yard' in scenarios.scenario_names()
    with pytest.raises(ValueError, match="robots: scenario 'yard' is the fixed fleet"):
        scenarios.scenario_config('yard', robots=3)
