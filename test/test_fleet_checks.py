"""Fleet files are checked before anything starts: every problem on its own line, naming the
field, the value and the reason; `orca-nav demo` and the launch file refuse with exit status 2."""
import io
import re

import numpy as np
import pytest
import yaml

from orca_nav.bringup.cli import main as cli_main
from orca_nav.bringup.fleet_file import FleetFileError, load_fleet_config, load_fleet_config_or_exit
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
                                       "robots[1].name: duplicate robot name 'a' "
                                       "(also robots[0])\n")


def test_too_many_shards_refused_with_one_line_and_exit_status_2(tmp_path):
    path = write_fleet(tmp_path / 'shards.yaml', {'robots': [robot('a', [0.0, 0.0]),
                                                             robot('b', [3.0, 0.0])],
                                                  'shards': 4})
    assert launch_refusal(path) == (2, f'multi_robot.launch.py: fleet config {path}: shards: 4 '
                                       'shards for 2 robots (each shard commands at least one '
                                       'robot)\n')


def test_a_bad_node_parameter_is_refused_before_any_node_starts_naming_it(tmp_path, capsys):
    """orca_node's control_rate, not the simulator's odom_rate the demo derives from it (the
    simulator starts first and used to be the one refusing it)."""
    path = write_fleet(tmp_path / 'rate.yaml', {'robots': [robot('a', [0.0, 0.0], [3.0, 0.0])],
                                                'orca_node': {'control_rate': -5}})
    assert cli_main(['demo', '--scenario', str(path), '--out', str(tmp_path / 'out')]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f'orca-nav demo: fleet config {path}: orca_node.control_rate: -5.0 is below the minimum '
        '0.5 (allowed: 0.5 to 1000.0)']
    assert not (tmp_path / 'out').exists()      # nothing started


def test_node_sections_name_unknown_parameters_and_where_they_were_given():
    lines = problems_of({'robots': [robot('a', [0.0, 0.0])],
                         'planner': {'enabled': True, 'plan_time_budget': 0},
                         'fleet_sim_node': {'rate': 50.0}})
    assert lines == [
        'planner.plan_time_budget: 0.0 is below the minimum 0.01 (allowed: 0.01 to 3600.0)',
        "fleet_sim_node.rate: fleet_sim_node has no parameter 'rate' (did you mean sim_rate or "
        'scan.rate or odom_rate?)']


def test_a_long_list_of_problems_is_cut_and_counted(tmp_path):
    """50 robots in a row 0.1 m apart: one line per overlapping robot, the first 20 shown."""
    path = write_fleet(tmp_path / 'row.yaml', {'robots': [
        robot(f'r{k}', [0.1 * k, 0.0], [0.1 * k, 10.0 + k]) for k in range(50)]})
    with pytest.raises(FleetFileError) as info:
        load_fleet_config(path)
    assert len(info.value.problems) == 49
    lines = str(info.value).splitlines()
    assert len(lines) == 21
    assert lines[-1] == f'fleet config {path}: ... and 29 more problems (49 in all)'
    assert lines[0] == (f'fleet config {path}: robots[1].start: [0.1, 0, 0] overlaps robots[0] '
                        '(r0 at [0, 0, 0]): centres 0.1 m apart, radii 0.3 + 0.3 m')
    assert lines[2].endswith('centres 0.3 m apart, radii 0.3 + 0.3 m; and 2 more robots')


def test_two_robots_sent_to_one_goal_are_refused_naming_both(tmp_path, capsys):
    path = write_fleet(tmp_path / 'same_goal.yaml', {'robots': [
        robot('a', [0.0, 0.0], [3.0, 0.0]), robot('b', [0.0, 2.0], [3.0, 0.33]),
        robot('c', [0.0, 4.0], [3.0, -0.6])]})
    assert cli_main(['demo', '--scenario', str(path), '--out', str(tmp_path / 'out')]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f'orca-nav demo: fleet config {path}: robots[1].goal: [3, 0.33, 0] overlaps the goal of '
        'robots[0] (a at [3, 0, 0]): centres 0.33 m apart, radii 0.3 + 0.3 m: b and a cannot '
        'both end there']        # c's goal 0.6 m from a's touches it exactly: no overlap


def test_a_goal_on_a_robot_that_stays_put_and_the_last_of_several_goals():
    lines = problems_of({'robots': [
        {'name': 'a', 'start': [0.0, 0.0], 'goals': [[5.0, 0.0], [3.0, 0.0]]},
        robot('idle', [3.2, 0.0]), robot('b', [0.0, 2.0], [5.0, 0.0])]})
    # a's first goal is b's goal too: goals visited on the way are not where robots end.
    assert lines == [
        'robots[0].goals[1]: [3, 0, 0] overlaps the start, where it stays (it has no goal), of '
        'robots[1] (idle at [3.2, 0, 0]): centres 0.2 m apart, radii 0.3 + 0.3 m: a and idle '
        'cannot both end there']


def test_drone_goals_overlap_by_the_layer_rule():
    def drone(name, start, start_z, goal, goal_z):
        return {'name': name, 'kinematics': 'quadrotor', 'radius': 0.3, 'start': start,
                'start_z': start_z, 'goal': goal, 'goal_z': goal_z}
    # one above the other (1 m apart) and a drone above a ground robot's goal: both fine
    load_fleet_config({'robots': [drone('d0', [0, 0], 1.5, [5, 0], 1.5),
                                  drone('d1', [0, 2], 1.5, [5, 0], 2.5),
                                  robot('g', [0, 4], [5, 0])]})
    lines = problems_of({'robots': [drone('d0', [0, 0], 1.5, [5, 0], 1.5),
                                    drone('d1', [0, 2], 1.5, [5, 0.2], 1.7)]})
    assert len(lines) == 1 and lines[0].startswith('robots[1].goal: [5, 0.2, 0] overlaps the '
                                                   'goal of robots[0] (d0 at [5, 0, 0]): '
                                                   'centres 0.283 m apart')
