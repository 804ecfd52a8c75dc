"""`orca-nav replay`: an animation of a recorded run (GIF with Pillow; MP4 where ffmpeg is).

The run comes from one of:
* a recording: a rosbag2 bag folder or its .mcap file (`orca-nav demo --record`, the launch
  file's `record:=`, or `ros2 bag record -s mcap` of the same topics). Robots are the
  `<robot>/odom` topics, put in the map frame through the recorded TF when their odometry is
  in an odom frame (the nodes' own policy: a pose up to `TF_TOLERANCE_S` newer than the newest
  transform uses it); radii and goals come from orca_node's markers (`/orca_nav/markers`),
  people from `tracked_agents`, the map from `/map`. Read with rosbags (the `record` extra).
* a demo's output folder: its recording when it has one, else `tracks.npz` (every robot's
  track, written by every demo beside report.json) and the map report.json names.

Each frame shows the map, every robot as a disc of its radius in its own colour with its name,
its trace so far and its goals, people as grey discs, and the time. Frames are evenly spaced in
the run's time: `fps` frames per second of the run, fewer when the run is long (at most
`max_frames`, so a GIF stays small).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from orca_nav.bringup.maps import load_map
from orca_nav.bringup.report import PersonTrack, RobotTrack
from orca_nav.core.fleet.robots import FIELDS_BY_NAME
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.sim.pedestrians import PedestrianParams
from orca_nav.core.transforms import TransformBuffer, TransformError, transform_planar_poses

TRACKS_FILE = 'tracks.npz'
RECORDING_FOLDER = 'recording'
MARKERS_TOPIC = '/orca_nav/markers'
PEOPLE_TOPIC = '/tracked_agents'
TF_TOLERANCE_S = 1.0        # as the nodes' transform_tolerance default
_DISC, _GOAL = 0, 2         # marker ids of ros/markers.py (kept in sync: a test replays a bag)


@dataclass
class RunRecord:
    """What an animation needs of a run: tracks (time since the run's start), people, map."""
    title: str
    tracks: List[RobotTrack]
    people: List[PersonTrack] = field(default_factory=list)
    grid: Optional[OccupancyGrid] = None
    boxes: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))

    @property
    def duration(self) -> float:
        ends = [track.t[-1] for track in self.tracks if len(track.t)]
        return float(max(ends)) if ends else 0.0


# ---- tracks.npz -------------------------------------------------------------------------------

def write_tracks(path: Path, tracks: Sequence[RobotTrack], people: Sequence[PersonTrack],
                 boxes: np.ndarray) -> Path:
    """Every robot's and person's track, as numpy arrays (`read_tracks` reads them back)."""
    arrays = {'robots': np.array([t.name for t in tracks], dtype=str),
              'people': np.array([p.name for p in people], dtype=str),
              'boxes': np.asarray(boxes, dtype=float).reshape(-1, 4)}
    for i, track in enumerate(tracks):
        arrays.update({f'robot{i}_t': track.t, f'robot{i}_xy': track.xy,
                       f'robot{i}_goals': track.goals, f'robot{i}_radius': track.radius,
                       f'robot{i}_goal_times': np.array(
                           [math.nan if t is None else t for t in track.goal_times], dtype=float)})
    for i, person in enumerate(people):
        arrays.update({f'person{i}_t': person.t, f'person{i}_xy': person.xy,
                       f'person{i}_radius': person.radius})
    np.savez_compressed(path, **arrays)
    return Path(path)


def read_tracks(path: Path):
    """(tracks, people, boxes) from a `write_tracks` file."""
    with np.load(path) as data:
        tracks = [RobotTrack(name=str(name), radius=float(data[f'robot{i}_radius']),
                             t=data[f'robot{i}_t'], xy=data[f'robot{i}_xy'],
                             goals=data[f'robot{i}_goals'],
                             goal_times=[None if math.isnan(t) else float(t)
                                         for t in data[f'robot{i}_goal_times']])
                  for i, name in enumerate(data['robots'])]
        people = [PersonTrack(str(name), float(data[f'person{i}_radius']), data[f'person{i}_t'],
                              data[f'person{i}_xy']) for i, name in enumerate(data['people'])]
        return tracks, people, data['boxes'].copy()


