"""planner_node's wiring over real rclpy/DDS: goal, odometry and map in; latched Path and
trajectory, diagnostics out; on wall time and on simulated time. The planning policy itself is
tested in test_fleet_planner.py."""
import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip('rclpy')
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from trajectory_msgs.msg import MultiDOFJointTrajectory  # noqa: E402
from visualization_msgs.msg import Marker, MarkerArray  # noqa: E402

from orca_nav.core.traffic_rules import TrafficRules  # noqa: E402
from orca_nav.ros.convert import (  # noqa: E402
    grid_to_msg,
    latched_qos,
    seconds_to_time,
    stamp_to_seconds,
    state_to_odom,
    yaw_to_quaternion,
)
from orca_nav.ros.planner_node import TRAFFIC_RULES_TOPIC, PlannerNode  # noqa: E402
from orca_nav.ros.trajectory_msgs import msg_to_reference  # noqa: E402

from ros_harness import RosHarness, SimClock, harness_fixture, node_time_s, sim_time  # noqa: E402
from scenes import EAST_AISLE, SHELF, room, shelf_aisle  # noqa: E402

pytestmark = pytest.mark.ros

HOLONOMIC = {'kinematics': 'holonomic', 'radius': 0.25, 'max_speed': 1.0, 'max_accel': 1.0}


class Ros(RosHarness):
    """The harness plus a planner_node for robot0 and the test's map, odometry and goals."""

    def start(self, robot=HOLONOMIC, *extra):
        overrides = [Parameter('robots', value=['robot0']),
                     Parameter('plan_time_budget', value=2.0), *extra]
        overrides += [Parameter(f'robot0.{k}', value=v) for k, v in robot.items()]
        self.node = self.add(PlannerNode(context=self.context, parameter_overrides=overrides))
        self.trajectories = self.matched(MultiDOFJointTrajectory, '/robot0/trajectory')
        self.paths = self.matched(Path, '/robot0/plan')
        self.diagnostics = self.matched(DiagnosticArray, '/diagnostics', qos=50)
        self.goal_pub = self.publisher(PoseStamped, '/robot0/goal_pose')
        self.odom_pub = self.publisher(Odometry, '/robot0/odom', qos_profile_sensor_data)
        self.map_pub = self.publisher(OccupancyGridMsg, '/map', latched_qos())
        return self.node

    def matched(self, msg_type, topic, qos=None):
        """collect() (latched by default), once the node's publisher has matched."""
        return self.collect(msg_type, topic, qos if qos is not None else latched_qos(),
                            publishers=1)

    def publish_map(self, grid):
        self.map_pub.publish(grid_to_msg(grid, 'map', seconds_to_time(0.0)))

    def odom(self, x, y, yaw=0.0, stamp_s=50.0):
        self.odom_pub.publish(state_to_odom((x, y, 0.0), yaw, (0.0, 0.0, 0.0), 0.0,
                                            seconds_to_time(stamp_s), 'map', 'robot0/base_link'))

    def goal(self, x, y, yaw=0.0, frame='map'):
        msg = PoseStamped()
        msg.header.frame_id = frame
        msg.pose.position.x, msg.pose.position.y = float(x), float(y)
        msg.pose.orientation = yaw_to_quaternion(yaw)
        self.goal_pub.publish(msg)

    def planned(self, count=1):
        """Waits for `count` non-empty trajectories; returns the last."""
        assert self.wait_for(lambda: len(nonempty(self.trajectories)) >= count)
        return nonempty(self.trajectories)[-1]

    def status(self, predicate):
        """Waits for a robot0 status satisfying `predicate`; returns it."""
        def found():
            return [s for d in list(self.diagnostics) for s in d.status
                    if s.hardware_id == 'robot0' and predicate(s)]
        assert self.wait_for(found), [s.message for d in self.diagnostics for s in d.status]
        return found()[-1]


def nonempty(msgs):
    return [m for m in msgs if m.points]


ros = harness_fixture(Ros)


