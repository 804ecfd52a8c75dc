#!/usr/bin/env bash
# Creates (or updates) the local virtualenv .venv and installs orca_nav into it, editable.
#   bash tools/setup_venv.sh          runtime: numpy, scipy, PyYAML, matplotlib (+ ROS 2 Jazzy wheels if needed)
#   bash tools/setup_venv.sh --test   also the test and benchmark extras (pytest, hypothesis, pyrvo, ompl)
# ROS: if `import rclpy` already works (a sourced /opt/ros/<distro>), the venv sees the system
# packages and nothing ROS is installed; otherwise the ROS 2 Jazzy PyPI wheels are installed, and
# the interfaces that are not on PyPI are generated (tools/generate_interfaces.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="demo"
[ "${1:-}" = "--test" ] && extras="demo,test"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv --system-site-packages .venv
fi
VPY=.venv/bin/python
pip_install() {
  # This machine's pip config lists local index folders that may not exist; drop that noise only.
  "$VPY" -m pip install -q --disable-pip-version-check "$@" 2> >(grep -v "is ignored: it is neither" >&2)
}
if ! "$VPY" -c "import rclpy, nav_msgs.msg, geometry_msgs.msg, visualization_msgs.msg, trajectory_msgs.msg, diagnostic_msgs.msg, rosgraph_msgs.msg, lifecycle_msgs.msg" >/dev/null 2>&1; then
  echo "setup_venv: rclpy not importable, installing the ROS 2 Jazzy PyPI wheels" >&2
  pip_install \
    "ros-jazzy-rclpy[fastrtps]" ros-jazzy-geometry-msgs ros-jazzy-nav-msgs ros-jazzy-visualization-msgs \
    ros-jazzy-trajectory-msgs ros-jazzy-std-msgs ros-jazzy-diagnostic-msgs ros-jazzy-rosgraph-msgs \
    ros-jazzy-lifecycle-msgs
fi
# tf2_msgs and nav2_msgs are not on PyPI: generated from their Jazzy definitions unless importable.
bash tools/generate_interfaces.sh
pip_install -e ".[${extras}]"
