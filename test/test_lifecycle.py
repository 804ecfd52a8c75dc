"""Managed nodes over real DDS: a lifecycle client (what nav2_lifecycle_manager does with bond
off) drives orca_node, planner_node and map_publisher through the standard
`<node>/change_state` and `<node>/get_state` services."""
from pathlib import Path

import pytest

rclpy = pytest.importorskip('rclpy')
from geometry_msgs.msg import PoseStamped, Twist  # noqa: E402
from lifecycle_msgs.msg import Transition  # noqa: E402
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402

from orca_nav.ros.convert import latched_qos, state_to_odom  # noqa: E402
from orca_nav.ros.map_publisher import MapPublisher  # noqa: E402
from orca_nav.ros.orca_node import OrcaNode  # noqa: E402
from orca_nav.ros.planner_node import PlannerNode  # noqa: E402

from ros_harness import LifecycleClient, SimClock, harness_fixture, sim_time  # noqa: E402

pytestmark = pytest.mark.ros
MANUAL = Parameter('autostart', value=False)
CORRIDOR = Path(__file__).resolve().parents[1] / 'config' / 'maps' / 'corridor.yaml'


ros = harness_fixture()


def test_orca_node_through_its_lifecycle(ros):
    node = ros.add(OrcaNode(context=ros.context, parameter_overrides=[
        sim_time(), MANUAL, Parameter('robots', value=['r0'])]))
    clock = SimClock(ros)
    client = LifecycleClient(ros, 'orca_node')
    assert client.state() == 'unconfigured'
    assert node.count_subscribers('/r0/odom') == 0      # nothing is wired before configure

    assert client.transition(Transition.TRANSITION_CONFIGURE)
    assert client.state() == 'inactive'
    cmds = ros.collect(Twist, '/r0/cmd_vel')
    odom = ros.publisher(Odometry, '/r0/odom', qos_profile_sensor_data)
    goal = ros.publisher(PoseStamped, '/r0/goal_pose')

    def report(x):
        """Odometry at x, 50 ms on; returns a resend of it for the wait that follows."""
        msg = state_to_odom((x, 0.0), 0.0, (0.0, 0.0), 0.0, clock.advance(0.05), 'map',
                            'r0/base_link')
        odom.publish(msg)
        return lambda: odom.publish(msg)

    msg = PoseStamped()
    msg.header.frame_id = 'map'
    msg.pose.position.x = 5.0
    goal.publish(msg)
    assert ros.wait_for(lambda: node.fleet.view(clock.now_s).goals[0, 0] == 5.0)
    # Inactive: odometry is taken in (the state is current) but no robot is commanded.
    for k in range(3):
        assert ros.wait_for(lambda: node.fleet.view(clock.now_s).positions[0, 0] == 0.0,
                            resend=report(0.0))
    assert cmds == []

    assert client.transition(Transition.TRANSITION_ACTIVATE)
    assert client.state() == 'active'
    assert ros.wait_for(lambda: any(c.linear.x > 0.0 for c in cmds), resend=report(0.0))

    # Deactivated: exactly one zero command, then none while odometry keeps coming.
    assert client.transition(Transition.TRANSITION_DEACTIVATE)
    assert ros.wait_for(lambda: cmds[-1].linear.x == 0.0)
    count = len(cmds)
    for k in range(5):
        assert ros.wait_for(
            lambda: node.fleet.view(clock.now_s).positions[0, 0] == 0.01 * (k + 1),
            resend=report(0.01 * (k + 1)))
    assert len(cmds) == count and client.state() == 'inactive'

    assert client.transition(Transition.TRANSITION_CLEANUP)
    assert client.state() == 'unconfigured'
    assert ros.wait_for(lambda: odom.get_subscription_count() == 0)
    # Configured again, it starts from the parameters, as the first time.
    assert client.transition(Transition.TRANSITION_CONFIGURE)
    assert client.transition(Transition.TRANSITION_ACTIVATE)
    assert ros.wait_for(lambda: odom.get_subscription_count() == 1)
    assert client.transition(Transition.TRANSITION_ACTIVE_SHUTDOWN)
    assert client.state() == 'finalized'


