"""The GraphMend paper's Table 2 on transformers 4.52.4: graph breaks before and after fixing.

Every Table 2 model that transformers 4.52.4 can build offline is built with a small config and
random weights (``benchmarks/entries/``), called the way that reaches the paper's break sites, and
measured with ``graphmend verify --fix <its transformers modules>``: the original arm, then the
fixed arm on rewritten copies of those modules (the installed package is never modified). Both
arms run in fresh processes, with the same weights and inputs.

    python benchmarks/table2.py                    # all rows (< 30 min on 2 CPU cores)
    python benchmarks/table2.py --quick            # 3 rows (< 5 min), also a test
    python benchmarks/table2.py --rows t5,bart_fp16 --json out.json
    python benchmarks/table2.py --timing t5_cg     # CPU Inductor timings for these rows
    python benchmarks/table2.py --grad             # training: a backward pass after each call
    python benchmarks/table2.py --checkpointing    # training with gradient checkpointing

Breaks are graph-based (FX graphs - 1 on the first compiled call, as the paper counts them);
break events are what Dynamo logged (a break inside an inlined call can be logged twice).
"behaviour equal" is the runner's verdict: the fixed code, compiled and eager, behaves as the
eager original (values, exceptions, stdout, stderr, log records, warnings), or "no: <parts>".
Fix rate = (before - after) / before on graph-based breaks. The paper's fix rate is Table 2's.
Rows with ``--timing`` are run with the Inductor backend (both arms in the same run) and report
original/fixed ratios of compile time, first call and warm median. GPU figures (the paper's
cold-start claims) need ``--device cuda`` (with ``--mode reduce-overhead``) on a machine with one.

``--grad`` measures training: ``graphmend verify --grad`` (autograd on, a backward pass after
every call, gradients compared) on models built in train mode with every dropout probability 0
(``GRAPHMEND_TABLE2_TRAINING=1``, read by ``benchmarks/entries/_mode.py``). Breaks stay the
forward graphs' (Dynamo's); the backward graphs AOTAutograd makes are shown beside them, and
"gradients equal" is the runner's ``gradients_equal``. ``--checkpointing`` is ``--grad`` with
gradient checkpointing turned on in every model that supports it
(``GRAPHMEND_TABLE2_CHECKPOINTING=1``): the fixes of the layer loops that checkpoint keep a
break before the checkpoint call there, and the rows measure that they change nothing.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import io
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(ROOT))

ENTRIES = HERE / "entries"
TM = "transformers.models."
TRAINING_ENVIRONMENT = "GRAPHMEND_TABLE2_TRAINING"  # read by entries/_mode.py
CHECKPOINTING_ENVIRONMENT = "GRAPHMEND_TABLE2_CHECKPOINTING"  # so is this


@dataclass(frozen=True)
class Row:
    """One Table 2 row: how to build the model, what to fix, and what the paper reports."""

    name: str
    dtype: str
    entry: str  # file in benchmarks/entries:factory
    targets: Tuple[str, ...]
    paper_model: str  # the Table 2 row(s) this one stands for
    paper_rate: int  # Table 2's fix rate, percent (truncated, as printed there)
    #: fp16 twin of an fp32 row with the same break sites (no fp16-only branch): measured by
    #: ``--all`` only, to keep the default run short
    extra: bool = False

    @property
    def entry_spec(self) -> str:
        return str(ENTRIES / self.entry)


def _rows() -> List[Row]:
    t5 = (TM + "t5.modeling_t5",)
    bart = (TM + "bart.modeling_bart",)
    whisper = (TM + "whisper.modeling_whisper",)
    blenderbot = (TM + "blenderbot.modeling_blenderbot",)
    blenderbot_small = (TM + "blenderbot_small.modeling_blenderbot_small",)
    marian = (TM + "marian.modeling_marian",)
    pegasus = (TM + "pegasus.modeling_pegasus",)
    layoutlmv3 = (TM + "layoutlmv3.modeling_layoutlmv3", "transformers.modeling_utils")
    phi3 = (TM + "phi3.modeling_phi3", "transformers.modeling_rope_utils")
    return [
        Row("t5", "fp32", "t5.py:build", t5, "t5-small/base/3b", 100),
        Row("flan_t5", "fp32", "t5.py:build_flan", t5, "flan-t5-large", 100),
        Row("whisper", "fp32", "whisper.py:build", whisper, "whisper-*", 100),
        Row("bart", "fp32", "bart.py:build", bart, "bart-large-cnn/base", 100),
        Row("rebel", "fp32", "bart.py:build_rebel", bart, "rebel-large", 100),
        Row("biogpt", "fp32", "biogpt.py:build", (TM + "biogpt.modeling_biogpt",), "biogpt", 100),
        Row("blenderbot", "fp32", "blenderbot.py:build", blenderbot, "blenderbot-400M", 100),
        Row("blenderbot_small", "fp32", "blenderbot.py:build_small", blenderbot_small,
            "blenderbot (small code)", 100),
        Row("opus_mt", "fp32", "marian.py:build", marian, "opus-mt-fr-en", 100),
        Row("pegasus_causal", "fp32", "pegasus.py:build", pegasus, "PegasusForCausalLM", 100),
        Row("layoutlmv3", "fp32", "layoutlmv3.py:build", layoutlmv3, "layoutlmv3-base", 100),
        Row("phi3_longrope", "fp32", "phi3.py:build", phi3, "Phi-4-mini (LongRoPE)", 100),
        Row("phi3_longrope_short", "fp32", "phi3.py:build_short", phi3, "Phi-4-mini (LongRoPE)",
            100),
        Row("longformer", "fp32", "longformer.py:build", (TM + "longformer.modeling_longformer",),
            "longformer-base-4096", 40),
        Row("clap_audio_fused", "fp32", "clap.py:build_audio", (TM + "clap.modeling_clap",),
            "clap-htsat-fused", 0),
        Row("clap_fused", "fp32", "clap.py:build", (TM + "clap.modeling_clap",),
            "clap-htsat-fused", 0),
        Row("grounding_dino", "fp32", "grounding_dino.py:build",
            (TM + "grounding_dino.modeling_grounding_dino",), "grounding-dino-tiny/base", 58),
        Row("t5_cg", "fp32", "t5.py:build_cg", t5, "t5-small (ForConditionalGeneration)", 100),
        Row("whisper_cg", "fp32", "whisper.py:build_cg", whisper, "whisper-large-v3", 100),
        Row("blenderbot_cg", "fp32", "blenderbot.py:build_cg", blenderbot, "blenderbot-400M",
            100),
        Row("layoutlmv3_fp16", "fp16", "layoutlmv3.py:build_fp16", layoutlmv3, "layoutlmv3-base",
            100, extra=True),
        Row("bart_fp16", "fp16", "bart.py:build_fp16", bart, "bart-large-cnn/base", 100),
        Row("rebel_fp16", "fp16", "bart.py:build_rebel_fp16", bart, "rebel-large", 100),
        Row("opus_mt_fp16", "fp16", "marian.py:build_fp16", marian, "opus-mt-fr-en", 100),
        Row("blenderbot_fp16", "fp16", "blenderbot.py:build_fp16", blenderbot, "blenderbot-400M",
            100, extra=True),
        Row("blenderbot_small_fp16", "fp16", "blenderbot.py:build_small_fp16", blenderbot_small,
            "blenderbot (small code)", 100),
        Row("t5_fp16", "fp16", "t5.py:build_fp16", t5, "t5-small/base/3b", 100, extra=True),
        Row("pegasus_causal_fp16", "fp16", "pegasus.py:build_fp16", pegasus, "PegasusForCausalLM",
            100, extra=True),
        Row("whisper_fp16", "fp16", "whisper.py:build_fp16", whisper, "whisper-*", 100, extra=True),
        Row("t5_cg_fp16", "fp16", "t5.py:build_cg_fp16", t5, "t5-small (ForConditionalGeneration)",
            100, extra=True),
        Row("whisper_cg_fp16", "fp16", "whisper.py:build_cg_fp16", whisper, "whisper-large-v3",
            100, extra=True),
        Row("blenderbot_cg_fp16", "fp16", "blenderbot.py:build_cg_fp16", blenderbot,
            "blenderbot-400M", 100, extra=True),
    ]


ROWS = _rows()
ROWS_BY_NAME = {row.name: row for row in ROWS}
QUICK_ROWS = ("t5", "bart_fp16", "layoutlmv3")
TIMING_ROWS = ("t5_cg", "bart_fp16")
PAPER_TOTAL_RATE = 73  # Table 2: 107 of 147 breaks eliminated (72.8 %)

#: Families of break ids that no GM rule claims (the site has no finding).
GB_FAMILIES = {
    "GB0124": "DO/TI", "GB0033": "DO/TI", "GB0109": "DO/TI",
    "GB0036": "DS",
    "GB0170": "DC",
    "GB0291": "LC", "GB0059": "LC", "GB0007": "LC",
}
OUT_OF_SCOPE = {"DO/TI", "DS", "other"}


@dataclass
class RowResult:
    """One measured row (JSON-ready)."""

    name: str
    dtype: str
    paper_model: str
    paper_rate: int
    targets: List[str]
    backend: str
    grad: bool = False
    seconds: float = 0.0
    progress: str = ""
    error: Optional[str] = None
    graphs_before: Optional[int] = None
    graphs_after: Optional[int] = None
    #: the calls of the program's own code in the graphs (``verify.dynamo.compiled_calls``)
    compiled_calls_before: Optional[int] = None
    compiled_calls_after: Optional[int] = None
    events_before: Optional[int] = None
    events_after: Optional[int] = None
    identical: Optional[bool] = None
    max_abs_diff: Optional[float] = None
    #: the fixed code behaves as the eager original, compiled and eager (``graphmend verify``)
    behaviour_equal: Optional[bool] = None
    behaviour: Optional[str] = None  # "yes", "no: logs", ...
    behaviour_differences: List[str] = field(default_factory=list)
    #: the parts ("warnings", "exceptions", ...) in which the fixed code differs from the eager
    #: original, and those in which the compiled original already does
    differing_parts: List[str] = field(default_factory=list)
    original_differing_parts: List[str] = field(default_factory=list)
    sites_before: List[Dict[str, Any]] = field(default_factory=list)
    sites_after: List[Dict[str, Any]] = field(default_factory=list)
    fix_outcomes: List[Dict[str, Any]] = field(default_factory=list)
    timings_before: Optional[Dict[str, Any]] = None
    timings_after: Optional[Dict[str, Any]] = None
    fullgraph_before: Optional[str] = None
    fullgraph_after: Optional[str] = None
    #: ``--grad`` only: AOTAutograd's backward graphs and the runner's ``gradients_equal``
    backward_graphs_before: Optional[int] = None
    backward_graphs_after: Optional[int] = None
    gradients_equal: Optional[bool] = None
    gradients: Optional[str] = None  # "yes", "no: eager original vs compiled fixed", ...

    @property
    def breaks_before(self) -> Optional[int]:
        return None if self.graphs_before is None else max(self.graphs_before - 1, 0)

    @property
    def breaks_after(self) -> Optional[int]:
        return None if self.graphs_after is None else max(self.graphs_after - 1, 0)

    @property
    def fix_rate(self) -> Optional[float]:
        """Percent of graph-based breaks removed (100 when there were none)."""
        if self.breaks_before is None or self.breaks_after is None:
            return None
        if self.breaks_before == 0:
            return 100.0
        return 100.0 * (self.breaks_before - self.breaks_after) / self.breaks_before

    @property
    def meets_paper(self) -> bool:
        return self.fix_rate is not None and self.fix_rate + 1e-9 >= self.paper_rate

    def to_json(self) -> Dict[str, Any]:
        data = dict(self.__dict__)
        if not self.grad:  # the inference JSON stays as it was
            for key in _TRAINING_FIELDS:
                del data[key]
        data.update(
            breaks_before=self.breaks_before,
            breaks_after=self.breaks_after,
            fix_rate=self.fix_rate,
            meets_paper=self.meets_paper,
        )
        return data


_TRAINING_FIELDS = (
    "grad", "backward_graphs_before", "backward_graphs_after", "gradients_equal", "gradients"
)


def site_family(site: Any) -> Tuple[str, str]:
    """(family, rule) of a break site: from its GM finding if any, else from its GB id."""
    from flake8_graphmend.registry import RULES_BY_CODE

    for finding in site.findings:
        rule = RULES_BY_CODE.get(finding.get("code"))
        if rule is not None:
            return rule.family, rule.code
    return GB_FAMILIES.get(site.gb_id or "", "other"), "no GM rule"


def _site_json(site: Any) -> Dict[str, Any]:
    family, rule = site_family(site)
    declines = sorted({f["decline"] for f in site.findings if f.get("decline")})
    return {
        "file": site.file,
        "line": site.line,
        "gb_id": site.gb_id,
        "gb_type": site.gb_type,
        "events": site.events,
        "family": family,
        "rule": rule,
        "declines": declines,
        "lint_error": site.lint_error,
    }


def measure(row: Row, backend: str = "eager", repeat: int = 3, grad: bool = False) -> RowResult:
    """Run ``graphmend verify`` on one row (in this process; the arms are subprocesses); with
    ``grad``, ``--grad`` (the entries build for training only with ``TRAINING_ENVIRONMENT``)."""
    from flake8_graphmend.verify.entry import parse_entry
    from flake8_graphmend.verify.errors import VerifyError
    from flake8_graphmend.verify.runner import VerifyOptions, verify

    result = RowResult(
        row.name, row.dtype, row.paper_model, row.paper_rate, list(row.targets), backend, grad
    )
    started = time.perf_counter()
    progress = io.StringIO()
    try:
        options = VerifyOptions(
            entry=parse_entry(row.entry_spec),
            fix_targets=list(row.targets),
            device="cpu",
            backend=backend,
            repeat=repeat,
            grad=grad,
        )
        verification = verify(options, progress=progress)
    except VerifyError as error:
        result.error = f"original arm: {error}"
    except Exception as error:  # a crash in the tool is a result too
        result.error = f"{type(error).__name__}: {error}"
    else:
        _arm_fields(result, verification.original, "before")
        result.fix_outcomes = [
            {k: v for k, v in outcome.items() if k != "diff"}
            for outcome in verification.fix_outcomes
        ]
        if verification.failure is not None:
            result.error = str(verification.failure)
        if verification.fixed is not None:
            _fixed_arm(result, verification)
    result.seconds = time.perf_counter() - started
    result.progress = progress.getvalue()
    return result


def _fixed_arm(result: RowResult, verification: Any) -> None:
    """Fill ``result`` with what the fixed arm of ``verification`` measured."""
    from flake8_graphmend.verify.report import (
        behaviour_equal,
        behaviour_summary,
        gradients_equal,
        gradients_summary,
    )

    fixed = verification.fixed
    _arm_fields(result, fixed, "after")
    if fixed.comparison is not None:
        result.identical = fixed.comparison.equal
        result.max_abs_diff = fixed.comparison.max_abs_diff
    result.behaviour_equal = behaviour_equal(verification)
    result.behaviour = behaviour_summary(fixed.behaviour)
    result.behaviour_differences = [
        f"{comparison.expected} vs {comparison.actual}: {part.difference}"
        for comparison in fixed.behaviour
        for part in comparison.parts.values()
        if part.difference
    ]
    result.differing_parts = _differing_parts(fixed.behaviour)
    if verification.original is not None:
        result.original_differing_parts = _differing_parts(verification.original.behaviour)
    if result.grad:
        result.gradients_equal = gradients_equal(verification)
        result.gradients = gradients_summary(fixed)


def _differing_parts(comparisons: Any) -> List[str]:
    """The names of the behaviour parts that differ in an arm's comparisons."""
    return sorted({
        name for comparison in comparisons for name, part in comparison.parts.items()
        if part.difference
    })


