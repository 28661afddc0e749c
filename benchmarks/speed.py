"""What the fix buys: compile time, cold start and steady state of every Table 2 row, both arms.

For each row of ``benchmarks/table2.py`` (the same rows, ``--quick``, ``--rows``, ``--all``), the
row's transformers modules are rewritten once as ``graphmend verify --fix`` rewrites them
(``verify.overlay.build_overlay``), and then each repetition runs the original and the fixed arm
once each, in turn, the arm that goes first alternating from one repetition to the next. Every
measurement is a fresh process (``benchmarks/speed_arm.py``) that loads the workload as the
runner's arms do (``verify._arm.prepare``: the fixed arm imports the rewritten copies through
the overlay finder, both arms get the original arm's weights and inputs) and times eager calls,
the first compiled call and warm compiled calls with Inductor (CPU by default; on a GPU
``--device cuda --mode reduce-overhead`` for CUDA graphs, timings synchronised). The first
repetition also counts graphs and break events with the runner's counting probe, and checks the
outputs across the arms: the fixed arm's eager and first compiled outputs against the original
arm's, bit for bit (the largest difference shown where they differ).

    python benchmarks/speed.py                          # 24 rows x 5 repetitions (hours on CPU)
    python benchmarks/speed.py --quick --threads 1 --json speed.json   # 1 thread: shared machine
    python benchmarks/speed.py --rows t5 --repeat 1 --eager-calls 3 --warm-calls 5
    python benchmarks/speed.py --device cuda --mode reduce-overhead --markdown
    python benchmarks/speed.py --device cuda --mode reduce-overhead --jobs 4   # 4 rows at once
    python benchmarks/speed.py --grad                   # training: forward and backward

Cold is cold: every process gets new, empty ``TORCHINDUCTOR_CACHE_DIR`` and ``TRITON_CACHE_DIR``
folders, and ``TORCHINDUCTOR_FORCE_DISABLE_CACHES=1`` (torch 2.13's
``torch.compiler.config.force_disable_caches``: the FX graph cache, the AOT autograd cache,
their remote variants and the autotune caches, local and remote), ``TORCHINDUCTOR_FX_GRAPH_CACHE=0``
and ``TORCHINDUCTOR_AUTOGRAD_CACHE=0`` are set. Python's own bytecode caches stay (they are the
same for both arms).

What a process measures (seconds in the JSON, per arm and repetition):

- eager: median of ``--eager-calls`` warm eager calls (reference);
- compile: wall time of the first compiled call (Dynamo tracing, Inductor compiling, the first
  run); Dynamo's own count of compile time within it (``calculate_time_spent``) is kept too;
- cold: the first compiled call minus Dynamo's compile time in it (the paper artifact's
  "compile-excluded" cold start: guards, graph-break glue, first-run costs, CUDA-graph warm-up);
- second: the second compiled call. With ``reduce-overhead`` CUDA graphs are recorded there
  (cudagraph trees run a function once to warm up and record it on the next call): the window
  the paper's Table 2 calls cold start (its traces start after a compile and one warm-up call);
- warm: median (and range) of ``--warm-calls`` compiled calls after two untimed ones.

``--grad`` builds the models for training (``GRAPHMEND_TABLE2_TRAINING=1``, as ``table2.py
--grad``) and makes every call a forward call followed by a backward pass.

``--jobs N`` measures N rows at once (each row's processes still one after the other). The rows
then share the machine: for a GPU box with many cores, where a row's processes leave most of it
idle; the timings carry the other rows' load, the same for both arms of a row on average.

Statistics. Per arm, the repetitions' values are shown as median [min-max]. The ratio
original/fixed of compile, cold and warm is the Hodges-Lehmann estimate (the median of the
log-ratios of every original value to every fixed value) with the distribution-free 95 %
interval of the Mann-Whitney test (exact, at least 95 %; it needs 4 repetitions or more, else
no interval). A ratio above 1 means the fixed arm is faster. "fixed not slower at 95 %" is
"no: <metrics>" when, for one of compile, cold and warm, the whole interval lies below 1 (the
fixed arm is slower at 95 %), "yes" when no interval does (faster ones named: their interval
lies above 1), "n/a" without intervals. A "yes" only says that no slow-down was shown; the width
of the interval says how much that is worth.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import json
import math
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from table2 import (  # noqa: E402
    ROWS_BY_NAME,
    TRAINING_ENVIRONMENT,
    Row,
    add_row_arguments,
    environment,
    row_names,
)

from flake8_graphmend.verify._arm import FIXED, ORIGINAL, ArmSpec  # noqa: E402
from flake8_graphmend.verify.entry import parse_entry  # noqa: E402
from flake8_graphmend.verify.errors import VerifyError  # noqa: E402
from flake8_graphmend.verify.overlay import build_overlay, resolve_target  # noqa: E402
from flake8_graphmend.verify.runner import run_worker  # noqa: E402

WORKER = HERE / "speed_arm.py"
LEVEL = 0.95
RATIOS = {"compile": "compile_s", "cold": "cold_s", "second": "second_s", "warm": "warm_s"}
"""The ratios original/fixed, by name, and the per-process value each is computed from."""
PER_ARM = ("compile_s", "cold_s", "second_s", "warm_s", "eager_s")
COLD_CACHES = {
    "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1",
    "TORCHINDUCTOR_FX_GRAPH_CACHE": "0",
    "TORCHINDUCTOR_AUTOGRAD_CACHE": "0",
}
"""Set in every timed process, besides its own empty cache folders (see the module docstring)."""


@dataclass(frozen=True)
class Settings:
    """How each row is measured (the command-line options)."""

    repeat: int = 5
    eager_calls: int = 10
    warm_calls: int = 20
    device: str = "cpu"
    mode: Optional[str] = None
    grad: bool = False
    threads: Optional[int] = None  # OMP_NUM_THREADS of the timed processes (None: torch's own)
    seed: int = 0
    jobs: int = 1  # rows measured at once


def measure_row(row: Row, settings: Settings, log: TextIO) -> Dict[str, Any]:
    """Rewrite the row's modules, then time both arms ``settings.repeat`` times, interleaved.

    Returns the raw row (``samples``: per arm, one process result per repetition); the first
    failure ends the row with ``error`` set."""
    started = time.perf_counter()
    raw: Dict[str, Any] = {
        "name": row.name, "dtype": row.dtype, "fixes": None, "error": None,
        "samples": {ORIGINAL: [], FIXED: []},
    }
    with tempfile.TemporaryDirectory(prefix="graphmend-speed-") as scratch:
        work = Path(scratch)
        try:
            specs, raw["fixes"] = _arm_specs(row, settings, work)
            for repetition in range(settings.repeat):
                for role in arm_order(repetition):
                    sample = _run_process(specs[role], settings, work, probe=repetition == 0)
                    raw["samples"][role].append({**sample, "repetition": repetition})
                    log.write(f"  {row.name} repetition {repetition + 1}/{settings.repeat} "
                              f"{role}: {_sample_line(sample)}\n")
                    log.flush()
        except VerifyError as error:
            raw["error"] = str(error)
    raw["seconds"] = time.perf_counter() - started
    return raw


def arm_order(repetition: int) -> Tuple[str, str]:
    """Original first in even repetitions (the first hands its weights over), fixed in odd."""
    return (ORIGINAL, FIXED) if repetition % 2 == 0 else (FIXED, ORIGINAL)


def _arm_specs(row: Row, settings: Settings, work: Path) -> Tuple[Dict[str, ArmSpec], int]:
    """Both arms' specs, the fixed one on the rewritten copies; and the number of fixes."""
    entry = parse_entry(row.entry_spec)
    targets = [resolve_target(target) for target in row.targets]
    overlay = build_overlay(entry.path, targets, work / "overlay")
    failed = [f"{outcome.path}: {outcome.error}" for outcome in overlay.fix_outcomes
              if outcome.error]
    if failed:
        raise VerifyError("rewriting failed: " + "; ".join(failed))
    original = ArmSpec(
        role=ORIGINAL, entry_source=str(entry.path.resolve()), entry_shown=str(entry.path),
        factory=entry.factory, handover_dir=str(work), result_path="", device=settings.device,
        backend="inductor", mode=settings.mode, grad=settings.grad, seed=settings.seed,
    )
    fixed = replace(
        original, role=FIXED, entry_source=str(overlay.entry_copy), copies=overlay.copies
    )
    return {ORIGINAL: original, FIXED: fixed}, sum(o.fixed for o in overlay.fix_outcomes)


