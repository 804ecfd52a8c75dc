"""Recording a run (recorder_node, `orca-nav demo --record`, the launch file's `record:=`) and
replaying it (`orca-nav replay`): the bag is read back with the `mcap` reader and
mcap-ros2-support's decoder (not the library that wrote it), every message decodes, its counts
are the report's, its odometry is the run the report measured, and the animation has the frames
it should."""
import json
import shutil
from collections import defaultdict

import numpy as np
import pytest
import yaml

from orca_nav.bringup.cli import main
from orca_nav.bringup.demo import fresh_recording_folder, load_scenario
from orca_nav.bringup.graph import RECORDER, describe_graph, recorded_topics
from orca_nav.bringup.replay import (
    RunRecord,
    animate,
    frame_times,
    load_run,
    read_tracks,
    write_tracks,
)
from orca_nav.bringup.report import PersonTrack, RobotTrack

mcap_reader = pytest.importorskip('mcap.reader')
mcap_ros2_decoder = pytest.importorskip('mcap_ros2.decoder')
PIL_Image = pytest.importorskip('PIL.Image')


def read_mcap(path):
    """{topic: [decoded message, ...]} of every message, and {topic: schema name}."""
    messages, types = defaultdict(list), {}
    with open(path, 'rb') as stream:
        reader = mcap_reader.make_reader(stream,
                                         decoder_factories=[mcap_ros2_decoder.DecoderFactory()])
        assert reader.get_header().profile == 'ros2'
        for schema, channel, _, decoded in reader.iter_decoded_messages():
            assert channel.message_encoding == 'cdr' and schema.encoding == 'ros2msg'
            messages[channel.topic].append(decoded)
            types[channel.topic] = schema.name
    return messages, types


def test_the_recorder_records_what_the_fleet_publishes():
    circle = load_scenario('circle', 3)
    assert recorded_topics(circle, use_sim=True, sim_time=True) == [
        '/clock', '/robot0/odom', '/robot0/cmd_vel', '/robot1/odom', '/robot1/cmd_vel',
        '/robot2/odom', '/robot2/cmd_vel', '/orca_nav/markers', '/fleet_sim/collisions']
    warehouse = load_scenario('warehouse_tf')
    topics = recorded_topics(warehouse, use_sim=False, sim_time=False)
    assert {'/robot0/plan', '/robot0/trajectory', '/robot0/tf', '/robot0/tf_static',
            '/map'} <= set(topics)
    assert '/clock' not in topics and '/fleet_sim/collisions' not in topics
    assert '/tracked_agents' in recorded_topics(load_scenario('people'), True, True)
    assert '/map_3d' in recorded_topics(load_scenario('drones', 2), True, True)


def test_the_recorder_is_off_by_default_and_counts_as_an_odometry_reader_in_lockstep():
    cfg = load_scenario('circle', 3)
    assert RECORDER not in [s.name for s in describe_graph(cfg)]
    lockstep = {'lockstep': True, 'real_time_factor': 0.0}
    specs = {s.name: s for s in describe_graph(cfg, sim_overrides=lockstep, record='/tmp/x')}
    assert specs[RECORDER].executable == 'recorder_node'
    assert specs[RECORDER].parameters[0]['output'] == '/tmp/x'
    without = {s.name: s for s in describe_graph(cfg, sim_overrides=lockstep)}
    readers = [s['fleet_sim'].parameters[0]['lockstep_subscribers'] for s in (specs, without)]
    assert readers[0] == readers[1] + 1


def test_a_recording_folder_replaces_an_earlier_bag_only(tmp_path):
    earlier = tmp_path / 'recording'
    earlier.mkdir()
    (earlier / 'metadata.yaml').write_text('rosbag2_bagfile_information: {}\n')
    assert fresh_recording_folder(tmp_path) == earlier and not earlier.exists()
    earlier.mkdir()
    (earlier / 'notes.txt').write_text('mine')
    with pytest.raises(ValueError, match='exists and is not a recording'):
        fresh_recording_folder(tmp_path)


