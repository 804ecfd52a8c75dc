"""orca_nav.ros.params and orca_nav.ros.convert over real rclpy."""
import math

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
from rclpy.parameter import Parameter  # noqa: E402

from orca_nav.core.grid import OccupancyGrid  # noqa: E402
from orca_nav.parameters.spec import ParamSpec  # noqa: E402
from orca_nav.ros import convert  # noqa: E402
from orca_nav.ros.params import declare_parameters, declare_robot_parameters, on_parameters_changed  # noqa: E402

pytestmark = pytest.mark.ros


@pytest.fixture
def make_node():
    from rclpy.context import Context
    from rclpy.node import Node
    context = Context()
    rclpy.init(context=context)
    nodes = []

    def make(overrides=()):
        node = Node(f'params_test_{len(nodes)}', context=context,
                    parameter_overrides=list(overrides))
        nodes.append(node)
        return node
    yield make
    for node in nodes:
        node.destroy_node()
    rclpy.shutdown(context=context)


SPECS = [ParamSpec('control_rate', 20.0, 'Control rate (Hz)', min=0.1, max=1000.0),
         ParamSpec('max_neighbors', 10, 'Neighbours', min=0, max=1000),
         ParamSpec('mode', 'centralized', 'Mode', choices=('centralized', 'per_robot')),
         ParamSpec('robots', ['robot0'], 'Robot names')]


def test_declared_with_descriptor_and_range(make_node):
    node = make_node()
    values = declare_parameters(node, SPECS)
    assert values == {'control_rate': 20.0, 'max_neighbors': 10, 'mode': 'centralized',
                      'robots': ['robot0']}
    desc = node.describe_parameter('control_rate')
    assert 'Control rate' in desc.description
    assert desc.floating_point_range[0].from_value == pytest.approx(0.1)
    assert desc.floating_point_range[0].to_value == pytest.approx(1000.0)
    assert node.describe_parameter('max_neighbors').integer_range[0].to_value == 1000


@pytest.mark.parametrize('name,value,message', [
    ('control_rate', -5.0, 'control_rate: -5.0 is below the minimum 0.1 (allowed: 0.1 to 1000.0)'),
    ('control_rate', 5000, 'control_rate: 5000.0 is above the maximum 1000.0 '
                           '(allowed: 0.1 to 1000.0)'),
    ('max_neighbors', -1, 'max_neighbors: -1 is below the minimum 0 (allowed: 0 to 1000)'),
    ('mode', 'swarm', "mode: 'swarm' is not one of centralized, per_robot"),
])
def test_bad_start_value_names_parameter_value_and_what_is_allowed(make_node, name, value,
                                                                    message):
    node = make_node([Parameter(name, value=value)])
    with pytest.raises(ValueError) as err:
        declare_parameters(node, SPECS)
    assert str(err.value) == f'invalid parameter {message}'


@pytest.mark.parametrize('name,value,message', [
    ('control_rate', 'fast', "control_rate: expected a number, got 'fast'"),
    ('control_rate', True, 'control_rate: expected a number, got True'),   # bools are not numbers
    ('max_neighbors', 2.5, 'max_neighbors: expected an integer, got 2.5'),
    ('mode', 3, 'mode: expected a string, got 3'),
])
def test_wrong_type_at_start_names_parameter_and_expected_type(make_node, name, value, message):
    node = make_node([Parameter(name, value=value)])
    with pytest.raises(ValueError) as err:
        declare_parameters(node, SPECS)
    assert str(err.value) == f'invalid parameter {message}'


def test_set_parameters_rejects_with_reason_and_notifies_good_changes(make_node):
    node = make_node()
    declare_parameters(node, SPECS)
    seen = []
    on_parameters_changed(node, seen.append)
    bad = node.set_parameters([Parameter('mode', value='swarm')])[0]
    assert not bad.successful and 'mode' in bad.reason and 'swarm' in bad.reason
    nan = node.set_parameters([Parameter('control_rate', value=math.nan)])[0]
    assert not nan.successful and 'control_rate' in nan.reason
    good = node.set_parameters([Parameter('control_rate', value=50.0)])[0]
    assert good.successful
    assert node.get_parameter('control_rate').value == 50.0
    assert seen == [{'control_rate': 50.0}]


