"""Every node's parameters (name, default, range, description), without rclpy.

The nodes declare them (`orca_nav.ros.params`), a fleet file's node sections are checked against
them before any node starts (`bringup.fleet_file`), and docs/parameters.md is generated from them
(tools/param_docs.py): one source for all three.

    spec        ParamSpec: one parameter and its checks
    shared      per-robot fields, parameters several nodes share, `autostart`
    orca_node, planner_node, fleet_sim_node, map_publisher, map_3d_publisher, mission_node
                each node's own
    nodes       which parameters each node executable declares; the check of given values
"""
