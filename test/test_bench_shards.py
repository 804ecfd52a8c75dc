"""bench_shards runs end to end at a tiny size: a sharded fleet of separate processes over DDS,
every shard reporting its cycles, commands reaching the robots, simulated time advancing in
the lockstep run, no contact (the timings are the benchmark's business, not checked here)."""
import pytest

pytest.importorskip('rclpy')

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def test_bench_shards_runs_and_reports_every_part(tmp_path, monkeypatch):
    from bench import bench_shards

    from ros_harness import private_domain
    # Its processes on a domain of their own: later tests must not meet their leftovers.
    monkeypatch.setenv('ROS_DOMAIN_ID', str(private_domain()))
    monkeypatch.setattr(bench_shards, 'RESULTS', tmp_path / 'shards.json')
    result = bench_shards.main(['--robots', '8', '--shards', '2', '--seconds', '2',
                                '--repeats', '1', '--startup-timeout', '120'])
    assert (tmp_path / 'shards.json').is_file()
    full = result['full']
    assert set(full['per_shard']) == {'orca_node_shard0', 'orca_node_shard1'}
    assert all(s['cycle_p50_ms']['median'] > 0 for s in full['per_shard'].values())
    assert set(full['cpu_per_s']) == {'fleet_sim', 'orca_node_shard0', 'orca_node_shard1'}
    assert full['cmd_vel_hz_min']['median'] > 0
    assert full['simulated_seconds']['median'] > 0      # the full run is on simulated time
    assert all(c['median'] > 0 for c in full['cpu_per_s'].values())
    assert full['contacts'] == [0] and full['boundary_contacts'] == [0]
    assert result['meeting_pairs_across_shards'] > 0
    assert result['simulator_alone_cpu_per_s']['median'] > 0
    assert result['shard_alone']['cpu_per_s']['median'] > 0
