"""Which parameters each node executable declares, by full name (`deadlock.stall_time`), and the
check of values given to a node before it starts.

Per-robot parameters (`<robot>.<field>`: ROBOT_SPECS) and mission_node's `<robot>.goals` take
their names from the fleet's robots; bringup sets them itself, so they are not listed here.
test/test_parameters.py checks that each node declares exactly these.
"""
from __future__ import annotations

import difflib
from typing import Any, Dict, Iterable, List, Mapping

from orca_nav.parameters import (
    fleet_sim_node,
    map_3d_publisher,
    map_publisher,
    mission_node,
    orca_node,
    planner_node,
    recorder_node,
    tf_relay,
)
from orca_nav.parameters.shared import AUTOSTART
from orca_nav.parameters.spec import ParamSpec


def _named(specs: Iterable[ParamSpec], prefix: str = '') -> Dict[str, ParamSpec]:
    return {prefix + spec.name: spec for spec in specs}


NODE_PARAMETERS: Dict[str, Dict[str, ParamSpec]] = {
    'orca_node': {**_named(orca_node.NODE_SPECS), **_named(orca_node.DEADLOCK_SPECS, 'deadlock.'),
                  **_named(orca_node.SAFETY_SPECS, 'safety.'), **_named([AUTOSTART])},
    'planner_node': {**_named(planner_node.NODE_SPECS), **_named([AUTOSTART])},
    'fleet_sim_node': {**_named(fleet_sim_node.NODE_SPECS), **_named(fleet_sim_node.TF_SPECS),
                       **_named(fleet_sim_node.FAULT_SPECS, 'fault.'),
                       **_named(fleet_sim_node.PEDESTRIAN_SPECS, 'pedestrians.'),
                       **_named([fleet_sim_node.BOXES_SPEC]),
                       **_named(fleet_sim_node.SCAN_SPECS, 'scan.')},
    'map_publisher': {**_named(map_publisher.NODE_SPECS), **_named([AUTOSTART])},
    'map_3d_publisher': {**_named(map_3d_publisher.NODE_SPECS), **_named([AUTOSTART])},
    'mission_node': _named(mission_node.NODE_SPECS),
    'recorder_node': _named(recorder_node.NODE_SPECS),
    'tf_relay': _named(tf_relay.NODE_SPECS),
}

# rclpy's own parameters, which every node has besides its declared ones.
RCLPY_PARAMETERS = ('use_sim_time', 'start_type_description_service')


def parameter_problems(executable: str, values: Mapping[str, Any], where: str = '') -> List[str]:
    """One line per entry of `values` ({full name: value}) that node `executable` would refuse:
    a name it does not declare (with the nearest names it does), or a value out of its type or
    range. Each line starts with `where` + the name."""
    declared = NODE_PARAMETERS[executable]
    problems = []
    for name, value in values.items():
        spec = declared.get(name)
        if spec is not None:
            reason = spec.validate(where + name, value)
            if reason is not None:
                problems.append(reason)
        elif name not in RCLPY_PARAMETERS and not name.startswith('qos_overrides.'):
            near = difflib.get_close_matches(name, declared, n=3)
            hint = f' (did you mean {" or ".join(near)}?)' if near else ''
            problems.append(f'{where}{name}: {executable} has no parameter {name!r}{hint}')
    return problems