# ---- sources ----------------------------------------------------------------------------------

def load_run(source: Path) -> RunRecord:
    """The run of a demo output folder, a bag folder or a .mcap file (module doc); ValueError
    naming the path when it is none of these."""
    source = Path(source)
    if source.is_dir() and (source / 'report.json').is_file():
        if (source / RECORDING_FOLDER / 'metadata.yaml').is_file():
            return run_from_bag(source / RECORDING_FOLDER, title=_scenario(source))
        if (source / TRACKS_FILE).is_file():
            return run_from_report(source)
        raise ValueError(f'{source}: has report.json but neither {RECORDING_FOLDER}/ nor '
                         f'{TRACKS_FILE} (written by orca-nav demo)')
    if (source.is_dir() and (source / 'metadata.yaml').is_file()) or \
            (source.is_file() and source.suffix == '.mcap'):
        return run_from_bag(source)
    raise ValueError(f'{source}: not a demo output folder (report.json), a rosbag2 bag folder '
                     '(metadata.yaml) or an .mcap file')


def _scenario(folder: Path) -> str:
    return json.loads((folder / 'report.json').read_text()).get('scenario') or folder.name


def run_from_report(folder: Path) -> RunRecord:
    """A demo output folder without a recording: tracks.npz and the map of report.json."""
    report = json.loads((folder / 'report.json').read_text())
    tracks, people, boxes = read_tracks(folder / TRACKS_FILE)
    map_path = report.get('map')
    grid = load_map(map_path) if map_path and Path(map_path).is_file() else None
    return RunRecord(report.get('scenario') or folder.name, tracks, people, grid, boxes)


def run_from_bag(path: Path, title: Optional[str] = None) -> RunRecord:
    """A recording (bag folder or .mcap file) as a RunRecord; see the module doc."""
    from orca_nav.ros.recorder_node import RECORD_EXTRA_HINT
    try:
        from rosbags.rosbag2 import Reader
        from rosbags.typesys import Stores, get_typestore
    except ImportError as err:
        raise ValueError(f'{RECORD_EXTRA_HINT} ({err})') from None
    types = get_typestore(Stores.ROS2_JAZZY)
    odometry: Dict[str, List[tuple]] = {}       # robot -> [(stamp, frame, x, y, z, yaw)]
    people: Dict[str, List[tuple]] = {}
    radii: Dict[str, float] = {}
    goals: Dict[str, List[tuple]] = {}
    grid, global_frame = None, 'map'
    # The whole run's TF in one buffer (every transform kept): each robot's frames qualified by
    # its name when its tree is on its own <robot>/tf topic.
    tf = TransformBuffer(cache_time=1e9)
    with Reader(path) as reader:
        for connection, _, raw in reader.messages():
            topic, kind = connection.topic, connection.msgtype
            msg = types.deserialize_cdr(raw, kind)
            if kind == 'nav_msgs/msg/Odometry':
                stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
                p, q = msg.pose.pose.position, msg.pose.pose.orientation
                row = (stamp, msg.header.frame_id, p.x, p.y, p.z, _yaw(q))
                if topic == PEOPLE_TOPIC:
                    people.setdefault(msg.child_frame_id, []).append(row)
                elif topic.endswith('/odom'):
                    odometry.setdefault(topic[1:-len('/odom')], []).append(row)
            elif kind == 'tf2_msgs/msg/TFMessage':
                prefix = _tree_prefix(topic)
                for t in msg.transforms:
                    tr, r = t.transform.translation, t.transform.rotation
                    tf.set_transform(prefix + t.header.frame_id, prefix + t.child_frame_id,
                                     t.header.stamp.sec + 1e-9 * t.header.stamp.nanosec,
                                     (tr.x, tr.y, tr.z), (r.x, r.y, r.z, r.w),
                                     static=topic.endswith('tf_static'))
            elif kind == 'visualization_msgs/msg/MarkerArray' and topic == MARKERS_TOPIC:
                for marker in msg.markers:
                    if marker.id == _DISC:
                        radii[marker.ns] = 0.5 * marker.scale.x
                    elif marker.id == _GOAL and marker.action == 0:     # ADD
                        goal = (marker.pose.position.x, marker.pose.position.y)
                        seen = goals.setdefault(marker.ns, [])
                        if not seen or seen[-1] != goal:
                            seen.append(goal)
            elif kind == 'nav_msgs/msg/OccupancyGrid' and topic == '/map':
                info = msg.info
                grid = OccupancyGrid.from_int8(np.asarray(msg.data, dtype=np.int8), info.width,
                                               info.height, info.resolution,
                                               (info.origin.position.x, info.origin.position.y))
                global_frame = msg.header.frame_id or global_frame
    if not odometry:
        raise ValueError(f'{path}: no <robot>/odom topic recorded')
    origin = min(rows[0][0] for rows in odometry.values())
    tracks = []
    for robot in sorted(odometry, key=_natural):
        xy = _in_global_frame(tf, robot, odometry[robot], global_frame)
        keep = np.isfinite(xy[:, 0])
        t = np.array([row[0] for row in odometry[robot]])[keep] - origin
        order = np.argsort(t, kind='stable')
        robot_goals = np.array(goals.get(robot, []), dtype=float).reshape(-1, 2)
        radius = radii.get(robot, FIELDS_BY_NAME['radius'].default)
        tracks.append(RobotTrack(robot, radius, t[order], xy[keep][order, :2], robot_goals,
                                 goal_times=[None] * len(robot_goals)))
    walkers = [PersonTrack(name, PedestrianParams().radius,
                           np.array([r[0] for r in rows]) - origin,
                           np.array([r[2:4] for r in rows], dtype=float))
               for name, rows in sorted(people.items())]
    return RunRecord(title or Path(path).stem, tracks, walkers, grid)


