"""Draws docs/safety.png: the safety layer's three promises, each from the layer itself.

    .venv/bin/python tools/safety_picture.py [--out docs/safety.png]

Static: a diff-drive robot at 1.2 m/s turning toward a wall: the braking path of its command
(dashed) and of the command the layer keeps (solid), both on the same arc. Passive: a robot passing
a standing person: the discs the person could reach by each instant of the robot's braking path.
Reciprocal: two robots heading at each other: their braking paths under the commands chosen for
both.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from orca_nav.core.avoidance import NonCooperative  # noqa: E402
from orca_nav.core.fleet.kinematics import RobotLimits  # noqa: E402
from orca_nav.core.fleet.safety import SafetyInput, SafetyLayer  # noqa: E402
from orca_nav.core.grid import OccupancyGrid  # noqa: E402
from orca_nav.core.obstacle_distance import ObstacleDistance  # noqa: E402

STEP = 0.025
RADIUS = 0.3


def state(poses, velocities, commands):
    n = len(poses)
    return SafetyInput(poses=np.asarray(poses, float), altitudes=np.zeros(n),
                       velocities=np.asarray(velocities, float), yaw_rates=np.zeros(n),
                       commands=np.asarray(commands, float), climb_rates=np.zeros(n),
                       hold=np.full(n, 0.05), adjustable=np.ones(n, bool),
                       known=np.ones(n, bool), stale=np.zeros(n, bool), speed_cap=np.ones(n))


def path(layer, s, factors):
    rows = np.arange(len(factors))
    samples = 80
    points, moving = layer.braking_paths(s, rows, s.commands * np.asarray(factors)[:, None],
                                         np.zeros(len(rows)), s.hold, samples, STEP)
    return points[..., :2], moving


def robot(ax, xy, colour, label=None):
    import matplotlib.patches as patches
    ax.add_patch(patches.Circle(xy, RADIUS, fill=False, color=colour, lw=1.5))
    if label:
        ax.annotate(label, xy, ha='center', va='center', fontsize=8, color=colour)


def main(argv=None):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.patches as patches
    import matplotlib.pyplot as plt
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', type=Path, default=REPO / 'docs' / 'safety.png')
    args = parser.parse_args(argv)
    fig, axes = plt.subplots(1, 3, figsize=(12, 4))

    # Static: a diff-drive robot at 1.2 m/s (1 m/s^2), commanded 1.5 m/s turning toward a wall.
    ax = axes[0]
    grid = OccupancyGrid.from_rectangles((0.0, 0.0, 4.0, 3.0), 0.05, [(3.0, 0.0, 3.3, 3.0)])
    limits = RobotLimits.create(['diff_drive'], [1.5], [1.0], [2.0])
    layer = SafetyLayer(limits, np.array([RADIUS]), np.array([1.0]))
    layer.static = ObstacleDistance(grid)
    s = state([[1.9, 0.9, 0.3]], [[1.2 * math.cos(0.3), 1.2 * math.sin(0.3), 0.0]],
              [[1.5, 0.0, 0.4]])
    kept = layer.apply(s, STEP, NonCooperative.empty()).scale[0]
    for factor, style in ((1.0, '--'), (kept, '-')):
        xy, _ = path(layer, s, [factor])
        ax.plot(xy[:, 0, 0], xy[:, 0, 1], style, color='tab:blue')
        robot(ax, xy[-1, 0], 'tab:blue')
    robot(ax, s.poses[0, :2], 'black', 'robot')
    ax.add_patch(patches.Rectangle((3.0, 0.0), 0.3, 3.0, color='0.4'))
    ax.set_title(f'static: stands before the wall\n(command scaled to {kept:.2f}, same arc)',
                 fontsize=9)

    # Passive: a robot at 0.6 m/s, commanded 1 m/s, passing near a standing person.
    ax = axes[1]
    limits = RobotLimits.create(['holonomic'], [1.0], [2.0], [2.0])
    layer = SafetyLayer(limits, np.array([RADIUS]), np.array([2.0]))
    person = NonCooperative(np.array([[2.3, 1.6]]), np.zeros((1, 2)), np.array([0.25]))
    s = state([[1.7, 0.7, 0.0]], [[0.6, 0.0, 0.0]], [[1.0, 0.0, 0.0]])
    kept = layer.apply(s, STEP, person).scale[0]
    xy, moving = path(layer, s, [kept])
    last = int(np.flatnonzero(moving[:, 0]).max(initial=0))
    for k in range(0, last + 1, 3):
        reach = 0.25 + layer.params.person_max_speed * k * STEP
        ax.add_patch(patches.Circle(person.positions[0], reach, fill=False, color='tab:red',
                                    alpha=0.25))
        robot(ax, xy[k, 0], 'tab:blue')
    ax.plot(xy[:, 0, 0], xy[:, 0, 1], '-', color='tab:blue')
    robot(ax, person.positions[0], 'tab:red', 'person')
    ax.set_title(f'passive: at rest before the person could reach it\n(speed kept: {kept:.2f} '
                 f'm/s; red: the reach at {layer.params.person_max_speed:g} m/s)', fontsize=9)

    # Reciprocal: two robots at 1 m/s, commanded 1.5 m/s, heading at each other.
    ax = axes[2]
    limits = RobotLimits.create(['holonomic'] * 2, [1.5] * 2, [1.0] * 2, [2.0] * 2)
    layer = SafetyLayer(limits, np.full(2, RADIUS), np.ones(2))
    s = state([[1.0, 1.3, 0.0], [2.85, 1.5, math.pi]], [[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]],
              [[1.5, 0.0, 0.0], [1.5, 0.0, 0.0]])
    kept = layer.apply(s, STEP, NonCooperative.empty()).scale
    xy, _ = path(layer, s, kept)
    for i, colour in enumerate(('tab:blue', 'tab:green')):
        ax.plot(xy[:, i, 0], xy[:, i, 1], '-', color=colour)
        robot(ax, s.poses[i, :2], colour, f'robot{i}')
        robot(ax, xy[-1, i], colour)
    ax.set_title(f'reciprocal: both braking paths stay apart\n(commands scaled to '
                 f'{kept[0]:.2f} and {kept[1]:.2f})', fontsize=9)
    for ax in axes:
        ax.set_aspect('equal')
        ax.set_xlim(0.0, 4.0)
        ax.set_ylim(0.0, 3.0)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    fig.savefig(args.out, dpi=80)
    print(f'wrote {args.out}')


if __name__ == '__main__':
    main()
