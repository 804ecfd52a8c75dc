"""recorder_node: records a run's topics as a rosbag2 bag (MCAP storage, ROS 2 CDR messages).

Subscribes every topic of `topics` once a publisher of it is discovered (a steady-clock timer
looks until all are found), as a generic subscription: rclpy's `raw=True` hands over the
serialized CDR bytes, which are written as they came, so no message is deserialized. Each
message is stamped with its receive time on the node's clock (simulated time under
use_sim_time), as `ros2 bag record --use-sim-time` does. The subscriptions live on a companion
node no executor spins; a thread of the recorder waits on them, takes what is ready and writes
it (as `ros/robot_topics.py` reads odometry): a recorded message costs no executor callback, so
the graph it shares an executor with (the demo's, in one process) is not slowed by dispatching
thousands of them. The subscription's QoS follows the publishers' (reliable and transient local
only when every publisher offers it) and the offered profiles go into the bag, so
`ros2 bag play` republishes a latched /map latched.

The bag is the folder `output` (it must not exist): `metadata.yaml` and `<folder>.mcap`,
rosbag2's format version 9 with each topic's type hash, so `ros2 bag info` and `ros2 bag play`
read it on a ROS machine, and any MCAP reader opens the .mcap. It is closed (index and
metadata written) when the node is destroyed (Ctrl-C, SIGTERM, the end of the demo).

Why `rosbags`: rosbag2's own Python API (rosbag2_py) is not on PyPI; rosbags (pure Python, on
PyPI) writes rosbag2 bags with MCAP storage and has the Jazzy message definitions the MCAP
schemas need. It is imported only when a recorder starts (the `record` extra of setup.py),
so nothing else depends on it. On a ROS machine `ros2 bag record -s mcap` records the same
topics (docs/recording.md).
"""
from __future__ import annotations

import importlib
import threading
from pathlib import Path
from typing import Dict, List

from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from orca_nav.parameters.recorder_node import NODE_SPECS
from orca_nav.ros.construction import released_on_failure
from orca_nav.ros.node_main import run_node
from orca_nav.ros.params import declare_parameters
from orca_nav.ros.robot_topics import wait_for_ready

DISCOVERY_PERIOD_S = 0.2    # steady-clock period of the look for publishers not yet found
HISTORY_DEPTH = 1000        # messages a subscription holds while the reader is busy
RECORD_EXTRA_HINT = ("the recorder needs the 'rosbags' package: pip install 'orca_nav[record]' "
                     '(or pip install rosbags)')


def open_bag(output: Path):
    """A rosbags rosbag2 Writer for `output`, opened, with the Jazzy type store; ValueError
    naming the path when it exists, or saying how to install rosbags when it is missing."""
    try:
        from rosbags.rosbag2 import StoragePlugin, Writer
        from rosbags.typesys import Stores, get_typestore
    except ImportError as err:
        raise ValueError(f'{RECORD_EXTRA_HINT} ({err})') from None
    if output.exists():
        raise ValueError(f'output: {str(output)!r} exists already (a bag is written to a new '
                         'folder)')
    writer = Writer(output, version=9, storage_plugin=StoragePlugin.MCAP)
    writer.open()
    return writer, get_typestore(Stores.ROS2_JAZZY)


def message_class(type_name: str):
    """The Python class of 'pkg/msg/Name'."""
    package, _, name = type_name.split('/')
    return getattr(importlib.import_module(f'{package}.msg'), name)


def bag_qos(profile: QoSProfile):
    """rclpy's QoS profile as rosbags' Qos (the same policy names and numbers as rmw's)."""
    from rosbags.interfaces import (
        Qos,
        QosDurability,
        QosHistory,
        QosLiveliness,
        QosReliability,
        QosTime,
    )

    def duration(value) -> 'QosTime':
        sec, nsec = divmod(int(value.nanoseconds), 1_000_000_000)
        return QosTime(sec, nsec)

    return Qos(QosHistory[profile.history.name], int(profile.depth),
               QosReliability[profile.reliability.name], QosDurability[profile.durability.name],
               duration(profile.deadline), duration(profile.lifespan),
               QosLiveliness[profile.liveliness.name],
               duration(profile.liveliness_lease_duration),
               bool(profile.avoid_ros_namespace_conventions))


def subscription_qos(offered: List[QoSProfile]) -> QoSProfile:
    """The QoS that matches every offered profile and loses least: reliable when all publishers
    are reliable, transient local when all are (a latched /map), else best effort / volatile."""
    reliable = all(p.reliability == ReliabilityPolicy.RELIABLE for p in offered)
    latched = all(p.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in offered)
    return QoSProfile(depth=HISTORY_DEPTH,
                      reliability=ReliabilityPolicy.RELIABLE if reliable
                      else ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL if latched
                      else DurabilityPolicy.VOLATILE)


