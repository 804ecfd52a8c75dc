"""`bench replan`'s measurement on a small fleet: every robot planned, coordinated and replanned."""
from bench.bench_replan import measure, warehouse


def test_the_warehouse_grows_with_the_fleet():
    small, big = warehouse(20), warehouse(500)
    assert big.extent[1][0] > 3.0 * small.extent[1][0]
    assert 0.1 < small.occupied.mean() < 0.5 and 0.1 < big.occupied.mean() < 0.5


def test_a_small_fleet_is_planned_coordinated_and_replanned():
    result = measure(6, seed=0)
    assert result['failed_plans'] == 0
    assert result['plans'] == 6 and result['replans'] == 6
    assert 0.0 < result['plan_median_ms'] <= result['plan_max_ms']
    assert result['coordinate_first_ms'] > 0.0 and result['coordinate_median_ms'] > 0.0
    assert 0.0 < result['replan_without_query_median_ms'] < result['replan_median_ms']