@pytest.mark.parametrize('kinematics', ['holonomic', 'car'])
def test_goal_gives_latched_path_and_trajectory_stamped_with_the_start_odometry(ros, kinematics):
    ros.start({**HOLONOMIC, 'kinematics': kinematics, 'min_turning_radius': 1.0})
    ros.publish_map(room(blocks=[(4.5, 0.0, 5.5, 6.0)]))
    ros.odom(2.0, 2.0, 0.3, stamp_s=123.25)
    ros.goal(8.0, 2.0, 1.0)
    traj = ros.planned()
    assert ros.wait_for(lambda: any(p.poses for p in ros.paths))
    path = [p for p in ros.paths if p.poses][-1]
    assert traj.header.frame_id == path.header.frame_id == 'map'
    # t = 0 is the odometry state the plan started from, not the moment of publishing.
    assert stamp_to_seconds(traj.header.stamp) == pytest.approx(123.25)
    assert stamp_to_seconds(path.header.stamp) == pytest.approx(123.25)
    assert traj.joint_names == ['robot0/base_link', 'robot0/driving_direction']
    ref, start_s, _ = msg_to_reference(traj)
    np.testing.assert_allclose(ref.positions[0], [2.0, 2.0], atol=0.05)
    np.testing.assert_allclose(ref.positions[-1], [8.0, 2.0], atol=0.1)
    assert ref.positions[:, 1].max() > 6.0       # around the wall x 4.5..5.5, y 0..6
    assert len(path.poses) == len(ref)
    status = ros.status(lambda s: 'following' in s.message)
    assert status.level == DiagnosticStatus.OK
    assert {kv.key for kv in status.values} >= {'goal', 'plan_time', 'duration', 'samples'}
    # Latched: a subscriber that comes late (a restarted orca_node) still gets the plan.
    late = ros.collect(MultiDOFJointTrajectory, '/robot0/trajectory', latched_qos())
    late_path = ros.collect(Path, '/robot0/plan', latched_qos())
    assert ros.wait_for(lambda: late and late_path)
    assert late[0].header.stamp == traj.header.stamp and len(late[0].points) == len(traj.points)
    assert len(late_path[0].poses) == len(path.poses)


@pytest.mark.parametrize('frame, x, field', [('odom', 5.0, 'header.frame_id'),
                                             ('map', float('nan'), 'pose.position.x')])
def test_bad_goal_is_rejected_naming_the_field_and_the_plan_stays(ros, frame, x, field):
    ros.start()
    ros.publish_map(room())
    ros.odom(2.0, 5.0)
    ros.goal(8.0, 5.0)
    ros.planned()
    before = len(ros.trajectories)
    ros.goal(x, 5.0, frame=frame)
    warning = ros.status(lambda s: 'rejected' in s.message)
    assert warning.level == DiagnosticStatus.WARN and field in warning.message
    ros.goal(2.0, 8.0)
    newest, _, _ = msg_to_reference(ros.planned(count=2))
    np.testing.assert_allclose(newest.positions[-1], [2.0, 8.0], atol=0.1)
    assert len(ros.trajectories) == before + 1      # nothing for the rejected goal


def test_failure_holds_the_robot_with_empty_latched_plan_and_error_status(ros):
    ros.start()
    ros.publish_map(room(blocks=[(6.0, 4.0, 7.0, 6.0)]))
    ros.odom(2.0, 5.0)
    ros.goal(6.5, 5.0)
    error = ros.status(lambda s: s.level == DiagnosticStatus.ERROR)
    assert 'goal_in_collision' in error.message
    assert ros.wait_for(lambda: ros.trajectories and ros.paths)
    assert not ros.trajectories[-1].points and not ros.paths[-1].poses
    assert not nonempty(ros.trajectories)


def test_goal_waits_for_map_and_odometry_then_plans(ros):
    ros.start()
    ros.goal(8.0, 5.0)
    waiting = ros.status(lambda s: 'no map yet' in s.message)
    assert waiting.level == DiagnosticStatus.OK         # normal start-up, not a warning
    assert ros.wait_for(lambda: ros.trajectories)
    assert not ros.trajectories[-1].points              # held still meanwhile
    ros.publish_map(room())
    assert ros.status(lambda s: 'no odometry yet' in s.message).level == DiagnosticStatus.OK
    ros.odom(2.0, 5.0, stamp_s=77.5)
    assert stamp_to_seconds(ros.planned().header.stamp) == pytest.approx(77.5)


def test_runs_on_simulated_time(ros):
    """Timers and stamps follow /clock: the test steps simulated time in lockstep with the
    node, publishing odometry each step as a simulator would."""
    ros.start(HOLONOMIC, sim_time(), Parameter('replan_deviation', value=0.5),
              Parameter('min_replan_interval', value=2.0))
    clock = SimClock(ros, start_s=100.0)

    def step(x, y, seconds=0.25):
        ros.odom(x, y, stamp_s=clock.now_s)
        clock.advance(seconds)
        assert ros.wait_for(lambda: node_time_s(ros.node) >= clock.now_s - 1e-9)

    assert ros.wait_for(lambda: node_time_s(ros.node) == pytest.approx(100.0))
    ros.publish_map(room())
    ros.odom(2.0, 5.0, stamp_s=100.0)
    ros.goal(8.0, 5.0)
    assert stamp_to_seconds(ros.planned().header.stamp) == pytest.approx(100.0)
    while len(nonempty(ros.trajectories)) < 2 and clock.now_s < 130.0:
        step(2.0, 7.0)      # pushed 2 m off the trajectory
    replan = ros.planned(count=2)
    replanned, start_s, _ = msg_to_reference(replan)
    np.testing.assert_allclose(replanned.positions[0], [2.0, 7.0], atol=0.05)
    # Planned from an odometry state of the simulation, once min_replan_interval had passed.
    assert 101.5 <= start_s <= clock.now_s and (start_s * 4.0).is_integer()
    stamps = [stamp_to_seconds(d.header.stamp) for d in ros.diagnostics]
    assert stamps and all(100.0 <= t <= clock.now_s for t in stamps)


