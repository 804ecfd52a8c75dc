"""Declared, range-checked ROS parameters.

Every node declares its parameters from a list of `ParamSpec`s. Each becomes a parameter with a
ParameterDescriptor (description, numeric range), its start value is validated (a bad value stops
start-up with a ValueError naming the parameter and value), and later `set_parameters` calls are
validated by one on-set callback per node that rejects bad values with a reason.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                ParameterType, SetParametersResult)
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.parameter import Parameter

from orca_nav.core.fleet.robots import ROBOT_FIELDS, check_robot_name

_TYPE_OF_HINT = {
    'bool': ParameterType.PARAMETER_BOOL,
    'int': ParameterType.PARAMETER_INTEGER,
    'double': ParameterType.PARAMETER_DOUBLE,
    'string': ParameterType.PARAMETER_STRING,
    'string_array': ParameterType.PARAMETER_STRING_ARRAY,
    'double_array': ParameterType.PARAMETER_DOUBLE_ARRAY,
}


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

    def typed_default(self):
        if isinstance(self.default, (list, tuple)) and not self.default:
            # rclpy cannot infer an array type from []: declare it typed but unset (value None).
            return Parameter.Type.DOUBLE_ARRAY if self.type_name == 'double_array' \
                else Parameter.Type.STRING_ARRAY
        if self.type_name == 'double':
            return float(self.default)
        if self.type_name == 'double_array':
            return [float(v) for v in self.default]
        if self.type_name == 'string_array':
            return [str(v) for v in self.default]
        return self.default

    def validate(self, full_name: str, value) -> Optional[str]:
        """Returns None when `value` is acceptable, else the reason naming parameter and value."""
        kind = self.type_name
        numbers = []
        if value is None and kind in ('double_array', 'string_array'):
            value = []
        if kind in ('int', 'double'):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return f'{full_name}: expected a number, got {value!r}'
            numbers = [value]
        elif kind == 'double_array':
            try:
                numbers = [float(v) for v in value]
            except (TypeError, ValueError):
                return f'{full_name}: expected a list of numbers, got {value!r}'
            if self.length is not None and len(numbers) not in self.length:
                allowed = ' or '.join(str(n) for n in self.length)
                return f'{full_name}: expected {allowed} numbers, got {len(numbers)} ({value!r})'
        elif kind == 'string' and self.choices is not None and value not in self.choices:
            return f"{full_name}: {value!r} is not one of {', '.join(self.choices)}"
        elif kind == 'string_array' and self.choices is not None:
            bad = [v for v in value if v not in self.choices]
            if bad:
                return f"{full_name}: {bad[0]!r} is not one of {', '.join(self.choices)}"
        for x in numbers:
            if not math.isfinite(x):
                return f'{full_name}: value {value!r} is not finite'
            if self.min is not None and x < self.min:
                return f'{full_name}: value {value!r} is below the minimum {self.min}'
            if self.max is not None and x > self.max:
                return f'{full_name}: value {value!r} is above the maximum {self.max}'
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
]


# Parameters every fleet node that needs them declares alike (one name, one meaning, one default).
SHARED_SPECS: Dict[str, ParamSpec] = {spec.name: spec for spec in [
    ParamSpec('goal_tolerance', 0.15, 'A robot within this distance of its goal (or of the end of '
              'its trajectory) has arrived (m)', min=0.01, max=100.0),
    ParamSpec('safety_margin', 0.05, 'Clearance added to every robot radius, by the planner '
              '(against the map) and by ORCA (against robots and obstacles) (m)',
              min=0.0, max=10.0),
]}


def _callback_registry(node) -> Dict[str, tuple]:
    """The node's table full_name -> (spec, listeners); installs the one on-set callback."""
    registry = getattr(node, '_orca_param_registry', None)
    if registry is None:
        registry = {}
        node._orca_param_registry = registry
        node._orca_param_listeners = []
        node._orca_declaring = False

        def check(params: List[Parameter]) -> SetParametersResult:
            for param in params:
                entry = registry.get(param.name)
                if entry is None:
                    continue
                reason = entry.validate(param.name, param.value)
                if reason is not None:
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
    try:
        param = node.declare_parameter(full, spec.typed_default(), spec.descriptor(full))
    except (InvalidParameterTypeException, InvalidParameterValueException) as err:
        raise ValueError(f'invalid parameter {full}: expected type {spec.type_name} '
                         f'(e.g. {spec.default!r}): {err}') from err
    value = param.value if param.value is not None else []
    reason = spec.validate(full, value)
    if reason is not None:
        raise ValueError(f'invalid parameter {reason}')
    values[spec.name] = list(value) if isinstance(value, (list, tuple)) else value


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
    # rclpy has no public accessor for the overrides; this attribute exists since Foxy.
    given = getattr(node, '_parameter_overrides', {})
    unknown = sorted(name for name in given
                     if not node.has_parameter(name) and not name.startswith('qos_overrides.'))
    if unknown:
        node.get_logger().warning(
            f"ignoring parameters this node does not have: {', '.join(unknown)}")
    return unknown
