"""The `main()` every orca_nav node module shares: start, spin, shut down cleanly and quickly.

A node whose constructor raises ValueError (a rejected parameter, a missing file) is not
started: the error is logged under the node's name and the process exits with status 1, so
`ros2 run` / `ros2 launch` show why start-up stopped.

SIGINT and SIGTERM stop the node with exit status 0, in any state, however many arrive, within
STOP_BOUND_S:
* while the node is being built (rclpy.init, the constructor, a configure under autostart), the
  first signal aborts the construction (the node is released, `construction`);
* while it spins, the first signal wakes the main thread, which stops the executor, destroys the
  node (the planner's running plans are not waited for, `offload`; orca_node's robot-topic
  threads end, `robot_topics`) and shuts rclpy down, which also tells DDS the node is gone;
* later signals are ignored: under `ros2 launch`, Ctrl-C reaches every node twice (from the
  terminal and from launch); with rclpy's own handlers the second one raised KeyboardInterrupt
  in the middle of clean-up.
The process then ends without the interpreter's finalization (`orca_nav.process`: seconds when
a launch's nodes all stop at once on a loaded machine, and launch sends SIGTERM after 5 s).
Should the clean-up itself not finish within STOP_BOUND_S (a callback that does not return), the
process says so and ends.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Callable, List, Optional, Sequence

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rclpy.task import Future

from orca_nav.process import end_process
from orca_nav.ros.params import warn_undeclared_overrides

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
STOP_BOUND_S = 1.5      # wall s from a stop signal to the end of the process


class _StopWhileStarting(BaseException):
    """Raised by the stop-signal handler into the node's construction."""


def run_node(make_node: Callable[[], Node], name: str,
             args: Optional[Sequence[str]] = None) -> None:
    """rclpy.init(args), node = make_node(), spin until SIGINT/SIGTERM or shutdown, clean up and
    end the process.

    Call it from the main thread of a process (it installs the process's signal handlers and
    ends the process). A callback that raised is raised again here, after the clean-up.
    """
    # While the node spins, the main thread blocks on this pipe; a signal (through Python's
    # wakeup fd: its number) or the end of spinning (b'x') writes to it. The kernel hands a
    # process's signal to any of its threads, and Python runs its handler only when the main
    # thread runs bytecode: a main thread blocked in a read that the signal did not interrupt
    # would never see it, while a planning thread spent the GIL. The pipe stays open until the
    # process exits: a signal may still arrive during clean-up.
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    received: List[int] = []
    starting = [True]

    def on_stop_signal(signum, _frame):
        if received:
            return
        received.append(signum)
        if starting[0]:
            threading.Thread(target=_bound_the_stop, args=(name,), daemon=True).start()
            raise _StopWhileStarting()

    for signum in STOP_SIGNALS:
        signal.signal(signum, on_stop_signal)
    node = None
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        logger = rclpy.logging.get_logger(name)
        try:
            node = make_node()
        except ValueError as err:
            logger.error(f'cannot start: {err}')
            rclpy.try_shutdown()
            end_process(1)
        warn_undeclared_overrides(node)
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        starting[0] = False
    except _StopWhileStarting:
        rclpy.logging.get_logger(name).info(
            f'shutting down on {signal.Signals(received[0]).name} while starting')
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        end_process(0)
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

    spinner = threading.Thread(target=spin, name=f'{name}_executor', daemon=True)
    spinner.start()
    signals = [byte for byte in os.read(wake_read, 64) if byte != ord('x')]
    if signals:
        threading.Thread(target=_bound_the_stop, args=(name,), daemon=True).start()
        logger.info(f'shutting down on {signal.Signals(signals[0]).name}')
    stop.set_result(None)
    spinner.join()
    executor.shutdown()
    node.destroy_node()
    rclpy.try_shutdown()
    if failures:
        raise failures[0]
    end_process(0)


def _bound_the_stop(name: str) -> None:
    """Ends the process STOP_BOUND_S after a stop signal, whatever the clean-up is doing."""
    threading.Event().wait(STOP_BOUND_S)
    print(f'[{name}] clean-up did not finish within {STOP_BOUND_S} s of the stop signal: '
          'exiting without it', file=sys.stderr)
    end_process(0)
