"""The fleet layer between planning and avoidance: what each robot is, where it should go, and
how ORCA's velocities become commands it can execute.

    controller          FleetController: states, goals, trajectories and maps in; one cycle
                        for every robot; commands, status and the operator's view out
    controller_params   how the controller runs (ControllerParams)
    cycle_timing        when cycles run; the interval a command may last
    fleet_state         every robot's latest state, its age and uncertainty
    map_model           a map prepared for avoidance (polygons, guidance, distances)
    bodies              what the robots are: limits, radii, avoidance shares, ORCA radii
    steering            preferred velocities: goals, trajectories and the deadlock breaker
    avoidance_layers    one cycle's ORCA: ground robots in the plane, drones in 3-D
    kinematics          holonomic / diff-drive / car / quadrotor models and velocity mappings
    tracking            fleet trajectory tracking -> preferred velocities and twists
    preferred_velocity  goal seeking with braking
    deadlock            stall detection, yielding and right-hand detours
    guidance            preferred directions down an obstacle-aware distance-to-goal field
    sensed_obstacles    sensor points as short-lived obstacles
    safety              the safety layer: braking envelopes, last on every command
    drones              the drones' layer rule and 3-D map model
    control_status      what the controller says about each robot
    status              the status vocabulary (levels) shared with the planner
    velocity_filter     filter mode: incoming twists as preferred velocities
    state_estimate      projecting states to the cycle time; pose-uncertainty margins
    tracked_agents      people and foreign robots as non-cooperative agents
    robots              RobotSpec: one robot's kinematics, limits and size
    names               topic and frame names
    fleet_planner       the fleet planning supervisor: goals, start states, maps; when to plan
    plan_jobs           one planning query as plain data, run on any thread; the planner cache
    coordination        who goes first where planned paths meet (turns, gates, waiting spots)
    stuck               stuck detection and the escalation ladder of one robot
    navigation_task     one navigate_to_pose-style task's progress and outcome
    goal_sequence       waypoints / through-poses as a sequence of goals
"""
