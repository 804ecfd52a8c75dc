"""Message <-> array conversions at the nodes' edge. No geometry here beyond frame bookkeeping."""
from __future__ import annotations

import array
import math
import struct
from dataclasses import dataclass, field
from typing import List, NamedTuple, Optional, Tuple

import numpy as np
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Quaternion
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import PointCloud2, PointField

from orca_nav.core.fleet.state_estimate import usable_covariances
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.voxel_map import grid_from_centres, occupied_centres


def latched_qos(depth: int = 1) -> QoSProfile:
    """What nav2_map_server uses for /map: late subscribers still get the last map."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def yaw_to_quaternion(yaw: float) -> Quaternion:
    half = 0.5 * float(yaw)
    return Quaternion(x=0.0, y=0.0, z=math.sin(half), w=math.cos(half))


def quaternion_to_yaw(q) -> float:
    """Yaw (rotation about z) of a quaternion, REP-103 (counter-clockwise from x)."""
    return _yaw(q.x, q.y, q.z, q.w)


def _yaw(x: float, y: float, z: float, w: float) -> float:
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def stamp_to_seconds(stamp) -> float:
    return stamp.sec + 1e-9 * stamp.nanosec


def seconds_to_nanoseconds(seconds: float) -> int:
    """A time in seconds as integer nanoseconds, as builtin_interfaces/Time holds it (whole
    seconds down, the nanoseconds rounded and kept below one second)."""
    sec = math.floor(seconds)
    return sec * 10 ** 9 + min(int(round((seconds - sec) * 1e9)), 999_999_999)


def seconds_to_time(seconds: float) -> Time:
    sec, nanosec = divmod(seconds_to_nanoseconds(seconds), 10 ** 9)
    return Time(sec=sec, nanosec=nanosec)


def seconds_to_duration(seconds: float) -> Duration:
    sec = int(np.floor(seconds))
    return Duration(sec=sec, nanosec=min(int(round((seconds - sec) * 1e9)), 999_999_999))


def node_now(node) -> float:
    """The node's clock in seconds: ROS time, so /clock under use_sim_time. Every time a node
    hands to the core comes from here or from a message stamp."""
    return node.get_clock().now().nanoseconds * 1e-9


def pose_from_msg(msg, frame: str) -> Tuple[float, float, float, float]:
    """(x, y, z, yaw) of a geometry_msgs/PoseStamped in the global `frame`; ValueError naming
    the field when the pose is in another frame or has a non-finite number."""
    if msg.header.frame_id != frame:
        raise ValueError(f'header.frame_id {msg.header.frame_id!r} is not the global frame '
                         f'{frame!r}')
    p, q = msg.pose.position, msg.pose.orientation
    for name, value in (('pose.position.x', p.x), ('pose.position.y', p.y),
                        ('pose.position.z', p.z), ('pose.orientation.x', q.x),
                        ('pose.orientation.y', q.y), ('pose.orientation.z', q.z),
                        ('pose.orientation.w', q.w)):
        if not math.isfinite(value):
            raise ValueError(f'{name} is not finite ({value})')
    return p.x, p.y, p.z, quaternion_to_yaw(q)


def _check_finite(values, field: str) -> None:
    for k, value in enumerate(values):
        if not math.isfinite(value):
            raise ValueError(f'{field}[{k}] is not finite ({float(value)})')


@dataclass(frozen=True)
class OdomState:
    """One odometry sample, velocities rotated into the global frame."""

    position: np.ndarray      # (3,) x, y, z in frame_id
    velocity: np.ndarray      # (3,) linear velocity in frame_id
    yaw: float
    yaw_rate: float
    stamp_s: float
    frame_id: str
    # (2, 2) x, y block of pose.covariance (m^2, in frame_id), and child_frame_id
    position_covariance: np.ndarray = field(default_factory=lambda: np.zeros((2, 2)))
    child_frame_id: str = ''


def odom_to_state(msg: Odometry) -> OdomState:
    """nav_msgs/Odometry -> OdomState. The twist is in child_frame_id (REP-105, base_link),
    so it is rotated by the pose's yaw into the pose's frame. Raises ValueError naming the
    field when anything is not finite."""
    p = msg.pose.pose.position
    q = msg.pose.pose.orientation
    t = msg.twist.twist
    c = msg.pose.covariance
    return _odom_state((p.x, p.y, p.z), (q.x, q.y, q.z, q.w), (t.linear.x, t.linear.y, t.linear.z),
                       t.angular.z, stamp_to_seconds(msg.header.stamp), msg.header.frame_id,
                       (c[0], c[1], c[6], c[7]), msg.child_frame_id)


# Serialized Odometry, as a raw subscription delivers it: a 4-byte encapsulation header, then
# CDR (XCDR1) with alignment counted from the end of that header. Layout: header.stamp (int32
# sec, uint32 nanosec), header.frame_id and child_frame_id (uint32 length including the NUL,
# bytes), then 8-byte aligned doubles: position (3), orientation (4), pose covariance (36),
# linear (3), angular (3) twist, twist covariance (36).
_CDR_LITTLE_ENDIAN = b'\x00\x01'
# |q|^2 within this of 1 is a unit quaternion (isclose(|q|^2, 1, abs_tol=1e-3) and rounding).
_UNIT_QUATERNION_TOLERANCE = 1e-3 + 1e-5
_STAMP_AND_FRAME_LENGTH = struct.Struct('<iII')
_STRING_LENGTH = struct.Struct('<I')
_STAMP = struct.Struct('<iI')
_POSE = struct.Struct('<7d')
_TWIST = struct.Struct('<6d')
_COVARIANCE_XY = struct.Struct('<8d')    # the first 8 of 36: rows x (6) and y (first 2)
_POSE_COVARIANCE_BYTES = 36 * 8


def odom_state_from_cdr(raw: bytes) -> OdomState:
    """odom_to_state for a serialized nav_msgs/Odometry (an rclpy subscription with raw=True).

    Reads just the fields used. Deserializing the whole message costs ~0.1 ms in rclpy, mostly
    the two 36-double covariances: 10 ms of CPU in every 20 Hz cycle for 100 robots. Encodings other
    than little-endian XCDR1 (what rmw_fastrtps sends here) are deserialized by rclpy."""
    if raw[:2] != _CDR_LITTLE_ENDIAN:
        return odom_to_state(deserialize_message(raw, Odometry))
    stamp_s, frame_id, child_frame_id, pose, covariance, twist = _odom_fields(raw)
    return _odom_state(pose[:3], pose[3:], twist[:3], twist[5], stamp_s, frame_id,
                       covariance[0:2] + covariance[6:8], child_frame_id)


def _odom_fields(raw: bytes):
    """(stamp s, frame_id, child_frame_id, pose (7), xy covariance rows (8), twist (6)) of a
    little-endian serialized Odometry; ValueError when it is malformed."""
    body = memoryview(raw)[4:]
    try:
        sec, nanosec, frame_length = _STAMP_AND_FRAME_LENGTH.unpack_from(body, 0)
        frame_id = bytes(body[12:12 + frame_length]).rstrip(b'\x00').decode()
        offset = _aligned(12 + frame_length, 4)
        (child_length,) = _STRING_LENGTH.unpack_from(body, offset)
        child_frame_id = bytes(body[offset + 4:offset + 4 + child_length]).rstrip(b'\x00').decode()
        offset = _aligned(offset + 4 + child_length, 8)
        pose = _POSE.unpack_from(body, offset)
        covariance = _COVARIANCE_XY.unpack_from(body, offset + _POSE.size)
        twist = _TWIST.unpack_from(body, offset + _POSE.size + _POSE_COVARIANCE_BYTES)
    except (struct.error, UnicodeDecodeError) as err:
        raise ValueError(f'malformed serialized Odometry ({len(raw)} bytes): {err}') from None
    return sec + 1e-9 * nanosec, frame_id, child_frame_id, pose, covariance, twist


class TwistCdr:
    """geometry_msgs/Twist, or TwistStamped with a fixed frame_id, serialized (little-endian
    XCDR1, what rmw_fastrtps sends) for publishing as bytes: a publisher given bytes skips rclpy's
    conversion of the Python message, 3 us a message instead of 11 (a fleet node publishes one
    per robot per cycle: 4 ms of every cycle at 500 robots). Layout of TwistStamped: stamp (int32
    sec, uint32 nanosec), frame_id (uint32 length including the NUL, bytes), then 8-byte aligned
    doubles linear (3), angular (3); Twist is just the doubles."""

    def __init__(self, frame_id: Optional[str] = None):
        self.frame_id, self.stamped = frame_id, frame_id is not None
        if not self.stamped:
            self._prefix = _CDR_LITTLE_ENDIAN + b'\x00\x00'
            return
        name = frame_id.encode() + b'\x00'
        after_name = 12 + len(name)
        self._frame = _STRING_LENGTH.pack(len(name)) + name + bytes(_aligned(after_name, 8)
                                                                   - after_name)

    def pack(self, linear, angular_z: float, stamp_ns: int = 0) -> bytes:
        """linear (x, y, z) in m/s, angular z in rad/s; stamp_ns for TwistStamped."""
        twist = _TWIST.pack(linear[0], linear[1], linear[2], 0.0, 0.0, angular_z)
        if not self.stamped:
            return self._prefix + twist
        return (_CDR_LITTLE_ENDIAN + b'\x00\x00' + _STAMP.pack(*divmod(stamp_ns, 10 ** 9))
                + self._frame + twist)


class OdometryCdr:
    """nav_msgs/Odometry of one robot with fixed frame ids, serialized (little-endian XCDR1)
    for publishing as bytes: a simulator sends one per robot per step, and rclpy's conversion of
    the message object costs it several times the encoding (`_odom_fields` reads the same
    layout). Only what a simulated robot reports is set: position, yaw, the x and y variances
    of the pose covariance, the body twist (linear x, y, z and angular z); the rest is 0."""

    # pose (position 3, orientation 4), pose.covariance with [0] and [7] set, twist (6), and its
    # covariance (36, all 0); 'x' is a zero byte.
    _BODY = struct.Struct('<7dd48xd224x6d288x')

    def __init__(self, frame_id: str, child_frame_id: str):
        frame, child = frame_id.encode() + b'\x00', child_frame_id.encode() + b'\x00'
        after_frame = _aligned(12 + len(frame), 4)
        after_child = after_frame + 4 + len(child)
        self._frames = (_STRING_LENGTH.pack(len(frame)) + frame
                        + bytes(after_frame - 12 - len(frame)) + _STRING_LENGTH.pack(len(child))
                        + child + bytes(_aligned(after_child, 8) - after_child))

    def pack(self, stamp_ns: int, position, yaw: float, position_variance: float,
             body_linear, yaw_rate: float) -> bytes:
        """position (x, y, z) in the frame, yaw (rad), the variance of x and of y (m^2), body
        linear (x, y, z) in m/s and yaw rate in rad/s."""
        half_yaw = 0.5 * yaw
        return (_CDR_LITTLE_ENDIAN + b'\x00\x00' + _STAMP.pack(*divmod(stamp_ns, 10 ** 9))
                + self._frames + self._BODY.pack(
                    position[0], position[1], position[2], 0.0, 0.0, math.sin(half_yaw),
                    math.cos(half_yaw), position_variance, position_variance, body_linear[0],
                    body_linear[1], body_linear[2], 0.0, 0.0, yaw_rate))


class OdomBatch(NamedTuple):
    """Odometry messages decoded together, row k from message `index[k]`; velocities rotated
    into the pose's frame as in OdomState."""
    index: np.ndarray           # (K,) positions in the list given
    stamp: np.ndarray           # (K,) s
    frame_id: List[str]
    position: np.ndarray        # (K, 3)
    velocity: np.ndarray        # (K, 3)
    yaw: np.ndarray             # (K,)
    covariance: np.ndarray      # (K, 2, 2) x, y block of pose.covariance


