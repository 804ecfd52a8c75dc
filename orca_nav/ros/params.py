"""Declared, range-checked ROS parameters.

Every node declares its parameters from lists of `ParamSpec`s (`orca_nav.parameters`). Each
becomes a parameter with a ParameterDescriptor (description, numeric range), its start value is
validated (a bad value stops start-up with a ValueError naming the parameter, the value and what
is allowed), and later `set_parameters` calls are validated by one on-set callback per node that
rejects bad values with a reason. A double parameter also takes an integer, at start-up and at
run time (`ParamSpec.coerce`).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Sequence

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)
from rclpy.exceptions import ParameterNotDeclaredException
from rclpy.parameter import Parameter

from orca_nav.core.fleet.robots import ROBOT_FIELDS, RobotSpec, check_robot_name
from orca_nav.parameters.shared import ROBOT_SPECS
from orca_nav.parameters.spec import ARRAYS, ParamSpec, has_type

_TYPE_OF_HINT = {
    'bool': ParameterType.PARAMETER_BOOL,
    'int': ParameterType.PARAMETER_INTEGER,
    'double': ParameterType.PARAMETER_DOUBLE,
    'string': ParameterType.PARAMETER_STRING,
    'string_array': ParameterType.PARAMETER_STRING_ARRAY,
    'double_array': ParameterType.PARAMETER_DOUBLE_ARRAY,
}


def descriptor(spec: ParamSpec, full_name: str) -> ParameterDescriptor:
    """The ROS descriptor of `spec` declared as `full_name`: type, description, range."""
    text = spec.description
    if spec.choices:
        text += f" (one of: {', '.join(spec.choices)})"
    desc = ParameterDescriptor(name=full_name, type=_TYPE_OF_HINT[spec.type_name],
                               description=text, read_only=spec.read_only)
    # ROS ranges are inclusive; only scalar numbers get one (arrays are checked by validate()).
    if spec.type_name == 'double' and (spec.min is not None or spec.max is not None):
        desc.floating_point_range = [FloatingPointRange(
            from_value=float(spec.min if spec.min is not None else -1e300),
            to_value=float(spec.max if spec.max is not None else 1e300), step=0.0)]
    elif spec.type_name == 'int' and (spec.min is not None or spec.max is not None):
        desc.integer_range = [IntegerRange(
            from_value=int(spec.min if spec.min is not None else -2**62),
            to_value=int(spec.max if spec.max is not None else 2**62), step=0)]
    return desc


def declared_value(spec: ParamSpec, value):
    """What rclpy's declare_parameter takes for the valid value `value` of `spec`."""
    if spec.type_name in ('double_array', 'string_array') and not value:
        # rclpy cannot infer an array type from []: declare it typed but unset (value None).
        return Parameter.Type.DOUBLE_ARRAY if spec.type_name == 'double_array' \
            else Parameter.Type.STRING_ARRAY
    if isinstance(value, ARRAYS):
        return list(value)
    return value


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
                if spec is not None and not has_type(spec.type_name, spec.coerce(param.value)):
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
    param = node.declare_parameter(full, declared_value(spec, value), descriptor(spec, full),
                                   ignore_override=True)
    value = param.value if param.value is not None else []
    values[spec.name] = list(value) if isinstance(value, ARRAYS) else value


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


def robot_spec(name: str, values: Dict[str, Any]) -> RobotSpec:
    """A robot's `<robot>.<field>` parameter values (`declare_robot_parameters`) as the core's
    RobotSpec."""
    return RobotSpec(name, **{f.name: values[f.name] for f in ROBOT_FIELDS})


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


class NamesUndeclaredParameters:
    """Mixed into a node class (before rclpy's Node): refusing a change of a parameter the node
    does not have names it. rclpy 7.1.6 answers `ros2 param set` with "Invalid access to
    undeclared parameter(s): []" (its check lists a generator it has already consumed)."""

    def set_parameters_atomically(self, parameter_list: List[Parameter]):
        unknown = [p.name for p in parameter_list if not self.has_parameter(p.name)]
        if unknown and not self._allow_undeclared_parameters:
            raise ParameterNotDeclaredException(unknown)
        return super().set_parameters_atomically(parameter_list)
