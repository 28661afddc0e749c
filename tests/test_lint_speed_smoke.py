"""Smoke tests for benchmarks/lint_speed.py: a tiny tree, one round."""

import importlib.util
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "lint_speed.py"

MODEL = """\
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        print(x)
        return x
"""


def _load_script():
    spec = importlib.util.spec_from_file_location("lint_speed", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_file_subset_is_evenly_spaced_and_stable(tmp_path):
    lint_speed = _load_script()
    for i in range(10):
        (tmp_path / f"m{i}.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("not python\n")
    everything = lint_speed.collect_files([tmp_path], None)
    assert len(everything) == 10
    subset = lint_speed.collect_files([tmp_path], 5)
    assert subset == everything[::2]
    assert subset == lint_speed.collect_files([tmp_path], 5)


def test_benchmark_runs_and_handles_unparsable_files(tmp_path):
    if not any(ep.name == "GM" for ep in metadata.entry_points(group="flake8.extension")):
        pytest.skip("flake8-graphmend is not installed: flake8 has no GM plugin")
    src = tmp_path / "src"
    src.mkdir()
    (src / "model.py").write_text(MODEL)
    (src / "broken.py").write_text("def f(:\n    pass\n")
    out = tmp_path / "lint_speed.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--path", str(src), "--rounds", "1", "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert data["files"] == 2
    assert set(data["median_cpu"]) == {"default", "gm-flake8", "gm-alone"}
    # print() in forward() is a GM101 finding, seen the same way by flake8 and by the
    # plugin run alone; the unparsable file is an E999 for flake8, skipped by gm-alone.
    assert data["findings"]["gm-flake8"]["GM"] >= 1
    assert data["findings"]["gm-alone"]["GM"] == data["findings"]["gm-flake8"]["GM"]
    assert data["findings"]["default"]["E999"] == 1
    assert "gm-alone / default" in data["ratios_cpu"]
    assert "broken.py: SyntaxError" in proc.stdout