def odom_batch_from_cdr(raws: List[bytes]) -> OdomBatch:
    """odom_state_from_cdr for many serialized messages, the arithmetic in numpy over all of
    them (a fleet node gets one per robot per period). Only messages odom_state_from_cdr would
    accept unchanged come back, with a usable covariance (`covariance_problem` is None): the
    others (another encoding, malformed, not finite, not a unit quaternion, a covariance that
    gives a margin) are left out, for the caller to pass one by one to odom_state_from_cdr and
    the controller, which say what is wrong."""
    index, frames, rows = [], [], []
    for k, raw in enumerate(raws):
        if raw[:2] != _CDR_LITTLE_ENDIAN:
            continue
        try:
            stamp_s, frame_id, _, pose, covariance, twist = _odom_fields(raw)
        except ValueError:
            continue
        index.append(k)
        frames.append(frame_id)
        rows.append((stamp_s,) + pose + covariance[0:2] + covariance[6:8] + twist)
    values = np.array(rows, dtype=float).reshape(-1, 1 + 7 + 4 + 6)
    stamp, position, (qx, qy, qz, qw) = values[:, 0], values[:, 1:4], values[:, 4:8].T
    covariance, body = values[:, 8:12].reshape(-1, 2, 2), values[:, 12:18]
    with np.errstate(invalid='ignore', over='ignore'):     # rows not finite are left out
        usable = (np.isfinite(values).all(axis=1) & usable_covariances(covariance)
                  & (np.abs(qx * qx + qy * qy + qz * qz + qw * qw - 1.0)
                     <= _UNIT_QUATERNION_TOLERANCE))
    keep = np.flatnonzero(usable)
    qx, qy, qz, qw, body = qx[keep], qy[keep], qz[keep], qw[keep], body[keep]
    yaw = np.arctan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))
    c, s = np.cos(yaw), np.sin(yaw)
    velocity = np.column_stack([c * body[:, 0] - s * body[:, 1], s * body[:, 0] + c * body[:, 1],
                                body[:, 2]])
    return OdomBatch(np.asarray(index, dtype=int)[keep], stamp[keep],
                     [frames[k] for k in keep], position[keep], velocity, yaw, covariance[keep])


