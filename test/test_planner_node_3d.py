"""planner_node for drones over real rclpy/DDS: the 3-D map as a PointCloud2 on /map_3d,
odometry and goals with altitude in, a 3-D Path and MultiDOFJointTrajectory (z included) out;
a goal above the map or in a wall refused naming the robot and field, and navigate_to_pose
aborting with Nav2's codes; a mixed fleet plans the ground robot on /map at the same time."""
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
nav2_msgs = pytest.importorskip('nav2_msgs.action')
from action_msgs.msg import GoalStatus  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402
from test_fleet_planner_3d import RES3, wall_with_window  # noqa: E402
from test_planner_node import nonempty  # noqa: E402
from trajectory_msgs.msg import MultiDOFJointTrajectory  # noqa: E402

from orca_nav.ros.convert import (  # noqa: E402
    grid_to_cloud,
    latched_qos,
    seconds_to_time,
    state_to_odom,
    yaw_to_quaternion,
)
from orca_nav.ros.planner_node import PlannerNode  # noqa: E402
from orca_nav.ros.trajectory_msgs import msg_to_reference  # noqa: E402

from ros_harness import RosHarness, harness_fixture  # noqa: E402
from scenes import room  # noqa: E402

pytestmark = pytest.mark.ros
DRONE = {'kinematics': 'quadrotor', 'radius': 0.25, 'max_speed': 2.0, 'max_accel': 2.0}
GROUND = {'kinematics': 'holonomic', 'radius': 0.25, 'max_speed': 1.0, 'max_accel': 1.0}


class Ros(RosHarness):
    def start(self, robots):
        overrides = [Parameter('robots', value=list(robots)),
                     Parameter('plan_time_budget', value=30.0),
                     Parameter('map_3d_resolution', value=RES3),
                     Parameter('jam_timeout', value=60.0)]
        overrides += [Parameter(f'{name}.{k}', value=v)
                      for name, spec in robots.items() for k, v in spec.items()]
        self.node = self.add(PlannerNode(context=self.context, parameter_overrides=overrides))
        self.cloud_pub = self.publisher(PointCloud2, '/map_3d', latched_qos())
        return self.node

    def topic(self, msg_type, topic, qos=None):
        """collect() (latched by default), once the node's publisher has matched."""
        return self.collect(msg_type, topic, qos if qos is not None else latched_qos(),
                            publishers=1)

    def odom(self, robot, position, stamp_s=20.0):
        pub = self.publisher(Odometry, f'/{robot}/odom', qos_profile_sensor_data)
        pub.publish(state_to_odom(tuple(float(v) for v in position), 0.0, (0.0, 0.0, 0.0), 0.0,
                                  seconds_to_time(stamp_s), 'map', f'{robot}/base_link'))

    def goal(self, robot, x, y, z):
        msg = PoseStamped()
        msg.header.frame_id = 'map'
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = x, y, z
        msg.pose.orientation = yaw_to_quaternion(0.0)
        self.publisher(PoseStamped, f'/{robot}/goal_pose').publish(msg)


ros = harness_fixture(Ros)


def test_a_drone_gets_a_3d_path_and_trajectory_through_the_3d_map(ros):
    ros.start({'drone0': DRONE})
    trajectories = ros.topic(MultiDOFJointTrajectory, '/drone0/trajectory')
    paths = ros.topic(Path, '/drone0/plan')
    ros.cloud_pub.publish(grid_to_cloud(wall_with_window(), 'map', seconds_to_time(0.0)))
    ros.odom('drone0', (2.0, 5.0, 0.8))
    ros.goal('drone0', 8.0, 5.0, 1.6)
    assert ros.wait_for(lambda: nonempty(trajectories) and any(p.poses for p in paths))
    ref, _, _ = msg_to_reference(nonempty(trajectories)[-1], dim=3)
    np.testing.assert_allclose(ref.positions[0], [2.0, 5.0, 0.8], atol=1e-3)
    np.testing.assert_allclose(ref.positions[-1], [8.0, 5.0, 1.6], atol=0.05)
    assert ref.positions[:, 2].max() > 2.0           # up through the window, z 2..3.6
    path = [p for p in paths if p.poses][-1]
    heights = [pose.pose.position.z for pose in path.poses]
    assert heights[0] == pytest.approx(0.8) and max(heights) > 2.0


