"""What a newcomer reads: `orca-nav --help`, the README and the pages in docs/."""
import re
from pathlib import Path

import pytest

from orca_nav.bringup.cli import main
from orca_nav.bringup.scenarios import scenario_names

REPO = Path(__file__).resolve().parents[1]


def help_text(argv, capsys):
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 0
    return capsys.readouterr().out


def test_top_level_help_describes_the_command_and_lists_its_commands(capsys):
    text = help_text(['--help'], capsys)
    assert text.startswith('usage: orca-nav')
    description = text.split('\n\n')[1]
    assert description.startswith('Multi-robot navigation with ORCA on ROS 2')
    assert re.search(r'^\s+demo\s+run a fleet scenario', text, re.M)
    assert re.search(r'^\s+bench\s+run benchmarks', text, re.M)
    assert 'entry point' not in text


def test_demo_help_lists_every_built_in_scenario(capsys):
    text = ' '.join(help_text(['demo', '--help'], capsys).split())    # argparse wraps lines
    assert f"Built-in scenarios: {', '.join(scenario_names())}." in text
    assert 'Exit status: 0' in text


DOCS = REPO / 'docs'
README = REPO / 'README.md'
LINK = re.compile(r'\]\(([^)\s]+)\)')
# Repository paths named in the text (`orca_nav/ros/params.py`, `core/fleet/tracking.py`, ...).
REPO_PATH = re.compile(r'`((?:orca_nav|core|config|tools|test|bench|launch)/[\w./-]+)`')
# Python names in the text (`orca_nav.bringup.graph.describe_graph`, `orca_nav.core.avoidance`).
DOTTED = re.compile(r'`(orca_nav(?:\.\w+)+)')


def pages():
    return sorted(DOCS.glob('*.md'))


def anchor(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r'[^\w\- ]', '', heading.strip().lower()).replace(' ', '-')


def test_readme_is_short_and_links_every_docs_page():
    # Short: the two commands, what it is, one picture and a pointer to each page.
    assert len(README.read_bytes()) <= 6 * 1024
    linked = {(REPO / target.partition('#')[0]).resolve()
              for target in LINK.findall(README.read_text())}
    missing = [page.name for page in pages() if page.resolve() not in linked]
    assert missing == [] and len(pages()) >= 8


@pytest.mark.parametrize('page', [README] + pages(), ids=lambda p: p.name)
def test_links_and_paths_in_the_text_exist(page):
    text = page.read_text()
    for target in LINK.findall(text):
        if target.startswith(('http://', 'https://')):
            continue
        file_part, _, fragment = target.partition('#')
        linked = (page.parent / file_part).resolve() if file_part else page
        assert linked.is_file(), f'{page.name}: link {target} has no file'
        if fragment:
            headings = re.findall(r'^#+ (.+)$', linked.read_text(), re.M)
            assert fragment in {anchor(h) for h in headings}, f'{page.name}: no #{fragment}'
    for path in REPO_PATH.findall(text):
        if '<' in path:     # a placeholder such as bench/results/<area>.json
            continue
        where = REPO / 'orca_nav' / path if path.startswith('core/') else REPO / path
        assert where.exists(), f'{page.name}: {path} does not exist'
    for name in DOTTED.findall(text):
        assert python_name_exists(name.split('.')), f'{page.name}: {name} does not exist'


def python_name_exists(parts):
    """Whether a module of the repository defines the dotted name (a module, or a module and
    one name it defines or imports)."""
    for split in range(len(parts), 0, -1):
        base = REPO.joinpath(*parts[:split])
        source = base / '__init__.py' if base.is_dir() else base.with_suffix('.py')
        if source.is_file():
            rest = parts[split:]
            return not rest or (len(rest) == 1 and
                                re.search(rf'\b{rest[0]}\b', source.read_text()) is not None)
    return False


def test_parameters_page_matches_the_code():
    pytest.importorskip('rclpy')
    import importlib.util
    spec = importlib.util.spec_from_file_location('param_docs', REPO / 'tools' / 'param_docs.py')
    param_docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(param_docs)
    current = param_docs.PAGE.read_text()
    assert param_docs.page_text(current) == current, \
        'docs/parameters.md is out of date: run .venv/bin/python tools/param_docs.py'
