"""Shared helpers for tests that talk to nodes over real rclpy / DDS."""
import os
import threading
import time

import rclpy
from rclpy.executors import MultiThreadedExecutor


class RosHarness:
    """A private rclpy context, a spinning executor and a probe node for the test's own pubs/subs."""

    def __init__(self, domain_id=None):
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.executor = MultiThreadedExecutor(num_threads=2, context=self.context)
        self.probe = self.add(rclpy.create_node('probe', context=self.context))
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self):
        try:
            self.executor.spin()
        except Exception:       # the context shut down under us at teardown
            pass

    def add(self, node):
        self.executor.add_node(node)
        return node

    def collect(self, msg_type, topic, qos=10):
        """A list that receives every message published on `topic` from now on."""
        box = []
        self.probe.create_subscription(msg_type, topic, box.append, qos)
        return box

    def shutdown(self):
        nodes = list(self.executor.get_nodes())     # Executor.shutdown() forgets its nodes
        self.executor.shutdown(timeout_sec=2.0)
        for node in nodes:      # a node left alive keeps publishing into later tests
            node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def wait_for(predicate, timeout=15.0, period=0.02):
    """Polls `predicate` until it holds or `timeout` s pass; returns its last value."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(period)
    return predicate()


def private_domain():
    """A DDS domain beside this session's own, for tests that start a node as a subprocess:
    a process stopped by a signal stays in discovery for a lease period (~20 s), and later
    tests of the session must not see its topics and services."""
    return (int(os.environ['ROS_DOMAIN_ID']) + 101) % 233
