"""The `main()` every orca_nav node module shares: start, spin, shut down cleanly.

A node whose constructor raises ValueError (a rejected parameter, a missing file) is not
started: the error is logged under the node's name and the process exits with status 1, so
`ros2 run` / `ros2 launch` show why start-up stopped.

SIGINT and SIGTERM stop the node with exit status 0 however many arrive. Under `ros2 launch`,
Ctrl-C reaches every node twice (from the terminal and from launch); with rclpy's own handlers
the second one raised KeyboardInterrupt in the middle of clean-up. Here the first signal
requests shutdown and later ones are ignored.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Callable, List, Optional, Sequence

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rclpy.task import Future

from orca_nav.ros.params import warn_undeclared_overrides

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def run_node(make_node: Callable[[], Node], name: str, args: Optional[Sequence[str]] = None,
             multithreaded: bool = False) -> None:
    """rclpy.init(args), node = make_node(), spin until SIGINT/SIGTERM or shutdown, clean up.

    Call it from the main thread of a process (it installs the process's signal handlers).
    """
    # The main thread blocks on this pipe; a signal or the end of spinning writes to it. A signal
    # handler runs only between Python bytecodes of the main thread, so the main thread must not
    # be the one blocked inside rcl's wait. The pipe stays open until the process exits: a signal
    # may still arrive during clean-up.
    wake_read, wake_write = os.pipe()
    received: List[int] = []

    def on_stop_signal(signum, _frame):
        if not received:
            os.write(wake_write, b'x')
        received.append(signum)

    for signum in STOP_SIGNALS:
        signal.signal(signum, on_stop_signal)
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    logger = rclpy.logging.get_logger(name)
    try:
        node = make_node()
        warn_undeclared_overrides(node)
    except ValueError as err:
        logger.error(f'cannot start: {err}')
        rclpy.try_shutdown()
        sys.exit(1)
    executor = MultiThreadedExecutor() if multithreaded else SingleThreadedExecutor()
    executor.add_node(node)
    stop = Future()
    failures: List[BaseException] = []

    def spin():
        try:
            executor.spin_until_future_complete(stop)
        except ExternalShutdownException:
            pass
        except BaseException as err:    # a callback raised: re-raised by the main thread
            failures.append(err)
        finally:
            os.write(wake_write, b'x')

    spinner = threading.Thread(target=spin, name=f'{name}_executor')
    spinner.start()
    os.read(wake_read, 1)
    if received:
        logger.info(f'shutting down on {signal.Signals(received[0]).name}')
    stop.set_result(None)
    spinner.join()
    executor.shutdown()
    node.destroy_node()
    rclpy.try_shutdown()
    if failures:
        raise failures[0]
