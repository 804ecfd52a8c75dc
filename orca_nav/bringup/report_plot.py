"""The demo's picture: map, robot traces, starts, goals, planned paths and the people the
fleet shared the space with (matplotlib, Agg)."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from orca_nav.core.grid import OccupancyGrid
from orca_nav.bringup.report import PersonTrack, RobotTrack


def plot_trajectories(path, tracks: Sequence[RobotTrack], starts: np.ndarray,
                      grid: Optional[OccupancyGrid] = None,
                      plans: Optional[Dict[str, List[np.ndarray]]] = None,
                      title: str = '', people: Sequence[PersonTrack] = (),
                      boxes: np.ndarray = np.zeros((0, 4))) -> Path:
    """Writes a PNG: occupied cells grey, each robot's trace in its own colour, its start as
    a disc of its radius, goals as crosses (numbered when several), planned paths dashed;
    people's traces dotted black, a filled grey disc of their radius where they ended; unmapped
    boxes hatched."""
    import matplotlib
    matplotlib.use('Agg', force=False)
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle, Rectangle

    starts = np.asarray(starts, dtype=float).reshape(-1, 2)
    fig, ax = plt.subplots(figsize=(8, 8), dpi=110)
    try:
        if grid is not None and grid.ndim == 2:
            height, width = grid.shape
            x0, y0 = grid.origin[0], grid.origin[1]
            ax.imshow(grid.occupied, origin='lower', cmap='Greys', vmin=0, vmax=1.6,
                      extent=(x0, x0 + width * grid.resolution, y0, y0 + height * grid.resolution),
                      interpolation='nearest', zorder=0)
        for x0, y0, x1, y1 in np.asarray(boxes, dtype=float).reshape(-1, 4):
            ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, hatch='xxx',
                                   color='saddlebrown', lw=1.0, zorder=1))
        for person in people:
            if len(person.xy):
                ax.plot(person.xy[:, 0], person.xy[:, 1], ':', color='black', lw=0.8,
                        alpha=0.6, zorder=1)
                ax.add_patch(Circle(person.xy[-1], person.radius, color='0.35', alpha=0.8,
                                    zorder=3))
        colours = plt.get_cmap('hsv')(np.linspace(0.0, 0.92, max(len(tracks), 1)))
        for index, track in enumerate(tracks):
            colour = colours[index]
            for plan in (plans or {}).get(track.name, []):
                plan = np.asarray(plan, dtype=float).reshape(-1, 2)
                ax.plot(plan[:, 0], plan[:, 1], '--', color=colour, lw=0.8, alpha=0.6, zorder=1)
            if len(track.xy):
                ax.plot(track.xy[:, 0], track.xy[:, 1], '-', color=colour, lw=1.4, zorder=2)
            ax.add_patch(Circle(starts[index], track.radius, fill=False, color=colour, lw=1.2,
                                zorder=3))
            ax.plot(track.goals[:, 0], track.goals[:, 1], 'x', color=colour, ms=7, mew=2,
                    zorder=4)
            if len(track.goals) > 1:
                for number, goal in enumerate(track.goals, start=1):
                    ax.annotate(str(number), goal, textcoords='offset points', xytext=(4, 4),
                                fontsize=7, color=colour)
        ax.set_aspect('equal')
        ax.autoscale_view()
        ax.set_xlabel('x (m)')
        ax.set_ylabel('y (m)')
        legend = 'traces: solid; plans: dashed; start: circle; goal: x'
        if len(boxes):
            legend += '; unmapped: hatched'
        if people:
            legend += '; people: dotted, grey disc at the end'
        ax.set_title(title + '\n' + legend, fontsize=9)
        ax.grid(True, lw=0.3, alpha=0.5)
        out = Path(path)
        fig.savefig(out, bbox_inches='tight')
        return out
    finally:
        plt.close(fig)