def _in_global_frame(tf, robot: str, rows: List[tuple], global_frame: str) -> np.ndarray:
    """(K, 3) x, y, yaw of the odometry rows in the global frame (NaN where TF has none)."""
    out = np.full((len(rows), 3), np.nan)
    for k, (stamp, frame, x, y, _z, yaw) in enumerate(rows):
        if frame == global_frame:
            out[k] = x, y, yaw
            continue
        for prefix in (robot + '/', ''):       # a namespaced tree, else the shared /tf
            try:
                lookup = tf.lookup_late(prefix + global_frame, prefix + frame, stamp,
                                        TF_TOLERANCE_S)
            except TransformError:
                continue
            out[k] = transform_planar_poses(lookup.translation, lookup.rotation,
                                            np.array([x, y, yaw]))
            break
    return out


def _tree_prefix(topic: str) -> str:
    """'robot0/' for a robot's own tree (/robot0/tf, /robot0/tf_static); '' for /tf."""
    namespace = topic.rsplit('/', 1)[0].strip('/')
    return namespace + '/' if namespace else ''


def _yaw(q) -> float:
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


def _natural(name: str):
    """robot2 before robot10."""
    stem = name.rstrip('0123456789')
    digits = name[len(stem):]
    return (stem, int(digits) if digits else -1, name)


# ---- animation --------------------------------------------------------------------------------

def frame_times(duration: float, fps: float, max_frames: int) -> np.ndarray:
    """Times of the frames: every 1/fps s of the run from 0, the run's end included, spaced
    wider when that would make more than max_frames."""
    if not (fps > 0 and max_frames >= 2):
        raise ValueError(f'fps must be > 0 and max_frames >= 2, got {fps!r}, {max_frames!r}')
    if duration <= 0.0:
        return np.zeros(1)
    count = min(int(math.ceil(duration * fps)) + 1, max_frames)
    return np.linspace(0.0, duration, count)