def test_robot_parameters(make_node):
    node = make_node([Parameter('robot1.goal', value=[1.0, 2.0, 0.5]),
                      Parameter('robot1.kinematics', value='car')])
    robots = declare_robot_parameters(node, ['robot0', 'robot1'])
    assert robots['robot0']['goal'] == [] and robots['robot0']['kinematics'] == 'holonomic'
    assert robots['robot1']['goal'] == [1.0, 2.0, 0.5] and robots['robot1']['kinematics'] == 'car'
    short = node.set_parameters([Parameter('robot0.goal', value=[1.0, 2.0])])[0]
    assert not short.successful and 'robot0.goal' in short.reason
    with pytest.raises(ValueError, match="'2fast' is not a valid robot name"):
        declare_robot_parameters(node, ['2fast'])


def test_bad_kinematics_start_value(make_node):
    node = make_node([Parameter('robot0.kinematics', value='boat')])
    with pytest.raises(ValueError, match='robot0.kinematics'):
        declare_robot_parameters(node, ['robot0'])


def test_odom_round_trip_rotates_twist_into_global_frame():
    from builtin_interfaces.msg import Time
    msg = convert.state_to_odom((1.0, 2.0), math.pi / 2, (0.5, 0.0), 0.3, Time(sec=3, nanosec=5),
                                'map', 'robot0/base_link')
    state = convert.odom_to_state(msg)
    assert state.frame_id == 'map'
    assert state.position == pytest.approx([1.0, 2.0, 0.0])
    assert state.yaw == pytest.approx(math.pi / 2)
    assert state.velocity == pytest.approx([0.0, 0.5, 0.0], abs=1e-12)   # forward = +y
    assert state.yaw_rate == pytest.approx(0.3)
    assert state.stamp_s == pytest.approx(3.000000005)


@pytest.mark.parametrize('field,setter', [
    ('pose.pose.position[0]', lambda m: setattr(m.pose.pose.position, 'x', math.nan)),
    ('twist.twist.linear[1]', lambda m: setattr(m.twist.twist.linear, 'y', math.inf)),
    ('pose.pose.orientation', lambda m: setattr(m.pose.pose.orientation, 'w', 0.2)),
])
@pytest.mark.parametrize('decode', ['message', 'cdr'])
def test_bad_odometry_names_field(field, setter, decode):
    from builtin_interfaces.msg import Time
    from rclpy.serialization import serialize_message
    msg = convert.state_to_odom((0.0, 0.0), 0.0, (0.0, 0.0), 0.0, Time(), 'map', 'r/base_link')
    setter(msg)
    with pytest.raises(ValueError, match=field.replace('[', r'\[').replace(']', r'\]')):
        if decode == 'cdr':
            convert.odom_state_from_cdr(serialize_message(msg))
        else:
            convert.odom_to_state(msg)


def test_serialized_odometry_reads_as_the_message_does():
    """The raw-subscription fast path against rclpy's own deserialization, over frame names of
    every length modulo 8 (they shift the alignment of everything after them)."""
    from builtin_interfaces.msg import Time
    from rclpy.serialization import serialize_message
    rng = np.random.default_rng(5)
    for frame_length in range(9):
        for child_length in range(9):
            yaw = float(rng.uniform(-math.pi, math.pi))
            msg = convert.state_to_odom(rng.normal(size=3), yaw, rng.normal(size=3),
                                        float(rng.normal()), Time(sec=7, nanosec=123),
                                        'm' * frame_length, 'c' * child_length)
            msg.pose.covariance = rng.normal(size=36)    # only the x, y block is read
            msg.twist.twist.angular.x = 9.0               # only angular.z is used
            msg.twist.covariance = rng.normal(size=36)
            expected = convert.odom_to_state(msg)
            got = convert.odom_state_from_cdr(serialize_message(msg))
            assert got.frame_id == expected.frame_id == 'm' * frame_length
            assert got.child_frame_id == expected.child_frame_id == 'c' * child_length
            np.testing.assert_array_equal(got.position_covariance,
                                          np.reshape(msg.pose.covariance, (6, 6))[:2, :2])
            for name in ('position', 'velocity', 'yaw', 'yaw_rate', 'stamp_s',
                         'position_covariance'):
                np.testing.assert_array_equal(getattr(got, name), getattr(expected, name))
    raw = serialize_message(msg)
    with pytest.raises(ValueError, match='malformed serialized Odometry'):
        convert.odom_state_from_cdr(raw[:100])


