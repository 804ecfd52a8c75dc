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



def test_parameters_page_matches_the_code():
    pytest.importorskip('rclpy')
    import importlib.util
    spec = importlib.util.spec_from_file_location('param_docs', REPO / 'tools' / 'param_docs.py')
    param_docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(param_docs)
    current = param_docs.PAGE.read_text()
    assert param_docs.page_text(current) == current, \
        'docs/parameters.md is out of date: run .venv/bin/python tools/param_docs.py'
