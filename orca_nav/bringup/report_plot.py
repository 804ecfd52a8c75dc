"""The demo's picture: map, robot traces, starts, goals, planned paths and the people and
unmapped boxes the fleet shared the space with (matplotlib, Agg).

A fleet with drones (3-D tracks) gets two views side by side: from above (x, y; the 3-D map's
obstacles as the columns they fill) and from the side (x, z: every drone's altitude along its
way, the map's floor and ceiling as its bounds), so the different flight levels show.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from orca_nav.bringup.report import PersonTrack, RobotTrack
from orca_nav.core.grid import OccupancyGrid

# A column of the 3-D map counts as an obstacle in the top view when at least this share of
# its voxels is occupied (a floor or ceiling alone is not an obstacle from above).
_COLUMN_SHARE = 0.5
_LEGEND = 'traces: solid; plans: dashed; start: circle; goal: x'
_LABELLED_ROBOTS = 60       # robots are named in the picture up to this many (then it is a crowd)


def robot_colours(count: int) -> np.ndarray:
    """(count, 4) RGBA colours that tell robots apart: tab10's ten, then tab20's lighter ten,
    then (past 20) hues spread by the golden angle at three alternating lightnesses."""
    import matplotlib
    from matplotlib.colors import hsv_to_rgb
    tab20 = matplotlib.colormaps['tab20'].colors
    base = [tab20[i] for i in range(0, 20, 2)] + [tab20[i] for i in range(1, 20, 2)]
    colours = [(*rgb, 1.0) for rgb in base[:count]]
    for k in range(len(colours), count):
        hue = (k * 0.618033988749895) % 1.0
        value = (0.95, 0.7, 0.5)[k % 3]
        colours.append((*hsv_to_rgb((hue, 0.85, value)), 1.0))
    return np.array(colours, dtype=float).reshape(-1, 4)


def plot_trajectories(path, tracks: Sequence[RobotTrack], starts: np.ndarray,
                      grid: Optional[OccupancyGrid] = None,
                      plans: Optional[Dict[str, List[np.ndarray]]] = None,
                      title: str = '', grid_3d: Optional[OccupancyGrid] = None,
                      people: Sequence[PersonTrack] = (),
                      boxes: np.ndarray = np.zeros((0, 4))) -> Path:
    """Writes a PNG: occupied cells grey, each robot's trace in its own colour (`robot_colours`),
    its start as a disc of its radius, its name at its start and where it ended (up to
    _LABELLED_ROBOTS robots), goals as crosses (numbered when several), planned paths dashed;
    people's traces dotted black, a filled grey disc of their radius where they ended; unmapped
    boxes hatched. With drones (3-D tracks, `starts` then (N, 3) where they fly) a top and a
    side view."""
    import matplotlib
    matplotlib.use('Agg', force=False)
    import matplotlib.pyplot as plt

    aerial = any(track.xy.shape[1] == 3 for track in tracks)
    starts = [np.asarray(start, dtype=float) for start in starts]    # (2,) or (3,) each
    if aerial:
        fig, (top, side) = plt.subplots(1, 2, figsize=(15, 7.5), dpi=110,
                                        gridspec_kw={'width_ratios': [1.0, 1.0]})
    else:
        fig, top = plt.subplots(figsize=(8, 8), dpi=110)
    try:
        colours = robot_colours(len(tracks))
        if grid is not None and grid.ndim == 2:
            map_image(top, grid.occupied, grid.origin[:2], grid.resolution)
        if grid_3d is not None:
            columns = grid_3d.occupied.mean(axis=0) >= _COLUMN_SHARE
            map_image(top, columns, grid_3d.origin[:2], grid_3d.resolution)
        _draw_unmapped(top, people, boxes)
        _draw(top, tracks, starts, plans, colours, axes=(0, 1))
        legend = _LEGEND + ('; unmapped: hatched' if len(boxes) else '') + (
            '; people: dotted, grey disc at the end' if people else '')
        top.set_xlabel('x (m)')
        top.set_ylabel('y (m)')
        top.set_aspect('equal')
        top.autoscale_view()
        top.grid(True, lw=0.3, alpha=0.5)
        if aerial:
            top.set_title('from above', fontsize=9)
            _draw(side, tracks, starts, plans, colours, axes=(0, 2))
            if grid_3d is not None:
                lower, upper = grid_3d.extent
                for z in (_free_bounds(grid_3d)):
                    side.axhline(z, color='0.4', lw=1.0)
                side.set_xlim(lower[0], upper[0])
            side.set_xlabel('x (m)')
            side.set_ylabel('altitude z (m)')
            side.set_title('from the side (looking along +y): altitude', fontsize=9)
            side.grid(True, lw=0.3, alpha=0.5)
            fig.suptitle(title + '\n' + legend, fontsize=10)
        else:
            top.set_title(title + '\n' + legend, fontsize=9)
        out = Path(path)
        fig.savefig(out, bbox_inches='tight')
        return out
    finally:
        plt.close(fig)


def map_image(ax, occupied: np.ndarray, origin, resolution: float) -> None:
    height, width = occupied.shape
    x0, y0 = origin[0], origin[1]
    ax.imshow(occupied, origin='lower', cmap='Greys', vmin=0, vmax=1.6,
              extent=(x0, x0 + width * resolution, y0, y0 + height * resolution),
              interpolation='nearest', zorder=0)


def _draw_unmapped(ax, people: Sequence[PersonTrack], boxes) -> None:
    """Unmapped boxes hatched; people's traces dotted, a grey disc where they ended."""
    from matplotlib.patches import Circle, Rectangle
    for x0, y0, x1, y1 in np.asarray(boxes, dtype=float).reshape(-1, 4):
        ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, hatch='xxx',
                               color='saddlebrown', lw=1.0, zorder=1))
    for person in people:
        if len(person.xy):
            ax.plot(person.xy[:, 0], person.xy[:, 1], ':', color='black', lw=0.8, alpha=0.6,
                    zorder=1)
            ax.add_patch(Circle(person.xy[-1], person.radius, color='0.35', alpha=0.8,
                                zorder=3))


