"""RobotTopics over real DDS: per-robot messages reach their callbacks on the node's executor
thread, in order, each batch followed by `after_batch`; close() leaves nothing on the graph."""
import threading

import pytest

rclpy = pytest.importorskip('rclpy')
from std_msgs.msg import Int32  # noqa: E402

from orca_nav.ros.robot_topics import RobotTopics  # noqa: E402

from ros_harness import harness_fixture  # noqa: E402

pytestmark = pytest.mark.ros


ros = harness_fixture()


@pytest.mark.parametrize('batched', [True, False])
def test_messages_reach_their_callbacks_on_the_executor_thread(ros, batched):
    node = ros.add(rclpy.create_node('fleet', namespace='site', context=ros.context))
    executor_threads, received, batches = set(), {0: [], 1: []}, []

    def on_message(robot, msg):
        executor_threads.add(threading.current_thread().name)
        received[robot].append(msg.data)

    def after_batch():
        executor_threads.add(threading.current_thread().name)
        batches.append(sum(len(r) for r in received.values()))

    topics = RobotTopics(node, after_batch, batched)
    for robot in (0, 1):    # robot1's topic as one that rarely carries a message
        topics.subscribe(Int32, f'robot{robot}/count', lambda msg, r=robot: on_message(r, msg), 100,
                         rare=robot == 1)
    topics.start()
    if batched:     # the companion node reads them, under the node's namespace and name
        assert ros.wait_for(lambda: ('fleet_robot_topics', '/site') in
                            ros.probe.get_node_names_and_namespaces())
        readers = {t.name for t in threading.enumerate() if 'robot_topics' in t.name}
        assert readers == {'fleet_robot_topics', 'fleet_robot_topics_rare'}
    pubs = [ros.publisher(Int32, f'/site/robot{robot}/count') for robot in (0, 1)]
    for k in range(50):
        for pub in pubs:
            pub.publish(Int32(data=k))
    assert ros.wait_for(lambda: all(len(r) == 50 for r in received.values()))
    assert received[0] == list(range(50)) and received[1] == list(range(50))
    assert ros.wait_for(lambda: batches and batches[-1] == 100)
    # Callbacks and the batch hook never run on the reading thread.
    assert executor_threads and not any('robot_topics' in name for name in executor_threads)
    if not batched:
        assert len(batches) == 100      # one message, one batch
    topics.close()
    assert ros.wait_for(lambda: ('fleet_robot_topics', '/site') not in
                        ros.probe.get_node_names_and_namespaces())
    assert not any('robot_topics' in t.name for t in threading.enumerate())


def test_subscribing_after_start_is_refused(ros):
    node = ros.add(rclpy.create_node('fleet', context=ros.context))
    topics = RobotTopics(node, lambda: None)
    topics.subscribe(Int32, 'robot0/count', lambda msg: None, 10)
    topics.start()
    with pytest.raises(RuntimeError, match='after start'):
        topics.subscribe(Int32, 'robot1/count', lambda msg: None, 10)
    topics.close()


def test_a_lost_handover_is_triggered_again(ros):
    """rmw_fastrtps 8.4 can reset a guard condition triggered while a wait is returning for
    something else (ros2/rmw_fastrtps#895): the batch still reaches the executor."""
    node = ros.add(rclpy.create_node('fleet', context=ros.context))
    received = []
    topics = RobotTopics(node, lambda: None)
    topics.subscribe(Int32, 'robot0/count', lambda msg: received.append(msg.data), 10)
    handover, lost = topics._handover, []
    trigger = handover.trigger
    handover.trigger = lambda: lost.append(1) if not lost else trigger()    # the first is lost
    topics.start()
    ros.publisher(Int32, '/robot0/count').publish(Int32(data=7))
    assert ros.wait_for(lambda: received == [7])
    assert lost == [1]
    topics.close()
