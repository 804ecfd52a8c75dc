"""Tracked agents on the core (time passed in): a lost agent is dropped, and its drops are
reported once, then at most once per period with a count, however often its tracker loses it."""
from orca_nav.core.fleet.tracked_agents import DropReports, TrackedAgents


def test_an_agent_lost_again_and_again_is_reported_once_per_period_with_a_count():
    """person0 is heard for 0.5 s, then lost for 1.5 s, again and again (the people demo's
    tracker at a crowded spot); person1 is lost once. Timeout 1 s, period 60 s."""
    agents, reports = TrackedAgents(radius=0.3, timeout=1.0), DropReports(period=60.0)
    lines = []
    for step in range(1, 1401):                       # 140 s at 10 Hz
        now = 0.1 * step
        if now % 2.0 < 0.5:
            agents.update('person0', now, (1.0, 0.0), (0.0, 0.0))
        if now < 3.0:
            agents.update('person1', now, (5.0, 0.0), (0.0, 0.0))
        lines += [(round(now, 1), line) for line in
                  reports.lines(agents.drop_stale(now), now, agents.timeout)]
    assert [t for t, _ in lines] == [1.5, 4.0, 61.5, 121.5]
    assert lines[0][1] == ("agent 'person0' not heard of for 1.10 s (tracked_agent_timeout 1 s): "
                           'dropped (its next drops: at most one line per 60 s)')
    assert lines[1][1].startswith("agent 'person1' not heard of for 1.10 s")
    assert lines[2][1] == ("agent 'person0' dropped again: not heard of for 1.10 s (30 drops in "
                           'the last 60 s)')
    assert lines[3][1].endswith('(30 drops in the last 60 s)')
    assert agents.ids() == ['person0']      # heard again at 140 s
