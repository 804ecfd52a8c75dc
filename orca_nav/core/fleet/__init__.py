"""The fleet layer between planning and avoidance: what each robot is, where it should go, and
how ORCA's velocities become commands it can execute.

    kinematics          holonomic / diff-drive / car / quadrotor models and velocity mappings
    tracking            fleet trajectory tracking -> preferred velocities and twists
    preferred_velocity  goal seeking with braking
    deadlock            stall detection, yielding and right-hand detours
    guidance            preferred directions down an obstacle-aware distance-to-goal field
    fleet_planner       the fleet planning supervisor: goals, requests, planner cache, replan policy
"""