def _aligned(offset: int, size: int) -> int:
    return (offset + size - 1) // size * size


def _odom_state(position, orientation, body_linear, yaw_rate, stamp_s, frame_id,
                covariance_xy=(0.0, 0.0, 0.0, 0.0), child_frame_id='') -> OdomState:
    # Plain math on the few floats of one message: this runs for every odometry message of a
    # fleet (numpy's per-call overhead would dominate).
    fields = ((position, 'pose.pose.position'), (orientation, 'pose.pose.orientation'),
              (body_linear, 'twist.twist.linear'), ((yaw_rate,), 'twist.twist.angular.z'))
    for values, name in fields:
        _check_finite(values, name)
    qx, qy, qz, qw = orientation
    if abs(qx * qx + qy * qy + qz * qz + qw * qw - 1.0) > _UNIT_QUATERNION_TOLERANCE:
        raise ValueError('pose.pose.orientation is not a unit quaternion '
                         f'({[float(v) for v in orientation]})')
    yaw = _yaw(qx, qy, qz, qw)
    c, s = math.cos(yaw), math.sin(yaw)
    vx, vy, vz = body_linear
    return OdomState(position=np.array(position, dtype=float),
                     velocity=np.array([c * vx - s * vy, s * vx + c * vy, vz], dtype=float),
                     yaw=yaw, yaw_rate=float(yaw_rate), stamp_s=stamp_s, frame_id=frame_id,
                     position_covariance=np.array(covariance_xy, dtype=float).reshape(2, 2),
                     child_frame_id=child_frame_id)


