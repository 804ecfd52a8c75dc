import os
from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'orca_nav'


def tree(folder):
    """data_files entries that install `folder` (recursively) under share/orca_nav/."""
    entries = []
    for root, _dirs, files in os.walk(folder):
        paths = [os.path.join(root, f) for f in files]
        if paths:
            entries.append((os.path.join('share', PACKAGE, root), paths))
    return entries


setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*', 'bench', 'bench.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
        ('share/' + PACKAGE + '/launch', glob('launch/*.launch.py')),
    ] + tree('config'),
    # ROS packages (rclpy, messages, launch_ros) come from the ROS distro via package.xml / rosdep,
    # or from the PyPI wheels that tools/setup_venv.sh installs only where `import rclpy` fails.
    install_requires=['setuptools', 'numpy', 'scipy', 'PyYAML'],
    extras_require={
        'demo': ['matplotlib'],
        # The recorder's bag writer (recorder_node, `orca-nav demo --record`, `orca-nav replay`):
        # rosbag2's Python API is not on PyPI (docs/recording.md).
        'record': ['rosbags'],
        'test': ['pytest', 'hypothesis', 'matplotlib', 'pyrvo', 'jt-pyrvo23d', 'ompl',
                 'navground==0.7.0', 'colcon-common-extensions', 'rosbags', 'mcap',
                 'mcap-ros2-support', 'ruff'],
    },
    zip_safe=True,
    maintainer='orca_nav maintainers',
    maintainer_email='orca-nav@example.com',
    description='Multi-robot navigation: kinodynamic/hybrid A* planning and ORCA local avoidance '
                'for ROS 2.',
    license='Apache-2.0',
    tests_require=['pytest'],
    entry_points={
        'console_scripts': [
            'orca_node = orca_nav.ros.entry:orca_node',
            'planner_node = orca_nav.ros.entry:planner_node',
            'fleet_sim_node = orca_nav.ros.entry:fleet_sim_node',
            'map_publisher = orca_nav.ros.entry:map_publisher',
            'map_3d_publisher = orca_nav.ros.entry:map_3d_publisher',
            'mission_node = orca_nav.ros.entry:mission_node',
            'recorder_node = orca_nav.ros.entry:recorder_node',
            'tf_relay = orca_nav.ros.entry:tf_relay',
            'orca-nav = orca_nav.bringup.cli:console_main',
        ],
    },
)
