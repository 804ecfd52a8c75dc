"""Algorithms only: numpy and scipy, no ROS. Usable as a library on its own."""