def _arm_fields(result: RowResult, arm: Any, side: str) -> None:
    """Fill the ``*_before`` (original arm) or ``*_after`` (fixed arm) fields of ``result``."""
    measured = {
        "graphs": arm.graphs,
        "compiled_calls": arm.compiled_calls,
        "events": arm.breaks,
        "backward_graphs": arm.backward_graphs,
        "sites": [_site_json(site) for site in arm.break_sites],
        # None when the compiled calls raised: nothing was timed
        "timings": dict(arm.timings.__dict__) if arm.timings else None,
        "fullgraph": arm.fullgraph_error,
    }
    for name, value in measured.items():
        setattr(result, f"{name}_{side}", value)


def _measure_in_worker(
    row_name: str, backend: str, repeat: int, threads: int, grad: bool
) -> RowResult:
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    if grad:  # the arms inherit it: the entries build their models for training
        os.environ[TRAINING_ENVIRONMENT] = "1"
    return measure(ROWS_BY_NAME[row_name], backend, repeat, grad)


def run_rows(
    rows: List[Row],
    timing: Set[str],
    jobs: int = 2,
    repeat: int = 3,
    timing_repeat: int = 10,
    log=sys.stderr,
    grad: bool = False,
) -> List[RowResult]:
    """Measure ``rows`` (``jobs`` at a time); rows named in ``timing`` use the Inductor backend;
    ``grad``: in training (see the module docstring)."""
    threads = max(1, (os.cpu_count() or 1) // max(jobs, 1))
    plan = [
        (row, "inductor" if row.name in timing else "eager",
         timing_repeat if row.name in timing else repeat)
        for row in rows
    ]
    # the slow (Inductor) rows first, so that the pool ends with short rows
    order = sorted(range(len(plan)), key=lambda i: plan[i][1] != "inductor")
    results: Dict[int, RowResult] = {}
    started = time.perf_counter()
    # one fresh process per row: nothing (imported fixers, caches) carries over between rows
    pool_options = {"max_tasks_per_child": 1} if sys.version_info >= (3, 11) else {}
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, **pool_options) as pool:
        futures = {
            pool.submit(
                _measure_in_worker, plan[i][0].name, plan[i][1], plan[i][2], threads, grad
            ): i
            for i in order
        }
        for future in concurrent.futures.as_completed(futures):
            index = futures[future]
            result = future.result()
            results[index] = result
            log.write(
                f"[{len(results)}/{len(plan)} {time.perf_counter() - started:6.0f} s] "
                f"{_row_line(result)}\n"
            )
            log.flush()
    return [results[i] for i in range(len(plan))]


