"""fleet_sim_node's scripted pedestrians (`core.sim.pedestrians`): their parameters
(`pedestrians.*`) and their publication as the non-cooperative agents orca_node reads
(`tracked_agents`: one nav_msgs/Odometry per person, child_frame_id `person<i>`, the true pose
in the global frame, the twist in the person's own frame, as a perfect people tracker would).
"""
from __future__ import annotations

import math
from typing import Dict, Optional

from nav_msgs.msg import Odometry

from orca_nav.core.sim.pedestrians import PedestrianParams, Pedestrians
from orca_nav.ros.convert import seconds_to_time, state_to_odom
from orca_nav.ros.tracked_agents import TRACKED_AGENTS_QOS


def pedestrians_from_parameters(values: Dict, seed: int) -> Optional[Pedestrians]:
    """The `pedestrians.*` values as core Pedestrians; None when there are none."""
    lines, walkers = list(values['lines']), list(values['walkers'])
    for name, numbers, width in (('lines', lines, 4), ('walkers', walkers, 2)):
        if len(numbers) % width:
            raise ValueError(f'pedestrians.{name}: {width} numbers per pedestrian, got '
                             f'{len(numbers)} numbers')
    if not lines and not walkers:
        return None
    area = tuple(values['area']) or PedestrianParams().area
    params = PedestrianParams(speed=values['speed'], radius=values['radius'],
                              turn_std=values['turn_std'], area=area,
                              stop_gap=values['stop_gap'], patience=values['patience'])
    return Pedestrians(lines, walkers, params, seed=seed)


class PedestrianPublisher:
    """Publishes every pedestrian's state on the `pedestrians.topic`."""

    def __init__(self, node, pedestrians: Pedestrians, topic: str, frame: str):
        self._pedestrians = pedestrians
        self._frame = frame
        self._pub = node.create_publisher(Odometry, topic, TRACKED_AGENTS_QOS)

    def publish(self, now: float) -> None:
        stamp = seconds_to_time(now)
        people = self._pedestrians
        for index, (position, velocity) in enumerate(zip(people.positions.tolist(),
                                                         people.velocities.tolist())):
            speed = math.hypot(*velocity)
            self._pub.publish(state_to_odom(position, math.atan2(velocity[1], velocity[0]),
                                            (speed, 0.0), 0.0, stamp, self._frame,
                                            f'person{index}'))
