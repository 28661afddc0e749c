"""Reliability on real code: a subset of the corpus sweep, and parallel runs equal serial ones.

The full sweep (every file of transformers 4.52.4 and torch 2.13) is
``python benchmarks/corpus_sweep.py``; its figures are in docs/reliability.md.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
TRANSFORMERS = Path(transformers.__file__).parent
TORCH = Path(torch.__file__).parent
#: Files with every kind of site: [Defer], [Where] (fp16 clamp, LongRoPE), [Trap], declines.
SUBSET = [
    *(TRANSFORMERS / "models" / n for n in ("t5", "bart", "phi3", "longformer", "grounding_dino")),
    TRANSFORMERS / "modeling_rope_utils.py",
    TORCH / "nn" / "modules",
]

pytestmark = pytest.mark.slow


def _sweep_module():
    script = ROOT / "benchmarks" / "corpus_sweep.py"
    spec = importlib.util.spec_from_file_location("corpus_sweep", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and the worker processes look it up there
    spec.loader.exec_module(module)
    return module


def copy_subset(target: Path) -> Path:
    for source in SUBSET:
        destination = target / source.relative_to(source.parents[1])
        if source.is_dir():
            shutil.copytree(source, destination, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
    return target


def snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.py"))}


@pytest.mark.parametrize("scope", ["compiled", "all"])
def test_subset_sweep_has_no_crash_and_no_corruption(tmp_path: Path, scope: str) -> None:
    sweep = _sweep_module()
    corpus = copy_subset(tmp_path / "subset")
    figures = sweep.sweep("subset", corpus, jobs=2, limit=None, scope=scope)
    assert figures.files > 50 and figures.sites_fixed > 0, figures
    assert figures.problems == [], figures.problems
    assert (figures.crashes, figures.outputs_unparsable, figures.second_run_changes) == (0, 0, 0)
    assert figures.untouched_not_identical == 0


def test_a_folder_given_by_its_path_is_swept(tmp_path: Path) -> None:
    """``--corpus path/to/src``: the scratch folder is named after the folder's own name."""
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "model.py").write_text("import torch\n\n\ndef f(x):\n    print(\"f\")\n")
    figures = _sweep_module().sweep(str(folder), folder, jobs=1, limit=None, scope="all")
    assert (figures.files, figures.sites_fixed, figures.crashes) == (1, 1, 0), figures


def test_a_recursion_limit_met_by_the_analysis_is_a_crash(tmp_path, monkeypatch) -> None:
    """A file that parses but that the analysis cannot finish is counted as a crash, not as an
    unparsable input (which is how an analysis that recursed without end went unseen)."""
    sweep = _sweep_module()

    def recurse(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(sweep, "analyze_source", recurse)
    (tmp_path / "model.py").write_text("import torch\n")
    record = sweep.sweep_file(str(tmp_path / "model.py"), "all")
    assert not record.unparsable_input and record.crash.startswith("lint: RecursionError")


def run(*command: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)


def test_flake8_in_parallel_reports_what_it_reports_serially(tmp_path: Path) -> None:
    corpus = copy_subset(tmp_path / "corpus")
    reports = []
    for jobs in ("1", "2"):
        done = run(
            sys.executable, "-m", "flake8", "--isolated", "--select", "GM", "-j", jobs, str(corpus)
        )
        assert done.returncode == 1 and done.stderr == "", done.stderr
        reports.append(sorted(done.stdout.splitlines()))
    assert reports[0] == reports[1] and len(reports[0]) > 10


def test_codemod_in_parallel_writes_what_graphmend_fix_writes(tmp_path: Path) -> None:
    trees = {}
    for name in ("serial", "parallel", "graphmend_fix"):
        corpus = copy_subset(tmp_path / name)
        if name == "graphmend_fix":
            done = run(sys.executable, "-m", "flake8_graphmend.cli", "fix", str(corpus))
        else:
            jobs = "1" if name == "serial" else "2"
            done = run(
                sys.executable, "-m", "libcst.tool", "codemod", "graphmend.FixAll",
                "-j", jobs, "--hide-progress", str(corpus),
            )
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        trees[name] = snapshot(corpus)
    assert trees["serial"] == trees["parallel"] == trees["graphmend_fix"]
    assert trees["serial"] != snapshot(copy_subset(tmp_path / "untouched"))  # something was fixed
