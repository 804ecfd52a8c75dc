"""Fleet files are checked before anything starts: every problem on its own line, naming the
field, the value and the reason; `orca-nav demo` and the launch file refuse with exit status 2."""
import io
import re

import numpy as np
import pytest
import yaml

from orca_nav.bringup.cli import main as cli_main
from orca_nav.bringup.fleet_file import (FleetFileError, load_fleet_config,
                                         load_fleet_config_or_exit)
from orca_nav.core.grid import OccupancyGrid


def robot(name, start, goal=None, **fields):
    entry = {'name': name, 'start': list(start), **fields}
    if goal is not None:
        entry['goal'] = list(goal)
    return entry


@pytest.fixture
def room(tmp_path):
    """A 4 m x 4 m room (0.1 m cells, origin 0, 0) with a pillar over x, y in [1.5, 2.5)."""
    occupied = np.zeros((40, 40), dtype=bool)
    occupied[15:25, 15:25] = True
    yaml_path, _ = OccupancyGrid(occupied, 0.1, (0.0, 0.0)).save_map_yaml(tmp_path / 'room')
    return yaml_path


def problems_of(raw, **kwargs):
    with pytest.raises(FleetFileError) as info:
        load_fleet_config(raw, **kwargs)
    return info.value.problems


def test_a_good_fleet_on_a_map_loads(room):
    cfg = load_fleet_config({'map': str(room), 'robots': [
        robot('a', [0.5, 0.5], [3.5, 3.5], radius=0.3),
        robot('b', [3.5, 0.5], [0.5, 3.5], radius=0.3)]})
    assert cfg.robot_names == ('a', 'b')


def test_start_inside_an_obstacle_within_the_robot_radius(room):
    # The pillar's edge is at x = 1.5: a centre 0.2 m away with radius 0.3 overlaps it.
    lines = problems_of({'map': str(room), 'robots': [
        robot('a', [0.5, 0.5]), robot('b', [1.3, 2.0, 0.0], radius=0.3),
        robot('c', [2.0, 2.0])]})
    assert lines == [
        'robots[1].start: [1.3, 2, 0] is inside an obstacle: the robot\'s disc (radius 0.3 m) '
        'overlaps an occupied cell or the map border',
        'robots[2].start: [2, 2, 0] is inside an obstacle: the robot\'s disc (radius 0.3 m) '
        'overlaps an occupied cell or the map border']
    # the same centre with a smaller disc is free
    load_fleet_config({'map': str(room), 'robots': [robot('b', [1.3, 2.0], radius=0.15)]})


def test_goal_inside_an_obstacle_and_outside_the_map(room):
    lines = problems_of({'map': str(room), 'robots': [
        robot('a', [0.5, 0.5], [2.0, 1.6]),
        {'name': 'b', 'start': [3.5, 0.5], 'goals': [[3.5, 3.5], [9.0, 1.0]]}]})
    assert lines[0].startswith('robots[0].goal: [2, 1.6, 0] is inside an obstacle')
    assert lines[1] == ('robots[1].goals[1]: [9, 1, 0] is outside the map (the map spans '
                        'x 0..4, y 0..4)')
    assert len(lines) == 2


def test_start_outside_the_map(room):
    assert problems_of({'map': str(room), 'robots': [robot('a', [-1.0, 2.0])]}) == [
        'robots[0].start: [-1, 2, 0] is outside the map (the map spans x 0..4, y 0..4)']


def test_two_robots_overlapping_at_start():
    lines = problems_of({'robots': [robot('a', [0.0, 0.0], radius=0.3),
                                    robot('b', [5.0, 0.0]),
                                    robot('c', [0.5, 0.0], radius=0.3)]})
    assert lines == ['robots[2].start: [0.5, 0, 0] overlaps robots[0] (a at [0, 0, 0]): '
                     'centres 0.5 m apart, radii 0.3 + 0.3 m']
    # touching exactly is not an overlap (the simulator's contact test is strict too)
    load_fleet_config({'robots': [robot('a', [0.0, 0.0], radius=0.3),
                                  robot('b', [0.6, 0.0], radius=0.3)]})


@pytest.mark.parametrize('entry, line', [
    (robot('a', [0.0, 0.0]), r"robots\[1\]\.name: duplicate robot name 'a' \(also robots\[0\]\)"),
    (robot('b', [3.0, 0.0], kinematics='boat'),
     r"robots\[1\]\.kinematics: unknown kinematics 'boat' \(one of: holonomic"),
    (robot('b', [3.0, float('nan')]), r'robots\[1\]\.start\[1\]: nan is not finite'),
    (robot('b', [3.0, 0.0], [float('inf'), 0.0]), r'robots\[1\]\.goal\[0\]: inf is not finite'),
    (robot('b', [3.0, 0.0], radius='big'), r"robots\[1\]\.radius: expected a number, got 'big'"),
    (robot('b', ['x', 0.0]), r"robots\[1\]\.start\[0\]: expected a number, got 'x'"),
    (robot('b', [3.0, 0.0], max_speed=float('inf')), r'robots\[1\]\.max_speed: inf is not finite'),
])
def test_schema_problems_name_field_value_and_reason(entry, line):
    lines = problems_of({'robots': [robot('a', [0.0, 0.0]), entry]})
    assert len(lines) == 1 and re.match(line, lines[0]), lines


