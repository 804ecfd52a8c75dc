"""orca_nav: multi-robot navigation for ROS 2 (kinodynamic/hybrid A* + ORCA)."""
