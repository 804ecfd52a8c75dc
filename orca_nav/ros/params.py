"""Declared, range-checked ROS parameters.

Every node declares its parameters from a list of `ParamSpec`s. Each becomes a parameter with a
ParameterDescriptor (description, numeric range), its start value is validated (a bad value stops
start-up with a ValueError naming the parameter, the value and what is allowed), and later
`set_parameters` calls are validated by one on-set callback per node that rejects bad values with
a reason.

ROS tools type `10` as an integer (`-p control_rate:=10`, YAML params files, `ros2 param set`), so
a double parameter also takes an integer, at start-up and at run time, and stores it as a float.
"""
from __future__ import annotations

import array
import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                ParameterType, SetParametersResult)
from rclpy.parameter import Parameter

from orca_nav.core.fleet.names import TF_LAYOUTS
from orca_nav.core.fleet.robots import ROBOT_FIELDS, check_robot_name

_TYPE_OF_HINT = {
    'bool': ParameterType.PARAMETER_BOOL,
    'int': ParameterType.PARAMETER_INTEGER,
    'double': ParameterType.PARAMETER_DOUBLE,
    'string': ParameterType.PARAMETER_STRING,
    'string_array': ParameterType.PARAMETER_STRING_ARRAY,
    'double_array': ParameterType.PARAMETER_DOUBLE_ARRAY,
}

_EXPECTED = {
    'bool': 'true or false',
    'int': 'an integer',
    'double': 'a number',
    'string': 'a string',
    'string_array': 'a list of strings',
    'double_array': 'a list of numbers',
}

_ARRAYS = (list, tuple, array.array)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)     # bools are not numbers


def _has_type(kind: str, value) -> bool:
    if kind == 'bool':
        return isinstance(value, bool)
    if kind == 'int':
        return _is_int(value)
    if kind == 'double':
        return isinstance(value, float)
    if kind == 'string':
        return isinstance(value, str)
    if not isinstance(value, _ARRAYS):
        return False
    if kind == 'string_array':
        return all(isinstance(v, str) for v in value)
    return all(isinstance(v, float) for v in value)


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: name, default (its type fixes the parameter type), description, limits."""

    name: str
    default: Any
    description: str
    min: Optional[float] = None
    max: Optional[float] = None
    choices: Optional[Sequence[str]] = None
    read_only: bool = False
    type_hint: Optional[str] = None     # needed only for an empty list default
    length: Optional[Sequence[int]] = None   # allowed lengths of an array parameter

    @property
    def type_name(self) -> str:
        if self.type_hint is not None:
            return self.type_hint
        value = self.default
        if isinstance(value, bool):
            return 'bool'
        if isinstance(value, int):
            return 'int'
        if isinstance(value, float):
            return 'double'
        if isinstance(value, str):
            return 'string'
        if isinstance(value, (list, tuple)) and value:
            if all(isinstance(v, str) for v in value):
                return 'string_array'
            return 'double_array'
        raise TypeError(f'parameter {self.name}: give type_hint for default {value!r}')

    def descriptor(self, full_name: str) -> ParameterDescriptor:
        text = self.description
        if self.choices:
            text += f" (one of: {', '.join(self.choices)})"
        desc = ParameterDescriptor(name=full_name, type=_TYPE_OF_HINT[self.type_name],
                                   description=text, read_only=self.read_only)
        # ROS ranges are inclusive; only scalar numbers get one (arrays are checked by validate()).
        if self.type_name == 'double' and (self.min is not None or self.max is not None):
            desc.floating_point_range = [FloatingPointRange(
                from_value=float(self.min if self.min is not None else -1e300),
                to_value=float(self.max if self.max is not None else 1e300), step=0.0)]
        elif self.type_name == 'int' and (self.min is not None or self.max is not None):
            desc.integer_range = [IntegerRange(
                from_value=int(self.min if self.min is not None else -2**62),
                to_value=int(self.max if self.max is not None else 2**62), step=0)]
        return desc

    def coerce(self, value):
        """`value` as this parameter stores it: an integer given for a double (or integers for a
        double array) becomes float; anything else is returned unchanged for validate() to judge."""
        kind = self.type_name
        if kind == 'double' and _is_int(value):
            return float(value)
        if kind == 'double_array' and isinstance(value, _ARRAYS) \
                and all(_is_int(v) or isinstance(v, float) for v in value):
            return [float(v) for v in value]
        return value

    def declared_value(self, value):
        """What rclpy's declare_parameter takes for the valid value `value`."""
        if self.type_name in ('double_array', 'string_array') and not value:
            # rclpy cannot infer an array type from []: declare it typed but unset (value None).
            return Parameter.Type.DOUBLE_ARRAY if self.type_name == 'double_array' \
                else Parameter.Type.STRING_ARRAY
        if isinstance(value, _ARRAYS):
            return list(value)
        return value

    def allowed_range(self) -> str:
        """The numeric range in words: '0.5 to 1000.0', 'at least 0.0', 'at most 5'."""
        if self.min is not None and self.max is not None:
            return f'{self.min} to {self.max}'
        return f'at least {self.min}' if self.min is not None else f'at most {self.max}'

    def validate(self, full_name: str, value) -> Optional[str]:
        """Returns None when `value` is acceptable, else the reason naming parameter and value."""
        kind = self.type_name
        if value is None and kind in ('double_array', 'string_array'):
            value = []
        value = self.coerce(value)
        if not _has_type(kind, value):
            return f'{full_name}: expected {_EXPECTED[kind]}, got {value!r}'
        if kind in ('string', 'string_array') and self.choices is not None:
            bad = [v for v in ([value] if kind == 'string' else value) if v not in self.choices]
            if bad:
                return f"{full_name}: {bad[0]!r} is not one of {', '.join(self.choices)}"
            return None
        if kind not in ('int', 'double', 'double_array'):
            return None
        numbers = list(value) if kind == 'double_array' else [value]
        if self.length is not None and len(numbers) not in self.length:
            allowed = ' or '.join(str(n) for n in self.length)
            return f'{full_name}: expected {allowed} numbers, got {len(numbers)} ({value!r})'
        for x in numbers:
            shown = f'{value!r}' if kind != 'double_array' else f'{x!r} in {list(value)!r}'
            if not math.isfinite(x):
                return f'{full_name}: {shown} is not finite'
            if self.min is not None and x < self.min:
                return (f'{full_name}: {shown} is below the minimum {self.min} '
                        f'(allowed: {self.allowed_range()})')
            if self.max is not None and x > self.max:
                return (f'{full_name}: {shown} is above the maximum {self.max} '
                        f'(allowed: {self.allowed_range()})')
        return None


