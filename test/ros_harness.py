"""Shared helpers for tests that talk to nodes over real rclpy / DDS.

Synchronisation is by condition, never by sleeping: the harness spins its executor on a thread
and, after every callback it ran (any node's), wakes whoever waits in `wait_for`; waiting on
DDS discovery (a publisher matching its subscriber) is a condition too. The `timeout` of a wait
is a generous bound that fails the test when the condition never comes, not a delay.

Tests that need time to pass use simulated time: `SimClock` publishes /clock, nodes are
started with use_sim_time, and the test advances the clock itself, so a loaded machine makes a
test slower but never changes what it sees.
"""
import os
import threading
import time

import pytest
import rclpy
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rcl_interfaces.msg import Log
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock as ClockMsg

WAIT_S = 30.0       # bound of every wait: fails a test whose condition never comes
RESEND_S = 2.0      # a best-effort sample not acted on within this is sent again
CLOCK_REPEAT_S = 0.1    # SimClock sends its time again this often


class RosHarness:
    """A private rclpy context, a spinning executor and a probe node for the test's own
    pubs/subs. One thread spins every node, as in a node's own process: with rclpy 7's
    MultiThreadedExecutor (2 workers) an odometry took 50-400 ms to reach the probe."""

    def __init__(self, domain_id=None):
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.probe = self.add(rclpy.create_node('probe', context=self.context))
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self):
        while not self._stop.is_set():
            try:
                # The timeout only lets the loop see _stop and discovery changes (matched
                # publishers) that run no callback.
                self.executor.spin_once(timeout_sec=0.05)
            except Exception:       # the context shut down under us at teardown
                if self._stop.is_set() or not self.context.ok():
                    return
                raise
            with self._changed:
                self._changed.notify_all()

    def add(self, node):
        self.executor.add_node(node)
        return node

    def collect(self, msg_type, topic, qos=10, publishers=0):
        """A list that receives the messages published on `topic`; every one from now on once
        `publishers` publishers have matched, which it waits for (a message published before
        the match is not delivered)."""
        box = []
        sub = self.probe.create_subscription(msg_type, topic, box.append, qos)
        assert self.wait_for(lambda: sub.get_publisher_count() >= publishers), \
            f'{topic}: {sub.get_publisher_count()} of {publishers} publishers matched'
        return box

    def rosout(self):
        """A list that receives the nodes' log entries (rcl_interfaces/Log) from /rosout,
        transient local: the lines logged before the call come too. Reading the captured stderr
        while nodes write it could lose a line (the capture truncates its file after a read)."""
        return self.collect(Log, '/rosout', QoSProfile(
            depth=1000, reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL))

    def publisher(self, msg_type, topic, qos=10, subscribers=1):
        """A probe publisher, returned once `subscribers` subscriptions have matched it (so
        nothing it publishes next is lost to discovery)."""
        pub = self.probe.create_publisher(msg_type, topic, qos)
        assert self.wait_for(lambda: pub.get_subscription_count() >= subscribers), \
            f'nothing subscribed to {topic}'
        return pub

    def wait_for(self, predicate, timeout=WAIT_S, resend=None):
        """Waits until `predicate()` holds (re-checked after every executor callback) or
        `timeout` s pass; returns whether it holds. `resend()`, when given, publishes again
        what should make it hold, every RESEND_S: sensor data is best effort, so on a loaded
        machine one sample can be lost, as on a robot, where the next one comes anyway."""
        if resend is None:
            with self._changed:
                return self._changed.wait_for(predicate, timeout)
        end = time.monotonic() + timeout
        while True:
            with self._changed:
                if self._changed.wait_for(predicate, min(RESEND_S, end - time.monotonic())):
                    return True
            if time.monotonic() >= end:
                return False
            resend()

    def shutdown(self):
        self._stop.set()
        self._thread.join(timeout=10.0)
        nodes = list(self.executor.get_nodes())     # Executor.shutdown() forgets its nodes
        self.executor.shutdown(timeout_sec=2.0)
        for node in nodes:      # a node left alive keeps publishing into later tests
            # rclpy's destroy_node leaves action clients and servers to the garbage collector,
            # and each keeps its node, with the context's DDS participant, in later tests' graph
            for waitable in list(node.waitables):
                waitable.destroy()
            node.destroy_node()
        rclpy.try_shutdown(context=self.context)


