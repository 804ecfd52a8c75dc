"""A NodeSpec of `describe_graph` as its own process, as `ros2 launch` starts it: the node's
module with its name, namespace, remappings and a parameters file of the spec's parameters;
its output goes to a log file. The benchmarks that measure a graph of processes use it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf('SC_CLK_TCK')


def nested_parameters(flat):
    """`a.b: v` parameters as the nested mapping of a ROS params file."""
    out = {}
    for key, value in flat.items():
        *path, leaf = key.split('.')
        node = out
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


class Process:
    """One NodeSpec as its own process, and its CPU time."""

    def __init__(self, spec, folder, log_level: str = 'warn'):
        params = {}
        for layer in spec.parameters:
            params.update(layer)
        stem = '_'.join(p for p in (spec.namespace.strip('/').replace('/', '_'), spec.name) if p)
        path = Path(folder) / f'{stem}.yaml'
        path.write_text(yaml.safe_dump({'/**': {'ros__parameters': nested_parameters(params)}}))
        self.name = spec.name
        self.log_path = Path(folder) / f'{stem}.log'
        self.log = open(self.log_path, 'w')
        command = [sys.executable, '-m', f'orca_nav.ros.{spec.executable}', '--ros-args',
                   '-r', f'__node:={spec.name}', '--params-file', str(path),
                   '--log-level', log_level]
        if spec.namespace:
            command += ['-r', f'__ns:=/{spec.namespace.strip("/")}']
        for source, target in spec.remappings:
            command += ['-r', f'{source}:={target}']
        self.proc = subprocess.Popen(command, cwd=REPO, stdout=self.log,
                                     stderr=subprocess.STDOUT, env={**os.environ, **spec.env})

    def cpu_s(self):
        """User + system CPU seconds of the process so far (every thread)."""
        fields = Path(f'/proc/{self.proc.pid}/stat').read_text().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20.0)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
