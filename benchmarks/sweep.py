"""The refactoring sweep: ``graphmend.FixAll`` over a copy of all of transformers, then Table 2.

    python benchmarks/sweep.py                 # the 24 rows of Table 2
    python benchmarks/sweep.py --all --json sweep.json
    python benchmarks/sweep.py --rows t5,layoutlmv3 --jobs 2

Users apply the codemods as a sweep over their source tree, with no configuration:
``python -m libcst.tool codemod graphmend.FixAll transformers/``. This script does exactly that
on a copy of the installed transformers (nothing installed is modified), then runs every Table 2
row twice, each in a fresh process with the counting backend (``families.probe_in_subprocess``:
one compiled call under ``torch.no_grad()``): once with the installed package and once with the
swept copy first on ``sys.path``. It prints the graphs and break events of both, and the totals
of breaks (graphs less one, as in ``benchmarks/table2.py``) and of break events. They compare with
``benchmarks/table2.py``, which fixes only the files each row names, through ``graphmend verify
--fix``; behaviour is compared there, not here.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from families import probe_in_subprocess  # noqa: E402
from table2 import ROWS, Row, add_row_arguments, environment, row_names  # noqa: E402


def sweep(destination: Path, jobs: int) -> Dict[str, Any]:
    """Copy transformers to ``destination`` and run the codemod over the copy; its summary."""
    import transformers

    package = destination / "transformers"
    destination.mkdir(parents=True, exist_ok=True)
    shutil.copytree(Path(transformers.__file__).parent, package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "libcst.tool", "codemod", "graphmend.FixAll", "--hide-progress",
         "-j", str(jobs), str(package)],
        cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "GRAPHMEND_CACHE_DIR": str(destination / "cache")},
    )
    if done.returncode != 0:
        raise SystemExit(f"sweep.py: the codemod failed:\n{done.stderr[-2000:]}")
    summary = [line.strip() for line in done.stderr.splitlines() if line.startswith(" - ")]
    return {"seconds": round(time.perf_counter() - started, 1), "summary": summary}


def measure(row: Row, swept: Optional[Path]) -> Dict[str, Any]:
    """One arm of one row in a fresh process (``families.probe_in_subprocess``; ``swept``: the
    copy first on the path, checked by the files the eager calls ran)."""
    environment = {"PYTHONPATH": os.pathsep.join([str(swept), str(ROOT)])} if swept else {}
    result = probe_in_subprocess(row.name, row.entry_spec, environment, timeout=1800)
    if result.error or result.compiled_error:
        return {"error": [result.error or result.compiled_error or ""]}
    package = os.path.realpath(swept / "transformers") if swept else None
    if package and not all(path.startswith(package) for path in result.executed):
        return {"error": [f"did not import transformers from {package}"]}
    return {
        "graphs": result.graphs,
        "breaks": result.events,
        "sites": [f"{Path(site.file).name}:{site.line} {site.gb_id} x{site.events}"
                  for site in result.sites],
    }


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_row_arguments(parser)
    parser.add_argument("--jobs", type=int, default=2, help="codemod jobs and rows at once")
    parser.add_argument("--json", type=Path, help="write the results to this JSON file")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="sweep into DIR and keep it; a DIR swept before is reused")
    args = parser.parse_args(argv)
    names = row_names(parser, args) or [r.name for r in ROWS if not r.extra]
    rows = [r for r in ROWS if r.name in names]
    with tempfile.TemporaryDirectory(prefix="graphmend-sweep-") as temporary:
        folder = (args.keep or Path(temporary)).resolve()
        codemod: Dict[str, Any] = {"reused": str(folder)}
        if not (folder / "transformers").is_dir():
            print(f"sweeping a copy of transformers with graphmend.FixAll (-j {args.jobs}) ...",
                  file=sys.stderr)
            codemod = sweep(folder, args.jobs)
            print(f"  done in {codemod['seconds']} s: {'; '.join(codemod['summary'])}",
                  file=sys.stderr)
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            before = list(pool.map(lambda r: measure(r, None), rows))
            after = list(pool.map(lambda r: measure(r, folder), rows))
    results = [
        {"row": r.name, "dtype": r.dtype, "original": b, "swept": a}
        for r, b, a in zip(rows, before, after)
    ]
    print("| row | graphs (break events) original | graphs (break events) swept |\n|---|---|---|")
    for result in results:
        cells = [_cell(result["original"]), _cell(result["swept"])]
        print(f"| {result['row']} ({result['dtype']}) | {cells[0]} | {cells[1]} |")
    counted = [r for r in results if "error" not in r["original"] and "error" not in r["swept"]]
    totals = {}
    for name, count in (("breaks", lambda arm: arm["graphs"] - 1), ("events", _events)):
        before, after = (sum(count(r[arm]) for r in counted) for arm in ("original", "swept"))
        removed = 100 * (before - after) / before if before else 0.0
        totals[name] = {"before": before, "after": after, "removed": round(removed, 1)}
        print(f"{name} over {len(counted)} rows: {before} -> {after} ({removed:.1f} % removed)")
    print(f"rows that failed: {len(results) - len(counted)}")
    if args.json:
        args.json.write_text(json.dumps(
            {"environment": environment(), "codemod": codemod, "rows": results,
             "totals": totals},
            indent=2,
        ))
    return 0 if len(counted) == len(results) else 1


def _events(arm: Dict[str, Any]) -> int:
    return int(arm["breaks"])


def _cell(arm: Dict[str, Any]) -> str:
    if "error" in arm:
        return "error: " + " ".join(arm["error"])[:80]
    return f"{arm['graphs']} ({arm['breaks']})"


if __name__ == "__main__":
    sys.exit(main())
