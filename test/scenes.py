"""Small worlds several tests share: a walled room, a shelf with a one-way aisle and a car's
parallel-parking path."""
import numpy as np

from orca_nav.core.grid import OccupancyGrid

RES = 0.1


def room(size=10.0, blocks=()):
    """A walled square room (0..size, two cells of wall) with extra occupied boxes
    (xmin, ymin, xmax, ymax), at RES metres per cell."""
    n = int(round(size / RES))
    occ = np.zeros((n, n), bool)
    occ[:2, :] = occ[-2:, :] = occ[:, :2] = occ[:, -2:] = True
    centres = (np.arange(n) + 0.5) * RES
    for x0, y0, x1, y1 in blocks:
        occ[np.ix_((centres >= y0) & (centres <= y1), (centres >= x0) & (centres <= x1))] = True
    return OccupancyGrid(occ, RES, (0.0, 0.0))


# A 12 m room with a shelf (x 2..10, y 2.0..2.6); the aisle south of it (y 0.2..2.0) is one way,
# eastwards (a traffic-rules file's contents); the room north of it is open both ways.
SHELF = (2.0, 2.0, 10.0, 2.6)
EAST_AISLE = {'lanes': [{'name': 'south_aisle', 'from': [2.0, 1.1], 'to': [10.0, 1.1],
                         'width': 2.0}]}


def shelf_aisle():
    return room(12.0, [SHELF])


def parallel_park():
    """Forward 4 m along +x, then 3 m backward and 1 m to the right along an S (car-drivable):
    (x, y, yaw, direction) per pose."""
    s = np.linspace(0.0, 1.0, 31)[1:]
    x = np.r_[np.linspace(0.0, 4.0, 41), 4.0 - 3.0 * s]
    y = np.r_[np.zeros(41), -0.5 * (1 - np.cos(np.pi * s))]
    yaw = np.zeros(x.size)
    # Reversing: the car faces opposite to its direction of travel (which runs toward -x).
    travel = np.arctan2(np.gradient(y[40:])[1:], np.gradient(x[40:])[1:])
    yaw[41:] = (travel + 2 * np.pi) % (2 * np.pi) - np.pi
    return x, y, yaw, np.r_[np.ones(41), -np.ones(30)]
