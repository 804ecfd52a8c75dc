"""The one robot schema: what describes a robot of the fleet, with defaults, units and ranges.

The per-robot ROS parameters (`<robot>.<field>`, `orca_nav.ros.params`), the fleet files
(`orca_nav.bringup.fleet_file`) and the kinematic models (`kinematics.RobotLimits`) all derive
from this table, so a field, its default or its range is changed here and nowhere else.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Optional, Sequence, Tuple

KINEMATICS = ('holonomic', 'diff_drive', 'car', 'quadrotor')

Pose = Tuple[float, float, float]
_ROBOT_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')


@dataclass(frozen=True)
class RobotField:
    """One robot property: name, default, description (with its unit) and allowed values."""

    name: str
    default: object
    description: str
    min: Optional[float] = None
    max: Optional[float] = None
    choices: Optional[Sequence[str]] = None


# Every field a fleet file may give per robot (or under `defaults`), in this order.
ROBOT_FIELDS: Tuple[RobotField, ...] = (
    RobotField('kinematics', 'holonomic', 'Motion model of the robot', choices=KINEMATICS),
    RobotField('radius', 0.3, 'Radius of the disc that encloses the robot (m)', 0.01, 50.0),
    RobotField('max_speed', 1.0, 'Maximum linear speed (m/s)', 0.01, 100.0),
    RobotField('max_accel', 2.0, 'Maximum linear acceleration (m/s^2)', 0.01, 100.0),
    RobotField('max_decel', 0.0, 'Deceleration the safety layer counts on when the robot brakes '
               '(m/s^2); 0: max_accel', 0.0, 100.0),
    RobotField('max_yaw_rate', 2.0, 'Maximum yaw rate (rad/s)', 0.01, 100.0),
    RobotField('wheelbase', 0.5, 'Car wheelbase, rear to front axle (m)', 0.01, 20.0),
    RobotField('min_turning_radius', 1.0, 'Car minimum turning radius of the rear axle (m)',
               0.01, 1000.0),
    RobotField('responsibility', 0.5, 'Share of avoidance toward another fleet robot: w / '
               '(w + w_other); 0.5 for all is RVO2 (unitless)', 0.0, 1.0),
)
FIELDS_BY_NAME = {f.name: f for f in ROBOT_FIELDS}
NUMERIC_FIELDS = tuple(f.name for f in ROBOT_FIELDS if f.choices is None)


@dataclass(frozen=True)
class RobotSpec:
    """A robot's name and the properties of ROBOT_FIELDS (defaults as there)."""

    name: str
    kinematics: str = FIELDS_BY_NAME['kinematics'].default
    radius: float = FIELDS_BY_NAME['radius'].default
    max_speed: float = FIELDS_BY_NAME['max_speed'].default
    max_accel: float = FIELDS_BY_NAME['max_accel'].default
    max_decel: float = FIELDS_BY_NAME['max_decel'].default
    max_yaw_rate: float = FIELDS_BY_NAME['max_yaw_rate'].default
    wheelbase: float = FIELDS_BY_NAME['wheelbase'].default
    min_turning_radius: float = FIELDS_BY_NAME['min_turning_radius'].default
    responsibility: float = FIELDS_BY_NAME['responsibility'].default

    def __post_init__(self):
        check_robot_name(self.name)
        for name in FIELDS_BY_NAME:
            problem = field_problem(name, getattr(self, name))
            if problem is not None:
                raise ValueError(f'{self.name}.{name}: {problem}')

    @property
    def braking_decel(self) -> float:
        """The deceleration braking counts on (m/s^2): max_decel, or max_accel if that is 0."""
        return self.max_decel if self.max_decel > 0.0 else self.max_accel

    @property
    def flies(self) -> bool:
        return self.kinematics == 'quadrotor'

    @property
    def non_holonomic(self) -> bool:
        """Cannot move sideways (diff-drive, car)."""
        return self.kinematics in ('diff_drive', 'car')

    @property
    def steered(self) -> bool:
        """Turns by steering (a car): no turn in place, and a sideways error takes a manoeuvre."""
        return self.kinematics == 'car'

    def field_values(self) -> dict:
        """{field: value} for every field of ROBOT_FIELDS."""
        return {f.name: getattr(self, f.name) for f in fields(RobotSpec) if f.name != 'name'}


def field_problem(name: str, value) -> Optional[str]:
    """Why `value` is not allowed for robot field `name`, or None when it is."""
    spec = FIELDS_BY_NAME[name]
    if spec.choices is not None:
        if value not in spec.choices:
            return f'unknown {name} {value!r} (one of: {", ".join(spec.choices)})'
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f'expected a number, got {value!r}'
    if value != value or value in (float('inf'), float('-inf')):
        return f'{value!r} is not finite'
    if value < spec.min:
        return f'{value!r} is below the minimum {spec.min}'
    if value > spec.max:
        return f'{value!r} is above the maximum {spec.max}'
    return None


def check_robot_name(name) -> None:
    """Robot names become topic namespaces and frame prefixes: a ROS name token."""
    if not isinstance(name, str) or not _ROBOT_NAME.match(name):
        raise ValueError(f'{name!r} is not a valid robot name (letters, digits, _; must not '
                         'start with a digit)')