class _Reader:
    """A thread that takes the serialized messages of the subscriptions `add`ed (on a node no
    executor spins) and hands each to `write(topic, data)`; `close` stops it."""

    def __init__(self, node: Node, write):
        self._reader = Node(f'{node.get_name()}_reader', namespace=node.get_namespace(),
                            context=node.context, use_global_arguments=False,
                            start_parameter_services=False, enable_logger_service=False)
        self._write = write
        self._entries: List[tuple] = []         # (subscription, topic)
        self._lock = threading.Lock()
        self._wake = self._reader.create_guard_condition(lambda: None)
        self._stopping = False
        self._thread = threading.Thread(target=self._read, daemon=True,
                                        name=f'{node.get_name()}_reader')
        self._thread.start()

    def add(self, msg_type, topic: str, qos: QoSProfile) -> None:
        subscription = self._reader.create_subscription(msg_type, topic, lambda _: None, qos,
                                                        raw=True)
        with self._lock:
            self._entries.append((subscription, topic))
        self._wake.trigger()        # the thread waits on the new subscription from now on

    def close(self) -> None:
        """Stops the thread, then writes what arrived meanwhile (a message received before the
        stop is recorded)."""
        self._stopping = True
        self._wake.trigger()
        self._thread.join()
        for subscription, topic in self._entries:
            while (message := subscription.handle.take_message(subscription.msg_type,
                                                               True)) is not None:
                self._write(topic, message[0])
        self._reader.destroy_node()

    def _read(self) -> None:
        from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
        context = self._reader.context
        wait_set, handles, by_pointer = None, [], {}
        while not self._stopping and context.ok():
            with self._lock:
                if len(self._entries) != len(handles):     # subscriptions were added
                    handles = [sub.handle for sub, _ in self._entries]
                    by_pointer = {sub.handle.pointer: (sub.handle.take_message, sub.msg_type,
                                                       topic) for sub, topic in self._entries}
                    wait_set = _rclpy.WaitSet(len(handles), 1, 0, 0, 0, 0, context.handle)
            if wait_set is None:
                wait_set = _rclpy.WaitSet(0, 1, 0, 0, 0, 0, context.handle)
            ready = wait_for_ready(wait_set, handles, self._wake, context)
            if ready is None:
                return
            # Every message that is ready, one subscription after the other.
            for pointer in ready:
                take, msg_type, topic = by_pointer[pointer]
                while (message := take(msg_type, True)) is not None:
                    self._write(topic, message[0])


class RecorderNode(Node):
    """Writes the messages of `topics` to the bag `output` (see the module docstring)."""

    @released_on_failure
    def __init__(self, **kwargs):
        self._writer = None
        self._lock = threading.Lock()       # the writer: callbacks vs. close
        super().__init__('recorder', **kwargs)
        self.params = declare_parameters(self, NODE_SPECS)
        self._topics = [self.resolve_topic_name(t) for t in self.params['topics'] if t]
        if not self._topics:
            raise ValueError("topics: no topic to record (give a list such as ['/clock'])")
        if not self.params['output']:
            raise ValueError('output: the folder of the bag to write is empty')
        self._writer, self._types = open_bag(Path(self.params['output']).expanduser())
        self._connections: Dict[str, object] = {}
        self._counts: Dict[str, int] = {}
        self._skipped: Dict[str, str] = {}      # topic -> why it is not recorded
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._reader = _Reader(self, self._write)
        self._discovery = self.create_timer(DISCOVERY_PERIOD_S, self._discover,
                                            clock=self._steady)
        self._discover()
        self.get_logger().info(f"recording {len(self._topics)} topics to "
                               f"{self.params['output']}")

    @property
    def output(self) -> Path:
        return Path(self.params['output']).expanduser()

    def counts(self) -> Dict[str, int]:
        """Messages written so far, per topic (every topic asked for; 0 when none came)."""
        with self._lock:
            return {topic: self._counts.get(topic, 0) for topic in self._topics}

    def skipped(self) -> Dict[str, str]:
        """Topics found but not recorded, with the reason (a type rosbags does not know)."""
        with self._lock:
            return dict(self._skipped)

    def _discover(self) -> None:
        pending = [t for t in self._topics if t not in self._connections
                   and t not in self._skipped]
        if not pending:
            self._discovery.cancel()
            return
        types = dict(self.get_topic_names_and_types())
        for topic in pending:
            publishers = self.get_publishers_info_by_topic(topic)
            if topic in types and publishers:
                self._subscribe(topic, types[topic][0], publishers)

    def _subscribe(self, topic: str, type_name: str, publishers) -> None:
        if type_name not in self._types.types:
            self._skip(topic, f'type {type_name} has no definition in the recorder\'s type store')
            return
        offered = [p.qos_profile for p in publishers]
        digest = self._types.hash_rihs01(type_name)
        published = {str(p.topic_type_hash) for p in publishers}
        if published and published != {digest}:
            self.get_logger().warning(f'{topic}: publishers offer type hash '
                                      f'{", ".join(sorted(published))}, the recorder\'s '
                                      f'{type_name} definition has {digest}')
        with self._lock:
            self._connections[topic] = self._writer.add_connection(
                topic, type_name, typestore=self._types,
                offered_qos_profiles=[bag_qos(p) for p in offered])
        self._reader.add(message_class(type_name), topic, subscription_qos(offered))
        self.get_logger().info(f'recording {topic} ({type_name})')

    def _skip(self, topic: str, why: str) -> None:
        with self._lock:
            self._skipped[topic] = why
        self.get_logger().warning(f'{topic}: not recorded: {why}')

    def _write(self, topic: str, data: bytes) -> None:
        stamp = self.get_clock().now().nanoseconds
        with self._lock:
            if self._writer is not None:
                self._writer.write(self._connections[topic], stamp, data)
                self._counts[topic] = self._counts.get(topic, 0) + 1

    def close(self) -> None:
        """Stops reading, writes the bag's index and metadata.yaml."""
        reader, self._reader = getattr(self, '_reader', None), None
        if reader is not None:
            reader.close()
        with self._lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()

    def destroy_node(self) -> None:
        self.close()
        super().destroy_node()


def main(args=None) -> None:
    run_node(RecorderNode, 'recorder', args)


if __name__ == '__main__':
    main()