def _row_line(r: RowResult) -> str:
    if r.graphs_before is None:
        return f"{r.name}: ERROR {r.error} ({r.seconds:.0f} s)"
    after = "?" if r.breaks_after is None else r.breaks_after
    rate = "?" if r.fix_rate is None else f"{r.fix_rate:.0f} %"
    extra = f"; {r.error}" if r.error else ""
    if r.grad:
        extra = (
            f"; backward graphs {_fmt(r.backward_graphs_before)} -> "
            f"{_fmt(r.backward_graphs_after)}, gradients {r.gradients or '?'}{extra}"
        )
    return (
        f"{r.name} ({r.backend}): breaks {r.breaks_before} -> {after}, fix rate {rate}, "
        f"identical {r.identical}, behaviour {r.behaviour or '?'} ({r.seconds:.0f} s){extra}"
    )


def _short_path(path: str) -> str:
    marker = "transformers/"
    return path[path.index(marker) + len(marker):] if marker in path else path


def _sites_text(sites: List[Dict[str, Any]]) -> str:
    if not sites:
        return "—"
    parts = []
    for s in sites:
        text = f"`{_short_path(s['file'])}:{s['line']}` {s['gb_id']} ×{s['events']} {s['family']}"
        text += f" ({s['rule']})"
        if s["family"] not in OUT_OF_SCOPE and s["declines"]:
            text += ": declined: " + "; ".join(s["declines"])
        parts.append(text)
    return "<br>".join(parts)


