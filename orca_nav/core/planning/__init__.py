"""Global planning: from a start state to a goal through an occupancy grid.

    kinodynamic_astar  double-integrator A* (2-D and 3-D) for holonomic robots and drones
    obvp               its optimal boundary value problem: heuristic and analytic shots
    polynomial         the polynomial trajectories it returns
    hybrid_astar       (x, y, yaw) lattice search for cars and diff-drive robots
    reeds_shepp        Reeds-Shepp and Dubins curves (heuristic and analytic expansions)
    footprint          oriented-rectangle footprints against the grid
    path_timing        a hybrid A* path -> a timed Reference (speed profile, cusps)
    reference          the planner -> tracker contract (Reference)
    result             PlanStatus / PlanResult shared by the planners
"""