def _run_process(arm: ArmSpec, settings: Settings, work: Path, probe: bool) -> Dict[str, Any]:
    """One fresh, cold process measuring ``arm`` (``speed_arm.py``); its result."""
    with tempfile.TemporaryDirectory(prefix="process-", dir=work) as folder:
        spec = {
            "arm": asdict(arm), "result_path": str(Path(folder) / "result.json"), "probe": probe,
            "eager_calls": settings.eager_calls, "warm_calls": settings.warm_calls,
        }
        sample = run_worker(
            [str(WORKER)], spec, Path(folder) / "spec.json",
            process_environment(Path(folder), settings), f"the {arm.role} arm",
        )
    if "error" in sample:
        raise VerifyError(f"{arm.role} arm: {sample['error']}")
    return sample


def process_environment(folder: Path, settings: Settings) -> Dict[str, str]:
    """What a timed process adds to the environment: empty cache folders under ``folder``,
    Inductor's caches off, the entries' training switch (``grad``) and the thread count."""
    return {
        "TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor-cache"),
        "TRITON_CACHE_DIR": str(folder / "triton-cache"),
        **COLD_CACHES,
        **({TRAINING_ENVIRONMENT: "1"} if settings.grad else {}),
        **({"OMP_NUM_THREADS": str(settings.threads)} if settings.threads else {}),
    }


