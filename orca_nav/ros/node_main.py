"""The `main()` every orca_nav node module shares: start, spin, shut down cleanly.

A node whose constructor raises ValueError (a rejected parameter, a missing file) is not
started: the error is logged under the node's name and the process exits with status 1, so
`ros2 run` / `ros2 launch` show why start-up stopped.
"""
from __future__ import annotations

import sys
from typing import Callable, Optional, Sequence

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node

from orca_nav.ros.params import warn_undeclared_overrides


def run_node(make_node: Callable[[], Node], name: str, args: Optional[Sequence[str]] = None,
             multithreaded: bool = False) -> None:
    """rclpy.init(args), node = make_node(), spin until Ctrl-C or shutdown, clean up."""
    rclpy.init(args=args)
    try:
        node = make_node()
        warn_undeclared_overrides(node)
    except ValueError as err:
        rclpy.logging.get_logger(name).error(f'cannot start: {err}')
        rclpy.try_shutdown()
        sys.exit(1)
    executor = MultiThreadedExecutor() if multithreaded else SingleThreadedExecutor()
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