def _fmt(value: Any, suffix: str = "") -> str:
    return "—" if value is None else f"{value}{suffix}"


def _behaviour_cell(r: RowResult) -> str:
    if r.behaviour is None:
        return "—"
    return r.behaviour if r.behaviour_equal else f"**{r.behaviour}**"


def _gradients_cell(r: RowResult) -> str:
    if r.gradients_equal is None:  # not measured, or a first compiled call raised
        return "—"
    return r.gradients if r.gradients_equal else f"**{r.gradients}**"


def markdown_table(results: List[RowResult]) -> str:
    """The table; rows measured in training add backward graphs and gradients columns."""
    grad = any(r.grad for r in results)
    backward = "| backward graphs before → after " if grad else ""
    gradients = "| gradients equal " if grad else ""
    lines = [
        f"| model | dtype | breaks before (events) | breaks after (events) {backward}| fix rate | "
        f"paper | ≥ paper | outputs identical | behaviour equal {gradients}| "
        "remaining break sites (family, rule) |",
        "|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if grad else ""),
    ]
    for r in results:
        rate = "—" if r.fix_rate is None else f"{r.fix_rate:.0f} %"
        identical = {True: "yes", False: "**no**", None: "—"}[r.identical]
        remaining = _sites_text(r.sites_after) if r.graphs_after is not None else "—"
        remaining += compiles_less_note(
            r.compiled_calls_before, r.compiled_calls_after, r.events_after
        )
        if r.error:
            remaining += f"<br>error: {r.error}"
        if grad:
            backward = f"| {_fmt(r.backward_graphs_before)} → {_fmt(r.backward_graphs_after)} "
            gradients = f"| {_gradients_cell(r)} "
        lines.append(
            f"| {r.name} | {r.dtype} | {_fmt(r.breaks_before)} ({_fmt(r.events_before)}) | "
            f"{_fmt(r.breaks_after)} ({_fmt(r.events_after)}) {backward}| {rate} | "
            f"{r.paper_rate} % | {'yes' if r.meets_paper else '**no**'} | {identical} | "
            f"{_behaviour_cell(r)} {gradients}| {remaining} |"
        )
    return "\n".join(lines)


