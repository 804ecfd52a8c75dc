"""Checks of numbers handed to the core: each raises ValueError naming the field and the value."""
from __future__ import annotations

import numpy as np


def finite_at_least_zero(name: str, value: float, positive: bool = False) -> float:
    """`value` as a float; ValueError naming it unless finite and >= 0 (> 0 when `positive`)."""
    if not (np.isfinite(value) and (value > 0.0 if positive else value >= 0.0)):
        raise ValueError(f"{name} must be finite and {'>' if positive else '>='} 0, got {value}")
    return float(value)
