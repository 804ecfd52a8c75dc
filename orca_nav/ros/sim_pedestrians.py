"""fleet_sim_node's scripted pedestrians (`core.fleet.pedestrians`): their parameters
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
from orca_nav.ros.params import ParamSpec
from orca_nav.ros.tracked_agents import TRACKED_AGENTS_QOS

_DEFAULT = PedestrianParams()
PEDESTRIAN_SPECS = [
    ParamSpec('lines', [], 'Line walkers, 4 numbers each: x0, y0, x1, y1 (m); each walks back '
              'and forth between the two points', type_hint='double_array', read_only=True),
    ParamSpec('walkers', [], 'Random walkers, 2 numbers each: start x, y (m)',
              type_hint='double_array', read_only=True),
    ParamSpec('area', [], 'Random walkers stay inside x0, y0, x1, y1 (m); empty: anywhere off '
              'the map\'s obstacles', type_hint='double_array', length=(0, 4), read_only=True),
    ParamSpec('speed', _DEFAULT.speed, 'Walking speed of every pedestrian (m/s)', min=0.0,
              max=10.0, read_only=True),
    ParamSpec('radius', _DEFAULT.radius, 'Radius of every pedestrian, for collisions (m)',
              min=0.01, max=5.0, read_only=True),
    ParamSpec('turn_std', _DEFAULT.turn_std, 'Random walkers: heading diffusion (rad/sqrt(s))',
              min=0.0, max=10.0, read_only=True),
    ParamSpec('stop_gap', _DEFAULT.stop_gap, 'A pedestrian stands still for a step rather than '
              'walk to within this gap of a robot it closes on (m); 0: they avoid no one',
              min=0.0, max=5.0, read_only=True),
    ParamSpec('patience', _DEFAULT.patience, 'A pedestrian who has stood this long for a robot '
              'turns back (s)', min=0.0, max=600.0, read_only=True),
    ParamSpec('topic', 'tracked_agents', 'Where the pedestrians are published '
              '(nav_msgs/Odometry per person)', read_only=True),
]


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
