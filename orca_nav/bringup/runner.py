"""Runs a node graph (bringup.describe_graph) in this process, over real DDS topics.

Each NodeSpec becomes an instance of its orca_nav node class with the spec's parameters as
overrides and its name and namespace, all spun by one executor on a background thread inside a
private rclpy context (so the caller's own rclpy use is untouched).

Executor: rclpy's EventsExecutor where available (rclpy.experimental, Jazzy), else a
SingleThreadedExecutor (what each node runs in its own process). A 16-robot graph moves ~800
odometry messages a second through Python; the wait-set executors pay a per-callback cost that
grows with the number of subscriptions. rclpy 7's MultiThreadedExecutor is not offered: the
circle demo's robots covered a fifth of their EventsExecutor distance on it, and with 2 workers
an odometry took 50-400 ms to reach a subscriber in the same executor. The nodes keep their
slow work off the executor thread (the planner plans on its own workers), so one thread serves
them all.
"""
from __future__ import annotations

import importlib
import os
import sys
import threading
import traceback
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from orca_nav.bringup.graph import ORCA, PACKAGE, NodeSpec
from orca_nav.ros.params import warn_undeclared_overrides

_ACTION_TIMEOUT_S = 30.0    # wall s the spin thread may take to run a node change

NODE_CLASSES = {
    'orca_node': 'orca_nav.ros.orca_node:OrcaNode',
    'fleet_sim_node': 'orca_nav.ros.fleet_sim_node:FleetSimNode',
    'map_publisher': 'orca_nav.ros.map_publisher:MapPublisher',
    'map_3d_publisher': 'orca_nav.ros.map_3d_publisher:Map3dPublisher',
    'planner_node': 'orca_nav.ros.planner_node:PlannerNode',
    'mission_node': 'orca_nav.ros.mission_node:MissionNode',
    'recorder_node': 'orca_nav.ros.recorder_node:RecorderNode',
    'tf_relay': 'orca_nav.ros.tf_relay:TfRelay',
}


def node_class(executable: str):
    """The class behind an orca_nav executable name."""
    if executable not in NODE_CLASSES:
        raise ValueError(f'executable {executable!r} has no in-process node class '
                         f'(known: {", ".join(NODE_CLASSES)})')
    module_name, class_name = NODE_CLASSES[executable].split(':')
    return getattr(importlib.import_module(module_name), class_name)


EXECUTORS = ('events', 'single_threaded')


def default_executor() -> str:
    try:
        from rclpy.experimental import EventsExecutor  # noqa: F401
    except ImportError:
        return 'single_threaded'
    return 'events'


def make_executor(kind: str, context):
    if kind == 'events':
        from rclpy.experimental import EventsExecutor
        # EventsExecutor() calls faulthandler.enable(), which needs a real file behind
        # sys.stderr; under output capture (pytest, some hosts) lend it the process's stderr.
        saved = sys.stderr
        try:
            saved.fileno()
        except (AttributeError, ValueError, OSError):
            sys.stderr = sys.__stderr__
        try:
            return EventsExecutor(context=context)
        finally:
            sys.stderr = saved
    if kind == 'single_threaded':
        return SingleThreadedExecutor(context=context)
    raise ValueError(f'executor: {kind!r} is not one of {", ".join(EXECUTORS)}')


