"""The package, its tests, benchmarks, tools and launch file pass ruff as ruff.toml configures it
(pyflakes, pycodestyle errors and warnings, import order; 100 columns)."""
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHECKED = ['orca_nav', 'test', 'bench', 'tools', 'launch', 'setup.py']


def test_ruff_finds_nothing():
    pytest.importorskip('ruff')     # a test extra (setup.py)
    done = subprocess.run([sys.executable, '-m', 'ruff', 'check', '--no-cache', *CHECKED],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
