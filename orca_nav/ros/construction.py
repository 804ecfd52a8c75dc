"""Node constructors that fail leave nothing behind.

A node whose constructor raises (a bad parameter, a missing map file) already holds an rcl node
with its publishers and its /rosout registration. rcl keeps one /rosout publisher per logger
name: left to the garbage collector, the dead node would take a later node of the same name's
log with it (that node's warnings would never reach /rosout) and its entities would linger on the
graph. `released_on_failure` destroys the node before the error goes on.
"""
import functools


def released_on_failure(init):
    """Decorates a Node subclass's __init__: on any exception the node is destroyed, then the
    exception is raised unchanged."""
    @functools.wraps(init)
    def construct(node, *args, **kwargs):
        try:
            init(node, *args, **kwargs)
        except BaseException:
            if getattr(node, 'handle', None) is not None:   # None: rclpy's Node itself failed
                node.destroy_node()
            raise
    return construct
