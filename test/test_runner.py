"""The in-process runner starts the described graph over real DDS and it publishes the
documented topics with sane contents."""
import math
import threading

import pytest

rclpy = pytest.importorskip('rclpy')

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import Twist  # noqa: E402
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rcl_interfaces.srv import GetParameters  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from visualization_msgs.msg import MarkerArray  # noqa: E402

from orca_nav.bringup.graph import NodeSpec, describe_graph  # noqa: E402
from orca_nav.bringup.runner import EXECUTORS, default_executor, node_class, run_graph  # noqa: E402
from orca_nav.bringup.scenarios import corridor  # noqa: E402
from orca_nav.ros.convert import latched_qos  # noqa: E402

pytestmark = pytest.mark.ros


class Probe:
    """Subscribes to topics inside the running graph and keeps the first/last messages."""

    def __init__(self, graph):
        self.graph = graph
        self.node = graph.add_node(Node('probe', context=graph.context))
        self.messages = {}
        self._lock = threading.Lock()

    def listen(self, msg_type, topic, qos=10):
        def keep(msg):
            with self._lock:
                self.messages.setdefault(topic, []).append(msg)
        self.node.create_subscription(msg_type, topic, keep, qos)

    def received(self, topic):
        with self._lock:
            return list(self.messages.get(topic, []))

    def wait_for(self, topics, timeout=30.0, count=1):
        if not self.graph.wait_for(lambda: all(len(self.received(t)) >= count for t in topics),
                                   timeout):
            missing = [t for t in topics if len(self.received(t)) < count]
            raise AssertionError(f'no messages on {missing} within {timeout} s')
        return {t: self.received(t) for t in topics}


@pytest.mark.parametrize('executor', EXECUTORS)
def test_sim_and_map_nodes_publish_odometry_and_the_map(executor):
    if executor == 'events' and default_executor() != 'events':
        pytest.skip('this rclpy has no EventsExecutor')
    cfg = corridor(2)
    specs = [s for s in describe_graph(cfg) if s.executable in ('map_publisher', 'fleet_sim_node')]
    with run_graph(specs, executor=executor) as graph:
        assert sorted(graph.nodes) == ['/fleet_sim', '/map_publisher']
        assert graph.nodes['/fleet_sim'].get_parameter('robot1.radius').value == 0.25
        assert list(graph.nodes['/fleet_sim'].get_parameter('robot0.start').value) == \
            list(cfg.robots[0].start)
        probe = Probe(graph)
        probe.listen(Odometry, '/robot0/odom', qos_profile_sensor_data)
        probe.listen(Odometry, '/robot1/odom', qos_profile_sensor_data)
        probe.listen(OccupancyGridMsg, '/map', latched_qos())
        probe.listen(DiagnosticArray, '/diagnostics')
        got = probe.wait_for(['/robot0/odom', '/robot1/odom', '/map', '/diagnostics'])
        grid = got['/map'][0]
        assert (grid.header.frame_id, grid.info.width, grid.info.height) == ('map', 280, 101)
        for robot in cfg.robots:
            odom = got[f'/{robot.name}/odom'][-1]
            assert odom.header.frame_id == 'map'
            assert odom.child_frame_id == f'{robot.name}/base_link'
            assert math.hypot(odom.pose.pose.position.x - robot.start[0],
                              odom.pose.pose.position.y - robot.start[1]) < 1e-6
        names = {(n, ns) for n, ns in probe.node.get_node_names_and_namespaces()}
        assert {('fleet_sim', '/'), ('map_publisher', '/')} <= names


def test_single_threaded_graph_answers_parameter_services():
    """`orca-nav demo --executor single_threaded` serves the nodes' parameter services."""
    specs = [s for s in describe_graph(corridor(2)) if s.executable == 'map_publisher']
    with run_graph(specs, executor='single_threaded') as graph:
        context = rclpy.Context()
        rclpy.init(context=context)
        node = rclpy.create_node('param_probe', context=context)
        try:
            client = node.create_client(GetParameters, '/map_publisher/get_parameters')
            executor = SingleThreadedExecutor(context=context)
            executor.add_node(node)
            assert client.wait_for_service(timeout_sec=10.0)
            future = client.call_async(GetParameters.Request(names=['frame_id']))
            executor.spin_until_future_complete(future, timeout_sec=10.0)
            assert future.done() and future.result().values[0].string_value == 'map'
        finally:
            node.destroy_node()
            rclpy.try_shutdown(context=context)
        assert graph.error is None