def test_grid_message_round_trip():
    from builtin_interfaces.msg import Time
    occ = np.zeros((4, 6), dtype=bool)
    occ[1, 2] = occ[3, 5] = True
    grid = OccupancyGrid(occ, 0.5, (-1.0, 2.0))
    msg = convert.grid_to_msg(grid, 'map', Time())
    assert (msg.info.width, msg.info.height) == (6, 4)
    assert msg.data[1 * 6 + 2] == 100 and msg.data[0] == 0
    back = convert.msg_to_grid(msg)
    assert np.array_equal(back.occupied, occ)
    assert back.resolution == 0.5 and np.allclose(back.origin, (-1.0, 2.0))


def test_grid_message_rejects_bad_shapes_and_rotation():
    from builtin_interfaces.msg import Time
    msg = convert.grid_to_msg(OccupancyGrid(np.zeros((2, 2), bool), 1.0, (0, 0)), 'map', Time())
    msg.info.width = 3
    with pytest.raises(ValueError, match='data: 4 cells'):
        convert.msg_to_grid(msg)
    msg.info.width = 2
    msg.info.origin.orientation = convert.yaw_to_quaternion(0.5)
    with pytest.raises(ValueError, match='info.origin.orientation'):
        convert.msg_to_grid(msg)
    msg.info.origin.orientation = convert.yaw_to_quaternion(0.0)
    assert convert.msg_to_grid(msg, frame_id='map').shape == (2, 2)
    with pytest.raises(ValueError, match="header.frame_id 'map' is not the global frame 'world'"):
        convert.msg_to_grid(msg, frame_id='world')


def test_undeclared_overrides_are_named(make_node):
    from orca_nav.ros.params import warn_undeclared_overrides
    node = make_node([Parameter('control_rate', value=5.0), Parameter('rate', value=40.0),
                      Parameter('qos_overrides./odom.publisher.depth', value=5)])
    declare_parameters(node, SPECS)
    assert warn_undeclared_overrides(node) == ['rate']


def test_serialized_odometry_in_another_encoding_goes_through_rclpy(monkeypatch):
    from builtin_interfaces.msg import Time
    msg = convert.state_to_odom((4.0, 5.0), 0.0, (0.0, 0.0), 0.0, Time(), 'map', 'r/base_link')
    seen = []
    monkeypatch.setattr(convert, 'deserialize_message',
                        lambda raw, msg_type: seen.append(raw[:2]) or msg)
    big_endian_header = b'\x00\x00\x00\x00'
    state = convert.odom_state_from_cdr(big_endian_header + bytes(64))
    assert seen == [b'\x00\x00'] and state.position.tolist() == [4.0, 5.0, 0.0]


@pytest.mark.parametrize('frame_id', [None, '', 'b', 'robot0/base_link', 'r12/base_link_x'])
def test_serialized_twists_read_back_as_rclpy_serializes_them(frame_id):
    """TwistCdr's bytes deserialize to the intended message, for frame names of every length
    modulo the 8-byte alignment of the doubles."""
    from geometry_msgs.msg import Twist, TwistStamped
    from rclpy.serialization import deserialize_message, serialize_message
    twist = convert.TwistCdr(frame_id)
    raw = twist.pack((0.5, -0.25, 0.125), 0.75, stamp_ns=1_234_567_890_123)
    if frame_id is None:
        expected = Twist()
        body = expected
    else:
        expected = TwistStamped()
        expected.header.frame_id = frame_id
        expected.header.stamp.sec, expected.header.stamp.nanosec = 1234, 567_890_123
        body = expected.twist
    body.linear.x, body.linear.y, body.linear.z, body.angular.z = 0.5, -0.25, 0.125, 0.75
    assert len(raw) == len(serialize_message(expected))      # (rclpy leaves padding unset)
    assert deserialize_message(raw, type(expected)) == expected


