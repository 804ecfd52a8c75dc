"""ParamSpec: one node parameter (name, default, description, limits) and its checks, without
rclpy, so a fleet file is checked with exactly the rules the node applies, before any node
starts. The ROS side (descriptors, declaration, on-set callbacks) is `orca_nav.ros.params`.

ROS tools type `10` as an integer (`-p control_rate:=10`, YAML params files, `ros2 param set`), so
a double parameter also takes an integer and stores it as a float (`coerce`).
"""
from __future__ import annotations

import array
import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

_EXPECTED = {
    'bool': 'true or false',
    'int': 'an integer',
    'double': 'a number',
    'string': 'a string',
    'string_array': 'a list of strings',
    'double_array': 'a list of numbers',
}

ARRAYS = (list, tuple, array.array)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)     # bools are not numbers


def has_type(kind: str, value) -> bool:
    """`value` is of the parameter type `kind` (a ParamSpec.type_name)."""
    if kind == 'bool':
        return isinstance(value, bool)
    if kind == 'int':
        return _is_int(value)
    if kind == 'double':
        return isinstance(value, float)
    if kind == 'string':
        return isinstance(value, str)
    if not isinstance(value, ARRAYS):
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

    def coerce(self, value):
        """`value` as this parameter stores it: an integer given for a double (or integers for a
        double array) becomes float; anything else is returned unchanged for validate() to judge."""
        kind = self.type_name
        if kind == 'double' and _is_int(value):
            return float(value)
        if kind == 'double_array' and isinstance(value, ARRAYS) \
                and all(_is_int(v) or isinstance(v, float) for v in value):
            return [float(v) for v in value]
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
        if not has_type(kind, value):
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
