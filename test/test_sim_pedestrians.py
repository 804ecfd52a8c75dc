"""fleet_sim_node's scripted pedestrians over real rclpy / DDS (`ros/sim_pedestrians.py`):
published as `tracked_agents` with the odometry, robot-person contacts reported once, bad
parameters stop start-up naming them."""
import json
import math

import pytest

rclpy = pytest.importorskip('rclpy')
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from test_fleet_sim_node import Controller, Ros, forward, lockstep  # noqa: E402

from orca_nav.parameters.fleet_sim_node import PEDESTRIAN_SPECS  # noqa: E402
from orca_nav.ros.convert import odom_to_state  # noqa: E402
from orca_nav.ros.sim_pedestrians import pedestrians_from_parameters  # noqa: E402
from orca_nav.ros.tracked_agents import TRACKED_AGENTS_QOS  # noqa: E402

from ros_harness import harness_fixture  # noqa: E402

pytestmark = pytest.mark.ros


ros = harness_fixture(Ros)


def pedestrians(lines=(), walkers=(), **more):
    values = {'lines': [float(v) for v in lines], 'walkers': [float(v) for v in walkers], **more}
    return [Parameter(f'pedestrians.{name}', value=value) for name, value in values.items()]


def test_pedestrians_are_published_and_a_contact_is_reported_once(ros):
    agents = ros.collect(Odometry, '/tracked_agents', qos=TRACKED_AGENTS_QOS)
    events = ros.collect(String, '/fleet_sim/collisions', qos=50)
    # person0 walks at 1 m/s from 2 m ahead straight through the robot standing at the origin;
    # person1 walks at random far away.
    ros.sim(['robot0'], start=[[0.0, 0.0, 0.0]], radius=[0.3],
            extra=lockstep() + pedestrians([2.0, 0.0, -3.0, 0.0], [10.0, 10.0], speed=1.0,
                                           radius=0.2))
    ctl = Controller(ros, ['robot0'], lambda robot, k: forward(0.0))
    assert ros.wait_for(lambda: len(ctl.odom['robot0']) >= 150)     # 3 s of exchanges
    states = [odom_to_state(m) for m in agents]
    ids = {m.child_frame_id for m in agents}
    assert ids == {'person0', 'person1'} and {m.header.frame_id for m in agents} == {'map'}
    walker = [s for s, m in zip(states, agents) if m.child_frame_id == 'person0']
    # Stamped with the odometry's time; walking -x at 1 m/s from x = 2.
    first = walker[0]
    assert first.position[0] == pytest.approx(2.0 - first.stamp_s, abs=1e-6)
    assert first.velocity[:2].tolist() == pytest.approx([-1.0, 0.0], abs=1e-9)
    records = [json.loads(m.data) for m in events]
    assert [(r['kind'], r['robots'], r['person']) for r in records] == \
        [('robot_person', ['robot0'], 'person0')]
    assert records[0]['sim_time'] == pytest.approx(1.5, abs=0.03)   # 2 - 0.5 m at 1 m/s


def test_bad_pedestrian_parameters_stop_start_up(ros):
    with pytest.raises(ValueError, match='pedestrians.lines: 4 numbers per pedestrian, got 3'):
        ros.sim(['robot0'], extra=pedestrians([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match='pedestrians.area'):
        ros.sim(['robot0'], extra=pedestrians(walkers=[1.0, 1.0], area=[0.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match='pedestrians.speed'):
        ros.sim(['robot0'], extra=pedestrians(walkers=[1.0, 1.0], speed=-0.5))
    with pytest.raises(ValueError, match='pedestrians.stop_gap'):
        ros.sim(['robot0'], extra=pedestrians(walkers=[1.0, 1.0], stop_gap=-0.1))


def test_the_stop_gap_parameter_reaches_the_pedestrians():
    values = {spec.name: spec.default for spec in PEDESTRIAN_SPECS}
    assert pedestrians_from_parameters({**values, 'walkers': [1.0, 1.0]}, 0).params.stop_gap == 0.0
    people = pedestrians_from_parameters({**values, 'walkers': [1.0, 1.0], 'stop_gap': 0.15}, 0)
    assert people.params.stop_gap == 0.15


def test_scans_see_an_unmapped_box_and_a_contact_with_it_is_reported(ros):
    from sensor_msgs.msg import LaserScan
    scans = ros.collect(LaserScan, '/robot0/scan', qos=50)
    events = ros.collect(String, '/fleet_sim/collisions', qos=50)
    ros.sim(['robot0'], start=[[0.0, 0.0, 0.0]], radius=[0.3],
            extra=lockstep() + [Parameter('boxes', value=[1.0, -0.5, 2.0, 0.5]),
                                Parameter('scan.rate', value=10.0),
                                Parameter('scan.beams', value=36)])
    Controller(ros, ['robot0'], lambda robot, k: forward(0.5))
    assert ros.wait_for(lambda: events and len(scans) >= 2)
    first = scans[0]
    assert first.header.frame_id == 'robot0/base_link' and len(first.ranges) == 36
    ahead = int(round((0.0 - first.angle_min) / first.angle_increment))
    assert first.ranges[ahead] == pytest.approx(1.0, abs=0.01)     # the box's face at x = 1
    assert math.isinf(first.ranges[0])                              # nothing behind
    record = json.loads(events[0].data)
    assert (record['kind'], record['robots']) == ('robot_obstacle', ['robot0'])
    assert record['sim_time'] == pytest.approx(1.4 + 0.25, abs=0.15)   # 0.7 m at 0.5 m/s + ramp
