"""An integer given for a double parameter (`-p control_rate:=10`, `control_rate: 10` in a params
file, `ros2 param set /node control_rate 10`) is taken and stored as a float; bools are not
numbers. Real rclpy nodes: overrides parsed by rcl, sets through the node and its service."""
import pytest

rclpy = pytest.importorskip('rclpy')
from rcl_interfaces.msg import ParameterType  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from orca_nav.parameters.spec import ParamSpec  # noqa: E402
from orca_nav.ros.params import declare_parameters, declare_robot_parameters, on_parameters_changed  # noqa: E402

from ros_harness import RosHarness  # noqa: E402

pytestmark = pytest.mark.ros

SPECS = [ParamSpec('control_rate', 20.0, 'Control rate (Hz)', min=0.1, max=1000.0),
         ParamSpec('max_neighbors', 10, 'Neighbours', min=0, max=1000),
         ParamSpec('publish_lines', False, 'A flag')]


@pytest.fixture
def node_with_args():
    """node_with_args(ros_args) -> a node named params_test started with those ROS arguments."""
    made = []

    def make(ros_args):
        context = Context()
        rclpy.init(args=['test', '--ros-args'] + list(ros_args), context=context)
        node = Node('params_test', context=context)
        made.append((node, context))
        return node
    yield make
    for node, context in made:
        node.destroy_node()
        rclpy.shutdown(context=context)


def assert_stored_as_double(node, name, value):
    param = node.get_parameter(name)
    assert param.type_ == Parameter.Type.DOUBLE and param.value == value
    assert isinstance(param.value, float)


def test_integer_on_the_command_line(node_with_args):
    node = node_with_args(['-p', 'control_rate:=10', '-p', 'robot0.start:=[1, 2, 0]'])
    values = declare_parameters(node, SPECS)
    assert values['control_rate'] == 10.0 and isinstance(values['control_rate'], float)
    assert_stored_as_double(node, 'control_rate', 10.0)
    start = declare_robot_parameters(node, ['robot0'])['robot0']['start']
    assert start == [1.0, 2.0, 0.0] and all(isinstance(v, float) for v in start)
    assert node.get_parameter('robot0.start').type_ == Parameter.Type.DOUBLE_ARRAY


def test_integer_in_a_params_file(node_with_args, tmp_path):
    params_file = tmp_path / 'params.yaml'
    params_file.write_text('params_test:\n  ros__parameters:\n    control_rate: 10\n'
                           '    max_neighbors: 4\n')
    node = node_with_args(['--params-file', str(params_file)])
    assert declare_parameters(node, SPECS)['max_neighbors'] == 4
    assert_stored_as_double(node, 'control_rate', 10.0)


def test_integer_out_of_range_at_start_names_the_range(node_with_args):
    node = node_with_args(['-p', 'control_rate:=0'])
    with pytest.raises(ValueError, match=r'^invalid parameter control_rate: 0\.0 is below the '
                                         r'minimum 0\.1 \(allowed: 0\.1 to 1000\.0\)$'):
        declare_parameters(node, SPECS)


def test_bool_for_a_double_at_start_is_refused(node_with_args):
    node = node_with_args(['-p', 'control_rate:=true'])
    with pytest.raises(ValueError, match='control_rate: expected a number, got True'):
        declare_parameters(node, SPECS)


def test_integer_set_at_run_time(node_with_args):
    node = node_with_args([])
    declare_parameters(node, SPECS)
    declare_robot_parameters(node, ['robot0'])
    seen = []
    on_parameters_changed(node, seen.append)
    assert node.set_parameters([Parameter('control_rate', value=30)])[0].successful
    assert_stored_as_double(node, 'control_rate', 30.0)
    assert seen == [{'control_rate': 30.0}] and isinstance(seen[0]['control_rate'], float)
    assert node.set_parameters_atomically([Parameter('robot0.goal', value=[4, 5, 0])]).successful
    goal = node.get_parameter('robot0.goal')
    assert goal.type_ == Parameter.Type.DOUBLE_ARRAY and list(goal.value) == [4.0, 5.0, 0.0]
    too_fast = node.set_parameters([Parameter('control_rate', value=5000)])[0]
    assert not too_fast.successful and 'control_rate' in too_fast.reason
    assert not node.set_parameters([Parameter('control_rate', value=True)])[0].successful
    assert node.set_parameters([Parameter('max_neighbors', value=3)])[0].successful
    assert node.get_parameter('max_neighbors').value == 3
    assert_stored_as_double(node, 'control_rate', 30.0)


@pytest.fixture
def harness():
    h = RosHarness()
    yield h
    h.shutdown()


def test_integer_through_the_set_parameters_service(harness):
    """What `ros2 param set /params_service_test control_rate 10` sends: an INTEGER value."""
    node = harness.add(Node('params_service_test', context=harness.context))
    declare_parameters(node, SPECS)
    client = harness.probe.create_client(SetParameters, '/params_service_test/set_parameters')
    assert client.wait_for_service(timeout_sec=30.0)
    request = SetParameters.Request()
    param = Parameter('control_rate', value=10).to_parameter_msg()
    assert param.value.type == ParameterType.PARAMETER_INTEGER
    request.parameters = [param]
    future = client.call_async(request)
    assert harness.wait_for(future.done)
    assert [r.successful for r in future.result().results] == [True]
    assert_stored_as_double(node, 'control_rate', 10.0)