class RunningGraph:
    """The live graph: its rclpy context, executor and nodes (by fully qualified name)."""

    def __init__(self, context, executor, guard_conditions: bool = True):
        self.context = context
        self.executor = executor
        # rclpy's EventsExecutor serves no guard conditions: orca_node then takes its per-robot
        # topics one message at a time (its batching needs one, and this executor has no
        # per-message cost to save).
        self._batch_robot_topics = guard_conditions
        self.nodes: Dict[str, Node] = {}
        self.specs: Dict[str, NodeSpec] = {}
        self._spinning = False
        self._actions: List[Callable[[], None]] = []
        self._extra: List[Node] = []
        # The traceback of a callback exception; the executor thread has stopped when set.
        self.error: Optional[str] = None
        self._changed = threading.Condition()

    def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Waits until `predicate()` holds, re-checked after every callback the graph runs (and
        at least every 0.1 s), or a callback raised, or `timeout` s passed; returns whether it
        holds."""
        with self._changed:
            self._changed.wait_for(lambda: predicate() or self.error is not None, timeout)
            return bool(predicate())

    def _callback_ran(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def _on_spin_thread(self, action: Callable[[], Any]) -> Any:
        """Runs `action` on the spin thread between two spins (an executor must not change its
        nodes while another thread waits in it); directly while the graph is not spinning."""
        if not self._spinning:
            return action()
        done, result = threading.Event(), []
        with self._changed:
            self._actions.append(lambda: result.append(action()))
            self._actions.append(done.set)
        if not done.wait(_ACTION_TIMEOUT_S):
            raise RuntimeError(f'the graph did not run an action within {_ACTION_TIMEOUT_S} s')
        return result[0]

    def _run_actions(self) -> None:
        with self._changed:
            actions, self._actions = self._actions, []
        for action in actions:
            action()

    def stop_node(self, full_name: str) -> NodeSpec:
        """Takes a node out of the graph and destroys it, as if its process had died (it runs
        no callback from the next spin on); returns its spec (for `start_node`). Use the
        single_threaded executor: the EventsExecutor may still deliver events it queued for the
        node before it was taken out."""
        def stop():
            node = self.nodes.pop(full_name)
            self.executor.remove_node(node)
            node.destroy_node()     # between two spins: none of its callbacks is running
            return self.specs[full_name]
        return self._on_spin_thread(stop)

    def start_node(self, spec: NodeSpec) -> Node:
        """Starts (again) the node of `spec` in the graph, fresh: a restarted process."""
        def start():
            kwargs = _node_kwargs(spec, self.context)
            if spec.executable == ORCA:
                kwargs['parameter_overrides'].append(
                    Parameter('batch_robot_topics', value=self._batch_robot_topics))
            node = node_class(spec.executable)(**kwargs)
            warn_undeclared_overrides(node)
            self.nodes[spec.full_name] = node
            self.specs[spec.full_name] = spec
            self.executor.add_node(node)
            return node
        return self._on_spin_thread(start)

    def add_node(self, node: Node) -> Node:
        """Spins a node of the caller's (created with `context=graph.context`) with the graph;
        it is destroyed when the graph shuts down."""
        self._extra.append(node)
        self.executor.add_node(node)
        return node


def _node_kwargs(spec: NodeSpec, context) -> dict:
    overrides = [Parameter(name, value=value)
                 for params in spec.parameters for name, value in params.items()]
    ros_args = ['-r', f'__node:={spec.name}']
    for source, target in spec.remappings:
        ros_args += ['-r', f'{source}:={target}']
    return {'context': context, 'parameter_overrides': overrides,
            'namespace': '/' + spec.namespace.strip('/'),
            'cli_args': list(spec.arguments) + ['--ros-args'] + ros_args,
            'use_global_arguments': False}


@contextmanager
def run_graph(specs: Sequence[NodeSpec],
              executor: Optional[str] = None) -> Iterator[RunningGraph]:
    """Starts every spec's node in this process; shuts them all down on exit.

    executor: 'events' or 'single_threaded'; default: events if available.

    Only orca_nav nodes run in-process: a spec of another package (rviz2) is a ValueError.
    A node that fails to start (e.g. a rejected parameter) stops the ones already started
    and the error propagates.
    """
    for spec in specs:
        if spec.package != PACKAGE:
            raise ValueError(f'run_graph runs orca_nav nodes only; {spec.package}/'
                             f'{spec.executable} must be started as its own process')
        node_class(spec.executable)     # unknown executables fail before anything starts
    kind = executor or default_executor()
    if kind not in EXECUTORS:
        raise ValueError(f'executor: {kind!r} is not one of {", ".join(EXECUTORS)}')
    # One process, one DDS participant: the nodes' environment (a large fleet's DDS profile)
    # is this process's, where it does not set the variable itself. Fast DDS reads its profile
    # once per process, at the first participant.
    for spec in specs:
        for name, value in spec.env.items():
            os.environ.setdefault(name, value)
    context = rclpy.Context()
    rclpy.init(args=[], context=context)
    executor = make_executor(kind, context)
    graph = RunningGraph(context, executor, guard_conditions=kind != 'events')
    spinner = None
    try:
        for spec in specs:
            graph.start_node(spec)
        # The spin loop stops at a flag between callbacks: the EventsExecutor's shutdown (and
        # the context's) blocks forever while another thread is inside its spin().
        stop = threading.Event()

        def spin():
            while not stop.is_set():
                try:
                    graph._run_actions()
                    executor.spin_once(timeout_sec=0.1)
                except Exception:       # a node's callback raised: keep it for the caller
                    graph.error = traceback.format_exc()
                    print(f'orca_nav graph stopped: a callback raised\n{graph.error}',
                          file=sys.stderr)
                    graph._callback_ran()
                    return
                graph._callback_ran()

        spinner = threading.Thread(target=spin, name='orca_nav_graph', daemon=True)
        graph._spinning = True
        spinner.start()
        yield graph
    finally:
        if spinner is not None:
            stop.set()
            spinner.join(timeout=10.0)
        executor.shutdown(timeout_sec=5.0)
        for node in list(graph.nodes.values()) + graph._extra:
            node.destroy_node()
        context.try_shutdown()