def state_to_odom(position, yaw: float, body_velocity, yaw_rate: float, stamp, frame_id: str,
                  child_frame_id: str) -> Odometry:
    """Odometry with the pose in `frame_id` and the twist in `child_frame_id` (REP-105)."""
    msg = Odometry()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.child_frame_id = child_frame_id
    pos = msg.pose.pose.position
    pos.x, pos.y = float(position[0]), float(position[1])
    pos.z = float(position[2]) if len(position) > 2 else 0.0
    msg.pose.pose.orientation = yaw_to_quaternion(yaw)
    lin = msg.twist.twist.linear
    lin.x, lin.y = float(body_velocity[0]), float(body_velocity[1])
    lin.z = float(body_velocity[2]) if len(body_velocity) > 2 else 0.0
    msg.twist.twist.angular.z = float(yaw_rate)
    return msg


def grid_to_msg(grid: OccupancyGrid, frame_id: str, stamp) -> OccupancyGridMsg:
    """A 2-D core grid as nav_msgs/OccupancyGrid (100 occupied, 0 free, row-major from y min)."""
    msg = OccupancyGridMsg()
    msg.header.frame_id = frame_id
    msg.header.stamp = stamp
    ny, nx = grid.shape
    msg.info.map_load_time = stamp
    msg.info.resolution = float(grid.resolution)
    msg.info.width, msg.info.height = int(nx), int(ny)
    msg.info.origin.position.x = float(grid.origin[0])
    msg.info.origin.position.y = float(grid.origin[1])
    msg.info.origin.orientation.w = 1.0
    msg.data = array.array('b', grid.to_int8().tobytes())   # bulk copy; a list of 10^7 ints is slow
    return msg


