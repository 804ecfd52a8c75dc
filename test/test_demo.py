"""`orca-nav demo`: the CLI end to end over real DDS, and its helpers."""
import io
import json

import pytest

from orca_nav.bringup.cli import build_parser, main
from orca_nav.bringup.demo import Progress, load_scenario, with_overrides


def test_demo_arguments_and_defaults():
    args = build_parser().parse_args(['demo'])
    assert (args.scenario, args.robots, args.out, args.duration, args.mode, args.seed) == \
        ('circle', None, None, None, 'centralized', None)
    args = build_parser().parse_args(['demo', '--scenario', 'corridor', '--robots', '4',
                                      '--mode', 'per_robot', '--seed', '7', '--duration', '9'])
    assert (args.scenario, args.robots, args.mode, args.seed, args.duration) == \
        ('corridor', 4, 'per_robot', 7, 9.0)
    with pytest.raises(SystemExit):
        build_parser().parse_args(['demo', '--mode', 'swarm'])


def test_scenarios_by_name_and_by_file(tmp_path):
    assert len(load_scenario('circle').robots) == 16
    assert len(load_scenario('crossing', 8).robots) == 8
    path = tmp_path / 'pair.yaml'
    path.write_text('robots:\n  - {name: a, start: [0, 0], goal: [1, 0]}\n')
    assert load_scenario(str(path)).robot_names == ('a',)
    with pytest.raises(ValueError, match='resizes built-in scenarios only'):
        load_scenario(str(path), 3)


def test_overrides_set_duration_and_seed():
    cfg = with_overrides(load_scenario('circle', 4), duration=12.5, seed=3)
    assert cfg.demo.duration == 12.5
    assert cfg.node_parameters['fleet_sim_node']['seed'] == 3
    assert with_overrides(cfg) == cfg
    with pytest.raises(ValueError, match='duration: must be > 0'):
        with_overrides(cfg, duration=0.0)


def test_startup_errors_exit_with_status_2(capsys, tmp_path):
    assert main(['demo', '--scenario', 'nowhere']) == 2
    assert "scenario 'nowhere': unknown" in capsys.readouterr().err
    bad = tmp_path / 'bad.yaml'
    bad.write_text('robots:\n  - {name: a, start: [0, 0], kinematics: boat}\n')
    assert main(['demo', '--scenario', str(bad)]) == 2
    assert 'robots[0].kinematics' in capsys.readouterr().err
    assert main(['demo', '--robots', '2', '--executor', 'fast', '--out', str(tmp_path)]) == 2
    assert "executor: 'fast' is not one of events, single_threaded" in capsys.readouterr().err