def compiles_less(before: Optional[int], after: Optional[int], events_after: Optional[int]) -> bool:
    """Whether the fixed code's graphs make fewer of the program's calls while it still breaks
    (``events_after``): code that compiled runs eagerly (``verify.report.calls_fell``)."""
    from flake8_graphmend.verify.report import calls_fell

    return calls_fell(before, after, events_after)


def compiles_less_note(
    before: Optional[int], after: Optional[int], events_after: Optional[int]
) -> str:
    """What the remaining-sites cell adds for a row whose fixed code compiles less."""
    if not compiles_less(before, after, events_after):
        return ""
    return f"<br>**calls in graphs {before} -> {after}: code that compiled runs eagerly**"


def totals(results: List[RowResult]) -> Dict[str, Any]:
    measured = [r for r in results if r.breaks_before is not None and r.breaks_after is not None]
    before = sum(r.breaks_before for r in measured)
    after = sum(r.breaks_after for r in measured)
    residue: Dict[str, int] = {}
    for r in measured:
        for s in r.sites_after:
            key = "out of scope" if s["family"] in OUT_OF_SCOPE else "in scope"
            residue[key] = residue.get(key, 0) + s["events"]
    return {
        "rows": len(results),
        "measured": len(measured),
        "breaks_before": before,
        "breaks_after": after,
        "fix_rate": 100.0 * (before - after) / before if before else None,
        "paper_rate": PAPER_TOTAL_RATE,
        "rows_fully_fixed": sum(1 for r in measured if r.breaks_after == 0),
        "rows_meeting_paper": sum(1 for r in measured if r.meets_paper),
        "rows_identical": sum(1 for r in measured if r.identical),
        "rows_behaviour_equal": sum(1 for r in measured if r.behaviour_equal),
        "rows_compiling_less": sum(
            1
            for r in measured
            if compiles_less(r.compiled_calls_before, r.compiled_calls_after, r.events_after)
        ),
        **(
            {"rows_gradients_equal": sum(1 for r in measured if r.gradients_equal)}
            if any(r.grad for r in results)
            else {}
        ),
        "residue_events": residue,
    }