def _sample_line(sample: Dict[str, Any]) -> str:
    cold = "—" if sample["cold_s"] is None else f"{sample['cold_s'] * 1e3:.1f} ms"
    second = "" if sample.get("second_s") is None else f"2nd {sample['second_s'] * 1e3:.1f} ms, "
    return (
        f"compile {sample['compile_s']:.1f} s, cold {cold}, {second}"
        f"warm {statistics.median(sample['warm_s']) * 1e3:.3f} ms, "
        f"eager {statistics.median(sample['eager_s']) * 1e3:.3f} ms"
    )


# Statistics ---------------------------------------------------------------------------------


def per_process(samples: Sequence[Dict[str, Any]], key: str) -> List[float]:
    """Each process's value of ``key`` (the median where it timed several calls); None left out."""
    values = [sample.get(key) for sample in samples]
    return [statistics.median(v) if isinstance(v, list) else v for v in values if v is not None]


def spread(values: Sequence[float]) -> Optional[Dict[str, float]]:
    """Median, min and max (None for no values)."""
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


@functools.lru_cache(maxsize=None)
def u_counts(m: int, n: int) -> Tuple[int, ...]:
    """How many of the orderings of m and n values give each Mann-Whitney U, from 0 to m*n."""
    if m == 0 or n == 0:
        return (1,)
    counts = [0] * (m * n + 1)
    for u, count in enumerate(u_counts(m - 1, n)):
        counts[u + n] += count
    for u, count in enumerate(u_counts(m, n - 1)):
        counts[u] += count
    return tuple(counts)


def ratio_interval(
    original: Sequence[float], fixed: Sequence[float], level: float = LEVEL
) -> Optional[Dict[str, Any]]:
    """original/fixed: the Hodges-Lehmann estimate and the exact Mann-Whitney interval of at least
    ``level`` (low and high None when the samples are too small for it); None without data."""
    if not original or not fixed or min([*original, *fixed]) <= 0:
        return None
    logs = sorted(math.log(o) - math.log(f) for o in original for f in fixed)
    counts = u_counts(len(original), len(fixed))
    tail, depth = 0.0, 0  # depth: differences left out at each end; tail: P(U < depth)
    for count in counts:
        if tail + count / sum(counts) > (1 - level) / 2:
            break
        tail, depth = tail + count / sum(counts), depth + 1
    interval = (math.exp(logs[depth - 1]), math.exp(logs[-depth])) if depth else (None, None)
    return {
        "estimate": math.exp(statistics.median(logs)),
        "low": interval[0],
        "high": interval[1],
        "coverage": 1 - 2 * tail if depth else None,
    }