def msg_to_grid(msg: OccupancyGridMsg, unknown_occupied: bool = True,
                frame_id: Optional[str] = None) -> OccupancyGrid:
    """nav_msgs/OccupancyGrid -> core grid. Rotated map origins, and maps in a frame other
    than `frame_id` (when given), are rejected with a ValueError naming the field."""
    if frame_id is not None and msg.header.frame_id != frame_id:
        raise ValueError(f'header.frame_id {msg.header.frame_id!r} is not the global frame '
                         f'{frame_id!r}')
    info = msg.info
    q = info.origin.orientation
    if abs(quaternion_to_yaw(q)) > 1e-6:
        raise ValueError(f'info.origin.orientation: rotated maps are not supported '
                         f'(yaw {quaternion_to_yaw(q):.4f} rad)')
    if info.width * info.height != len(msg.data):
        raise ValueError(f'data: {len(msg.data)} cells, but info.width x info.height = '
                         f'{info.width} x {info.height}')
    data = np.frombuffer(msg.data, dtype=np.int8) if isinstance(msg.data, array.array) \
        else np.asarray(msg.data, dtype=np.int8)
    return OccupancyGrid.from_int8(data, info.width, info.height, info.resolution,
                                   (info.origin.position.x, info.origin.position.y),
                                   unknown_occupied=unknown_occupied)


_XYZ = ('x', 'y', 'z')
_CLOUD_FLOATS = {PointField.FLOAT32: 'f4', PointField.FLOAT64: 'f8'}


def grid_to_cloud(grid: OccupancyGrid, frame_id: str, stamp) -> PointCloud2:
    """A 3-D core grid as sensor_msgs/PointCloud2 of its occupied voxel centres."""
    return points_to_cloud(occupied_centres(grid), frame_id, stamp)


def points_to_cloud(points, frame_id: str, stamp) -> PointCloud2:
    """(K, 3) points as sensor_msgs/PointCloud2 (x, y, z float32, little-endian, unordered:
    height 1; dense unless a point is not finite)."""
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    msg = PointCloud2()
    msg.header.frame_id = frame_id
    msg.header.stamp = stamp
    msg.height, msg.width = 1, int(len(points))
    msg.fields = [PointField(name=axis, offset=4 * k, datatype=PointField.FLOAT32, count=1)
                  for k, axis in enumerate(_XYZ)]
    msg.is_bigendian = False
    msg.point_step = 12
    msg.row_step = 12 * msg.width
    msg.is_dense = bool(np.isfinite(points).all())
    msg.data = array.array('B', np.ascontiguousarray(points, dtype='<f4').tobytes())
    return msg