def totals_line(t: Dict[str, Any]) -> str:
    rate = "—" if t["fix_rate"] is None else f"{t['fix_rate']:.1f} %"
    return (
        f"Totals: {t['measured']}/{t['rows']} rows measured, {t['breaks_before']} breaks before, "
        f"{t['breaks_after']} after, fix rate {rate} (paper: {t['paper_rate']} %); "
        f"{t['rows_fully_fixed']} rows fully fixed, {t['rows_meeting_paper']} at or above the "
        f"paper's rate, {t['rows_identical']} with bitwise-identical outputs, "
        f"{t['rows_behaviour_equal']} with equal behaviour"
        + (f", {t['rows_gradients_equal']} with equal gradients" if "rows_gradients_equal" in t
           else "")
        + f"; {t['rows_compiling_less']} whose fixed code compiles less."
    )


def timing_table(results: List[RowResult]) -> str:
    lines = [
        "| model | dtype | graphs (orig → fixed) | compile s (orig / fixed = ratio) | "
        "first call s | warm median ms |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        if r.backend != "inductor" or not r.timings_before or not r.timings_after:
            continue
        b, a = r.timings_before, r.timings_after

        def ratio(key: str, scale: float = 1.0, digits: int = 2) -> str:
            x, y = b[key] * scale, a[key] * scale
            return f"{x:.{digits}f} / {y:.{digits}f} = {x / y:.2f}x" if y else f"{x:.{digits}f} / 0"

        lines.append(
            f"| {r.name} | {r.dtype} | {r.graphs_before} → {r.graphs_after} | "
            f"{ratio('compile_s', digits=1)} | {ratio('cold_s', digits=1)} | "
            f"{ratio('warm_median_s', 1000.0, 3)} |"
        )
    return "\n".join(lines)


def environment() -> Dict[str, str]:
    import importlib.metadata as metadata

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return {
        "python": platform.python_version(),
        "torch": version("torch"),
        "transformers": version("transformers"),
        "libcst": version("libcst"),
        "platform": platform.platform(),
        "cpu_cores": str(os.cpu_count()),
    }


def add_row_arguments(parser: argparse.ArgumentParser) -> None:
    """``--quick``, ``--rows``, ``--list``, ``--all``: which rows to measure (``row_names``)."""
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_ROWS)}")
    parser.add_argument("--rows", help="comma-separated row names (see --list)")
    parser.add_argument("--list", action="store_true", help="list the rows and exit")
    parser.add_argument(
        "--all", action="store_true",
        help="also the fp16 twins whose break sites are the fp32 row's (32 rows instead of 24)",
    )