def verdict(ratios: Dict[str, Optional[Dict[str, Any]]]) -> str:
    """"fixed not slower at 95 %" (see the module docstring); metrics without data (None: not
    measured by either arm) are left out."""
    measured = {name: r for name, r in ratios.items() if r is not None}
    bounded = {name: r for name, r in measured.items() if r["high"] is not None}
    slower = [name for name, r in bounded.items() if r["high"] < 1]
    if slower:
        return "no: " + ", ".join(slower)
    if not measured or len(bounded) < len(measured):
        return "n/a"
    faster = [name for name, r in bounded.items() if r["low"] > 1]
    return "yes" + (f" (faster: {', '.join(faster)})" if faster else "")


def row_json(raw: Dict[str, Any]) -> Dict[str, Any]:
    """A raw row (``measure_row``) with each arm's spreads, the ratios and the verdict."""
    arms = {}
    for role, samples in raw["samples"].items():
        probed = [s for s in samples if s.get("graphs") is not None]
        arms[role] = {
            "graphs": probed[0]["graphs"] if probed else None,
            "break_events": probed[0]["break_events"] if probed else None,
            **{key: spread(per_process(samples, key)) for key in PER_ARM},
            "samples": samples,
        }
    ratios = {
        name: ratio_interval(
            per_process(raw["samples"][ORIGINAL], key), per_process(raw["samples"][FIXED], key)
        )
        for name, key in RATIOS.items()
    }
    checked = [s["outputs"] for s in raw["samples"][FIXED] if s.get("outputs")]
    return {**{k: v for k, v in raw.items() if k != "samples"}, "arms": arms, "ratios": ratios,
            "outputs": checked[0] if checked else None, "verdict": verdict(ratios)}