def animate(run: RunRecord, out: Path, fps: float = 10.0, max_frames: int = 300) -> int:
    """Writes the animation (.gif, or .mp4 where ffmpeg is installed); returns its frames."""
    import matplotlib
    matplotlib.use('Agg', force=False)
    import matplotlib.pyplot as plt
    from matplotlib import animation
    from matplotlib.patches import Circle, Rectangle

    from orca_nav.bringup.report_plot import map_image, robot_colours

    out = Path(out)
    if out.suffix == '.gif':
        writer = animation.PillowWriter(fps=fps)
    elif out.suffix == '.mp4':
        if not animation.writers.is_available('ffmpeg'):
            raise ValueError(f'{out}: an MP4 needs ffmpeg on the PATH; write a .gif instead')
        writer = animation.FFMpegWriter(fps=fps)
    else:
        raise ValueError(f'{out}: the animation is a .gif or an .mp4')
    times = frame_times(run.duration, fps, max_frames)
    colours = robot_colours(len(run.tracks))
    fig, ax = plt.subplots(figsize=(7, 7), dpi=80)
    try:
        if run.grid is not None and run.grid.ndim == 2:
            map_image(ax, run.grid.occupied, run.grid.origin[:2], run.grid.resolution)
        for x0, y0, x1, y1 in run.boxes:
            ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, hatch='xxx',
                                   color='saddlebrown', lw=1.0))
        discs, traces, labels = [], [], []
        for track, colour in zip(run.tracks, colours):
            if len(track.goals):
                ax.plot(track.goals[:, 0], track.goals[:, 1], 'x', color=colour, ms=7, mew=2)
            traces.append(ax.plot([], [], '-', color=colour, lw=1.2)[0])
            discs.append(ax.add_patch(Circle((np.nan, np.nan), track.radius, color=colour,
                                             alpha=0.75, zorder=3)))
            labels.append(ax.text(np.nan, np.nan, track.name, fontsize=7, color='black',
                                  zorder=4, ha='left', va='bottom'))
        walkers = [ax.add_patch(Circle((np.nan, np.nan), p.radius, color='0.35', alpha=0.8,
                                       zorder=3)) for p in run.people]
        everything = np.vstack([t.xy[:, :2] for t in run.tracks if len(t.t)] +
                               [t.goals[:, :2] for t in run.tracks if len(t.goals)] +
                               [p.xy for p in run.people if len(p.t)])
        lower, upper = everything.min(axis=0) - 1.0, everything.max(axis=0) + 1.0
        if run.grid is not None and run.grid.ndim == 2:     # the whole map, and the run
            map_lower, map_upper = run.grid.extent
            lower, upper = np.minimum(lower, map_lower[:2]), np.maximum(upper, map_upper[:2])
        ax.set_xlim(lower[0], upper[0])
        ax.set_ylim(lower[1], upper[1])
        ax.set_aspect('equal')
        ax.set_xlabel('x (m)')
        ax.set_ylabel('y (m)')
        ax.set_title(f'{run.title}: {len(run.tracks)} robots', fontsize=10)
        clock = ax.text(0.02, 0.97, '', transform=ax.transAxes, fontsize=10, va='top',
                        bbox={'facecolor': 'white', 'alpha': 0.8, 'edgecolor': 'none'})

        def draw(frame: int):
            now = times[frame]
            for track, disc, trace, label in zip(run.tracks, discs, traces, labels):
                if not len(track.t):
                    continue
                x, y = (np.interp(now, track.t, track.xy[:, axis]) for axis in (0, 1))
                disc.center = (x, y)
                label.set_position((x + track.radius, y + track.radius))
                shown = track.t <= now
                trace.set_data(track.xy[shown, 0], track.xy[shown, 1])
            for person, walker in zip(run.people, walkers):
                if len(person.t):
                    walker.center = tuple(np.interp(now, person.t, person.xy[:, axis])
                                          for axis in (0, 1))
            clock.set_text(f't = {now:5.1f} s')
            return discs + traces + labels + walkers + [clock]

        movie = animation.FuncAnimation(fig, draw, frames=len(times), blit=False)
        movie.save(str(out), writer=writer)
    finally:
        plt.close(fig)
    return len(times)


def default_output(source: Path) -> Path:
    """replay.gif in a demo output folder; <bag>.gif beside a bag folder or .mcap file."""
    source = Path(source)
    if source.is_dir() and (source / 'report.json').is_file():
        return source / 'replay.gif'
    return source.with_suffix('.gif') if source.is_file() else source.parent / (source.name +
                                                                               '.gif')
