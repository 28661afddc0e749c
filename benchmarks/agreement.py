"""Does the linter see what Dynamo breaks on? Recall and precision on transformers model runs.

For each run (the Table 2 rows of ``benchmarks/table2.py`` and the family specs of
``benchmarks/survey.py``) ``benchmarks/families.py`` records, in a fresh process, the lines its
eager calls execute in transformers' files and the graph-break sites of one compiled call (file,
line, GB id, events; the runner's ``graph_breaks`` log reader). The files involved (those with
executed lines or break sites) are then linted as a user would, in one run, with no
configuration: ``flake8 --isolated --select GM <files>`` (default scope; cross-file facts are the
ones the plugin finds among the files it is given).

Matching: a break and a finding match when the finding's line lies in the statement that holds
the break line, where a compound statement (``if``, ``for``, ``while``, ``with``, ``def``) is its
header only. That is the runner's attribution rule (``verify/attribution.py``:
``statement_span``): a multi-line ``if a and (\\n b.any()):`` or ``logger.warning_once(\\n ...)`` is
one site, whichever of its lines Dynamo reports. A finding is *executed* in a run when a line of
its statement ran eagerly in that run; runs whose compiled call raised (tapas, moonshine on
torch 2.13) count for recall only, since Dynamo stopped tracing where it raised.

- recall by events: break events at sites some finding matches / all events, summed over runs;
  recall by sites: the same over distinct file:line sites (a site counts once, however many runs
  break there);
- precision, over the distinct findings executed in at least one run: *real* when every run that
  executes it breaks there; *conditional* when not, and its message says under which static
  condition it breaks (``(only when ...)``); *real in some runs* when some runs break there and
  it says nothing; *false* when no run that executes it breaks there. Precision = (real +
  conditional) / executed findings.

Limits: the executed lines are those of eager calls, so a line that only the compiled call takes
(``if is_torchdynamo_compiling():``) is not executed here, and a line only eager takes is. Breaks
outside transformers (an entry file) are left out.

    python benchmarks/agreement.py --rows t5,bart_fp16                  # two Table 2 rows
    python benchmarks/agreement.py --survey survey.json --json agree.json  # rows + survey
    python benchmarks/agreement.py --no-rows --families bart,longt5
    python benchmarks/agreement.py --no-rows --survey agree.json   # again, lint only
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the checkout, for a run as a script

from benchmarks import families  # noqa: E402
from benchmarks.table2 import ROWS_BY_NAME, add_row_arguments, environment, row_names  # noqa: E402
from flake8_graphmend.verify.attribution import LintFailure, statement_span  # noqa: E402

#: The words a conditional finding's message carries (see the module docstring).
CONDITIONAL_NOTE = "(only when"
Location = Tuple[str, int]  # (file, line)


@dataclass(frozen=True)
class LintFinding:
    file: str
    line: int
    code: str
    message: str

    @property
    def conditional(self) -> bool:
        return CONDITIONAL_NOTE in self.message


def lint(files: Iterable[str]) -> List[LintFinding]:
    """``flake8 --isolated --select GM`` on ``files`` with this checkout's plugin, default scope,
    no configuration and no cache."""
    files = sorted(set(files))
    if not files:
        return []
    env = {**os.environ, "PYTHONPATH": str(HERE.parent), "GRAPHMEND_CACHE_DIR": ""}
    fmt = "%(path)s\t%(row)d\t%(code)s\t%(text)s"
    with tempfile.TemporaryDirectory(prefix="graphmend-agreement-") as scratch:
        done = subprocess.run(
            [sys.executable, "-m", "flake8", "--isolated", "--select", "GM", "--jobs", "1",
             f"--format={fmt}", *files],
            cwd=scratch, env=env, capture_output=True, text=True,
        )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"flake8 failed ({done.returncode}): {done.stderr[-2000:]}")
    findings = []
    for line in done.stdout.splitlines():
        path, row, code, text = line.split("\t", 3)
        findings.append(LintFinding(os.path.realpath(path), int(row), code, text))
    return findings


def span(location: Location) -> Tuple[int, int]:
    """The statement (header) lines of ``location`` (the line itself when unparsable)."""
    try:
        return statement_span(*location)
    except LintFailure:
        return location[1], location[1]


@dataclass
class Agreement:
    """The comparison of the runs' break sites and executed lines with the findings."""

    runs: List[families.ProbeResult]
    findings: List[LintFinding]
    #: per distinct break site: events (all runs), runs, GB id, the findings that match it
    sites: Dict[Location, Dict[str, Any]] = field(default_factory=dict)
    #: per executed finding: the runs that execute it and those that break there
    executed: Dict[LintFinding, Dict[str, List[str]]] = field(default_factory=dict)
    per_run: List[Dict[str, Any]] = field(default_factory=list)
    #: break sites outside this folder are left out (default: transformers' package folder)
    root: Optional[str] = None

    def compute(self) -> "Agreement":
        by_file: Dict[str, List[LintFinding]] = {}
        for finding in self.findings:
            by_file.setdefault(finding.file, []).append(finding)
        root = (self.root or families.transformers_root()) + os.sep
        for run in self.runs:
            self._add_run(run, by_file, root)
        return self

    def _add_run(
        self, run: families.ProbeResult, by_file: Dict[str, List[LintFinding]], root: str
    ) -> None:
        broken: Set[Tuple[str, int, int]] = set()  # (file, first, last) of the run's sites
        found_events = found_sites = events = 0
        for site in run.sites:
            if not site.file.startswith(root):
                continue
            first, last = span((site.file, site.line))
            broken.add((site.file, first, last))
            matches = [f for f in by_file.get(site.file, []) if first <= f.line <= last]
            entry = self.sites.setdefault(
                (site.file, site.line),
                {"events": 0, "runs": [], "gb_id": site.gb_id, "gb_type": site.gb_type,
                 "findings": sorted({f.code for f in matches})},
            )
            entry["events"] += site.events
            entry["runs"].append(run.name)
            events += site.events
            found_events += site.events if matches else 0
            found_sites += 1 if matches else 0
        executed = 0
        # a compiled call that raised stopped tracing there: what it ran afterwards is unknown
        judged = {} if run.compiled_error else run.executed
        for path, lines in judged.items():
            ran = set(lines)
            for finding in by_file.get(path, []):
                first, last = span((finding.file, finding.line))
                if not ran.intersection(range(first, last + 1)):
                    continue
                executed += 1
                record = self.executed.setdefault(finding, {"runs": [], "breaking": []})
                record["runs"].append(run.name)
                if (path, first, last) in broken:
                    record["breaking"].append(run.name)
        self.per_run.append({
            "name": run.name, "events": events, "sites": len(broken),
            "found_events": found_events, "found_sites": found_sites,
            "executed_findings": executed, "error": run.error,
        })

    def classify(self, finding: LintFinding) -> str:
        record = self.executed[finding]
        if record["breaking"] and len(set(record["breaking"])) == len(set(record["runs"])):
            return "real"
        if finding.conditional:
            return "conditional"
        return "real in some runs" if record["breaking"] else "false"

    def totals(self) -> Dict[str, Any]:
        events = sum(s["events"] for s in self.sites.values())
        found_events = sum(s["events"] for s in self.sites.values() if s["findings"])
        found_sites = sum(1 for s in self.sites.values() if s["findings"])
        classes: Dict[str, int] = {}
        for finding in self.executed:
            kind = self.classify(finding)
            classes[kind] = classes.get(kind, 0) + 1
        total = len(self.executed)
        precise = classes.get("real", 0) + classes.get("conditional", 0)
        return {
            "runs": len(self.runs),
            "runs_measured": sum(1 for r in self.runs if r.error is None),
            "events": events,
            "found_events": found_events,
            "recall_events_pct": 100.0 * found_events / events if events else None,
            "sites": len(self.sites),
            "found_sites": found_sites,
            "recall_sites_pct": 100.0 * found_sites / len(self.sites) if self.sites else None,
            "findings_linted": len(self.findings),
            "findings_executed": total,
            **{f"findings_{kind.replace(' ', '_')}": n for kind, n in sorted(classes.items())},
            "precision_pct": 100.0 * precise / total if total else None,
        }

    def misses(self) -> List[Dict[str, Any]]:
        return [
            {"file": families.short_path(file), "line": line,
             **{k: v for k, v in s.items() if k != "findings"}}
            for (file, line), s in sorted(self.sites.items(), key=lambda i: -i[1]["events"])
            if not s["findings"]
        ]

    def imprecise(self) -> List[Dict[str, Any]]:
        found = []
        for finding, record in sorted(self.executed.items(),
                                      key=lambda i: (i[0].file, i[0].line)):
            kind = self.classify(finding)
            if kind in ("false", "real in some runs"):
                found.append({
                    "file": families.short_path(finding.file), "line": finding.line,
                    "code": finding.code, "kind": kind, "message": finding.message,
                    "runs": len(set(record["runs"])), "breaking": len(set(record["breaking"])),
                    "example_run": record["runs"][0],
                })
        return found