@pytest.mark.parametrize('frame_id, child_frame_id', [
    ('', ''), ('m', 'b'), ('map', 'robot0/base_link'), ('robot12/odom', 'robot12/base_link'),
    ('abcdefg', 'abcdefgh')])
def test_serialized_odometry_reads_back_as_the_message_the_simulator_built_before(
        frame_id, child_frame_id):
    """OdometryCdr's bytes deserialize to the Odometry state_to_odom builds (with the x and y
    variances set), for frame names of every length modulo the alignments, and the node's own
    decoder reads them."""
    from nav_msgs.msg import Odometry
    from rclpy.serialization import deserialize_message, serialize_message
    expected = convert.state_to_odom((1.5, -2.25, 0.75), 2.9, (0.4, -0.1, 0.2), -0.6,
                                     convert.seconds_to_time(1234.000000125), frame_id,
                                     child_frame_id)
    expected.pose.covariance[0] = expected.pose.covariance[7] = 0.0025
    raw = convert.OdometryCdr(frame_id, child_frame_id).pack(
        convert.seconds_to_nanoseconds(1234.000000125), (1.5, -2.25, 0.75), 2.9, 0.0025,
        (0.4, -0.1, 0.2), -0.6)
    assert len(raw) == len(serialize_message(expected))      # (rclpy leaves padding unset)
    assert deserialize_message(raw, Odometry) == expected
    state = convert.odom_state_from_cdr(raw)
    assert state.yaw == pytest.approx(2.9) and state.stamp_s == pytest.approx(1234.000000125)
    assert state.position_covariance.tolist() == [[0.0025, 0.0], [0.0, 0.0025]]


def test_a_batch_of_odometry_decodes_as_each_message_alone_and_leaves_out_what_needs_a_word():
    """odom_batch_from_cdr gives what odom_state_from_cdr gives for every message it keeps, and
    leaves out the ones the node must handle (and name) one by one."""
    from rclpy.serialization import serialize_message
    msgs = [convert.state_to_odom((1.0 * i, 2.0, 0.5), 0.3 * i, (0.5, 0.1), 0.2,
                                  convert.seconds_to_time(10.5 + i), 'map' if i % 2 else 'odom',
                                  f'robot{i}/base_link') for i in range(7)]
    msgs[2].pose.covariance[0] = math.nan                    # not finite
    msgs[3].pose.covariance[0], msgs[3].pose.covariance[7] = 0.04, 0.09     # usable
    msgs[4].pose.pose.orientation.w = 0.5                    # not a unit quaternion
    msgs[5].pose.covariance[1] = 0.5                         # not symmetric
    raws = [serialize_message(m) for m in msgs] + [b'\x00\x01\x00\x00\x01']   # malformed
    batch = convert.odom_batch_from_cdr(raws)
    assert batch.index.tolist() == [0, 1, 3, 6]
    for k, i in enumerate(batch.index):
        state = convert.odom_state_from_cdr(raws[i])
        assert batch.frame_id[k] == state.frame_id and batch.stamp[k] == state.stamp_s
        np.testing.assert_allclose(batch.position[k], state.position)
        np.testing.assert_allclose(batch.velocity[k], state.velocity, atol=1e-12)
        assert batch.yaw[k] == pytest.approx(state.yaw)
        np.testing.assert_allclose(batch.covariance[k], state.position_covariance)
    assert len(convert.odom_batch_from_cdr([]).index) == 0