def test_a_mixed_fleet_plans_the_drone_in_3d_and_the_ground_robot_on_map(ros):
    ros.start({'drone0': DRONE, 'robot0': GROUND})
    drone = ros.topic(MultiDOFJointTrajectory, '/drone0/trajectory')
    ground = ros.topic(MultiDOFJointTrajectory, '/robot0/trajectory')
    from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg

    from orca_nav.ros.convert import grid_to_msg
    ros.publisher(OccupancyGridMsg, '/map', latched_qos()).publish(
        grid_to_msg(room(), 'map', seconds_to_time(0.0)))
    ros.cloud_pub.publish(grid_to_cloud(wall_with_window(), 'map', seconds_to_time(0.0)))
    ros.odom('drone0', (2.0, 2.0, 1.0))
    ros.odom('robot0', (2.0, 5.0, 0.0))
    ros.goal('drone0', 8.0, 8.0, 3.0)
    ros.goal('robot0', 8.0, 5.0, 0.0)
    assert ros.wait_for(lambda: nonempty(drone) and nonempty(ground))
    drone_ref, _, _ = msg_to_reference(nonempty(drone)[-1], dim=3)
    ground_ref, _, _ = msg_to_reference(nonempty(ground)[-1])
    np.testing.assert_allclose(drone_ref.positions[-1], [8.0, 8.0, 3.0], atol=0.05)
    np.testing.assert_allclose(ground_ref.positions[-1], [8.0, 5.0], atol=0.1)
    assert not nonempty(ground)[-1].points[-1].transforms[0].translation.z


@pytest.mark.parametrize('goal, code, words', [
    ((5.0, 5.0, 4.5), 204, 'goal x, y, z (5, 5, 4.5) is outside the map'),
    ((5.0, 1.0, 1.0), 206, 'goal x, y, z (5, 1, 1) is in an occupied cell')])
def test_a_drone_goal_above_the_map_or_in_the_wall_aborts_naming_the_field(ros, goal, code, words):
    ros.start({'drone0': DRONE})
    ros.cloud_pub.publish(grid_to_cloud(wall_with_window(), 'map', seconds_to_time(0.0)))
    ros.odom('drone0', (2.0, 5.0, 1.0))
    client = ActionClient(ros.probe, nav2_msgs.NavigateToPose, '/drone0/navigate_to_pose')
    assert ros.wait_for(client.server_is_ready)
    request = nav2_msgs.NavigateToPose.Goal()
    request.pose.header.frame_id = 'map'
    position = request.pose.pose.position
    position.x, position.y, position.z = goal
    request.pose.pose.orientation = yaw_to_quaternion(0.0)
    sent = client.send_goal_async(request)
    assert ros.wait_for(sent.done) and sent.result().accepted
    future = sent.result().get_result_async()
    assert ros.wait_for(future.done)
    result = future.result()
    assert result.status == GoalStatus.STATUS_ABORTED
    assert result.result.error_code == code and words in result.result.error_msg


def test_an_empty_3d_map_is_refused_and_the_drone_waits_for_a_usable_one(ros):
    ros.start({'drone0': DRONE})
    trajectories = ros.topic(MultiDOFJointTrajectory, '/drone0/trajectory')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics', 50)
    empty = grid_to_cloud(wall_with_window(), 'map', seconds_to_time(0.0))
    empty.width, empty.row_step, empty.data = 0, 0, []
    ros.cloud_pub.publish(empty)
    ros.odom('drone0', (2.0, 5.0, 0.8))
    ros.goal('drone0', 8.0, 5.0, 1.6)
    assert ros.wait_for(lambda: any('no 3-D map yet' in s.message
                                    for d in diagnostics for s in d.status))
    assert not nonempty(trajectories)
    ros.cloud_pub.publish(grid_to_cloud(wall_with_window(), 'map', seconds_to_time(0.0)))
    assert ros.wait_for(lambda: nonempty(trajectories))
