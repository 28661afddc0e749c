"""The measurement harness over transformers families: ``benchmarks/families.py`` (specs, small
configs), ``benchmarks/survey.py`` (breaks before and after fixing) and ``benchmarks/agreement.py``
(break sites against findings). The unit tests run no model; the end-to-end ones (slow) run the
scripts as a user would on one small family."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import agreement, families, survey  # noqa: E402
from benchmarks.families import ProbeResult, SiteRecord  # noqa: E402


def test_specs_have_fp16_twins_where_the_modeling_file_has_fp16_branches() -> None:
    specs = [spec.name for spec in families.family_specs(["bart", "bert"])]
    assert specs == ["bart", "bart@fp16", "bert"]  # modeling_bert.py never says float16
    assert families.FamilySpec.parse("bart@fp16") == families.FamilySpec("bart", "fp16")
    assert families.FamilySpec.parse("bart").name == "bart"


def test_shrunk_config_is_small_and_keeps_token_ids_in_the_vocabulary() -> None:
    config = families.small_config("bart")
    assert (config.d_model, config.encoder_layers, config.decoder_attention_heads) == (32, 2, 2)
    assert (config.vocab_size, config.encoder_ffn_dim, config.max_position_embeddings) == (
        256, 64, 512)
    assert max(config.pad_token_id, config.eos_token_id, config.decoder_start_token_id) < 256


def test_sub_configs_are_shrunk_with_their_model_type() -> None:
    from transformers import CLIPConfig

    overrides = families.shrink_overrides(CLIPConfig())
    assert overrides["vision_config"]["model_type"] == "clip_vision_model"
    assert overrides["vision_config"]["image_size"] == 32
    assert overrides["text_config"]["hidden_size"] == 32
    config = families.small_config("clip")
    assert (config.vision_config.hidden_size, config.text_config.num_hidden_layers) == (32, 2)


SOURCE = """\
def forward(x, mask):
    if x.dtype == float16 and (
        x.isinf().any()
    ):
        x = x.clamp(0)
    if mask.any():
        print("masked")
    y = x.sum().item()
    return y
"""


def _agreement(tmp_path: Path) -> agreement.Agreement:
    path = str((tmp_path / "modeling_x.py").resolve())
    Path(path).write_text(SOURCE, encoding="utf-8")
    fp16 = ProbeResult("x@fp16", "entry.py:build", graphs=3, events=3,
                       sites=[SiteRecord(path, 3, "GB0170", "Data-dependent branching", 2),
                              SiteRecord(path, 8, "GB0124", "Tensor.item()", 1)],
                       executed={path: [2, 3, 5, 6, 8, 9]})
    fp32 = ProbeResult("x", "entry.py:build", graphs=1, events=0, executed={path: [2, 6, 8, 9]})
    findings = [
        agreement.LintFinding(path, 2, "GM201", "branch on a tensor (only when dtype == fp16)"),
        agreement.LintFinding(path, 6, "GM201", "branch on a tensor"),
        agreement.LintFinding(path, 7, "GM102", "print"),  # its line never ran
    ]
    return agreement.Agreement([fp16, fp32], findings, root=str(tmp_path.resolve())).compute()


def test_a_break_inside_a_multi_line_header_is_found_by_the_finding_on_its_first_line(
    tmp_path: Path,
) -> None:
    totals = _agreement(tmp_path).totals()
    assert (totals["events"], totals["found_events"]) == (3, 2)
    assert (totals["sites"], totals["found_sites"]) == (2, 1)
    assert totals["recall_events_pct"] == pytest.approx(200 / 3)


def test_misses_and_findings_that_are_no_break_where_they_run(tmp_path: Path) -> None:
    result = _agreement(tmp_path)
    assert [(m["line"], m["gb_id"], m["events"]) for m in result.misses()] == [(8, "GB0124", 1)]
    # line 2 breaks in fp16 and not in fp32, but says when: conditional; line 6 runs in both
    # and breaks in neither: false; line 7 never runs: not counted
    kinds = {(f["line"], f["kind"]) for f in result.imprecise()}
    assert kinds == {(6, "false")}
    totals = result.totals()
    assert (totals["findings_executed"], totals["findings_conditional"],
            totals["findings_false"]) == (2, 1, 1)
    assert totals["precision_pct"] == pytest.approx(50.0)


def test_survey_totals_count_breaks_removed_and_behaviour_differences() -> None:
    def record(name: str, before: int, after: int, equal: bool) -> dict:
        measured = {key: None for key in survey._MEASURED}
        measured.update(breaks_before=before, breaks_after=after, events_before=before,
                        events_after=after, behaviour_equal=equal, identical=equal)
        return {"name": name, "probe": {"error": None, "breaks": before}, "measured": measured}

    skipped = {"name": "z", "probe": {"error": "no inputs", "breaks": None}, "measured": None}
    quiet = {"name": "q", "probe": {"error": None, "breaks": 0}, "measured": None}
    totals = survey.totals([record("a", 8, 2, True), record("b", 2, 0, False), skipped, quiet])
    assert (totals["specs"], totals["skipped"], totals["breaking"]) == (4, 1, 2)
    assert (totals["breaks_before"], totals["breaks_after"]) == (10, 2)
    assert totals["breaks_removed_pct"] == pytest.approx(80.0)
    assert totals["behaviour_differences"] == 1


@pytest.mark.slow
def test_survey_and_agreement_on_a_small_family(tmp_path: Path) -> None:
    out = tmp_path / "survey.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "survey.py"), "--families", "biogpt",
         "--jobs", "1", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert out.is_file(), done.stdout[-2000:] + done.stderr[-3000:]
    (spec,) = json.loads(out.read_text(encoding="utf-8"))["specs"]
    measured = spec["measured"]
    assert spec["probe"]["error"] is None and measured is not None, spec["probe"]
    assert measured["breaks_before"] > 0  # the legacy-cache warning_once
    assert measured["breaks_after"] is not None and measured["behaviour_equal"] is True
    assert "breaks removed" in done.stdout

    agreed = tmp_path / "agreement.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "agreement.py"), "--no-rows", "--survey",
         str(out), "--json", str(agreed)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert agreed.is_file(), done.stdout[-2000:] + done.stderr[-3000:]
    totals = json.loads(agreed.read_text(encoding="utf-8"))["totals"]
    assert totals["events"] == measured["events_before"]
    assert totals["found_events"] > 0 and totals["findings_executed"] > 0