class LifecycleClient:
    """The two services a lifecycle manager uses, called over DDS."""

    def __init__(self, ros, node_name, timeout=WAIT_S):
        self.ros = ros
        self.change = ros.probe.create_client(ChangeState, f'/{node_name}/change_state')
        self.get = ros.probe.create_client(GetState, f'/{node_name}/get_state')
        assert ros.wait_for(lambda: self.change.service_is_ready() and
                            self.get.service_is_ready(), timeout)

    def _call(self, client, request, timeout=WAIT_S):
        """The reply, or None when none came within `timeout`."""
        future = client.call_async(request)
        return future.result() if self.ros.wait_for(future.done, timeout) else None

    def transition(self, transition_id) -> bool:
        reply = self._call(self.change, ChangeState.Request(
            transition=Transition(id=transition_id)))
        assert reply is not None, 'the lifecycle service did not answer'
        return reply.success

    def state(self) -> str:
        reply = self._call(self.get, GetState.Request())
        assert reply is not None, 'the lifecycle service did not answer'
        return reply.current_state.label

    def configure(self, reply_s, timeout) -> bool:
        """Configures a node in another process, whose reply can be lost (it may answer
        before its reply writer has matched the probe's reader): configure is asked for while
        the node says it is unconfigured, a reply not in within `reply_s` counts as lost, and
        the node's own state decides. Whether it was inactive within `timeout`."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            state = self._call(self.get, GetState.Request(), reply_s)
            label = None if state is None else state.current_state.label
            if label == 'inactive':
                return True
            if label == 'unconfigured':
                self._call(self.change, ChangeState.Request(
                    transition=Transition(id=Transition.TRANSITION_CONFIGURE)), reply_s)
        return False

    def close(self):
        self.ros.probe.destroy_client(self.change)
        self.ros.probe.destroy_client(self.get)


def harness_fixture(make=RosHarness):
    """A test module's `ros` fixture: `ros = harness_fixture(Ros)` gives each test a fresh
    `make()`, shut down after it."""
    @pytest.fixture
    def ros():
        harness = make()
        yield harness
        harness.shutdown()
    return ros


class SimClock:
    """The test's own /clock: nodes started with `sim_time()` see only the time it publishes.

    Like a simulator it sends its time again every CLOCK_REPEAT_S (a wall-clock timer of the
    probe): rclpy's TimeSource subscribes to /clock best effort, so a single lost sample would
    otherwise hold a node's time back for the rest of the test."""

    def __init__(self, harness, start_s=100.0, subscribers=1):
        self.now_s = float(start_s)
        self._lock = threading.Lock()   # the test's thread and the repeat timer both publish
        self._pub = harness.publisher(ClockMsg, '/clock', QoSProfile(depth=10),
                                      subscribers=subscribers)
        self.publish()
        harness.probe.create_timer(CLOCK_REPEAT_S, self.publish)

    def publish(self):
        with self._lock:
            msg = ClockMsg()
            msg.clock.sec = int(self.now_s)
            msg.clock.nanosec = int(round((self.now_s - int(self.now_s)) * 1e9))
            self._pub.publish(msg)
        return msg.clock

    def advance(self, seconds):
        self.now_s += seconds
        return self.publish()


def sim_time():
    """The parameter override that puts a node on /clock."""
    return Parameter('use_sim_time', value=True)


def node_time_s(node):
    """A node's own idea of now, in seconds (its clock follows /clock under use_sim_time)."""
    return node.get_clock().now().nanoseconds * 1e-9


def private_domain():
    """A DDS domain beside this session's own, for tests that start a node as a subprocess:
    a process stopped by a signal stays in discovery for a lease period (~20 s), and later
    tests of the session must not see its topics and services."""
    return (int(os.environ['ROS_DOMAIN_ID']) + 101) % 233


def contact_reports(graph):
    """The simulator's contact reports (decoded JSON objects) in a list that fills while the
    running graph (`bringup.runner.run_graph`) runs; transient local, so none is missed."""
    import json

    from std_msgs.msg import String

    from orca_nav.ros.convert import latched_qos
    from orca_nav.ros.fleet_sim_node import COLLISION_HISTORY
    reports = []
    probe = graph.add_node(rclpy.create_node('contact_probe', context=graph.context))
    probe.create_subscription(String, '/fleet_sim/collisions',
                              lambda msg: reports.append(json.loads(msg.data)),
                              latched_qos(COLLISION_HISTORY))
    return reports
