"""Per-robot subscriptions read off DDS on a thread of their own, handed to the node in batches.

rclpy's executors run every message as a task of its own and, on every wake, walk every entity
of the node in Python. A fleet node has a few subscriptions per robot (odometry at 20 Hz, goals,
plans): at 500 robots that is 10,000 odometry messages a second against a wait set of 1,500
subscriptions, more than one core spends on rclpy's bookkeeping alone (docs/scale.md has the
profile). rclpy's EventsExecutor, which would avoid it, answers no service requests in rclpy 7.1.6
(Jazzy) and stopped commanding robots when tried here, so it is not used.

`RobotTopics` keeps these subscriptions on a companion node, `<node name>_robot_topics`, that no
executor spins. Its thread waits on them with an rcl wait set (as rclpy's own `wait_for_message`
does), takes every message that is ready, queues it with its callback and wakes the node's
executor through one guard condition. The callbacks then run in the executor's thread, one batch
per wake, each subscription's messages in order: the node's state is still touched by one thread
only, and its wait set keeps only what is not per robot (parameters, lifecycle, timers, /map,
/clock). The thread waits again only once the executor has begun the batch: filling the wait
set costs time in proportion to the robots, so a thread that went round for every message would
take Python's lock from the node most of the time; this way the messages that arrive meanwhile
are taken in one pass and still join the batch under way. Topics that rarely carry a message
(goals, plans) wait on a second thread with a wait set of their own, so the frequent ones' wait
set, filled again on every pass, holds only them. Topic names are resolved by the node, so its
namespace and remappings apply.

A trigger can be lost: rmw_fastrtps 8.4.3 (these Jazzy wheels) resets a guard condition
triggered while a wait on it returns for something else, without reporting it ready (the race
ros2/rmw_fastrtps#895 fixes upstream). The batch would wait for a next trigger that never
comes, since the reading thread waits for the executor to begin it. So while the executor has
not begun the batch, the thread triggers the handover again every `HANDOVER_RETRY_S`.
"""
from __future__ import annotations

import collections
import threading
from typing import Any, Callable, List, Optional, Sequence, Tuple

from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node

from orca_nav.ros.qos_events import subscription_events

HANDOVER_RETRY_S = 0.02     # a lost handover costs at most this much latency


def wait_for_ready(wait_set, handles: Sequence, guard, context) -> Optional[List[int]]:
    """Fills the rcl `wait_set` with the subscription `handles` and the `guard` condition,
    waits until one is ready and returns the pointers of the ready subscriptions; None when the
    context shut down under the wait (rcl then fails it). A thread's wait set is filled again
    on every pass: rcl clears it after each wait."""
    wait_set.clear_entities()
    add = wait_set.add_subscription
    for handle in handles:
        add(handle)
    wait_set.add_guard_condition(guard.handle)
    try:
        wait_set.wait(-1)
    except Exception:       # rcl's error when the context shuts down under the wait
        if context.ok():
            raise
        return None
    return wait_set.get_ready_entities('subscription')


class RobotTopics:
    """Create in the node's configure step, `subscribe` every per-robot topic, then `start`;
    `close` (at cleanup) stops the thread and removes the companion node."""

    def __init__(self, node: Node, after_batch: Callable[[], None], batched: bool = True):
        """`after_batch` runs in the executor's thread after each batch of callbacks. Not
        `batched`: plain subscriptions of the node, each message a batch of its own (for an
        executor without guard conditions)."""
        self._node, self._after_batch, self._batched = node, after_batch, batched
        self._threads: List[threading.Thread] = []
        self._wakes: list = []      # a guard condition per thread, to end its wait
        if not batched:
            return
        self._reader = Node(f'{node.get_name()}_robot_topics', namespace=node.get_namespace(),
                            context=node.context, use_global_arguments=False,
                            start_parameter_services=False, enable_logger_service=False)
        # (subscription, callback) lists: the frequent topics', the rare ones'
        self._entries: Tuple[List[Tuple[Any, Callable[[Any], None]]], ...] = ([], [])
        self._queue: collections.deque = collections.deque()
        self._handover = node.create_guard_condition(self._run_callbacks)
        self._ran = threading.Event()        # the executor has begun the last batch
        self._ran.set()
        self._stopping = False

    def subscribe(self, msg_type, topic: str, callback: Callable[[Any], None], qos,
                  raw: bool = False, rare: bool = False) -> None:
        """As Node.create_subscription; `callback` runs in the node's executor thread. `rare`:
        a topic that seldom carries a message (it waits on the second thread)."""
        if self._threads:
            raise RuntimeError('RobotTopics.subscribe after start')
        if not self._batched:
            def one_message(message):
                callback(message)
                self._after_batch()
            self._node.create_subscription(msg_type, topic, one_message, qos, raw=raw,
                                           event_callbacks=subscription_events())
            return
        subscription = self._reader.create_subscription(
            msg_type, self._node.resolve_topic_name(topic), lambda _msg: None, qos, raw=raw,
            event_callbacks=subscription_events())
        self._entries[rare].append((subscription, callback))

    def start(self) -> None:
        if not self._batched:
            return
        for kind, entries in zip(('', '_rare'), self._entries):
            if entries:     # each thread its own wake: a trigger wakes one wait
                self._wakes.append(self._reader.create_guard_condition(lambda: None))
                self._threads.append(threading.Thread(
                    target=self._read, args=(entries, self._wakes[-1]), daemon=True,
                    name=f'{self._node.get_name()}_robot_topics{kind}'))
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        """(The unbatched subscriptions are the node's: its cleanup destroys them.)"""
        if not self._batched:
            return
        self._stopping = True
        self._ran.set()
        for wake in self._wakes:
            wake.trigger()
        for thread in self._threads:
            thread.join()
        self._node.destroy_guard_condition(self._handover)
        self._reader.destroy_node()
        self._queue.clear()

    def _read(self, entries, wake) -> None:
        context = self._node.context
        wait_set = _rclpy.WaitSet(len(entries), 1, 0, 0, 0, 0, context.handle)
        handles = [subscription.handle for subscription, _ in entries]
        by_pointer = {handle.pointer: (handle.take_message, subscription.msg_type,
                                       subscription.raw, callback)
                      for handle, (subscription, callback) in zip(handles, entries)}
        queue = self._queue
        while not self._stopping and context.ok():
            while not self._ran.wait(HANDOVER_RETRY_S):
                if not context.ok():
                    return
                self._handover.trigger()
            ready = wait_for_ready(wait_set, handles, wake, context)
            if ready is None:
                return
            taken = 0
            # One message per ready subscription and pass: a subscription with more stays ready
            # for the next pass, and a second take that finds nothing would cost as much as one
            # that finds something.
            for pointer in ready:
                take, msg_type, raw, callback = by_pointer[pointer]
                if (message := take(msg_type, raw)) is not None:
                    queue.append((callback, message[0]))
                    taken += 1
            if taken:
                self._ran.clear()
                self._handover.trigger()

    def _run_callbacks(self) -> None:
        queue = self._queue
        self._ran.set()     # what arrives meanwhile joins this batch
        while queue:
            callback, message = queue.popleft()
            callback(message)
        self._after_batch()
