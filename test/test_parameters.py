"""The node parameter specs (`orca_nav.parameters`) are the one source: each node declares exactly
the table the fleet-file check uses, the check needs no rclpy, and a parameter a node does not
have is named wherever it is refused."""
import subprocess
import sys
from pathlib import Path

import pytest

from orca_nav.parameters.nodes import NODE_PARAMETERS, parameter_problems

REPO = Path(__file__).resolve().parents[1]


def test_the_specs_and_the_fleet_file_check_load_without_rclpy():
    """rclpy made unimportable: the specs, the check and the fleet file loader still work."""
    code = ("import sys; sys.modules['rclpy'] = None\n"
            "from orca_nav.bringup.fleet_file import load_fleet_config\n"
            "from orca_nav.parameters.nodes import parameter_problems\n"
            "print(parameter_problems('orca_node', {'control_rate': -5}))\n"
            "load_fleet_config({'robots': [{'name': 'r', 'start': [0, 0]}]})\n")
    out = subprocess.run([sys.executable, '-c', code], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert 'control_rate: -5.0 is below the minimum 0.5' in out.stdout


@pytest.mark.parametrize('executable, values, problems', [
    ('orca_node', {'control_rate': -5}, ['orca_node.control_rate: -5.0 is below the minimum 0.5 '
                                         '(allowed: 0.5 to 1000.0)']),
    ('orca_node', {'deadlock.stall_time': 'long'},
     ["orca_node.deadlock.stall_time: expected a number, got 'long'"]),
    ('orca_node', {'contol_rate': 10.0},
     ["orca_node.contol_rate: orca_node has no parameter 'contol_rate' (did you mean "
      'control_rate?)']),
    ('fleet_sim_node', {'fault.odom_drop_rate': 1.5, 'sim_rate': 100},
     ['fleet_sim_node.fault.odom_drop_rate: 1.5 is above the maximum 1.0 (allowed: 0.0 to 1.0)']),
    ('planner_node', {'frobnicate': True},
     ["planner_node.frobnicate: planner_node has no parameter 'frobnicate'"]),
    ('map_publisher', {'use_sim_time': True, 'qos_overrides./map.publisher.depth': 2}, []),
])
def test_given_values_are_checked_as_the_node_checks_them(executable, values, problems):
    assert parameter_problems(executable, values, f'{executable}.') == problems


rclpy = pytest.importorskip('rclpy')
from rcl_interfaces.srv import SetParameters  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from orca_nav.ros.fleet_sim_node import FleetSimNode  # noqa: E402
from orca_nav.ros.map_3d_publisher import Map3dPublisher  # noqa: E402
from orca_nav.ros.map_publisher import MapPublisher  # noqa: E402
from orca_nav.ros.mission_node import MissionNode  # noqa: E402
from orca_nav.ros.orca_node import OrcaNode  # noqa: E402
from orca_nav.ros.planner_node import PlannerNode  # noqa: E402
from orca_nav.ros.recorder_node import RecorderNode  # noqa: E402
from orca_nav.ros.tf_relay import TfRelay  # noqa: E402

from ros_harness import harness_fixture  # noqa: E402

ros = harness_fixture()
MANUAL = [Parameter('autostart', value=False)]      # managed nodes: declared, not configured
NODES = {
    'orca_node': (OrcaNode, MANUAL),
    'planner_node': (PlannerNode, MANUAL),
    'fleet_sim_node': (FleetSimNode, []),
    'map_publisher': (MapPublisher, MANUAL),
    'map_3d_publisher': (Map3dPublisher, MANUAL),
    'mission_node': (MissionNode, [Parameter('robots', value=['robot0'])]),
    'recorder_node': (RecorderNode, [Parameter('topics', value=['/clock'])]),    # + output
    'tf_relay': (TfRelay, []),
}


@pytest.mark.parametrize('executable', list(NODES))
def test_each_node_declares_exactly_its_table(ros, executable, tmp_path):
    make, overrides = NODES[executable]
    if executable == 'recorder_node':       # a bag folder of the test's own
        overrides = overrides + [Parameter('output', value=str(tmp_path / 'bag'))]
    node = ros.add(make(context=ros.context, parameter_overrides=overrides))
    robot_parameters = tuple(f'{robot}.' for robot in node.get_parameter('robots').value) \
        if node.has_parameter('robots') else ()
    declared = {name for name in node._parameters
                if not name.startswith(robot_parameters) and name not in
                ('use_sim_time', 'start_type_description_service')}
    assert declared == set(NODE_PARAMETERS[executable])


def test_setting_a_parameter_the_node_does_not_have_names_it(ros):
    """What `ros2 param set /fleet_sim rate 40` gets back: rclpy alone answers "Invalid access to
    undeclared parameter(s): []"."""
    ros.add(FleetSimNode(context=ros.context))
    client = ros.probe.create_client(SetParameters, '/fleet_sim/set_parameters')
    assert ros.wait_for(client.service_is_ready)
    request = SetParameters.Request(parameters=[
        Parameter('rate', value=40.0).to_parameter_msg(),
        Parameter('sim_rate', value=40.0).to_parameter_msg()])
    future = client.call_async(request)
    assert ros.wait_for(future.done)
    unknown, read_only = future.result().results
    assert not unknown.successful and "['rate']" in unknown.reason, unknown.reason
    assert not read_only.successful and 'sim_rate' in read_only.reason, read_only.reason
