"""FixAll on transformers 4.52.4: the known break sites are gone and the outputs stay the same.

The model files (and the shared modeling_utils / modeling_rope_utils) are copied to a temporary
folder and fixed there; the installed package is never modified. Each arm runs in its own
process (tests/fixtures/fix/transformers_arm.py): the original arm saves random weights and
inputs, the fixed arm loads them with imports of the original files routed to the fixed copies.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import fixers  # noqa: E402
import flake8_graphmend  # noqa: E402
from fixers.apply import fix_paths  # noqa: E402
from flake8_graphmend.engine import Options, analyze_file  # noqa: E402

ARM = Path(__file__).parent / "fixtures" / "fix" / "transformers_arm.py"
FILES = (
    "models/t5/modeling_t5.py",
    "models/bart/modeling_bart.py",
    "models/marian/modeling_marian.py",
    "models/whisper/modeling_whisper.py",
    "models/biogpt/modeling_biogpt.py",
    "models/blenderbot/modeling_blenderbot.py",
    "models/layoutlmv3/modeling_layoutlmv3.py",
    "models/phi3/modeling_phi3.py",
    "modeling_utils.py",
    "modeling_rope_utils.py",
)
SHARED = Options(
    compiled_modules=("*/transformers/modeling_utils.py", "*/transformers/modeling_rope_utils.py")
)
#: The break sites of transformers 4.52.4 that FixAll must remove: model -> (file, line, GB id).
KNOWN_SITES = {
    "t5": ("modeling_t5.py", 1019, "GB0291"),
    "bart": ("modeling_bart.py", 1246, "GB0291"),
    "bart_fp16": ("modeling_bart.py", 567, "GB0170"),
    "marian_fp16": ("modeling_marian.py", 327, "GB0170"),
    "whisper": ("modeling_whisper.py", 1104, "GB0291"),
    "biogpt": ("modeling_biogpt.py", 685, "GB0291"),
    "blenderbot": ("modeling_blenderbot.py", 951, "GB0291"),
    # its deprecation warning, which line 1569 of the file repeats: each has a helper of its own
    # (the `self.dtype` before it calls `is_torch_xla_available()`, an availability probe)
    "layoutlmv3": ("modeling_utils.py", 1614, "GB0007"),
}
#: LongRoPE's update, declined: the registered buffer would not be `self.long_inv_freq` itself.
LONGROPE_SITE = ["modeling_rope_utils.py", 50, "GB0170"]

pytestmark = pytest.mark.slow


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    nan_a, nan_b = a.isnan(), b.isnan()
    return a.dtype == b.dtype and torch.equal(nan_a, nan_b) and torch.equal(a[~nan_a], b[~nan_b])


def run_arm(*args: str) -> None:
    roots = {
        str(Path(package.__file__).resolve().parents[1]) for package in (fixers, flake8_graphmend)
    }
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*roots, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, str(ARM), *args], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def arms(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("transformers")
    installed = Path(transformers.__file__).parent
    copies = {}
    for relative in FILES:
        copy = tmp / "transformers" / relative
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(installed / relative, copy)
        copies[os.path.realpath(installed / relative)] = str(copy)
    names = {  # the copies are not a package: their relative imports resolve from these
        tmp / "transformers" / relative: "transformers." + relative[:-3].replace("/", ".")
        for relative in FILES
    }
    outcomes = {
        o.path.name: o for o in fix_paths([tmp / "transformers"], options=SHARED, names=names)
    }
    (tmp / "copies.json").write_text(json.dumps(copies))
    work = tmp / "work"
    work.mkdir()
    run_arm("original", str(work))
    run_arm("fixed", str(work), str(tmp / "copies.json"))
    original = json.loads((work / "original.json").read_text())
    fixed = json.loads((work / "fixed.json").read_text())
    return {
        "outcomes": outcomes,
        "copies": copies,
        "original": original,
        "fixed": fixed,
        "work": work,
    }


def test_fix_all_rewrites_the_files_and_leaves_no_fixable_finding(arms: dict) -> None:
    # LayoutLMv3's and Phi-3's breaks are in the shared modeling_utils and modeling_rope_utils;
    # the latter's one site (LongRoPE's update) is declined
    own_sites_elsewhere = {"modeling_layoutlmv3.py", "modeling_phi3.py", "modeling_rope_utils.py"}
    for relative in FILES:
        name = Path(relative).name
        outcome = arms["outcomes"][name]
        assert outcome.error is None and (outcome.changed or name in own_sites_elsewhere), outcome
    for copy in arms["copies"].values():
        assert [f for f in analyze_file(Path(copy), options=SHARED) if f.fixer] == []


@pytest.mark.parametrize("model", list(KNOWN_SITES))
def test_known_break_site_is_removed_and_outputs_are_identical(arms: dict, model: str) -> None:
    original, fixed = arms["original"][model], arms["fixed"][model]
    assert list(KNOWN_SITES[model]) in original["breaks"]
    assert original["graphs"] > 1
    assert (fixed["graphs"], fixed["breaks"], fixed["error"]) == (
        1,
        [],
        None,
    )  # with fullgraph=True
    before = torch.load(arms["work"] / f"{model}.original.out.pt")
    after = torch.load(arms["work"] / f"{model}.fixed.out.pt")
    assert same(after["eager"], before["eager"])
    assert same(after["compiled"], before["eager"])
    assert original["clamped"] == fixed["clamped"] == model.endswith("fp16")


def test_longrope_update_is_left_and_the_fixed_files_compute_the_same(arms: dict) -> None:
    """LongRoPE's update keeps its break (declined); over long, short and long calls the fixed
    files give the original's outputs, eager and compiled."""
    assert LONGROPE_SITE in arms["original"]["phi3"]["breaks"]
    assert arms["fixed"]["phi3"]["error"] is not None  # the fixed arm's fullgraph=True fails
    before = torch.load(arms["work"] / "phi3.original.sequence.pt")
    after = torch.load(arms["work"] / "phi3.fixed.sequence.pt")
    for outputs in (after["eager"], after["compiled"]):
        assert all(same(a, b) for a, b in zip(outputs, before["eager"], strict=True))
