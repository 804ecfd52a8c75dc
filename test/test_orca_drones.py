"""orca_node (and fleet_sim_node) with drones over real DDS: the 3-D map from /map_3d, cmd_vel
linear.z, bad 3-D input (NaN points, an empty cloud, a goal outside the 3-D map): warnings naming
the field, the drone holds still, nothing stops."""
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import PoseStamped, Twist  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402
from test_orca_node import Ros, _time  # noqa: E402

from orca_nav.core.grid import OccupancyGrid  # noqa: E402
from orca_nav.ros.convert import cloud_xyz, grid_to_cloud, latched_qos, state_to_odom  # noqa: E402

from ros_harness import harness_fixture  # noqa: E402

pytestmark = pytest.mark.ros
DRONE = {'robot0.kinematics': 'quadrotor', 'require_map_3d': True, 'diagnostics_rate': 20.0}


class DroneRos(Ros):
    def __init__(self):
        super().__init__()
        self._goal_pubs = {}

    def odom(self, robot, x, y, z=1.0):
        if robot not in self._odom_pubs:
            self._odom_pubs[robot] = self.publisher(Odometry, f'/{robot}/odom',
                                                    qos_profile_sensor_data)
        msg = state_to_odom((x, y, z), 0.0, (0.0, 0.0, 0.0), 0.0, _time(self.clock.now_s),
                            'map', f'{robot}/base_link')
        self._odom_pubs[robot].publish(msg)

    def cloud(self, msg):
        pub = self.publisher(PointCloud2, '/map_3d', latched_qos())
        pub.publish(msg)
        return pub

    def goal_3d(self, robot, x, y, z):
        msg = PoseStamped()
        msg.header.frame_id = 'map'
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = x, y, z
        msg.pose.orientation.w = 1.0
        if robot not in self._goal_pubs:
            self._goal_pubs[robot] = self.publisher(PoseStamped, f'/{robot}/goal_pose')
        self._goal_pubs[robot].publish(msg)


class Log:
    """Everything the nodes logged so far (`ros.rosout()`)."""

    def __init__(self, ros):
        self.entries = ros.rosout()

    @property
    def text(self):
        return '\n'.join(entry.msg for entry in list(self.entries))

    def has(self, line):
        return line in self.text


ros = harness_fixture(DroneRos)


def room_cloud(stamp):
    """A 10 x 10 x 6 m room (0.2 m voxels) with floor and ceiling, as map_3d_publisher sends it."""
    occupied = np.zeros((30, 50, 50), dtype=bool)
    occupied[0] = occupied[-1] = True
    return grid_to_cloud(OccupancyGrid(occupied, 0.2, (0.0, 0.0, -0.2)), 'map', stamp)


def waiting(diagnostics):
    latest = [s.message for d in diagnostics for s in d.status if s.name == 'orca_node: robot0']
    return bool(latest) and 'waiting for the 3-D map' in latest[-1]


def test_drone_holds_until_the_3d_map_then_climbs_with_nan_points_dropped(ros):
    ros.orca(['robot0'], **DRONE, **{'robot0.goal': [5.0, 5.0, 0.0], 'robot0.goal_z': 3.0})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    ros.play({'robot0': (5.0, 5.0)}, 4)
    assert ros.wait_for(lambda: waiting(diagnostics))
    assert cmds == []                   # no 3-D map: the drone is not commanded, it hovers
    msg = room_cloud(_time(ros.clock.now_s))
    points = cloud_xyz(msg)
    points[[0, 5]] = np.nan
    msg.data = points.astype('<f4').tobytes()
    ros.cloud(msg)
    assert ros.wait_for(lambda: cmds)
    ros.run({'robot0': (5.0, 5.0)}, [cmds], 4)
    # Climbs to 3 m (keep_right tilts it by 0.01 rad).
    assert cmds[-1].linear.z > 0.05 and abs(cmds[-1].linear.x) < 0.011 * cmds[-1].linear.z
    log = Log(ros)
    assert ros.wait_for(lambda: log.has('3-D map 50 x 50 x 30 voxels of 0.2 m')), log.text
    assert log.has('/map_3d: data: 2 of 5000 points have a NaN or infinite x, y or z'), log.text


