"""Thin rclpy nodes: parameters -> messages -> arrays -> orca_nav.core -> messages."""