def row_names(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Optional[List[str]]:
    """The rows that ``add_row_arguments``' options choose; None after ``--list`` printed them.
    An unknown row is a usage error."""
    if args.list:
        for row in ROWS:
            print(f"{row.name:24} {row.dtype}  {row.entry:30} paper {row.paper_rate:3d} %  "
                  f"{'(--all) ' if row.extra else ''}{', '.join(row.targets)}")
        return None
    names = list(QUICK_ROWS) if args.quick else [r.name for r in ROWS if args.all or not r.extra]
    if args.rows:
        names = [name.strip() for name in args.rows.split(",") if name.strip()]
    unknown = [name for name in names if name not in ROWS_BY_NAME]
    if unknown:
        parser.error(f"unknown rows: {', '.join(unknown)} (see --list)")
    return names


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_row_arguments(parser)
    parser.add_argument(
        "--timing",
        help="comma-separated rows to time with Inductor ('none' for no timing; default "
        f"{','.join(TIMING_ROWS)} in a full run, none with --quick or --rows)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="rows measured at once (default 2)")
    parser.add_argument("--repeat", type=int, default=3, help="warm calls timed per eager arm")
    parser.add_argument("--json", type=Path, help="write the results to this JSON file")
    parser.add_argument(
        "--grad", action="store_true",
        help="measure training: models in train mode with every dropout probability 0, "
        "graphmend verify --grad (a backward pass after each call, gradients compared)",
    )
    parser.add_argument(
        "--checkpointing", action="store_true",
        help="--grad with gradient checkpointing on in every model that supports it",
    )
    args = parser.parse_args(argv)
    if args.checkpointing:  # the row workers and their arms inherit it
        args.grad = True
        os.environ[CHECKPOINTING_ENVIRONMENT] = "1"

    names = row_names(parser, args)
    if names is None:
        return 0
    if args.timing is None:
        timing = set() if (args.quick or args.rows) else set(TIMING_ROWS)
    else:
        timing = {n.strip() for n in args.timing.split(",") if n.strip() and n.strip() != "none"}
        names += [name for name in timing if name not in names and name in ROWS_BY_NAME]

    started = time.perf_counter()
    rows = [ROWS_BY_NAME[name] for name in names]
    results = run_rows(rows, timing, jobs=args.jobs, repeat=args.repeat, grad=args.grad)
    elapsed = time.perf_counter() - started
    summary = totals(results)

    env = environment()
    training = "; training: train mode, dropout 0, a backward pass after each call"
    training = training if args.grad else ""
    training += ", gradient checkpointing on" if args.checkpointing else ""
    print(
        f"\nTable 2 on transformers {env['transformers']}, torch {env['torch']}, "
        f"Python {env['python']}, {env['cpu_cores']} CPU cores; {elapsed / 60:.1f} min"
        f"{training}\n"
    )
    print(markdown_table(results))
    print()
    print(totals_line(summary))
    if any(r.backend == "inductor" for r in results):
        print("\nCPU Inductor timings (one run, both arms; ratio = original / fixed):\n")
        print(timing_table(results))
    print(
        "\nGPU figures (the paper's cold-start claims) need a GPU: run graphmend verify with "
        "--device cuda --backend inductor --mode reduce-overhead there."
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "environment": env,
                    **({"grad": True} if args.grad else {}),
                    **({"checkpointing": True} if args.checkpointing else {}),
                    "elapsed_s": elapsed,
                    "totals": summary,
                    "rows": [r.to_json() for r in results],
                },
                indent=1,
            ),
            encoding="utf-8",
        )
    failed = [r.name for r in results if r.graphs_before is None or r.graphs_after is None]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
