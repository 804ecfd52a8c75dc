"""Package-level checks: README commands, CI entry, the core's public API, ament_python layout,
colcon build (how the modules import each other: test_structure.py)."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def readme_commands():
    lines = (REPO / 'README.md').read_text().splitlines()
    return [ln.strip() for ln in lines[:12] if ln.startswith('    ') and ln.strip()]


def test_readme_starts_with_exactly_two_commands_and_ci_runs_the_test_one():
    commands = readme_commands()
    assert len(commands) == 2, commands
    demo, tests = commands
    assert 'orca-nav demo' in demo and 'setup_venv.sh' in demo
    assert 'pytest' in tests and 'setup_venv.sh --test' in tests
    ci = (REPO / '.ci' / 'run').read_text()
    assert tests in ci.splitlines(), 'CI must run the README test command verbatim'


def test_the_public_api_is_re_exported_by_the_core():
    import orca_nav.core as core
    from orca_nav.core.avoidance import solver, voxel_obstacles
    from orca_nav.core.planning import hybrid_astar, kinodynamic_astar
    assert set(core.__all__) == {
        'OrcaParams', 'compute_velocities', 'solve', 'OrcaSimulator', 'prepare_obstacles',
        'prepare_voxel_obstacles', 'OccupancyGrid', 'KinodynamicAStar', 'KinodynamicParams',
        'HybridAStar', 'HybridParams', 'PlanStatus'}
    assert core.solve is solver.solve and core.compute_velocities is solver.compute_velocities
    assert core.prepare_voxel_obstacles is voxel_obstacles.prepare_voxel_obstacles
    assert core.HybridAStar is hybrid_astar.HybridAStar
    assert core.KinodynamicAStar is kinodynamic_astar.KinodynamicAStar


def test_ament_python_layout():
    for path in ('package.xml', 'setup.py', 'setup.cfg', 'resource/orca_nav',
                 'orca_nav/__init__.py', 'launch', 'config', 'test'):
        assert (REPO / path).exists(), path
    xml = (REPO / 'package.xml').read_text()
    for dep in ('rclpy', 'geometry_msgs', 'nav_msgs', 'trajectory_msgs', 'visualization_msgs',
                'diagnostic_msgs', 'std_msgs', 'launch_ros', 'python3-numpy', 'python3-scipy'):
        assert f'<exec_depend>{dep}</exec_depend>' in xml, dep
    assert '<build_type>ament_python</build_type>' in xml
    setup = (REPO / 'setup.py').read_text()
    assert 'ros-jazzy' not in setup, 'setup.py must not require the PyPI ROS wheels'


@pytest.mark.slow
def test_colcon_build_installs_executables_and_share_files(tmp_path):
    colcon = shutil.which('colcon') or str(Path(sys.executable).with_name('colcon'))
    if not Path(colcon).exists():
        pytest.skip('colcon not installed (pip install colcon-common-extensions)')
    src = tmp_path / 'src'
    src.mkdir()
    (src / 'orca_nav').symlink_to(REPO)
    run = subprocess.run([colcon, 'build', '--base-paths', str(src), '--build-base',
                          str(tmp_path / 'build'), '--install-base', str(tmp_path / 'install')],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    install = tmp_path / 'install' / 'orca_nav'
    for exe in ('orca_node', 'planner_node', 'fleet_sim_node', 'map_publisher', 'map_3d_publisher',
                'orca-nav'):
        assert (install / 'lib' / 'orca_nav' / exe).exists(), exe
    share = install / 'share' / 'orca_nav'
    assert (share / 'package.xml').exists()
    assert (install / 'share' / 'ament_index' / 'resource_index' / 'packages' / 'orca_nav').exists()
    assert (share / 'launch' / 'multi_robot.launch.py').exists()
    assert (share / 'config' / 'orca_node.yaml').exists()