def test_full_graph_drives_robots_with_cmd_vel_and_markers():
    """map publisher + simulator + ORCA: cmd_vel flows and the robots move toward their goals."""
    cfg = corridor(2)
    specs = describe_graph(cfg)
    assert [s.executable for s in specs] == ['map_publisher', 'fleet_sim_node', 'orca_node']
    with run_graph(specs) as graph:
        probe = Probe(graph)
        probe.listen(Twist, '/robot0/cmd_vel')
        probe.listen(MarkerArray, '/orca_nav/markers')
        probe.listen(Odometry, '/robot0/odom', qos_profile_sensor_data)
        probe.wait_for(['/robot0/cmd_vel', '/orca_nav/markers'], count=5)
        topics = dict(probe.node.get_topic_names_and_types())
        documented = {
            '/map': 'nav_msgs/msg/OccupancyGrid', '/robot0/odom': 'nav_msgs/msg/Odometry',
            '/robot1/cmd_vel': 'geometry_msgs/msg/Twist',
            '/robot1/goal_pose': 'geometry_msgs/msg/PoseStamped',
            '/orca_nav/markers': 'visualization_msgs/msg/MarkerArray',
            '/diagnostics': 'diagnostic_msgs/msg/DiagnosticArray',
            '/fleet_sim/collisions': 'std_msgs/msg/String'}
        for topic, msg_type in documented.items():
            assert topics.get(topic) == [msg_type], topic
        # robot0 starts at x = -5.5 heading for x = +5.5
        assert graph.wait_for(lambda: any(
            o.pose.pose.position.x > cfg.robots[0].start[0] + 0.2
            for o in probe.received('/robot0/odom')), 30.0)


def test_per_robot_mode_runs_one_namespaced_orca_node_per_robot():
    cfg = corridor(2)
    specs = describe_graph(cfg, mode='per_robot', use_sim=False)
    with run_graph(specs) as graph:
        assert sorted(graph.nodes) == ['/map_publisher', '/robot0/orca_node', '/robot1/orca_node']
        probe = Probe(graph)
        assert graph.wait_for(lambda: {('orca_node', '/robot0'), ('orca_node', '/robot1')} <=
                              set(probe.node.get_node_names_and_namespaces()), 30.0)


def test_a_node_that_fails_to_start_stops_the_graph():
    cfg = corridor(2)
    (sim,) = [s for s in describe_graph(cfg) if s.executable == 'fleet_sim_node']
    bad = NodeSpec('fleet_sim_node', 'fleet_sim',
                   parameters=[{**sim.parameters[0], 'robot0.radius': -1.0}])
    with pytest.raises(ValueError, match='robot0.radius'):
        with run_graph([bad]):
            pass


def test_only_orca_nav_nodes_run_in_process():
    with pytest.raises(ValueError, match='rviz2/rviz2 must be started as its own process'):
        with run_graph([NodeSpec('rviz2', 'rviz2', package='rviz2')]):
            pass
    with pytest.raises(ValueError, match="executor: 'green' is not one of events, single"):
        with run_graph([], executor='green'):
            pass
    with pytest.raises(ValueError, match="executable 'teleop' has no in-process node class"):
        node_class('teleop')
    for executable in ('fleet_sim_node', 'map_publisher', 'orca_node', 'planner_node'):
        assert issubclass(node_class(executable), Node)


def test_a_callback_exception_is_kept_for_the_caller():
    with run_graph([]) as graph:
        node = graph.add_node(Node('faulty', context=graph.context))

        def explode():
            raise ZeroDivisionError('boom')
        node.create_timer(0.05, explode)
        assert graph.wait_for(lambda: graph.error is not None, 30.0)
        assert 'ZeroDivisionError: boom' in graph.error
