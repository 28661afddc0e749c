"""Survey of transformers' model families: graph breaks before and after ``graphmend.FixAll``.

Every model type of the installed transformers with a base model class is built with its default
config shrunk generically, random weights and a plausible input (``benchmarks/families.py``), in
fp32, and in fp16 where its modeling file has fp16-only branches. Each spec is probed in a fresh
process: two eager calls (the transformers lines they run are recorded) and one compiled call
with ``torch.compile``'s counting backend (graphs, break sites). A spec that cannot be built or
called eagerly within the time limit is skipped with the reason. A spec that breaks is measured
like a Table 2 row (``benchmarks/table2.py``'s ``measure``, i.e. ``graphmend verify --fix``,
eager backend): the fixed modules are the transformers files its eager calls ran, rewritten
together by the runner (which links calls from one file's compiled code into another).

    python benchmarks/survey.py --families bert,bart,longt5       # three families (~3 min)
    python benchmarks/survey.py --json survey.json --jobs 2       # all (hours on 2 cores)
    python benchmarks/survey.py --json survey.json --resume       # go on where it stopped
    python benchmarks/survey.py --json survey.json --report       # its tables again

Breaks are graph-based (FX graphs - 1 on the first compiled call), events are what Dynamo logged
(see table2.py). "breaks removed" = (before - after) / before over the specs that break, summed.
A behaviour difference is a spec whose fixed code does not behave as the eager original
(``graphmend verify``'s verdict) or whose fixed arm fails. The JSON is rewritten after every
spec, so that a long run can be read (and resumed) while it goes.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(HERE.parent))

from benchmarks.families import (  # noqa: E402
    FAMILY_ENVIRONMENT,
    FamilySpec,
    ProbeResult,
    family_specs,
    fix_targets,
    probe_family,
    short_path,
)
from benchmarks.table2 import (  # noqa: E402
    Row,
    compiles_less,
    compiles_less_note,
    environment,
    measure,
)

#: What a measured spec keeps of table2's ``RowResult`` (the paper's columns have no meaning here).
_MEASURED = (
    "graphs_before", "graphs_after", "compiled_calls_before", "compiled_calls_after",
    "events_before", "events_after", "breaks_before",
    "breaks_after", "identical", "max_abs_diff", "behaviour_equal", "behaviour",
    "behaviour_differences", "differing_parts", "original_differing_parts", "sites_before",
    "sites_after", "fix_outcomes", "error",
)


def survey_spec(name: str, timeout: float, threads: int) -> Dict[str, Any]:
    """Probe one spec and, when it breaks, measure it before and after fixing (JSON-ready).
    Run in a worker process of its own: it sets the spec's environment for the runner's arms."""
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    probe = probe_family(name, timeout, threads)
    record: Dict[str, Any] = {"name": name, "probe": probe.to_json(), "measured": None}
    if probe.error is None and probe.broke:
        os.environ[FAMILY_ENVIRONMENT] = name
        targets = tuple(fix_targets(probe))
        row = Row(name, FamilySpec.parse(name).dtype, "family.py:build", targets, name, 0)
        result = measure(row, backend="eager", repeat=1).to_json()
        record["measured"] = {key: result[key] for key in _MEASURED}
        record["measured"]["seconds"] = result["seconds"]
    return record


def skipped_reason(record: Dict[str, Any]) -> Optional[str]:
    return record["probe"]["error"]


def breaks_before(record: Dict[str, Any]) -> int:
    measured = record["measured"]
    if measured and measured["breaks_before"] is not None:
        return int(measured["breaks_before"])
    return int(record["probe"]["breaks"] or 0)


def totals(records: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Specs, skips, and over the specs that break: breaks and events before and after, the
    share removed, behaviour differences and fixed arms that failed."""
    built = [r for r in records if skipped_reason(r) is None]
    broke = [r for r in built if r["measured"] is not None]
    complete = [r for r in broke if r["measured"]["breaks_after"] is not None]
    before = sum(breaks_before(r) for r in complete)
    after = sum(int(r["measured"]["breaks_after"]) for r in complete)
    events_before = sum(int(r["measured"]["events_before"] or 0) for r in complete)
    events_after = sum(int(r["measured"]["events_after"] or 0) for r in complete)
    return {
        "specs": len(records),
        "built": len(built),
        "skipped": len(records) - len(built),
        "breaking": len(broke),
        "measured": len(complete),
        "fixed_arm_failed": len(broke) - len(complete),
        "breaks_before": before,
        "breaks_after": after,
        "breaks_removed_pct": 100.0 * (before - after) / before if before else None,
        "events_before": events_before,
        "events_after": events_after,
        "events_removed_pct": (
            100.0 * (events_before - events_after) / events_before if events_before else None
        ),
        "behaviour_differences": sum(1 for r in complete if _differs(r)),
        "behaviour_differences_also_compiled_original": sum(
            1 for r in complete if _differs(r) and _also_compiled_original(r)
        ),
        "outputs_identical": sum(1 for r in complete if r["measured"]["identical"]),
        "compiling_less": sum(
            1
            for r in complete
            if compiles_less(
                r["measured"].get("compiled_calls_before"),
                r["measured"].get("compiled_calls_after"),
                r["measured"]["events_after"],
            )
        ),
    }


