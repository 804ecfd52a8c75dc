"""What the controller says about each commanded robot (orca_node's diagnostics): one ladder
from the most to the least pressing condition, over facts the controller gathers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from orca_nav.core.fleet.safety import REASONS
from orca_nav.core.fleet.status import Level, RobotStatus


@dataclass(frozen=True)
class ControlFacts:
    """One robot's situation at a status report."""

    odom_age: float                 # s since its state's stamp (inf: none yet)
    odom_timeout: float
    input_problem: Optional[str]    # why its latest state was refused, if it was
    waiting_for: Optional[str]      # 'the map' / 'the 3-D map' it must hold still for
    filtering: Optional[bool]       # filter mode: whether an input twist is fresh; else None
    holding: bool                   # tracked, and without a trajectory
    goal: bool                      # has a goal (or a trajectory)
    arrived: bool
    orca_cycles: int                # since the last report: cycles commanded ...
    infeasible_cycles: int          # ... and those ORCA's constraints were infeasible in
    yielding: bool                  # the deadlock breaker has it yield ...
    detouring: bool                 # ... or detour
    speed: float                    # m/s of ORCA's last velocity
    safety_scale: float             # the safety layer's last factor on its command ...
    safety_reason: int              # ... and why (`safety.REASONS`)


def control_status(robot: str, f: ControlFacts) -> RobotStatus:
    """The robot's status: the first condition of the ladder that holds."""
    cycles, infeasible = f.orca_cycles, f.infeasible_cycles
    if not math.isfinite(f.odom_age):
        level, message = Level.WARN, 'no odometry yet'
        if f.input_problem is not None:
            message += f'; odometry refused: {f.input_problem}'
    elif f.odom_age > f.odom_timeout:
        level, message = Level.WARN, f'stale odometry ({f.odom_age:.2f} s old): stopped'
        if f.input_problem is not None:
            message += f'; newer odometry refused: {f.input_problem}'
    elif f.waiting_for is not None:
        level, message = Level.WARN, f'waiting for {f.waiting_for}: holding still'
    elif f.filtering is not None:
        level, message = Level.OK, ('ok: filtering its input twist' if f.filtering else
                                    'no input twist within source_timeout: stopped')
    elif f.holding:
        level, message = Level.OK, 'holding still: no trajectory'
    elif not f.goal:
        level, message = Level.OK, 'ok: no goal'
    elif f.arrived:
        level, message = Level.OK, 'goal reached'
    elif 2 * infeasible > cycles:
        level, message = Level.WARN, (f'ORCA infeasible in {infeasible} of {cycles} cycles: '
                                      'jammed, moving at the least-penetrating velocity')
    elif f.yielding:
        level, message = Level.OK, 'ok: yielding (deadlock breaker)'
    elif f.detouring:
        level, message = Level.OK, 'ok: detouring (deadlock breaker)'
    else:
        level, message = Level.OK, 'ok'
    return RobotStatus(robot, level, message, {
        'odom_age_s': f'{f.odom_age:.3f}', 'speed': f'{f.speed:.3f}',
        'orca_cycles': str(cycles), 'orca_infeasible_cycles': str(infeasible),
        'safety_scale': f'{f.safety_scale:.2f}', 'safety_limit': REASONS[f.safety_reason]})