def test_parameters_reach_the_supervisor_and_bad_ones_are_rejected(ros):
    node = ros.start()
    assert node.set_parameters([Parameter('goal_tolerance', value=0.4)])[0].successful
    assert node.supervisor.policy.goal_tolerance == 0.4
    assert node.set_parameters([Parameter('robot0.max_speed', value=0.5)])[0].successful
    assert node.supervisor.spec('robot0').max_speed == 0.5
    assert node.supervisor.policy.coordinate and node.supervisor.policy.stuck_time == 10.0
    assert node.set_parameters([Parameter('coordinate', value=False),
                                Parameter('stuck_time', value=0.0)])[0].successful
    assert not node.supervisor.policy.coordinate and node.supervisor.policy.stuck_time == 0.0
    result = node.set_parameters([Parameter('stuck_time', value=-1.0)])[0]
    assert not result.successful and 'stuck_time' in result.reason
    result = node.set_parameters([Parameter('replan_deviation', value=-1.0)])[0]
    assert not result.successful and 'replan_deviation' in result.reason
    result = node.set_parameters([Parameter('robot0.max_speed', value=float('nan'))])[0]
    assert not result.successful and 'robot0.max_speed' in result.reason
    with pytest.raises(ValueError, match='plan_time_budget'):
        PlannerNode(context=ros.context, parameter_overrides=[
            Parameter('plan_time_budget', value=0.0)])


def traffic_status(ros):
    """Waits for planner_node's traffic-rules status on /diagnostics; returns it."""
    def found():
        return [s for d in list(ros.diagnostics) for s in d.status
                if s.name == 'planner_node: traffic_rules']
    assert ros.wait_for(found), [s.name for d in ros.diagnostics for s in d.status]
    return found()[-1]


def test_traffic_rules_are_drawn_latched_and_plans_keep_the_lanes(ros, tmp_path):
    rules = {**EAST_AISLE, 'zones': [{'name': 'door', 'polygon': [[0.5, 5.0], [1.5, 5.0],
                                                                  [1.5, 6.0], [0.5, 6.0]]}]}
    path = tmp_path / 'traffic.yaml'
    path.write_text(yaml.safe_dump(rules))
    ros.start(HOLONOMIC, Parameter('traffic_rules_file', value=str(path)))
    # Subscribed after the node published them: latched.
    drawn = ros.collect(MarkerArray, TRAFFIC_RULES_TOPIC, latched_qos())
    assert ros.wait_for(lambda: drawn)
    markers = {m.ns: m for m in drawn[0].markers}
    assert markers['lanes'].type == Marker.ARROW and markers['lanes'].header.frame_id == 'map'
    assert [(p.x, p.y) for p in markers['lanes'].points] == [(2.0, 1.1), (10.0, 1.1)]
    zone = [(p.x, p.y) for p in markers['zones'].points]
    assert markers['zones'].type == Marker.LINE_STRIP and len(zone) == 5 and zone[0] == zone[-1]
    status = traffic_status(ros)
    assert status.level == DiagnosticStatus.OK and '1 one-way lanes and 1 one-robot zones' in \
        status.message
    # West past the aisle: around the shelf, never against the lane.
    ros.publish_map(shelf_aisle())
    ros.odom(11.0, 1.1)
    ros.goal(1.0, 1.1)
    reference, _, _ = msg_to_reference(ros.planned())
    points = reference.positions
    assert points[:, 1].max() > SHELF[3]
    lanes = TrafficRules.from_dict(EAST_AISLE)
    assert not lanes.against_motion(points[:-1], np.diff(points, axis=0)).any()


@pytest.mark.parametrize('contents, reason', [
    ({'lanes': [{'name': 'a', 'from': [0.0, 0.0], 'to': [1.0, 0.0]}]},
     "lanes[0] is missing field 'width'"),
    ({**EAST_AISLE, 'frame_id': 'odom'}, "frame_id 'odom' is not the planner's global_frame"),
    (None, 'cannot read the file'),
])
def test_a_bad_traffic_rules_file_is_refused_and_the_node_plans_without_rules(
        ros, tmp_path, contents, reason):
    path = tmp_path / 'traffic.yaml'
    if contents is not None:
        path.write_text(yaml.safe_dump(contents))
    log = ros.rosout()
    ros.start(HOLONOMIC, Parameter('traffic_rules_file', value=str(path)))
    status = traffic_status(ros)
    assert status.level == DiagnosticStatus.ERROR
    assert str(path) in status.message and reason in status.message
    assert 'planning without traffic rules' in status.message
    assert ros.wait_for(lambda: any(reason in entry.msg for entry in log))
    assert ros.node.count_publishers(TRAFFIC_RULES_TOPIC) == 0
    ros.publish_map(room())
    ros.odom(2.0, 5.0)
    ros.goal(8.0, 5.0)
    reference, _, _ = msg_to_reference(ros.planned())
    np.testing.assert_allclose(reference.positions[-1], [8.0, 5.0], atol=0.1)