# Per-robot fields shared by every fleet node (`<robot>.<field>`): the robot schema, plus the
# start and goal poses of the fleet file.
ROBOT_SPECS: List[ParamSpec] = [
    ParamSpec(f.name, f.default, f.description, min=f.min, max=f.max, choices=f.choices)
    for f in ROBOT_FIELDS
] + [
    ParamSpec('start', [0.0, 0.0, 0.0], 'Start pose x, y, yaw (m, m, rad) in the global frame',
              length=(3,)),
    ParamSpec('goal', [], 'Goal pose x, y, yaw (m, m, rad); empty for none',
              type_hint='double_array', length=(0, 3)),
    ParamSpec('start_z', 0.0, 'Start altitude of a quadrotor (m); 0 for every ground robot',
              min=-1e4, max=1e4),
    ParamSpec('goal_z', 0.0, 'Goal altitude of a quadrotor (m); 0: keep the altitude it flies at',
              min=-1e4, max=1e4),
]


# The per-robot parameters that place a robot rather than describe it (not RobotSpec fields).
POSE_FIELDS = ('start', 'goal', 'start_z', 'goal_z')

# Parameters every fleet node that needs them declares alike (one name, one meaning, one default).
SHARED_SPECS: Dict[str, ParamSpec] = {spec.name: spec for spec in [
    ParamSpec('goal_tolerance', 0.15, 'A robot within this distance of its goal (or of the end of '
              'its trajectory) has arrived (m)', min=0.01, max=100.0),
    ParamSpec('safety_margin', 0.05, 'Clearance added to every robot radius, by the planner '
              '(against the map) and by ORCA (against robots and obstacles) (m)',
              min=0.0, max=10.0),
    ParamSpec('tf_layout', 'none', 'Where odometry poses are put in the global frame: none '
              '(odometry is in it), namespaced (<robot>/tf trees with frames map, odom, '
              'base_link) or prefixed (one /tf, frames <robot>/odom, <robot>/base_link)',
              choices=TF_LAYOUTS, read_only=True),
    ParamSpec('ground_clearance', 1.0, 'Height of the ground robots\' layer: a ground robot is a '
              'cylinder this tall, a drone whose sphere reaches below it meets ground robots '
              '(docs/orca3d.md, Drones in a fleet) (m)', min=0.0, max=100.0),
    ParamSpec('map_3d_topic', '/map_3d', 'Topic of the 3-D map (sensor_msgs/PointCloud2 of '
              'occupied voxel centres, transient local) that drones use; read only when a robot '
              'is a quadrotor', read_only=True),
    ParamSpec('map_3d_resolution', 0.2, 'Voxel size of the 3-D map (m): map_3d_publisher\'s '
              'resolution', min=0.001, max=100.0, read_only=True),
    ParamSpec('transform_tolerance', 1.0, 'Odometry may be this much newer than the newest '
              'global <- odom transform (localization is slower than odometry) (s)',
              min=0.0, max=60.0, read_only=True),
]}


