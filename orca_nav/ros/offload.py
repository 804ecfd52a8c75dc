"""Slow work off the executor thread, its result handed back onto it.

A node submits a pure function (map preparation, a planning query) to worker threads; the
worker touches no node state and publishes nothing, it only queues its result. A steady-clock
timer, running only while jobs are out, hands each result to the node's callback on the executor
thread, so the node's own state is only ever touched by its callbacks. (A guard condition would
wake the executor directly, but rclpy's EventsExecutor, which bringup runs the nodes on, does not
support guard conditions. Steady, because simulated time may stand still until the result is in.)

The workers are daemon threads of this module's own, not a concurrent.futures pool: Python joins
a pool's workers when the process exits, so a node stopped during a long planning query waited
for the query (up to its wall-time cap) before the process could end.
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Callable

from rclpy.clock import Clock, ClockType

POLL_S = 0.01       # wall seconds between looks for finished jobs, while jobs are out


class Offloaded:
    """Runs `submit`ted functions on `threads` workers and calls `on_result(result)` on the
    node's executor thread for each. Create it in the node's constructor."""

    def __init__(self, node, on_result: Callable[[Any], None], threads: int, name: str):
        self._node = node
        self._on_result = on_result
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._results: queue.SimpleQueue = queue.SimpleQueue()
        self._out = 0
        self._workers = [threading.Thread(target=self._work, name=f'{name}_{k}', daemon=True)
                         for k in range(threads)]
        for worker in self._workers:
            worker.start()
        self._timer = node.create_timer(POLL_S, self._collect,
                                        clock=Clock(clock_type=ClockType.STEADY_TIME),
                                        autostart=False)

    def submit(self, function: Callable, *args) -> None:
        self._out += 1
        self._jobs.put((function, args))
        if self._timer.is_canceled():
            self._timer.reset()

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            function, args = job
            try:
                self._results.put((True, function(*args)))
            except Exception as err:    # reported on the node's thread, the job is dropped
                self._results.put((False, f'{type(err).__name__}: {err}'))

    def _collect(self) -> None:
        while True:
            try:
                ok, result = self._results.get_nowait()
            except queue.Empty:
                break
            self._out -= 1
            if ok:
                self._on_result(result)
            else:
                self._node.get_logger().error(f'background job failed: {result}')
        if self._out == 0:
            self._timer.cancel()

    def close(self) -> None:
        """Drops the jobs not started; each worker ends after the job it runs (not waited for)."""
        while True:
            try:
                self._jobs.get_nowait()
            except queue.Empty:
                break
        for _ in self._workers:
            self._jobs.put(None)
