#!/usr/bin/env bash
# Creates (or updates) the local virtualenv .venv and installs orca_nav into it, editable.
#   bash tools/setup_venv.sh          runtime: numpy, scipy, PyYAML, matplotlib, rosbags (the demo's
#                                     recorder) (+ ROS 2 Jazzy wheels if needed)
#   bash tools/setup_venv.sh --test   also the test and benchmark extras (pytest, hypothesis, pyrvo, ompl,
#                                     mcap)
# ROS: if `import rclpy` already works (a sourced /opt/ros/<distro>), the venv sees the system
# packages and nothing ROS is installed; otherwise the ROS 2 Jazzy PyPI wheels are installed, and
# the interfaces that are not on PyPI are generated (tools/generate_interfaces.sh).
# Each step says what it does on one line (stderr) before it runs: the whole takes minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="demo,record"
[ "${1:-}" = "--test" ] && extras="demo,record,test"
PY=${PYTHON:-python3}
say() { echo "setup_venv: $*" >&2; }
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $("$PY" --version 2>&1) (system site packages visible)"
  "$PY" -m venv --system-site-packages .venv
else
  say "updating .venv ($(.venv/bin/python --version 2>&1))"
fi
VPY=.venv/bin/python
pip_install() {
  # Only pip's summary line ("Successfully installed ...": what it did install) and its errors.
  # This machine's pip config lists local index folders that may not exist; drop that noise.
  "$VPY" -m pip install --disable-pip-version-check "$@" \
    2> >(grep -v "is ignored: it is neither" >&2) | { grep '^Successfully installed' >&2 || true; }
}
if ! "$VPY" -c "import rclpy, nav_msgs.msg, geometry_msgs.msg, visualization_msgs.msg, trajectory_msgs.msg, diagnostic_msgs.msg, rosgraph_msgs.msg, lifecycle_msgs.msg" >/dev/null 2>&1; then
  say "rclpy not importable: installing the ROS 2 Jazzy PyPI wheels (rclpy with Fast DDS and" \
      "the geometry, nav, visualization, trajectory, std, diagnostic, rosgraph and lifecycle" \
      "messages)"
  pip_install \
    "ros-jazzy-rclpy[fastrtps]" ros-jazzy-geometry-msgs ros-jazzy-nav-msgs ros-jazzy-visualization-msgs \
    ros-jazzy-trajectory-msgs ros-jazzy-std-msgs ros-jazzy-diagnostic-msgs ros-jazzy-rosgraph-msgs \
    ros-jazzy-lifecycle-msgs
else
  say "rclpy and the ROS messages are importable: installing nothing ROS"
fi
# tf2_msgs, nav2_msgs and geographic_msgs are not on PyPI: generated from their Jazzy definitions
# unless importable.
say "interfaces not on PyPI (tools/generate_interfaces.sh)"
bash tools/generate_interfaces.sh
say "installing orca_nav (editable) and what setup.py requires, with the '${extras}' extras"
pip_install -e ".[${extras}]"
say "done: .venv/bin/orca-nav --help"