def test_every_robot_problem_is_listed_one_line_each():
    lines = problems_of({'robots': [robot('a', [0.0, 0.0], kinematics='boat'),
                                    robot('b', [0.0, 'y']), robot('b', [1.0, 1.0]),
                                    robot('c', [2.0, 2.0], radius=-1.0)]})
    assert [line.split(':')[0] for line in lines] == [
        'robots[0].kinematics', 'robots[1].start[1]', 'robots[2].name', 'robots[3].radius']


def test_missing_map_file_and_empty_file(tmp_path):
    assert problems_of({'map': 'nowhere.yaml', 'robots': [robot('a', [0.0, 0.0])]},
                       base_dir=tmp_path) == [f'map: file {tmp_path / "nowhere.yaml"} not found']
    empty = tmp_path / 'empty.yaml'
    empty.write_text('')
    with pytest.raises(FleetFileError) as info:
        load_fleet_config(empty)
    assert str(info.value) == (f'fleet config {empty}: empty config (expected a mapping with a '
                               '`robots` list)')


def test_an_unreadable_map_image_is_a_problem(tmp_path):
    (tmp_path / 'bad.pgm').write_bytes(b'P5\n2 2\n255\n\x00')      # two pixel rows short
    (tmp_path / 'bad.yaml').write_text('image: bad.pgm\nresolution: 0.1\norigin: [0, 0, 0]\n')
    lines = problems_of({'map': 'bad.yaml', 'robots': [robot('a', [0.0, 0.0])]},
                        base_dir=tmp_path)
    assert len(lines) == 1 and lines[0].startswith(f'map: {tmp_path / "bad.yaml"} cannot be read')


def write_fleet(path, raw):
    path.write_text(yaml.safe_dump(raw))
    return path


def test_demo_refuses_with_exit_status_2_and_one_line_per_problem(tmp_path, room, capsys):
    path = write_fleet(tmp_path / 'bad.yaml', {'map': str(room), 'robots': [
        robot('a', [2.0, 2.0], [3.5, 3.5]), robot('b', [0.5, 0.5], [9.0, 9.0]),
        robot('c', [0.6, 0.5], [3.5, 0.5])]})
    assert cli_main(['demo', '--scenario', str(path), '--out', str(tmp_path / 'out')]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f'orca-nav demo: fleet config {path}: robots[0].start: [2, 2, 0] is inside an obstacle: '
        'the robot\'s disc (radius 0.3 m) overlaps an occupied cell or the map border',
        f'orca-nav demo: fleet config {path}: robots[1].goal: [9, 9, 0] is outside the map (the '
        'map spans x 0..4, y 0..4)',
        f'orca-nav demo: fleet config {path}: robots[2].start: [0.6, 0.5, 0] overlaps robots[1] '
        '(b at [0.5, 0.5, 0]): centres 0.1 m apart, radii 0.3 + 0.3 m']
    assert not (tmp_path / 'out').exists()      # nothing started


def launch_refusal(path):
    """(exit status, what was written) when the launch file's loader refuses `path`."""
    stream = io.StringIO()
    with pytest.raises(SystemExit) as info:
        load_fleet_config_or_exit(path, 'multi_robot.launch.py', stream)
    return info.value.code, stream.getvalue()


def test_launch_path_refuses_with_exit_status_2(tmp_path):
    """The launch file loads its fleet with load_fleet_config_or_exit (checked by
    test_launch_file.py against the real file); here: what that function does."""
    path = write_fleet(tmp_path / 'dup.yaml', {'robots': [robot('a', [0.0, 0.0]),
                                                          robot('a', [3.0, 0.0])]})
    assert launch_refusal(path) == (2, f'multi_robot.launch.py: fleet config {path}: '
                                       "robots[1].name: duplicate robot name 'a' (also robots[0])\n")


def test_too_many_shards_refused_with_one_line_and_exit_status_2(tmp_path):
    path = write_fleet(tmp_path / 'shards.yaml', {'robots': [robot('a', [0.0, 0.0]),
                                                             robot('b', [3.0, 0.0])],
                                                  'shards': 4})
    assert launch_refusal(path) == (2, f'multi_robot.launch.py: fleet config {path}: shards: 4 '
                                       'shards for 2 robots (each shard commands at least one '
                                       'robot)\n')
