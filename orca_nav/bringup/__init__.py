"""Composition: everything that puts the nodes together into a running fleet. The nodes
(`orca_nav.ros`) never import it.

    fleet_file   fleet YAML files: robots, map, node parameters (validated)
    graph        fleet file -> node-graph description (the launch file and the runner use it)
    runner       the node graph in one process, over real DDS
    mission      goal sequencing and recording for a run
    scenarios    built-in scenarios
    report       run metrics;  report_plot  the run's picture
    demo, faults, replay, rviz   the `orca-nav` commands of those names
    maps         the maps a fleet names, read once per process
    cli          `orca-nav`
"""
