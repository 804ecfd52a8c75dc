"""The fleet's odometry into the controller, a batch at a time.

orca_node's per-robot topics arrive in batches (`robot_topics.RobotTopics`); one message at a
time, decoding odometry in Python was the node's largest cost at 500 robots (docs/scale.md).
`BatchedOdometry` keeps a batch's serialized messages and hands them to the controller together:
decoded and checked in numpy (`convert.odom_batch_from_cdr`), stored with one
`FleetController.set_states`. What that common case does not cover (odometry in another frame,
to be placed through TF, without a stamp, with a covariance that gives a margin, or malformed)
goes one message at a time to the node's own handler, which says what is wrong.
"""
from __future__ import annotations

from typing import Callable, List, Tuple

import numpy as np

from orca_nav.core.fleet.controller import FleetController
from orca_nav.ros.convert import odom_batch_from_cdr


class BatchedOdometry:

    def __init__(self, fleet: FleetController, global_frame: str,
                 one_message: Callable[[int, bytes], None]):
        self._fleet, self._frame, self._one_message = fleet, global_frame, one_message
        self._pending: List[Tuple[int, bytes]] = []

    def add(self, row: int, raw: bytes) -> None:
        """Robot `row`'s serialized nav_msgs/Odometry, used at the next `take`."""
        self._pending.append((row, raw))

    def take(self) -> None:
        """Every message added since the last call goes to the controller, in arrival order
        per robot (a robot's older message never overrides its newer one)."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        batch = odom_batch_from_cdr([raw for _, raw in pending])
        common = (np.array([frame == self._frame for frame in batch.frame_id], dtype=bool)
                  & (batch.stamp > 0.0))
        if common.any():
            rows = np.array([pending[k][0] for k in batch.index[common]], dtype=int)
            self._fleet.set_states(rows, batch.stamp[common], batch.position[common],
                                   batch.velocity[common], batch.yaw[common],
                                   batch.covariance[common])
        taken = set(batch.index[common].tolist())
        for k, (row, raw) in enumerate(pending):
            if k not in taken:
                self._one_message(row, raw)