def _differs(record: Dict[str, Any]) -> bool:
    return record["measured"]["behaviour_equal"] is not True


def _also_compiled_original(record: Dict[str, Any]) -> bool:
    """Whether the compiled original already differs from the eager original as the fixed code
    does: it raises, or it differs in every part the fixed code differs in (torch's own
    warnings while tracing, say), so the difference is not the fix's."""
    measured = record["measured"]
    if record["probe"].get("compiled_error"):
        return True
    parts = set(measured.get("differing_parts") or ())
    return bool(parts) and parts <= set(measured.get("original_differing_parts") or ())


def _sites(sites: List[Dict[str, Any]]) -> str:
    if not sites:
        return "—"
    return "<br>".join(
        f"`{short_path(s['file'])}:{s['line']}` {s['gb_id']} ×{s['events']} ({s['rule']})"
        for s in sites
    )


def markdown_table(records: List[Dict[str, Any]]) -> str:
    """One row per spec that breaks."""
    lines = [
        "| spec | breaks before (events) | breaks after (events) | outputs identical | "
        "behaviour equal | remaining break sites (rule) |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        m = r["measured"]
        if m is None:
            continue
        after = "—" if m["breaks_after"] is None else f"{m['breaks_after']} ({m['events_after']})"
        identical = {True: "yes", False: "**no**", None: "—"}[m["identical"]]
        behaviour = m["behaviour"] or "—"
        if m["behaviour_equal"] is False:
            behaviour = f"**{behaviour}**"
        remaining = _sites(m["sites_after"]) if m["breaks_after"] is not None else "—"
        remaining += compiles_less_note(
            m.get("compiled_calls_before"), m.get("compiled_calls_after"), m["events_after"]
        )
        if m["error"]:
            remaining += f"<br>error: {m['error']}"
        if r["probe"].get("compiled_error"):
            remaining += f"<br>the compiled original raises: {r['probe']['compiled_error']}"
        lines.append(
            f"| {r['name']} | {breaks_before(r)} ({m['events_before']}) | {after} | "
            f"{identical} | {behaviour} | {remaining} |"
        )
    return "\n".join(lines)


def totals_line(t: Dict[str, Any]) -> str:
    def pct(value: Optional[float]) -> str:
        return "—" if value is None else f"{value:.1f} %"

    return (
        f"Totals: {t['specs']} specs, {t['built']} built, {t['skipped']} skipped; "
        f"{t['breaking']} break, {t['measured']} measured before and after "
        f"({t['fixed_arm_failed']} fixed arms failed); breaks {t['breaks_before']} -> "
        f"{t['breaks_after']}: breaks removed {pct(t['breaks_removed_pct'])} (events "
        f"{t['events_before']} -> {t['events_after']}, {pct(t['events_removed_pct'])}); "
        f"behaviour differences {t['behaviour_differences']} (of which "
        f"{t['behaviour_differences_also_compiled_original']} where the compiled original "
        f"already differs so); outputs identical "
        f"{t['outputs_identical']}/{t['measured']}; fixed code compiling less "
        f"{t['compiling_less']}."
    )


def skip_summary(records: List[Dict[str, Any]]) -> str:
    """Skipped specs grouped by the first words of their reason."""
    groups: Dict[str, List[str]] = {}
    for r in records:
        reason = skipped_reason(r)
        if reason is not None:
            reason = reason.removeprefix("VerifyError: build() raised ")
            groups.setdefault(reason.split(" (at ")[0][:90], []).append(r["name"])
    ordered = sorted(groups.items(), key=lambda item: -len(item[1]))
    return "\n".join(f"- {len(names)}: {reason}: {', '.join(names)}" for reason, names in ordered)


def _write(path: Optional[Path], env: Dict[str, str], records: List[Dict[str, Any]],
           started: float) -> None:
    if path is None:
        return
    data = {"environment": env, "elapsed_s": time.perf_counter() - started,
            "totals": totals(records), "specs": records}
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(partial, path)


def run_specs(names: List[str], jobs: int, timeout: float, json_path: Optional[Path],
              previous: List[Dict[str, Any]], log: Any = sys.stderr) -> List[Dict[str, Any]]:
    """Survey ``names`` (``jobs`` at a time, a fresh worker process each), after ``previous``."""
    threads = max(1, (os.cpu_count() or 1) // max(jobs, 1))
    env = environment()
    records = list(previous)
    started = time.perf_counter()
    pool_options = {"max_tasks_per_child": 1} if sys.version_info >= (3, 11) else {}
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, **pool_options) as pool:
        futures = [pool.submit(survey_spec, name, timeout, threads) for name in names]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            record = future.result()
            records.append(record)
            _write(json_path, env, records, started)
            log.write(f"[{done}/{len(names)} {time.perf_counter() - started:6.0f} s] "
                      f"{_spec_line(record)}\n")
            log.flush()
    records.sort(key=lambda r: r["name"])
    _write(json_path, env, records, started)
    return records


def _spec_line(record: Dict[str, Any]) -> str:
    probe = ProbeResult.from_json(record["probe"])
    if probe.error:
        return f"{probe.name}: skipped: {probe.error}"
    m = record["measured"]
    if m is None:
        return f"{probe.name}: no break ({probe.seconds:.0f} s)"
    return (f"{probe.name}: breaks {m['breaks_before']} -> {m['breaks_after']}, behaviour "
            f"{m['behaviour'] or '?'}{'; ' + m['error'] if m['error'] else ''}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", help="comma-separated model types (default: all); "
                        "their fp16 twins come with them")
    parser.add_argument("--jobs", type=int, default=2, help="specs surveyed at once (default 2)")
    parser.add_argument("--timeout", type=float, default=240.0,
                        help="seconds to build and probe one spec before it is skipped")
    parser.add_argument("--json", type=Path, help="write the results here (after every spec)")
    parser.add_argument("--resume", action="store_true",
                        help="keep the specs already in --json and survey the others")
    parser.add_argument("--report", action="store_true",
                        help="print the tables of --json and exit (nothing runs)")
    args = parser.parse_args(argv)
    if args.report:
        if args.json is None:
            parser.error("--report needs --json")
        print_report(json.loads(args.json.read_text(encoding="utf-8")))
        return 0

    families = [f.strip() for f in args.families.split(",")] if args.families else None
    names = [spec.name for spec in family_specs(families)]
    # a fixed shuffle: the specs done when a long run is stopped are a sample of all families
    random.Random(0).shuffle(names)
    previous: List[Dict[str, Any]] = []
    if args.resume and args.json and args.json.is_file():
        previous = json.loads(args.json.read_text(encoding="utf-8"))["specs"]
        done = {r["name"] for r in previous}
        names = [name for name in names if name not in done]
    records = run_specs(names, args.jobs, args.timeout, args.json, previous)
    print_report({"environment": environment(), "specs": records})
    return 0


def print_report(data: Dict[str, Any]) -> None:
    """The table of the specs that break, the totals and the skipped specs."""
    env, records = data["environment"], data["specs"]
    print(f"\nSurvey of transformers {env['transformers']} families, torch {env['torch']}, "
          f"Python {env['python']}, {env['cpu_cores']} CPU cores; eager backend\n")
    print(markdown_table(records))
    print()
    print(totals_line(totals(records)))
    skipped = skip_summary(records)
    if skipped:
        print("\nSkipped (reason: specs):\n" + skipped)


if __name__ == "__main__":
    sys.exit(main())