def cloud_xyz(msg: PointCloud2) -> np.ndarray:
    """(K, 3) float64 x, y, z of every point of a PointCloud2 (NaN ones included). ValueError
    naming the field when x, y or z is missing or not a float, or data does not fit the layout."""
    layout = {}
    for f in msg.fields:
        if f.name in _XYZ:
            if f.datatype not in _CLOUD_FLOATS or f.count != 1:
                raise ValueError(f'fields: {f.name} must be one FLOAT32 or FLOAT64, got datatype '
                                 f'{f.datatype} count {f.count}')
            layout[f.name] = (f.offset, _CLOUD_FLOATS[f.datatype])
    missing = [axis for axis in _XYZ if axis not in layout]
    if missing:
        raise ValueError(f'fields: no {", ".join(missing)} field (have '
                         f'{[f.name for f in msg.fields]})')
    count = int(msg.width) * int(msg.height)
    end = '>' if msg.is_bigendian else '<'
    widest = max(offset + int(kind[1]) for offset, kind in layout.values())
    if msg.point_step < widest or msg.row_step < msg.point_step * msg.width:
        raise ValueError(f'point_step {msg.point_step} / row_step {msg.row_step}: too small for '
                         f'the x, y, z fields ({widest} bytes a point, width {msg.width})')
    if len(msg.data) < msg.row_step * msg.height:
        raise ValueError(f'data: {len(msg.data)} bytes, but row_step x height = '
                         f'{msg.row_step} x {msg.height}')
    if count == 0:
        return np.zeros((0, 3))
    dtype = np.dtype({'names': list(_XYZ), 'offsets': [layout[a][0] for a in _XYZ],
                      'formats': [end + layout[a][1] for a in _XYZ],
                      'itemsize': int(msg.point_step)})
    raw = np.frombuffer(msg.data, dtype=np.uint8)
    rows = raw[:msg.row_step * msg.height].reshape(msg.height, msg.row_step)
    points = rows[:, :msg.point_step * msg.width].copy().view(dtype).reshape(-1)
    return np.stack([points[a].astype(np.float64) for a in _XYZ], axis=1)


def cloud_to_grid(msg: PointCloud2, resolution: float,
                  frame_id: Optional[str] = None) -> Tuple[OccupancyGrid, Optional[str]]:
    """A PointCloud2 of occupied voxel centres -> 3-D core grid of `resolution` (its extent:
    the points' bounding box, `orca_nav.core.voxel_map`). Points with a NaN or infinite
    coordinate are dropped (as sensor drivers mark invalid points); the second value then says
    how many, naming the field. ValueError naming the field for an empty cloud (or one with no
    valid point), a cloud in another frame than `frame_id` (when given) or a bad layout."""
    if frame_id is not None and msg.header.frame_id != frame_id:
        raise ValueError(f'header.frame_id {msg.header.frame_id!r} is not the global frame '
                         f'{frame_id!r}')
    points = cloud_xyz(msg)
    if len(points) == 0:
        raise ValueError(f'width x height = {msg.width} x {msg.height}: the cloud has no points '
                         '(a 3-D map needs its occupied voxels)')
    finite = np.isfinite(points).all(axis=1)
    note = None
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        note = (f'data: {int((~finite).sum())} of {len(points)} points have a NaN or infinite '
                f'x, y or z (first: point {bad}, {points[bad].tolist()}); dropped')
        points = points[finite]
        if len(points) == 0:
            raise ValueError(f'data: none of the {len(finite)} points is finite '
                             '(every x, y or z is NaN or infinite)')
    return grid_from_centres(points, resolution), note