def _free_bounds(grid: OccupancyGrid) -> List[float]:
    """Altitudes of the lowest and highest layer that is not fully occupied (floor, ceiling)."""
    layers = grid.occupied.reshape(grid.shape[0], -1).all(axis=1)
    free = np.flatnonzero(~layers)
    if free.size == 0:
        return []
    z0, res = grid.origin[2], grid.resolution
    return [float(z0 + free[0] * res), float(z0 + (free[-1] + 1) * res)]


def _draw(ax, tracks: Sequence[RobotTrack], starts: List[np.ndarray], plans, colours,
          axes) -> None:
    """Every robot's plans, trace, start disc and goals, projected on `axes` (0 x, 1 y, 2 z;
    a 2-D track's z is 0)."""
    from matplotlib.patches import Circle

    def project(points):
        points = np.atleast_2d(np.asarray(points, dtype=float))
        padded = np.zeros((len(points), 3))
        padded[:, :points.shape[1]] = points
        return padded[:, axes[0]], padded[:, axes[1]]

    for index, track in enumerate(tracks):
        colour = colours[index]
        for plan in (plans or {}).get(track.name, []):
            ax.plot(*project(plan), '--', color=colour, lw=0.8, alpha=0.6, zorder=1)
        if len(track.xy):
            ax.plot(*project(track.xy), '-', color=colour, lw=1.4, zorder=2)
        (sx,), (sy,) = project(starts[index])
        ax.add_patch(Circle((sx, sy), track.radius, fill=False, color=colour, lw=1.2, zorder=3))
        if len(tracks) <= _LABELLED_ROBOTS:
            # The start's name below it, the end's above: a swap puts one's end at another's start.
            ends = [((sx, sy), -9)] + ([(tuple(np.ravel(project(track.xy[-1]))), 4)]
                                       if len(track.xy) else [])
            for (x, y), below in ends:
                ax.annotate(track.name, (x, y), textcoords='offset points', xytext=(5, below),
                            fontsize=6, color=colour, zorder=5,
                            bbox={'boxstyle': 'round,pad=0.1', 'fc': 'white', 'ec': 'none',
                                  'alpha': 0.6})
        gx, gy = project(track.goals)
        ax.plot(gx, gy, 'x', color=colour, ms=7, mew=2, zorder=4)
        if len(track.goals) > 1:
            for number, goal in enumerate(zip(gx, gy), start=1):
                ax.annotate(str(number), goal, textcoords='offset points', xytext=(4, 4),
                            fontsize=7, color=colour)
