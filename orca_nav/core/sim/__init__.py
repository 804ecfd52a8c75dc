"""The fleet simulator, the embedded default in place of Gazebo (ROS-free; time is its own).

    fleet_sim     robots under their kinematic limits, latency, noise, collisions (FleetSim)
    pedestrians   scripted people who walk lines and avoid no one (or stop short)
    scan          simulated laser scans and unmapped boxes
    localization  a simulated localization's map -> odom correction
    faults        injected faults: dead and faulty robots, localization jumps, odometry loss
    lockstep      when a driver sends odometry and advances: schedules and lockstep exchanges
    closed_loop   simulator + controller + planner in one loop, without ROS
"""