def summary(rows: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Over the rows: the compile-time ratios' median and spread, and the verdicts; and over the
    rows whose fixed arm has fewer graphs (``fewer_graphs``), the mean, median and range of
    each ratio (the paper's cold-start claim is a mean over the rows it fixed)."""
    ratios = [r["ratios"]["compile"]["estimate"] for r in rows if r["ratios"]["compile"]]
    compile_ratio: Dict[str, Any] = spread(ratios) or {}
    if ratios:
        quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
        compile_ratio.update(q1=quartiles[0], q3=quartiles[2])
    fixed_rows = [r for r in rows if _fewer_graphs(r)]
    fewer_graphs: Dict[str, Any] = {"rows": len(fixed_rows)}
    for name in RATIOS:
        estimates = [r["ratios"][name]["estimate"] for r in fixed_rows if r["ratios"][name]]
        if estimates:
            fewer_graphs[name] = {**(spread(estimates) or {}), "mean": statistics.mean(estimates)}
    return {
        "rows": len(rows),
        "compile_ratio": compile_ratio,
        "fewer_graphs": fewer_graphs,
        "not_slower": sum(1 for r in rows if r["verdict"].startswith("yes")),
        "slower": sum(1 for r in rows if r["verdict"].startswith("no")),
    }


def _fewer_graphs(row: Dict[str, Any]) -> bool:
    original, fixed = (row["arms"][role]["graphs"] for role in (ORIGINAL, FIXED))
    return original is not None and fixed is not None and fixed < original


# Rendering ----------------------------------------------------------------------------------

HEADERS = (
    "model", "graphs (break events)", "compile s orig", "compile s fixed", "compile ratio",
    "cold ms orig", "cold ms fixed", "cold ratio", "2nd call ms orig", "2nd call ms fixed",
    "2nd call ratio", "warm ms orig", "warm ms fixed",
    "warm ratio", "eager ms orig / fixed", "outputs equal eager / compiled",
    "fixed not slower at 95 %",
)


def table_cells(rows: Sequence[Dict[str, Any]]) -> List[List[str]]:
    """One list of cells per row, in ``HEADERS``' order."""
    return [_cells(row) for row in rows]


def _cells(row: Dict[str, Any]) -> List[str]:
    original, fixed = row["arms"][ORIGINAL], row["arms"][FIXED]
    cells = [f"{row['name']} ({row['dtype']})", f"{_graphs(original)} → {_graphs(fixed)}"]
    metrics = (("compile", 1.0, 1), ("cold", 1e3, 1), ("second", 1e3, 1), ("warm", 1e3, 3))
    for name, scale, digits in metrics:
        key = RATIOS[name]
        cells += [_spread_cell(original.get(key), scale, digits),
                  _spread_cell(fixed.get(key), scale, digits), _ratio_cell(row["ratios"][name])]
    eager = [_spread_cell(arm["eager_s"], 1e3, 3, bare=True) for arm in (original, fixed)]
    error = f"; error: {row['error']}" if row["error"] else ""
    return cells + [" / ".join(eager), _outputs_cell(row.get("outputs")), row["verdict"] + error]


def _outputs_cell(outputs: Optional[Dict[str, Any]]) -> str:
    """``yes / yes``; where the compiled outputs differ, their largest difference."""
    if outputs is None:
        return "—"
    compiled = "yes"
    if not outputs["compiled_equal"]:
        gap = outputs["compiled_max_abs_diff"]
        compiled = "no" if gap is None else f"max diff {gap:.2g}"
    return f"{'yes' if outputs['eager_equal'] else 'no'} / {compiled}"


def _graphs(arm: Dict[str, Any]) -> str:
    return "—" if arm["graphs"] is None else f"{arm['graphs']} ({arm['break_events']})"


def _spread_cell(
    values: Optional[Dict[str, float]], scale: float, digits: int, bare: bool = False
) -> str:
    if values is None:
        return "—"
    median = f"{values['median'] * scale:.{digits}f}"
    if bare or values["n"] == 1:
        return median
    return f"{median} [{values['min'] * scale:.{digits}f}-{values['max'] * scale:.{digits}f}]"


def _ratio_cell(ratio: Optional[Dict[str, Any]]) -> str:
    if ratio is None:
        return "—"
    cell = f"{ratio['estimate']:.2f}x"
    if ratio["low"] is None:
        return cell
    cell += f" [{ratio['low']:.2f}-{ratio['high']:.2f}]"
    return f"**{cell}**" if ratio["low"] > 1 or ratio["high"] < 1 else cell


def markdown_table(rows: Sequence[Dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    return "\n".join(lines + ["| " + " | ".join(cells) + " |" for cells in table_cells(rows)])


def text_table(rows: Sequence[Dict[str, Any]]) -> str:
    """The table in aligned columns."""
    lines = [list(HEADERS), *table_cells(rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADERS))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip()
                     for line in lines)


def summary_line(totals: Dict[str, Any]) -> str:
    ratio = totals["compile_ratio"]
    if "median" not in ratio:
        return f"Summary: {totals['rows']} rows, no compile-time ratio measured."
    line = (
        f"Summary: compile time original/fixed over {ratio['n']} rows: median "
        f"{ratio['median']:.2f}x (quartiles {ratio['q1']:.2f}-{ratio['q3']:.2f}x, range "
        f"{ratio['min']:.2f}-{ratio['max']:.2f}x); fixed not slower at 95 % on "
        f"{totals['not_slower']}, slower on {totals['slower']} of {totals['rows']} rows."
    )
    fewer = totals.get("fewer_graphs") or {}
    means = [f"{name} mean {fewer[name]['mean']:.2f}x (median {fewer[name]['median']:.2f}x, "
             f"range {fewer[name]['min']:.2f}-{fewer[name]['max']:.2f}x)"
             for name in RATIOS if name in fewer]
    if means:
        line += (f"\nOver the {fewer['rows']} rows with fewer graphs after the fix, "
                 f"original/fixed: {'; '.join(means)}.")
    return line


def speed_environment(rows: Sequence[Dict[str, Any]]) -> Dict[str, str]:
    """``table2.environment()`` with the CPU model, and threads and device of a timed process."""
    samples = [s for r in rows for arm in r["arms"].values() for s in arm["samples"]]
    return {
        **environment(),
        "cpu_model": _cpu_model(),
        "torch_threads": str(samples[0]["threads"]) if samples else "?",
        "device": samples[0]["device"] if samples else "?",
        "device_name": samples[0]["device_name"] if samples else "",
    }


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return platform.processor()
    names = [line.split(":", 1)[1].strip() for line in text.splitlines()
             if line.startswith("model name")]
    return names[0] if names else platform.processor()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_row_arguments(parser)
    parser.add_argument("--repeat", type=int, default=5, help="repetitions per arm (default 5)")
    parser.add_argument("--eager-calls", type=int, default=10, help="timed eager calls")
    parser.add_argument("--warm-calls", type=int, default=20, help="timed warm compiled calls")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--mode", help="torch.compile mode (reduce-overhead: CUDA graphs)")
    parser.add_argument("--grad", action="store_true", help="training: forward and backward")
    parser.add_argument(
        "--threads", type=int,
        help="OMP_NUM_THREADS of the timed processes (default: torch's, one per core); "
        "on a loaded machine 1 keeps threads from waiting for each other",
    )
    parser.add_argument(
        "--jobs", type=int, default=1,
        help="rows measured at once (default 1; more share the machine, see the docstring)",
    )
    parser.add_argument("--json", type=Path, help="write everything to this JSON file")
    parser.add_argument("--markdown", action="store_true", help="print the docs' table")
    parser.add_argument(
        "--report", type=Path, action="append", metavar="JSON",
        help="measure nothing: print the table of these --json files (repeatable; a row's "
        "samples from several files are pooled), with today's statistics",
    )
    args = parser.parse_args(argv)
    if args.report:
        try:
            rows = report_rows(args.report)
        except (OSError, ValueError, KeyError) as error:
            parser.error(f"--report: {error}")
        print_tables(rows, args.markdown)
        return 0
    names = row_names(parser, args)
    if names is None:
        return 0
    if min(args.repeat, args.eager_calls, args.warm_calls, args.jobs) < 1:
        parser.error("--repeat, --eager-calls, --warm-calls and --jobs must be at least 1")
    settings = Settings(args.repeat, args.eager_calls, args.warm_calls, args.device, args.mode,
                        args.grad, args.threads, jobs=args.jobs)

    started = time.perf_counter()
    done: Dict[str, Dict[str, Any]] = {}

    def measure(index: int, name: str) -> Tuple[str, Dict[str, Any]]:
        sys.stderr.write(f"[{index + 1}/{len(names)} {time.perf_counter() - started:6.0f} s] "
                         f"{name}\n")
        return name, row_json(measure_row(ROWS_BY_NAME[name], settings, sys.stderr))

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(measure, index, name) for index, name in enumerate(names)]
        for future in concurrent.futures.as_completed(futures):
            name, row = future.result()
            done[name] = row
            if args.json:  # after every row: a long run keeps what it measured
                rows = [done[n] for n in names if n in done]
                write_json(args.json, rows, settings, time.perf_counter() - started)
    rows = [done[name] for name in names]
    print_tables(rows, args.markdown)
    return 1 if any(row["error"] for row in rows) else 0


def print_tables(rows: Sequence[Dict[str, Any]], markdown: bool) -> None:
    print(markdown_table(rows) if markdown else text_table(rows))
    print("\n" + summary_line(summary(rows)))


def report_rows(paths: Sequence[Path]) -> List[Dict[str, Any]]:
    """The rows of ``--json`` files, in their order, derived again from their samples; the
    samples of a row found in several files are pooled (its first file gives the other fields)."""
    raws: Dict[str, Dict[str, Any]] = {}
    for path in paths:
        for row in json.loads(path.read_text(encoding="utf-8"))["rows"]:
            samples = {role: row["arms"][role]["samples"] for role in (ORIGINAL, FIXED)}
            if row["name"] not in raws:
                fields = {k: v for k, v in row.items() if k not in ("arms", "ratios", "verdict")}
                raws[row["name"]] = {**fields, "samples": samples}
                continue
            for role, more in samples.items():
                raws[row["name"]]["samples"][role].extend(more)
    return [row_json(raw) for raw in raws.values()]


def write_json(path: Path, rows: List[Dict[str, Any]], settings: Settings, elapsed: float) -> None:
    """Everything: the environment, the settings, the cache variables, the summary, the rows."""
    report = {
        "environment": speed_environment(rows), "settings": asdict(settings),
        "cold_caches": COLD_CACHES, "elapsed_s": elapsed, "summary": summary(rows), "rows": rows,
    }
    path.write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
