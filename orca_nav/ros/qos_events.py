"""Per-robot topics without rclpy's default QoS-event handlers.

rclpy gives every subscription and publisher two event handlers by default (incompatible QoS,
incompatible type), each a waitable of the node. Its executor, on every wake, rebuilds the wait
set and checks each waitable for membership in a list of all of them: the cost grows with the
square of the handler count. With a handful of topics per robot that square is the node's main
cost from about a hundred robots on (measured: `bench fleet`, docs/benchmarks.md). Topics a node
has once per robot therefore get no default handlers; an incompatible peer on one of them shows
up as that robot's missing data (stale odometry stops the robot and is reported on
/diagnostics; a goal or plan that never arrives leaves it waiting), not as rclpy's warning.
Fleet-wide topics (/map, /clock, /diagnostics) keep their handlers.
"""
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks


def subscription_events() -> SubscriptionEventCallbacks:
    """`event_callbacks` for a per-robot subscription: no handlers."""
    return SubscriptionEventCallbacks(use_default_callbacks=False)


def publisher_events() -> PublisherEventCallbacks:
    """`event_callbacks` for a per-robot publisher: no handlers."""
    return PublisherEventCallbacks(use_default_callbacks=False)
