"""planner_node's parameters; their defaults are the planning supervisor's
(`orca_nav.core.fleet.fleet_planner`: PlanSettings, ReplanPolicy)."""
from __future__ import annotations

from dataclasses import fields

from orca_nav.core.fleet.fleet_planner import ReplanPolicy
from orca_nav.core.fleet.plan_jobs import RETRY_BUDGET_FACTOR, PlanSettings
from orca_nav.parameters.shared import SHARED_SPECS
from orca_nav.parameters.spec import ParamSpec

_DEFAULTS = {f.name: f.default for cls in (PlanSettings, ReplanPolicy) for f in fields(cls)}

NODE_SPECS = [
    ParamSpec('robots', ['robot0'], 'Robots this node plans for (topics /<robot>/...)',
              read_only=True),
    ParamSpec('global_frame', 'map', 'Frame of the map, odometry, goals and plans', read_only=True),
    SHARED_SPECS['tf_layout'],
    SHARED_SPECS['transform_tolerance'],
    ParamSpec('plan_max_expansions', _DEFAULTS['plan_max_expansions'], 'Search nodes one planning '
              f'query may expand; one that spends them is retried with {RETRY_BUDGET_FACTOR} times '
              'as many',
              min=1, max=10_000_000),
    ParamSpec('plan_time_budget', _DEFAULTS['plan_time_budget'],
              'Wall-time cap of one planning query (s): a safety net above plan_max_expansions',
              min=0.01, max=3600.0),
    ParamSpec('replan_deviation', _DEFAULTS['replan_deviation'], 'Replan when a robot is '
              'farther than this from its trajectory (m)', min=0.05, max=100.0),
    ParamSpec('replan_check_period', 0.25, 'Period of the trajectory deviation check (s)',
              min=0.02, max=10.0, read_only=True),
    ParamSpec('min_replan_interval', _DEFAULTS['min_replan_interval'], 'Minimum time between '
              'two automatic replans of one robot (s)', min=0.0, max=120.0),
    ParamSpec('coordinate', _DEFAULTS['coordinate'], 'Ground robots take turns where their '
              'planned paths meet, the others braking to a stop before the shared stretch; '
              'false: each robot is planned on its own'),
    ParamSpec('stuck_time', _DEFAULTS['stuck_time'], 'A robot that got no 0.1 m closer to '
              'its goal in this time (waiting its turn aside) climbs a rung of the stuck ladder: '
              'replan, back out, report blocked; 0: no ladder (s)', min=0.0, max=3600.0),
    ParamSpec('planner_threads', 2, 'Worker threads running planning queries', min=1, max=64,
              read_only=True),
    ParamSpec('allow_reverse', _DEFAULTS['allow_reverse'], 'Car and diff-drive robots may '
              'reverse (Reeds-Shepp rather than Dubins)'),
    SHARED_SPECS['safety_margin'],
    ParamSpec('sample_period', _DEFAULTS['sample_period'], 'Time between samples of '
              'kinodynamic trajectories (s)', min=0.005, max=2.0),
    ParamSpec('cusp_dwell', _DEFAULTS['cusp_dwell'], 'Stop at each direction switch of a '
              'car/diff-drive path (s)', min=0.01, max=30.0),
    SHARED_SPECS['goal_tolerance'],
    ParamSpec('traffic_rules_file', '', "Lanes/zones YAML (core/traffic_rules.py) or ''; a bad "
              'file is refused, plans go on without', read_only=True),
    ParamSpec('unknown_is_occupied', True, 'Unknown map cells (-1) count as obstacles',
              read_only=True),
    SHARED_SPECS['map_3d_topic'],
    SHARED_SPECS['map_3d_resolution'],
    ParamSpec('plan_configured_goals', True, "Plan to each robot's <robot>.goal parameter once "
              'the map and its odometry are in'),
    ParamSpec('jam_timeout', 30.0, 'A Nav2 action goal aborts when its robot got no 0.1 m '
              'closer in this time (s); goal_pose goals never do', min=1.0, max=3600.0),
    ParamSpec('pass_radius', 0.7, 'navigate_through_poses: an intermediate pose counts as '
              'passed within this distance (m)', min=0.01,
              max=100.0),
    ParamSpec('stop_on_failure', True, 'follow_waypoints: a missed waypoint ends the goal (as '
              "Nav2's waypoint_follower); false: go on with the next"),
    ParamSpec('status_period', 1.0, 'Period of the per-robot status on /diagnostics (s)',
              min=0.05, max=60.0, read_only=True),
]