def test_tracks_file_round_trip_and_frame_count(tmp_path):
    tracks = [RobotTrack('a', 0.3, [0.0, 1.0, 2.0], [[0, 0], [1, 0], [2, 0]], [[2, 0]], [2.0]),
              RobotTrack('b', 0.5, [0.0, 2.5], [[0, 3], [0, 1]], [[0, 0]], [None])]
    people = [PersonTrack('person0', 0.25, np.array([0.0, 1.0]), np.array([[5.0, 5], [5, 6]]))]
    write_tracks(tmp_path / 'tracks.npz', tracks, people, np.array([[1.0, 1, 2, 2]]))
    back, walkers, boxes = read_tracks(tmp_path / 'tracks.npz')
    assert [(t.name, t.radius, t.goal_times) for t in back] == [('a', 0.3, [2.0]),
                                                              ('b', 0.5, [None])]
    np.testing.assert_array_equal(back[1].xy, tracks[1].xy)
    assert walkers[0].name == 'person0' and boxes.tolist() == [[1.0, 1, 2, 2]]
    run = RunRecord('pair', back, walkers, boxes=boxes)
    assert run.duration == 2.5
    assert len(frame_times(2.5, 10.0, 300)) == 26        # every 0.1 s, the end included
    assert len(frame_times(100.0, 10.0, 300)) == 300     # a long run: fewer, wider frames
    frames = animate(run, tmp_path / 'pair.gif', fps=4.0)
    assert frames == 11 and PIL_Image.open(tmp_path / 'pair.gif').n_frames == 11
    with pytest.raises(ValueError, match='.gif or an .mp4'):
        animate(run, tmp_path / 'pair.avi')
    from matplotlib import animation
    if animation.writers.is_available('ffmpeg'):
        assert animate(run, tmp_path / 'pair.mp4', fps=4.0) == 11
    else:
        with pytest.raises(ValueError, match='MP4 needs ffmpeg'):
            animate(run, tmp_path / 'pair.mp4')


def test_replay_refuses_what_is_not_a_run(tmp_path, capsys):
    assert main(['replay', str(tmp_path)]) == 2
    assert 'not a demo output folder' in capsys.readouterr().err


# ---------------------------------------------------------------- over DDS
rclpy = pytest.importorskip('rclpy')


@pytest.mark.ros
def test_the_recorder_refuses_bad_parameters_naming_them(tmp_path):
    from rclpy.parameter import Parameter

    from orca_nav.ros.recorder_node import RecorderNode
    context = rclpy.Context()
    rclpy.init(args=[], context=context)
    try:
        taken = tmp_path / 'taken'
        taken.mkdir()
        cases = [([Parameter('topics', value=['/clock'])], 'output: the folder'),
                 ([Parameter('output', value=str(tmp_path / 'bag'))], 'topics: no topic'),
                 ([Parameter('output', value=str(taken)), Parameter('topics', value=['/clock'])],
                  'output: .* exists already')]
        for overrides, match in cases:
            with pytest.raises(ValueError, match=match):
                RecorderNode(context=context, parameter_overrides=overrides)
    finally:
        rclpy.try_shutdown(context=context)


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.parametrize('layout', ['none', 'namespaced'])
def test_a_recorded_demo_decodes_counts_as_reported_and_replays(tmp_path, capsys, layout):
    """A small lockstep demo with --record: the MCAP opens with the mcap reader, every message
    of every topic decodes, the counts per topic are the report's (and metadata.yaml's), each
    robot's recorded odometry is the track the report measured, and the replay GIF from the
    recording and from tracks.npz has the expected frames and ends where the report says."""
    if layout == 'none':
        scenario = ['--scenario', 'circle', '--robots', '3']
    else:       # two robots crossing on their own TF trees (odometry in drifting odom frames)
        fleet = tmp_path / 'pair_tf.yaml'
        fleet.write_text('name: pair_tf\ntf_layout: namespaced\nrobots:\n'
                         '- {name: robot0, start: [0, 0, 0], goal: [4, 0.5, 0]}\n'
                         '- {name: robot1, start: [4, 0, 3.1416], goal: [0, -0.5, 0]}\n'
                         'fleet_sim_node: {odom_drift: 0.02, localization_rate: 2.0}\n'
                         'demo: {duration: 20.0}\n')
        scenario = ['--scenario', str(fleet)]
    out = tmp_path / 'run'
    status = main(['demo', *scenario, '--record', '--out', str(out)])
    captured = capsys.readouterr()
    assert status == 0, captured.err[-3000:]
    report = json.loads((out / 'report.json').read_text())
    bag = out / 'recording'
    assert report['recording']['bag'] == str(bag) and report['recording']['not_recorded'] == {}
    counts = report['recording']['messages']

    messages, types = read_mcap(bag / 'recording.mcap')
    assert {topic: len(msgs) for topic, msgs in messages.items()} == \
        {topic: count for topic, count in counts.items() if count}
    metadata = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    assert metadata['storage_identifier'] == 'mcap' and metadata['version'] == 9
    assert {t['topic_metadata']['name']: t['message_count']
            for t in metadata['topics_with_message_count']} == counts
    assert all(t['topic_metadata']['type_description_hash'].startswith('RIHS01_')
               for t in metadata['topics_with_message_count'])
    robots = list(report['robots'])
    expected = {'/clock', '/orca_nav/markers'} | {f'/{r}/odom' for r in robots} | \
        {f'/{r}/cmd_vel' for r in robots}
    if layout == 'namespaced':
        expected |= {f'/{r}/tf' for r in robots} | {f'/{r}/tf_static' for r in robots}
    assert expected <= {topic for topic, count in counts.items() if count}
    assert types['/robot0/odom'] == 'nav_msgs/msg/Odometry'
    assert types['/clock'] == 'rosgraph_msgs/msg/Clock'

    # The recorded odometry is the run the report measured: per robot, the distinct stamps
    # over the report's track are its samples, no more, no fewer. (The track may start a sample
    # later: the recorder keeps odometry the report's recorder could not yet put in map.)
    tracks, _, _ = read_tracks(out / 'tracks.npz')
    stamps = {r: np.array(sorted({m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
                                  for m in messages[f'/{r}/odom']})) for r in robots}
    origin = report['time_origin']          # the odometry stamp the report's times count from
    for track in tracks:
        since = stamps[track.name] - origin
        recorded = since[(since >= track.t[0] - 1e-6) & (since <= track.t[-1] + 1e-6)]
        np.testing.assert_allclose(recorded, track.t, atol=1e-6, err_msg=track.name)
        assert since[0] <= track.t[0] + 1e-6

    # Replays: from the run folder (its recording) and from the report's tracks alone.
    from_bag = load_run(out)
    shutil.rmtree(bag)
    from_report = load_run(out)
    assert [t.name for t in from_bag.tracks] == [t.name for t in from_report.tracks] == robots
    # Odometry in the map frame is the same sample in both. Through a robot's own TF tree the
    # report saw each sample with the map -> odom correction it had received by then, the replay
    # with the whole recorded TF: a correction that arrived after its odometry (another topic,
    # no order between them) moves that sample by at most one correction (odom_drift 0.02 m
    # after 1 m, 2 corrections per second at about 1 m/s).
    tolerance = 1e-6 if layout == 'none' else 0.1
    for a, b in zip(from_bag.tracks, from_report.tracks):
        assert a.radius == pytest.approx(b.radius)          # from orca_node's markers
        np.testing.assert_allclose(a.xy[np.searchsorted(a.t, b.t[-1])], b.xy[-1],
                                   atol=tolerance)
    for run, name in ((from_bag, 'from_bag.gif'), (from_report, 'from_report.gif')):
        frames = animate(run, tmp_path / name, max_frames=25)     # few frames: a quick test
        assert frames == len(frame_times(run.duration, 10.0, 25)) == 25
        assert PIL_Image.open(tmp_path / name).n_frames == frames
    assert main(['replay', str(out), '--fps', '5', '--max-frames', '20']) == 0
    assert (out / 'replay.gif').is_file()
    assert 'replay.gif' in capsys.readouterr().out


