"""``graphmend demo``: the whole job on the bundled examples, in a temporary folder.

For each model in ``examples/``: lint it, show the fix as a diff, then verify original against
fixed (each arm in its own process, counting backend) and print one before/after table, with
the runner's behaviour verdict (the fixed code, compiled and eager, against the eager original).
The examples in the checkout are never modified.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import List, Tuple

from .engine import analyze_file

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _rule(width: int = 100) -> str:
    return "-" * width


def run_demo(args: argparse.Namespace) -> int:
    from fixers.apply import fix_paths

    from .verify.entry import parse_entry
    from .verify.errors import VerifyError
    from .verify.report import behaviour_summary, problems
    from .verify.runner import VerifyOptions, verify

    examples = sorted(p for p in EXAMPLES.glob("*.py") if p.name != "__init__.py")
    if not examples:
        print(f"graphmend demo: error: no examples in {EXAMPLES}", file=sys.stderr)
        return 2
    keep = getattr(args, "keep", None)
    if keep is not None and keep.exists():
        print(f"graphmend demo: error: {keep} already exists; name a new folder", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="graphmend-demo-")) if keep is None else keep
    scratch.mkdir(parents=True, exist_ok=True)
    rows: List[Tuple[str, ...]] = []
    failed = []
    try:
        for example in examples:
            copy = scratch / example.name
            shutil.copyfile(example, copy)
            print(_rule())
            print(f"{example.name}: lint (flake8 --select GM)")
            findings = analyze_file(copy)
            for finding in findings:
                print(f"  {example.name}:{finding.line}:{finding.col + 1}: {finding.text}")
            (outcome,) = fix_paths([copy], diff=True)
            print(f"{example.name}: fix (graphmend.FixAll), {outcome.fixed} site(s)")
            sys.stdout.write("".join("  " + line for line in outcome.diff.splitlines(True)))
            print(f"{example.name}: verify original against fixed")
            sys.stdout.flush()
            try:
                options = VerifyOptions(entry=parse_entry(f"{copy}:build"), repeat=5)
                verification = verify(options, progress=sys.stderr)
            except VerifyError as error:
                failed.append(f"{example.name}: {error}")
                continue
            original, fixed = verification.original, verification.fixed
            found = problems(verification)
            if found:
                failed.append(f"{example.name}: {'; '.join(found)}")
            remaining = sorted({f"{s.gb_id}" for s in fixed.break_sites}) if fixed else []
            rows.append(
                (
                    example.name,
                    str(len(findings)),
                    str(outcome.fixed),
                    f"{original.graphs} -> {fixed.graphs if fixed else '?'}",
                    f"{original.breaks} -> {fixed.breaks if fixed else '?'}",
                    "yes" if fixed and fixed.comparison and fixed.comparison.equal else "NO",
                    behaviour_summary(fixed.behaviour) if fixed else "?",
                    "yes" if fixed and not fixed.fullgraph_error else "no",
                    ", ".join(remaining) or "-",
                )
            )
    finally:
        if keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    header = (
        "example",
        "findings",
        "fixed",
        "graphs",
        "break events",
        "outputs equal",
        "behaviour equal",
        "fullgraph",
        "left (GB ids)",
    )
    widths = [max(len(row[i]) for row in rows + [header]) for i in range(len(header))]
    print(_rule())
    for row in [header] + rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)))
    if keep is not None:
        print(f"\nfixed copies kept in {keep}")
    for failure in failed:
        print(f"graphmend demo: FAILED: {failure}", file=sys.stderr)
    return 1 if failed else 0