def test_progress_prints_plain_lines_when_not_a_terminal():
    stream = io.StringIO()
    progress = Progress(stream, plain_every_s=5.0)
    for step in range(25):
        progress.update(step * 0.5, step // 5, 4, 0)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and '\r' not in stream.getvalue()       # t = 0, 5, 10 s
    assert lines[1].split() == ['t', '=', '5.0', 's', 'at', 'goal', '2/4', 'collisions', '0']
    several = io.StringIO()
    Progress(several).update(1.0, 0, 4, 0, goals=(5, 12))
    assert several.getvalue().split()[-2:] == ['goals', '5/12']


@pytest.mark.ros
@pytest.mark.slow
def test_circle_demo_reaches_every_goal_without_collisions(tmp_path, capsys):
    """The README's main command (16 robots swap across a circle), output in a temp folder."""
    out = tmp_path / 'demo'
    status = main(['demo', '--scenario', 'circle', '--out', str(out)])
    captured = capsys.readouterr()
    assert status == 0, captured.err[-3000:]
    report = json.loads((out / 'report.json').read_text())
    fleet = report['fleet']
    assert fleet['all_reached'] and fleet['reached'] == 16 and fleet['collisions'] == 0
    assert fleet['min_separation'] > 0.0
    cfg = load_scenario('circle')
    for robot in cfg.robots:
        entry = report['robots'][robot.name]
        assert entry['reached'] and entry['collisions'] == 0
        # a swap across the circle: at least the straight-line distance
        straight = ((robot.goals[0][0] - robot.start[0]) ** 2
                    + (robot.goals[0][1] - robot.start[1]) ** 2) ** 0.5
        assert entry['path_length'] >= straight - 2 * cfg.demo.goal_tolerance
        assert 0 < entry['time_to_goal'] <= fleet['makespan'] <= cfg.demo.duration
    assert (out / 'trajectories.png').read_bytes()[:4] == b'\x89PNG'
    assert '16/16 robots at their goals' in captured.out


def test_bench_passes_areas_and_options_to_bench_run(capfd):
    """`orca-nav bench` runs `python -m bench.run` in the checkout with the same arguments."""
    assert main(['bench', '--quick', 'no_such_area']) == 2
    assert "unknown area 'no_such_area'" in capfd.readouterr().err
    with pytest.raises(SystemExit):
        main(['demo', '--quick'])          # options unknown to demo are still refused


@pytest.mark.ros
def test_mission_refuses_to_share_odometry_topics_with_another_fleet():
    """A second publisher on /robot0/odom (another fleet on this ROS domain) stops the run."""
    from nav_msgs.msg import Odometry
    from rclpy.node import Node

    from orca_nav.bringup.graph import describe_graph
    from orca_nav.bringup.mission import DemoMission
    from orca_nav.bringup.runner import run_graph
    cfg = load_scenario('circle', 2)
    specs = [s for s in describe_graph(cfg) if s.executable == 'fleet_sim_node']
    with run_graph(specs) as graph:
        mission = graph.add_node(DemoMission(cfg, context=graph.context))
        assert graph.wait_for(mission.started, 30.0) and mission.error() is None
        intruder = graph.add_node(Node('other_fleet', context=graph.context))
        intruder.create_publisher(Odometry, '/robot0/odom', 10)
        assert graph.wait_for(lambda: mission.error() is not None, 30.0)
        assert '/robot0/odom has another publisher' in mission.error()


@pytest.mark.ros
@pytest.mark.slow
def test_the_demo_on_simulated_time_in_lockstep_gives_the_same_report_twice(tmp_path):
    """Lockstep: each exchange gets the command computed from its own odometry, so the run
    does not depend on the machine's load or on when the CLI looks."""
    reports = []
    for run in ('first', 'second'):
        assert main(['demo', '--scenario', 'crossing', '--robots', '8',
                     '--out', str(tmp_path / run)]) == 0
        reports.append((tmp_path / run / 'report.json').read_text())
    assert reports[0] == reports[1]
    assert json.loads(reports[0])['clock'] == 'simulated, lockstep'


def test_exit_status_is_1_on_a_contact_but_a_person_at_a_robot_at_rest():
    from orca_nav.bringup.demo import demo_exit_status
    from orca_nav.bringup.report import empty_contact_tally

    def report(separation=0.1, all_reached=True, **contacts):
        tally = empty_contact_tally()
        for name, count in contacts.items():
            category, state = name.rsplit('_', 1)
            tally[category][state] = count
        return {'fleet': {'contacts': tally, 'min_separation': separation,
                          'all_reached': all_reached}}
    assert demo_exit_status(report()) == 0
    assert demo_exit_status(report(separation=None)) == 0      # a single robot
    assert demo_exit_status(report(robot_robot_moving=1)) == 1
    assert demo_exit_status(report(robot_robot_rest=1)) == 1   # robots touch: never fine
    assert demo_exit_status(report(robot_obstacle_rest=1)) == 1
    assert demo_exit_status(report(robot_person_moving=1)) == 1
    assert demo_exit_status(report(robot_person_rest=3)) == 0  # the passive guarantee
    assert demo_exit_status(report(separation=-0.01)) == 1     # even with no report received
    assert demo_exit_status(report(all_reached=False)) == 1


@pytest.mark.ros
def test_contact_at_start_is_counted_and_fails_the_demo(tmp_path):
    """Two robots overlapping at start (the fleet file check refuses that, so the config is
    built past it): the simulator's contact at t = 0 happens before the demo's recorder may
    have connected, and must still be counted, and the run must not pass."""
    import dataclasses

    from orca_nav.bringup.demo import demo_exit_status, run_demo
    from orca_nav.bringup.fleet_file import load_fleet_config
    cfg = load_fleet_config({'robots': [{'name': 'a', 'start': [0.0, 0.0], 'goal': [3.0, 0.0]},
                                        {'name': 'b', 'start': [2.0, 0.0], 'goal': [-3.0, 0.0]}],
                             'defaults': {'radius': 0.25}, 'demo': {'duration': 10.0}})
    b = dataclasses.replace(cfg.robots[1], start=(0.4, 0.0, 0.0))
    overlapping = dataclasses.replace(cfg, robots=(cfg.robots[0], b))
    report = run_demo(overlapping, tmp_path / 'out')
    assert report['fleet']['collisions'] >= 1
    assert report['robots']['a']['collisions'] >= 1 and report['robots']['b']['collisions'] >= 1
    assert report['fleet']['min_separation'] < 0.0
    assert demo_exit_status(report) == 1