def test_an_empty_cloud_is_refused_and_the_drone_holds(ros):
    ros.orca(['robot0'], **DRONE, **{'robot0.goal': [8.0, 5.0, 0.0]})
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    empty = PointCloud2(height=1, width=0, point_step=12, row_step=0)
    empty.header.frame_id = 'map'
    empty.fields = room_cloud(_time(0.0)).fields
    ros.cloud(empty)
    ros.play({'robot0': (5.0, 5.0)}, 6)
    assert ros.wait_for(lambda: waiting(diagnostics))
    assert cmds == []
    log = Log(ros)
    assert ros.wait_for(lambda: log.has(
        'rejecting /map_3d: width x height = 0 x 1: the cloud has no points (a 3-D map '
        'needs its occupied voxels); drones without a 3-D map')), log.text


def test_a_goal_outside_the_3d_map_is_refused_and_the_drone_holds(ros):
    ros.orca(['robot0'], **DRONE)
    cmds = ros.collect(Twist, '/robot0/cmd_vel')
    ros.cloud(room_cloud(_time(0.0)))
    ros.play({'robot0': (5.0, 5.0)}, 2)
    assert ros.wait_for(lambda: cmds)        # engaged once the 3-D map is in
    ros.goal_3d('robot0', 5.0, 5.0, 9.0)         # above the ceiling
    ros.goal_3d('robot0', 15.0, 5.0, 2.0)        # beside the room
    ros.run({'robot0': (5.0, 5.0)}, [cmds], 4)
    assert all(c.linear.x == 0.0 and c.linear.y == 0.0 and c.linear.z == 0.0 for c in cmds[-3:])
    log = Log(ros)
    assert ros.wait_for(lambda: log.has(
        'robot0: refusing goal from goal_pose: (5.000, 5.000, 9.000) is outside the 3-D map '
        '(x 0..10, y 0..10, z -0.2..5.8)')), log.text
    assert ros.wait_for(lambda: log.has(
        'robot0: refusing goal from goal_pose: (15.000, 5.000, 2.000) is outside')), log.text


def test_fleet_sim_takes_the_3d_map_drops_nan_points_and_refuses_an_empty_cloud(ros):
    from rclpy.parameter import Parameter

    from orca_nav.ros.fleet_sim_node import FleetSimNode
    sim = ros.add(FleetSimNode(context=ros.context, parameter_overrides=[
        Parameter('robots', value=['robot0']), Parameter('robot0.kinematics', value='quadrotor'),
        Parameter('robot0.start', value=[5.0, 5.0, 0.0]), Parameter('robot0.start_z', value=2.0)]))
    assert sim.sim.altitudes[0] == 2.0
    msg = room_cloud(_time(0.0))
    points = cloud_xyz(msg)
    points[3] = np.nan
    msg.data = points.astype('<f4').tobytes()
    pub = ros.cloud(msg)
    assert ros.wait_for(lambda: sim.sim.grid_3d is not None)
    assert sim.sim.grid_3d.occupied.sum() == 4999
    log = Log(ros)
    assert ros.wait_for(lambda: log.has('/map_3d: data: 1 of 5000 points have a NaN')), log.text
    empty = PointCloud2(height=1, width=0, point_step=12, row_step=0, fields=msg.fields)
    empty.header.frame_id = 'map'
    pub.publish(empty)
    assert ros.wait_for(lambda: log.has('/map_3d: ignoring the 3-D map: width x height = 0 x 1')), \
        log.text
    assert sim.sim.grid_3d.occupied.sum() == 4999       # the last good map stays
    with pytest.raises(ValueError, match=r'robot0.start_z: 1 m, but only quadrotors fly'):
        FleetSimNode(context=ros.context, parameter_overrides=[
            Parameter('robots', value=['robot0']), Parameter('robot0.start_z', value=1.0)])
