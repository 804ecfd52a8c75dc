"""robot_names: every per-robot topic and frame name, per TF layout."""
import pytest

from orca_nav.core.fleet.names import TF_LAYOUTS, robot_names


def test_topics_are_relative_to_the_robot_and_the_same_in_every_layout():
    for layout in TF_LAYOUTS:
        n = robot_names('robot3', layout)
        assert (n.odom_topic, n.cmd_vel_topic, n.goal_topic, n.trajectory_topic, n.plan_topic,
                n.topic('navigate_to_pose')) == (
            'robot3/odom', 'robot3/cmd_vel', 'robot3/goal_pose', 'robot3/trajectory',
            'robot3/plan', 'robot3/navigate_to_pose')
        assert n.global_frame == 'map'


def test_none_layout_has_odometry_in_the_global_frame():
    n = robot_names('robot0', 'none', global_frame='world')
    assert (n.odom_frame, n.base_frame, n.global_frame) == ('world', 'robot0/base_link', 'world')
    assert n.buffer_frame('world') == 'world'


def test_namespaced_layout_has_its_own_tree_with_plain_frames():
    n = robot_names('robot0', 'namespaced')
    assert (n.tf_topic, n.tf_static_topic) == ('robot0/tf', 'robot0/tf_static')
    assert (n.odom_frame, n.base_frame) == ('odom', 'base_link')
    # in a fleet-wide buffer each robot's tree is apart, its map included
    assert [n.buffer_frame(f) for f in ('map', 'odom', 'base_link')] == [
        'robot0/map', 'robot0/odom', 'robot0/base_link']
    assert robot_names('robot1', 'namespaced').buffer_frame('odom') == 'robot1/odom'


def test_prefixed_layout_shares_the_global_tree_with_prefixed_frames():
    n = robot_names('robot0', 'prefixed')
    assert (n.tf_topic, n.tf_static_topic) == ('/tf', '/tf_static')
    assert (n.odom_frame, n.base_frame) == ('robot0/odom', 'robot0/base_link')
    assert [n.buffer_frame(f) for f in ('map', 'robot0/odom')] == ['map', 'robot0/odom']


@pytest.mark.parametrize('robot, layout, frame, match', [
    ('robot0', 'flat', 'map', "tf_layout 'flat'"),
    ('0robot', 'none', 'map', "'0robot' is not a valid robot name"),
    ('robot0', 'none', '/map', "global_frame '/map'"),
    ('robot0', 'none', '', "global_frame ''"),
])
def test_bad_input_names_the_field_and_value(robot, layout, frame, match):
    with pytest.raises(ValueError, match=match):
        robot_names(robot, layout, frame)
