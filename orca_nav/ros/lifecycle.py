"""Managed (lifecycle) nodes the way Nav2 runs them.

Every orca_nav node except the simulator is an `rclpy.lifecycle` node, so
`nav2_lifecycle_manager` (with `bond_timeout: 0.0`: orca_nav does not speak bond) or any client
of the standard `<node>/change_state` service can configure, activate, deactivate, clean up and
shut it down:

* constructed: parameters declared and checked (a bad start value still stops start-up);
* `configure`: the node builds its core objects, publishers, subscriptions and timers
  (`ManagedNode.configure`); a ValueError (an inconsistent parameter, a missing map file) fails
  the transition with the reason logged, and the node stays unconfigured;
* `activate`: outputs go out (lifecycle publishers are enabled), work starts;
* `deactivate`: the node's `deactivating` hook runs first (orca_node stops its robots with one
  zero command each), then nothing more is published;
* `cleanup`: everything `configure` created is destroyed; `configure` can run again;
* `shutdown`: deactivates (from active) and cleans up.

Parameter `autostart` (default true, as nav2_lifecycle_manager's) configures and activates the
node as soon as it is constructed, so `ros2 run`, the demo and the launch file need no manager;
with autostart false the node waits for a lifecycle manager. With autostart, a failed configure
raises ValueError from the constructor, exactly as a bad parameter does.
"""
from __future__ import annotations

from typing import Any, Iterable, List

from lifecycle_msgs.srv import GetState
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn

from orca_nav.parameters.shared import AUTOSTART
from orca_nav.ros.params import NamesUndeclaredParameters, declare_parameters


def _entities(node) -> List[tuple]:
    """(kind, entity) of everything the node has created that `cleanup` must destroy."""
    return ([('publisher', p) for p in node.publishers]
            + [('subscription', s) for s in node.subscriptions]
            + [('timer', t) for t in node.timers]
            + [('client', c) for c in node.clients]
            + [('service', s) for s in node.services]
            + [('waitable', w) for w in node.waitables])


class ManagedNode(NamesUndeclaredParameters, LifecycleNode):
    """A lifecycle node whose subclasses implement `configure` (and optionally `activated` and
    `deactivating`); see the module docstring."""

    def __init__(self, node_name: str, **kwargs):
        super().__init__(node_name, **kwargs)
        self.active = False
        self.configured = False
        self._autostart = declare_parameters(self, [AUTOSTART])['autostart']
        self._permanent = set()
        self._owned: List[Any] = []
        self._lifelong: List[Any] = []

    def start(self) -> None:
        """Call at the end of the subclass constructor: autostart, if asked. What exists by then
        (services, anything the constructor made) lives as long as the node; everything else is
        the configured node's, destroyed by cleanup."""
        self._permanent = {id(e) for _, e in _entities(self)}
        if not self._autostart:
            self.get_logger().info('waiting for a lifecycle manager (autostart false)')
            return
        if self.trigger_configure() != TransitionCallbackReturn.SUCCESS:
            raise ValueError(self._configure_error)
        self.trigger_activate()

    def serve_state_per_robot(self, robots: Iterable[str]) -> None:
        """Answers lifecycle_msgs/GetState at `<robot>/<node name>/get_state` too, for every
        robot, with this node's own state: a fleet node stands in for each robot's Nav2 node,
        and clients that look for it in the robot's namespace (nav2_simple_commander's
        `BasicNavigator(namespace=robot).waitUntilNav2Active(navigator=<node name>)`) find it
        there. Call in the constructor, before `start`: the services live as long as the node."""
        for robot in robots:
            self.create_service(GetState, f'{robot}/{self.get_name()}/get_state',
                                self._answer_state)

    def _answer_state(self, request, response):
        response.current_state.id, response.current_state.label = \
            self._state_machine.current_state
        return response

    def own(self, resource):
        """`resource` (anything with close(), e.g. a worker thread) belongs to the configured
        node: closed at cleanup, shutdown or destruction. Returns it."""
        self._owned.append(resource)
        return resource

    def own_for_life(self, resource):
        """`resource` (anything with close(), e.g. a worker pool made in the constructor) lives
        as long as the node: closed when it is destroyed. Returns it."""
        self._lifelong.append(resource)
        return resource

    def destroy_node(self) -> None:
        """Also releases the waitables and rclpy's lifecycle state machine, which hold the rcl
        node (rclpy leaves them to the garbage collector: the node would stay on the graph)."""
        self._close_owned()
        while self._lifelong:
            self._lifelong.pop().close()
        # rclpy's destroy_node leaves waitables (action servers) to the garbage collector; each
        # keeps the rcl node, and with it the DDS participant, alive: the node would linger on
        # the graph for a DDS lease (~20 s) after its process ended.
        for waitable in list(self.waitables):
            waitable.destroy()
        super().destroy_node()
        self._state_machine.destroy_when_not_in_use()

    # ------------------------------------------------------------------ subclass hooks
    def configure(self) -> None:
        """Builds the node's core objects, publishers, subscriptions and timers; raises
        ValueError naming the parameter when the parameters do not fit together."""
        raise NotImplementedError

    def activated(self) -> None:
        """Runs when the node becomes active (its publishers are already enabled)."""

    def deactivating(self) -> None:
        """Runs when the node stops being active, while its publishers still work."""

    # ------------------------------------------------------------------ transitions
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            self.configure()
        except ValueError as err:
            self._configure_error = str(err)
            self.get_logger().error(f'cannot configure: {err}')
            self._destroy_configured()
            return TransitionCallbackReturn.FAILURE
        self.configured = True
        return super().on_configure(state)

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        result = super().on_activate(state)     # enables the lifecycle publishers
        self.active = True
        self.activated()
        return result

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.deactivating()
        self.active = False
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._destroy_configured()
        return super().on_cleanup(state)

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        if self.active:
            self.on_deactivate(state)
        self._destroy_configured()
        return super().on_shutdown(state)

    def _close_owned(self) -> None:
        while self._owned:
            self._owned.pop().close()

    def _destroy_configured(self) -> None:
        self._close_owned()
        for kind, entity in reversed(_entities(self)):
            if id(entity) in self._permanent:
                continue
            if kind == 'publisher':
                self.destroy_lifecycle_publisher(entity)
            elif kind == 'waitable':
                entity.destroy()        # an action server removes itself from the node
            else:
                getattr(self, f'destroy_{kind}')(entity)
        self.configured = False
