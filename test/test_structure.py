"""How orca_nav's modules may import each other (read from their source, imports anywhere in a
file): no import circles; the core stacks one way, sim -> fleet -> planning -> avoidance, with
grid, map_image, coarse_geodesic, geometry, validation, obstacle_distance, voxel_map,
transforms and traffic_rules shared below them all; no rclpy in the core or the parameter
specs; the nodes never import the bringup; no clock read where time is passed in."""
import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / 'orca_nav'
# The core's parts, from the top down: a part imports only parts after it (and the shared ones).
LAYERS = ('sim', 'fleet', 'planning', 'avoidance')
SHARED = ('grid', 'map_image', 'coarse_geodesic', 'geometry', 'validation', 'obstacle_distance',
          'voxel_map', 'transforms', 'traffic_rules')


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix('').parts)
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def imported(path: Path) -> set:
    """Every module name `path` imports, relative imports resolved (`from a import b` counts
    as a and a.b: b may be a module)."""
    name = module_name(path)
    package = name if path.name == '__init__.py' else name.rpartition('.')[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                parent = package.split('.')[:len(package.split('.')) - node.level + 1]
                base = '.'.join(parent + ([base] if base else []))
            found |= {base} | {f'{base}.{alias.name}' for alias in node.names}
    return found


MODULES = {module_name(p): p for p in PACKAGE.rglob('*.py')}
IMPORTS = {name: {m for m in imported(path) if m in MODULES and m != name}
           for name, path in MODULES.items()}


def core_part(module: str) -> str:
    """'sim', 'fleet', 'planning', 'avoidance', a shared module's name, or '' (the core's face)."""
    parts = module.split('.')
    return parts[2] if len(parts) > 2 else ''


def test_no_import_circles():
    def reaches(start):
        seen, todo = set(), [start]
        while todo:
            for nxt in IMPORTS[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen
    circles = sorted(m for m in MODULES if m in reaches(m))
    assert circles == []


def direction_problem(module: str, target: str):
    """Why core module `module` may not import core module `target`, or None."""
    part, other = core_part(module), core_part(target)
    if other == '':
        return 'the core\'s face re-exports the parts: import the module itself'
    if other == part or other in SHARED:
        return None
    if part in SHARED:
        return f'shared {part} imports the {other} part'
    if LAYERS.index(other) < LAYERS.index(part):
        return f'{part} is below {other}'
    return None


def test_the_core_stacks_one_way():
    core = {m: targets for m, targets in IMPORTS.items() if m.startswith('orca_nav.core.')}
    wrong = [(m, t, direction_problem(m, t)) for m, targets in core.items() for t in targets
             if t.startswith('orca_nav.core') and direction_problem(m, t)]
    assert wrong == []
    above = [(m, t) for m, targets in core.items() for t in targets
             if not t.startswith('orca_nav.core')]
    assert above == [], 'the core imports nothing else of orca_nav'


def test_the_core_and_the_parameter_specs_are_free_of_ros():
    for folder in ('core', 'parameters'):
        offenders = [name for name, path in MODULES.items()
                     if name.startswith(f'orca_nav.{folder}')
                     and any(m == 'rclpy' or m.startswith('rclpy.') for m in imported(path))]
        assert offenders == [], folder


def test_the_nodes_never_import_the_bringup():
    assert [m for m, targets in IMPORTS.items() if m.startswith('orca_nav.ros')
            and any(t.startswith('orca_nav.bringup') for t in targets)] == []


def test_time_is_passed_in():
    # The planners' compute budget is the one wall-clock reading the core may make; nodes use
    # their clock (`use_sim_time`), never the wall's.
    core_clock = re.compile(r'time\.(monotonic|time|perf_counter)\(')
    readers = sorted(str(p.relative_to(REPO)) for p in (PACKAGE / 'core').rglob('*.py')
                     if core_clock.search(p.read_text()))
    assert readers == ['orca_nav/core/planning/hybrid_astar.py',
                       'orca_nav/core/planning/kinodynamic_astar.py',
                       'orca_nav/core/planning/result.py']
    node_clock = re.compile(r'time\.(monotonic|time)\(')
    assert [p.name for p in (PACKAGE / 'ros').glob('*.py')
            if node_clock.search(p.read_text())] == []


def test_orca_node_stays_wiring():
    assert len((PACKAGE / 'ros' / 'orca_node.py').read_text().splitlines()) <= 400
