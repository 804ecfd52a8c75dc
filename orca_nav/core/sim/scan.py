"""Simulated planar laser scans for the fleet simulator, and unmapped boxes.

A scan is taken from the robot's centre, beams evenly spread over a full turn starting at
angle_min = -pi (counter-clockwise, in the robot's frame, REP-103). A beam returns the distance
to the first thing it meets within `max_range`: an occupied map cell (or the map's edge),
an unmapped box, another robot's disc or a pedestrian's disc; nothing within range gives inf
(REP-117). Map cells are found by marching along the beam in steps of half a cell; discs and
boxes are intersected exactly.

Unmapped boxes (`boxes`, (B, 4) rows x0, y0, x1, y1) are solid for the scans and for the
collision check of the simulator (`box_overlap`), and absent from /map: a pallet left in an aisle.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from orca_nav.core.grid import OccupancyGrid


def beam_angles(beams: int) -> np.ndarray:
    """(beams,) angles from -pi in steps of 2 pi / beams."""
    return -np.pi + 2.0 * np.pi * np.arange(beams) / beams


def check_boxes(boxes) -> np.ndarray:
    """(B, 4) float boxes; ValueError naming the first malformed one."""
    boxes = np.asarray(boxes, dtype=float).reshape(-1, 4)
    bad = np.flatnonzero(~np.isfinite(boxes).all(axis=1) | (boxes[:, 2] <= boxes[:, 0])
                         | (boxes[:, 3] <= boxes[:, 1]))
    if bad.size:
        raise ValueError(f'boxes[{bad[0]}]: expected x0, y0, x1, y1 with x0 < x1 and y0 < y1, '
                         f'got {boxes[bad[0]].tolist()}')
    return boxes


def box_overlap(boxes: np.ndarray, positions: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """(N,) bool: the disc at each position overlaps a box."""
    if len(boxes) == 0 or len(positions) == 0:
        return np.zeros(len(positions), dtype=bool)
    nearest_x = np.clip(positions[:, 0, None], boxes[None, :, 0], boxes[None, :, 2])
    nearest_y = np.clip(positions[:, 1, None], boxes[None, :, 1], boxes[None, :, 3])
    gap = np.hypot(positions[:, 0, None] - nearest_x, positions[:, 1, None] - nearest_y)
    return (gap < radius[:, None]).any(axis=1)


def box_clearance(boxes: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """(K,) distance from each point to the nearest box (0 inside one; inf without boxes)."""
    if len(boxes) == 0:
        return np.full(len(xy), np.inf)
    x, y = xy[:, 0, None], xy[:, 1, None]
    dx = np.maximum(np.maximum(boxes[None, :, 0] - x, x - boxes[None, :, 2]), 0.0)
    dy = np.maximum(np.maximum(boxes[None, :, 1] - y, y - boxes[None, :, 3]), 0.0)
    return np.hypot(dx, dy).min(axis=1)


def scan_ranges(origin: np.ndarray, yaw: float, angles: np.ndarray, max_range: float,
                grid: Optional[OccupancyGrid], boxes: np.ndarray, disc_centres: np.ndarray,
                disc_radii: np.ndarray) -> np.ndarray:
    """(A,) ranges of one scan from `origin` (2,) heading `yaw` (see the module docstring)."""
    world = yaw + angles
    direction = np.column_stack([np.cos(world), np.sin(world)])
    ranges = np.full(len(angles), np.inf)
    if grid is not None:
        step = 0.5 * grid.resolution
        distance = step * np.arange(1, int(np.ceil(max_range / step)) + 1)
        samples = origin[None, None, :] + direction[:, None, :] * distance[None, :, None]
        hit = grid.occupied_at(samples.reshape(-1, 2)).reshape(len(angles), len(distance))
        first = hit.argmax(axis=1)
        found = hit[np.arange(len(angles)), first]
        ranges[found] = distance[first[found]]
    ranges = np.minimum(ranges, _disc_hits(origin, direction, disc_centres, disc_radii))
    ranges = np.minimum(ranges, _box_hits(origin, direction, boxes))
    ranges[ranges > max_range] = np.inf
    return ranges


def _disc_hits(origin, direction, centres, radii) -> np.ndarray:
    """Distance along each beam to the nearest disc in front (inf: none)."""
    if len(centres) == 0:
        return np.full(len(direction), np.inf)
    rel = centres - origin                                   # (K, 2)
    along = direction @ rel.T                                # (A, K)
    across_sq = (rel * rel).sum(axis=1)[None, :] - along * along
    inside = radii[None, :] ** 2 - across_sq
    distance = along - np.sqrt(np.maximum(inside, 0.0))
    valid = (inside >= 0.0) & (distance > 0.0)
    return np.where(valid, distance, np.inf).min(axis=1)


def _box_hits(origin, direction, boxes) -> np.ndarray:
    """Distance along each beam to the nearest box in front (slab test; inf: none)."""
    if len(boxes) == 0:
        return np.full(len(direction), np.inf)
    with np.errstate(divide='ignore', invalid='ignore'):
        inv = 1.0 / direction                                # (A, 2), inf along an axis
        t1 = (boxes[None, :, 0:2] - origin) * inv[:, None, :]     # (A, B, 2)
        t2 = (boxes[None, :, 2:4] - origin) * inv[:, None, :]
    near = np.nanmax(np.minimum(t1, t2), axis=2)
    far = np.nanmin(np.maximum(t1, t2), axis=2)
    valid = (near <= far) & (near > 0.0)
    return np.where(valid, near, np.inf).min(axis=1)
