"""How orca_nav's processes end once their work is done: at once.

The interpreter's own finalization frees every object of rclpy, numpy, scipy and matplotlib one
by one: 0.3 s to 1 s on a quiet machine, seconds when several processes end together on a loaded
one (a launch's nodes stopped by Ctrl-C). By then rclpy is shut down and the results are
written, so the nodes and `orca-nav` skip it.
"""
from __future__ import annotations

import ctypes
import logging
import os
import sys
from typing import NoReturn


def end_process(status: int) -> NoReturn:
    """Flushes everything written so far (Python's streams and logging, the C library's buffers
    that rcutils writes its console output through) and ends the process with `status`."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    ctypes.CDLL(None).fflush(None)
    os._exit(status)