def test_a_failed_configure_names_the_parameter_and_keeps_the_node(ros):
    ros.add(OrcaNode(context=ros.context, parameter_overrides=[
        MANUAL, Parameter('robots', value=['r0', 'r1']), Parameter('mode', value='per_robot')]))
    client = LifecycleClient(ros, 'orca_node')
    assert not client.transition(Transition.TRANSITION_CONFIGURE)
    assert client.state() == 'unconfigured'
    # With autostart the same problem stops start-up, as a bad parameter does.
    with pytest.raises(ValueError, match='robot_name: required in per_robot mode'):
        OrcaNode(context=ros.context, node_name='orca_autostart', parameter_overrides=[
            Parameter('robots', value=['r0', 'r1']), Parameter('mode', value='per_robot')])



def test_a_node_that_fails_to_start_leaves_nothing_behind(ros):
    """Its rcl node is destroyed at once: nothing stays on the graph, and a later node of the
    same name logs to /rosout (rcl keeps one /rosout publisher per name; a dead node's would
    swallow the new node's log)."""
    with pytest.raises(ValueError, match='robot_name'):
        OrcaNode(context=ros.context, parameter_overrides=[
            Parameter('robots', value=['r0']), Parameter('mode', value='per_robot')])
    assert ros.wait_for(lambda: 'orca_node' not in ros.probe.get_node_names())
    rosout = ros.rosout()
    ros.add(OrcaNode(context=ros.context, parameter_overrides=[
        MANUAL, Parameter('robots', value=['r0'])]))
    assert ros.wait_for(lambda: any(entry.name == 'orca_node' and 'lifecycle manager' in entry.msg
                                    for entry in list(rosout)))

def test_destroying_a_node_ends_its_worker_threads(ros):
    """The map preparation and planning workers live as long as their node, not the process
    (a process that makes nodes again, as a test suite does, would gather idle threads)."""
    import threading
    for make, prefix in ((OrcaNode, 'orca_map_'), (PlannerNode, 'planner_')):
        before = set(threading.enumerate())
        node = make(context=ros.context, parameter_overrides=[
            MANUAL, Parameter('robots', value=['r0'])])
        workers = [t for t in threading.enumerate()
                   if t not in before and t.name.startswith(prefix)]
        assert workers, prefix
        node.destroy_node()
        for worker in workers:
            worker.join(timeout=10.0)
        assert not any(worker.is_alive() for worker in workers), prefix


def test_map_publisher_publishes_when_activated(ros):
    ros.add(MapPublisher(context=ros.context, parameter_overrides=[
        MANUAL, Parameter('yaml_filename', value=str(CORRIDOR))]))
    client = LifecycleClient(ros, 'map_publisher')
    maps = ros.collect(OccupancyGridMsg, '/map', qos=latched_qos())
    assert client.transition(Transition.TRANSITION_CONFIGURE)
    assert ros.wait_for(lambda: ros.probe.count_publishers('/map') == 1)
    assert maps == []
    assert client.transition(Transition.TRANSITION_ACTIVATE)
    assert ros.wait_for(lambda: maps)
    assert (maps[0].info.width, maps[0].info.height) == (280, 101)


def test_planner_node_configures_and_activates(ros):
    ros.add(PlannerNode(context=ros.context, parameter_overrides=[
        MANUAL, Parameter('robots', value=['r0'])]))
    client = LifecycleClient(ros, 'planner_node')
    assert client.state() == 'unconfigured'
    assert client.transition(Transition.TRANSITION_CONFIGURE)
    assert client.state() == 'inactive'
    assert client.transition(Transition.TRANSITION_ACTIVATE)
    assert client.state() == 'active'
    assert ros.wait_for(lambda: ros.probe.count_subscribers('/r0/goal_pose') == 1)
    assert client.transition(Transition.TRANSITION_DEACTIVATE)
    assert client.transition(Transition.TRANSITION_CLEANUP)
    assert ros.wait_for(lambda: ros.probe.count_subscribers('/r0/goal_pose') == 0)
    assert client.state() == 'unconfigured'

