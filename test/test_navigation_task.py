"""The core's navigation tasks (Nav2's NavigateToPose, NavigateThroughPoses, FollowWaypoints on
the planner's goals) and goal sequences with a start index and loops."""
import pytest

from orca_nav.core.fleet.fleet_planner import GoalEnd, Progress
from orca_nav.core.fleet.goal_sequence import GoalSequence, Missed
from orca_nav.core.fleet.navigation_task import NavigationTask

A, B, C = (1.0, 0.0, 0.0, 0.0), (2.0, 0.0, 0.0, 0.0), (2.0, 3.0, 0.0, 1.5)
REACHED = GoalEnd('r', True, 'reached', 'goal reached')
BLOCKED = GoalEnd('r', False, 'goal_in_collision', 'goal in an occupied cell')


def test_a_sequence_starts_at_its_start_index_and_loops_from_the_first_goal():
    seq = GoalSequence([A, B, C], start=1, loops=1)
    assert seq.current() == B and seq.ahead() == [C]
    assert seq.reached(1.0) == C
    assert seq.miss('no_path', 'no path') == A          # the second round starts at the first
    assert [seq.reached(t) for t in (3.0, 4.0, 5.0)] == [B, C, None]
    assert seq.done() and seq.reach_times == [3.0, 4.0, 5.0]
    assert seq.missed == [Missed(2, C, 'no_path', 'no path')]


@pytest.mark.parametrize('kwargs, words', [({'start': 3}, 'start index 3'),
                                           ({'loops': -1}, 'loops')])
def test_a_sequence_refuses_a_start_or_loops_it_cannot_have(kwargs, words):
    with pytest.raises(ValueError, match=words):
        GoalSequence([A, B, C], **kwargs)


def test_to_pose_ends_as_its_goal_does():
    task = NavigationTask('to_pose', [A], dim=2)
    assert task.goal() == A and task.moved((1.0, 0.0), 0.0) is None
    assert task.ended(BLOCKED, 1.0) is None
    assert not task.outcome.succeeded and task.outcome.reason == 'goal_in_collision'
    assert task.goal() is None and task.ended(REACHED, 2.0) is None     # over is over
    done = NavigationTask('to_pose', [A], dim=2)
    assert done.ended(REACHED, 1.0) is None and done.outcome.succeeded


def test_through_poses_passes_intermediate_poses_within_the_radius_without_stopping():
    task = NavigationTask('through_poses', [A, B, C], dim=2, pass_radius=0.5)
    assert task.remaining() == 3
    assert task.moved((0.4, 0.0), 1.0) is None                  # 0.6 m from A
    assert task.moved((0.6, 0.1), 2.0) == B                     # passed A
    assert task.moved((2.0, 0.1), 3.0) == C and task.remaining() == 1
    assert task.moved((2.0, 3.0), 4.0) is None                  # the last one is the planner's
    assert task.ended(REACHED, 5.0) is None and task.outcome.succeeded
    assert task.sequence.reach_times == [2.0, 3.0, 5.0]


def test_through_poses_counts_in_the_planning_dimension():
    high = (1.0, 0.0, 5.0, 0.0)
    drone = NavigationTask('through_poses', [high, B], dim=3, pass_radius=0.5)
    assert drone.moved((1.0, 0.0, 1.0), 1.0) is None            # right below it
    assert drone.moved((1.0, 0.0, 4.8), 2.0) == B


def test_through_poses_fails_at_the_first_failure_and_extends_the_progress_to_the_last_pose():
    task = NavigationTask('through_poses', [A, B, C], dim=2)
    progress = task.progress(Progress((0.0, 0.0, 0.0), 1.0, 2.0, 1), speed=0.5)
    assert progress.distance_remaining == pytest.approx(1.0 + 1.0 + 3.0)
    assert progress.time_remaining == pytest.approx(2.0 + 4.0 / 0.5)
    assert progress.recoveries == 1
    assert task.ended(REACHED, 1.0) == B
    assert task.ended(BLOCKED, 2.0) is None and task.outcome.reason == 'goal_in_collision'


def test_waypoints_stop_at_the_first_miss_when_asked():
    task = NavigationTask('waypoints', [A, B, C], dim=2, stop_on_failure=True)
    assert task.ended(REACHED, 1.0) == B
    assert task.ended(BLOCKED, 2.0) is None
    outcome = task.outcome
    assert not outcome.succeeded and outcome.reason == 'goal_in_collision'
    assert outcome.missed == (Missed(1, B, 'goal_in_collision', 'goal in an occupied cell'),)


def test_waypoints_go_on_past_a_miss_and_succeed_listing_it():
    task = NavigationTask('waypoints', [A, B, C], dim=2, start=1, loops=1,
                          stop_on_failure=False)
    assert task.goal() == B and task.moved((2.0, 0.0), 0.0) is None   # waypoints are stopped at
    assert task.ended(BLOCKED, 1.0) == C
    assert [task.ended(REACHED, t) for t in (2.0, 3.0, 4.0)] == [A, B, C]
    assert task.ended(REACHED, 5.0) is None
    assert task.outcome.succeeded and [m.index for m in task.outcome.missed] == [1]
    assert '1 missed' in task.outcome.message


@pytest.mark.parametrize('args, kwargs, words', [
    (('circle', [A]), {}, 'kind'), (('waypoints', []), {}, 'no goals'),
    (('through_poses', [A]), {'pass_radius': 0.0}, 'pass_radius')])
def test_a_task_it_cannot_do_is_refused(args, kwargs, words):
    with pytest.raises(ValueError, match=words):
        NavigationTask(*args, dim=2, **kwargs)