def _callback_registry(node) -> Dict[str, ParamSpec]:
    """The node's table full_name -> spec; installs the node's parameter callbacks once."""
    registry = getattr(node, '_orca_param_registry', None)
    if registry is None:
        registry = {}
        node._orca_param_registry = registry
        node._orca_param_listeners = []
        node._orca_declaring = False

        def widen_integers(params: List[Parameter]) -> List[Parameter]:
            # `ros2 param set n control_rate 10` sends an integer; rclpy would refuse it as the
            # wrong type before the on-set callback below ever sees it.
            widened = []
            for param in params:
                spec = registry.get(param.name)
                if spec is not None and spec.type_name == 'double' \
                        and param.type_ == Parameter.Type.INTEGER:
                    param = Parameter(param.name, Parameter.Type.DOUBLE, float(param.value))
                elif spec is not None and spec.type_name == 'double_array' \
                        and param.type_ == Parameter.Type.INTEGER_ARRAY:
                    param = Parameter(param.name, Parameter.Type.DOUBLE_ARRAY,
                                      [float(v) for v in param.value])
                if spec is not None and not _has_type(spec.type_name, spec.coerce(param.value)):
                    # rclpy refuses a wrong type without naming the parameter: name it here.
                    node.get_logger().warning(
                        f'refusing parameter change: {spec.validate(param.name, param.value)}')
                widened.append(param)
            return widened

        node.add_pre_set_parameters_callback(widen_integers)

        def check(params: List[Parameter]) -> SetParametersResult:
            for param in params:
                entry = registry.get(param.name)
                if entry is None:
                    continue
                reason = entry.validate(param.name, param.value)
                if reason is not None:
                    if not node._orca_declaring:
                        node.get_logger().warning(f'refusing parameter change: {reason}')
                    return SetParametersResult(successful=False, reason=reason)
            return SetParametersResult(successful=True)

        node.add_on_set_parameters_callback(check)

        def apply(params: List[Parameter]) -> None:
            if node._orca_declaring:     # declarations are returned by declare_parameters
                return
            changed = {p.name: (p.value if p.value is not None else [])
                       for p in params if p.name in registry}
            if changed:
                for listener in node._orca_param_listeners:
                    listener(changed)

        # Post-set callbacks only ever see values the check above accepted.
        node.add_post_set_parameters_callback(apply)
    return registry


def declare_parameters(node, specs: Iterable[ParamSpec], prefix: str = '') -> Dict[str, Any]:
    """Declares `specs` (names prefixed by `prefix`), validates start values, returns name->value.

    Keys of the returned dict are the spec names without the prefix.
    Raises ValueError naming the parameter and value when a start value is out of range.
    """
    registry = _callback_registry(node)
    values = {}
    node._orca_declaring = True
    try:
        for spec in specs:
            _declare_one(node, registry, spec, prefix, values)
    finally:
        node._orca_declaring = False
    return values


def _declare_one(node, registry, spec: ParamSpec, prefix: str, values: Dict[str, Any]) -> None:
    full = prefix + spec.name
    registry[full] = spec
    given = _overrides(node).get(full)
    value = spec.coerce(spec.default if given is None else given.value)
    reason = spec.validate(full, value)
    if reason is not None:
        raise ValueError(f'invalid parameter {reason}')
    # The override was read, converted and checked above; rclpy would refuse an integer.
    param = node.declare_parameter(full, spec.declared_value(value), spec.descriptor(full),
                                   ignore_override=True)
    value = param.value if param.value is not None else []
    values[spec.name] = list(value) if isinstance(value, _ARRAYS) else value


def _overrides(node) -> Dict[str, Parameter]:
    """The parameters given to `node` at start (command line, params files, launch, the
    `parameter_overrides` argument). rclpy has no public accessor; this attribute exists since
    Foxy."""
    return getattr(node, '_parameter_overrides', {})


def declare_robot_parameters(node, robots: Sequence[str],
                             specs: Iterable[ParamSpec] = ROBOT_SPECS) -> Dict[str, Dict[str, Any]]:
    """Declares `<robot>.<field>` for every robot; returns robot -> field -> value."""
    specs = list(specs)
    for robot in robots:
        try:
            check_robot_name(robot)
        except ValueError as err:
            raise ValueError(f'robots: {err}') from None
    return {robot: declare_parameters(node, specs, prefix=robot + '.') for robot in robots}


def on_parameters_changed(node, listener: Callable[[Dict[str, Any]], None]) -> None:
    """Calls listener({full_name: value}) after validated parameter changes are applied."""
    _callback_registry(node)
    node._orca_param_listeners.append(listener)


def warn_undeclared_overrides(node) -> List[str]:
    """Names the parameters given to `node` (params file, launch, fleet config) that it never
    declared. rclpy drops them silently, which hides typos such as `rate` for `sim_rate`."""
    unknown = sorted(name for name in _overrides(node)
                     if not node.has_parameter(name) and not name.startswith('qos_overrides.'))
    if unknown:
        node.get_logger().warning(
            f"ignoring parameters this node does not have: {', '.join(unknown)}")
    return unknown