def collect_runs(rows: List[str], family_names: List[str], jobs: int, timeout: float,
                 log: Any = sys.stderr) -> List[families.ProbeResult]:
    """Probe the Table 2 ``rows`` and the family specs ``family_names`` (``jobs`` at a time)."""
    plan: List[Tuple[str, str, Dict[str, str]]] = [
        (name, ROWS_BY_NAME[name].entry_spec, {}) for name in rows
    ]
    plan += [(name, *families.family_entry(name)) for name in family_names]
    threads = max(1, (os.cpu_count() or 1) // max(jobs, 1))
    started = time.perf_counter()
    results: List[families.ProbeResult] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(families.probe_in_subprocess, name, entry, env, timeout, threads)
                   for name, entry, env in plan]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            result = future.result()
            results.append(result)
            state = result.error or f"{result.events} break events"
            log.write(f"[{done}/{len(plan)} {time.perf_counter() - started:5.0f} s] "
                      f"{result.name}: {state}\n")
    order = {name: index for index, (name, _, _) in enumerate(plan)}
    return sorted(results, key=lambda r: order[r.name])


def saved_runs(path: Path) -> List[families.ProbeResult]:
    """The probes a ``survey.py --json`` or an ``agreement.py --json`` file holds."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if "probes" in data:
        return [families.ProbeResult.from_json(probe) for probe in data["probes"]]
    return [families.ProbeResult.from_json(spec["probe"]) for spec in data["specs"]]


def involved_files(runs: List[families.ProbeResult]) -> Set[str]:
    root = families.transformers_root() + os.sep
    files = {site.file for run in runs for site in run.sites if site.file.startswith(root)}
    return files | {path for run in runs for path in run.executed}


def _pct(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.1f} %"


def totals_line(t: Dict[str, Any]) -> str:
    classes = ", ".join(
        f"{key[len('findings_'):].replace('_', ' ')} {value}" for key, value in t.items()
        if key.startswith("findings_") and key not in ("findings_linted", "findings_executed")
    )
    return (
        f"Totals: {t['runs_measured']}/{t['runs']} runs measured; recall "
        f"{_pct(t['recall_events_pct'])} of break events ({t['found_events']}/{t['events']}), "
        f"{t['found_sites']}/{t['sites']} sites ({_pct(t['recall_sites_pct'])}); precision "
        f"{_pct(t['precision_pct'])} of {t['findings_executed']} executed findings ({classes}; "
        f"{t['findings_linted']} findings in the linted files)"
    )


def report(agreement: Agreement) -> str:
    """The per-run table, the totals, the misses and the imprecise findings (markdown)."""
    lines = ["| run | break events | sites | found events | found sites | executed findings |",
             "|---|---|---|---|---|---|"]
    for r in agreement.per_run:
        if r["error"]:
            continue
        if r["events"] or r["executed_findings"]:
            lines.append(f"| {r['name']} | {r['events']} | {r['sites']} | {r['found_events']} | "
                         f"{r['found_sites']} | {r['executed_findings']} |")
    lines += [
        "",
        totals_line(agreement.totals()),
        "",
        "Misses (break sites no finding matches):",
        "",
    ]
    lines += [f"- `{m['file']}:{m['line']}` {m['gb_id']} ×{m['events']} ({m['gb_type']}; "
              f"{len(set(m['runs']))} runs, e.g. {m['runs'][0]})" for m in agreement.misses()]
    lines += ["", "Findings on executed lines that are not breaks there:", ""]
    lines += [f"- `{f['file']}:{f['line']}` {f['code']} {f['kind']} (breaks in {f['breaking']} "
              f"of {f['runs']} runs that run it, e.g. {f['example_run']}): {f['message'][:140]}"
              for f in agreement.imprecise()]
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_row_arguments(parser)
    parser.add_argument("--no-rows", action="store_true", help="no Table 2 rows")
    parser.add_argument("--families", help="comma-separated model types to probe (fp16 twins "
                        "included), as survey.py --families")
    parser.add_argument("--survey", type=Path, action="append", default=[],
                        help="also the runs of a survey.py or agreement.py --json file "
                        "(repeatable; no model runs again)")
    parser.add_argument("--jobs", type=int, default=2, help="runs probed at once (default 2)")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per run")
    parser.add_argument("--json", type=Path, help="write the results to this JSON file")
    args = parser.parse_args(argv)

    rows = [] if args.no_rows else row_names(parser, args)
    if rows is None:  # --list
        return 0
    chosen = args.families.split(",") if args.families else []
    family_names = [spec.name for spec in families.family_specs(chosen)] if chosen else []
    started = time.perf_counter()
    runs = collect_runs(rows, family_names, args.jobs, args.timeout)
    for path in args.survey:
        runs += saved_runs(path)
    runs = list({run.name: run for run in reversed(runs)}.values())[::-1]  # a run counts once
    findings = lint(involved_files(runs))
    agreement = Agreement(runs, findings).compute()
    env = environment()
    print(f"\nAgreement on transformers {env['transformers']}, torch {env['torch']}, "
          f"Python {env['python']}; {len(runs)} runs, "
          f"{(time.perf_counter() - started) / 60:.1f} min\n")
    print(report(agreement))
    if args.json:
        args.json.write_text(json.dumps({
            "environment": env,
            "totals": agreement.totals(),
            "runs": agreement.per_run,
            "misses": agreement.misses(),
            "imprecise": agreement.imprecise(),
            "probes": [run.to_json() for run in runs],
        }, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