@pytest.mark.ros
def test_recorder_node_as_launch_starts_it_writes_a_bag_and_closes_it_on_sigint(tmp_path):
    """The recorder as its own process (`ros2 launch ... record:=`): what it received before
    Ctrl-C is in the bag, which opens with the mcap reader, and metadata.yaml is written."""
    import signal

    from std_msgs.msg import String
    from test_node_main import Process

    from ros_harness import RosHarness, private_domain
    bag = tmp_path / 'bag'
    recorder = Process.node('recorder_node', ['-p', f'output:={bag}', '-p',
                                              'topics:=[/chatter, /never]'])
    ros = RosHarness(domain_id=private_domain())
    try:
        pub = ros.probe.create_publisher(String, '/chatter', 10)
        recorder.wait_for_line('recording /chatter (std_msgs/msg/String)')
        assert ros.wait_for(lambda: pub.get_subscription_count() >= 1)    # the recorder's
        for k in range(5):
            pub.publish(String(data=f'hello {k}'))
        assert pub.wait_for_all_acked(rclpy.duration.Duration(seconds=30))
        assert recorder.stop([signal.SIGINT]) == 0, recorder.output
    finally:
        recorder.kill()
        ros.shutdown()
    messages, types = read_mcap(bag / 'bag.mcap')
    assert [m.data for m in messages['/chatter']] == [f'hello {k}' for k in range(5)]
    metadata = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    assert metadata['message_count'] == 5
    assert 'Traceback' not in recorder.output


@pytest.mark.ros
def test_the_recorders_message_definitions_hash_as_the_published_types():
    """The bag's schemas come from rosbags' Jazzy definitions: their type hashes are the ones
    rclpy's publishers of these types announce."""
    from rosbags.typesys import Stores, get_typestore

    from orca_nav.ros.recorder_node import message_class
    types = get_typestore(Stores.ROS2_JAZZY)
    context = rclpy.Context()
    rclpy.init(args=[], context=context)
    try:
        node = rclpy.create_node('hash_probe', context=context)
        names = ['nav_msgs/msg/Odometry', 'geometry_msgs/msg/Twist', 'nav_msgs/msg/Path',
                 'trajectory_msgs/msg/MultiDOFJointTrajectory', 'tf2_msgs/msg/TFMessage',
                 'visualization_msgs/msg/MarkerArray', 'rosgraph_msgs/msg/Clock',
                 'nav_msgs/msg/OccupancyGrid', 'std_msgs/msg/String']
        for index, name in enumerate(names):
            node.create_publisher(message_class(name), f'/hash_probe/t{index}', 1)
        for index, name in enumerate(names):
            (info,) = node.get_publishers_info_by_topic(f'/hash_probe/t{index}')
            assert str(info.topic_type_hash) == types.hash_rihs01(name), name
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
