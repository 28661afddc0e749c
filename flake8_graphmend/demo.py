"""``graphmend demo``: the whole job on the bundled examples, in a temporary folder.

For each model in ``examples/``: lint it, show the fix as a diff, then verify original against
fixed (each arm in its own process, counting backend) and print one before/after table, with
the runner's behaviour verdict (the fixed code, compiled and eager, against the eager original),
a legend of the columns and what to run next. The examples in the checkout are never modified;
``--keep DIR`` keeps the copies as run (``DIR/original``) and fixed (``DIR/fixed``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

from .engine import analyze_file

if TYPE_CHECKING:  # the runner imports torch lazily; the demo does too
    from .verify.results import ArmResult
    from .verify.runner import Verification

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

#: The table's columns and what each counts.
COLUMNS: Tuple[Tuple[str, str], ...] = (
    ("example", "the model file in examples/"),
    ("GM findings", "sites in the source that the linter reports (graphmend check)"),
    ("fixed sites", "of those, the sites graphmend fix rewrote"),
    ("graphs", "FX graphs Dynamo captured in the first compiled call, original -> fixed"),
    (
        "break events",
        "graph breaks Dynamo recorded in that call, original -> fixed. Not the same count as "
        "the findings: a site breaks each time it runs (in a loop, or reached from two places) "
        "and not at all when its branch is not taken",
    ),
    ("outputs equal", "the first compiled outputs of the two versions are bitwise equal"),
    (
        "behaviour equal",
        "values, state after each call (buffers, parameters, attributes, inputs, aliasing), "
        "exceptions, stdout, "
        "stderr, log records and warnings of the fixed code, eager and compiled, against the "
        "eager original",
    ),
    (
        "one graph",
        "yes only when the fixed code has no break events and also compiles with "
        "torch.compile(fullgraph=True)",
    ),
    ("left (GB ids)", "the PyTorch graph-break ids of the breaks that remain in the fixed code"),
)

NEXT_STEPS = (
    "next steps, on your own code: `graphmend check src/` (or `flake8 --select GM,E9 src/`) "
    "lists the break sites, `graphmend rules CODE` explains one, `graphmend fix --diff src/` "
    "shows the fixes and `graphmend fix src/` applies them; `graphmend verify model.py:build` "
    "measures graphs, breaks and behaviour on your model before and after."
)


def _rule(width: int = 100) -> str:
    return "-" * width


def one_graph(arm: Optional[ArmResult]) -> bool:
    """The fixed code compiles to one graph: no break event, and fullgraph=True runs it.

    fullgraph=True alone is not enough: on torch 2.13 it turns on scalar and dynamic-shape
    capture, so it succeeds on ``.item()`` and ``nonzero`` that break under the default config.
    """
    return arm is not None and arm.breaks == 0 and arm.fullgraph_error is None


def table_row(
    name: str, findings: int, fixed_sites: int, verification: Verification
) -> Tuple[str, ...]:
    """One row of the table, in the order of ``COLUMNS``."""
    from .verify.report import behaviour_summary

    original, fixed = verification.original, verification.fixed
    remaining = sorted({site.gb_id or "?" for site in fixed.break_sites}) if fixed else []
    return (
        name,
        str(findings),
        str(fixed_sites),
        f"{original.graphs} -> {fixed.graphs if fixed else '?'}",
        f"{original.breaks} -> {fixed.breaks if fixed else '?'}",
        "yes" if fixed and fixed.comparison and fixed.comparison.equal else "NO",
        behaviour_summary(fixed.behaviour) if fixed else "?",
        "yes" if one_graph(fixed) else "no",
        ", ".join(remaining) or "-",
    )


def render_table(rows: Sequence[Tuple[str, ...]]) -> str:
    """The rows under a header, then a legend that says what each column counts."""
    header = tuple(name for name, _ in COLUMNS)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
        for row in [header, *rows]
    ]
    lines += ["", "columns:"]
    for name, meaning in COLUMNS:
        lines += textwrap.wrap(
            f"{name}: {meaning}", 100, initial_indent="  ", subsequent_indent="      "
        )
    return "\n".join(lines) + "\n"


def relabel(diff: str, old: str, new: str) -> str:
    """``diff`` with its ``---``/``+++`` header naming ``old`` and ``new``."""
    lines = diff.splitlines(True)
    if len(lines) >= 2 and lines[0].startswith("--- ") and lines[1].startswith("+++ "):
        lines[:2] = [f"--- {old}\n", f"+++ {new}\n"]
    return "".join(lines)


def _demo_example(
    example: Path, scratch: Path, keep: Optional[Path], failed: List[str]
) -> Optional[Tuple[str, ...]]:
    """Lint, fix and verify one example; its table row, or None when verification failed."""
    from fixers.apply import fix_file

    from .verify.entry import parse_entry
    from .verify.errors import VerifyError
    from .verify.report import problems
    from .verify.runner import VerifyOptions, verify

    original, fixed_copy = scratch / "original" / example.name, scratch / "fixed" / example.name
    shutil.copyfile(example, original)
    shutil.copyfile(example, fixed_copy)
    print(_rule())
    print(f"{example.name}: lint (graphmend check, as flake8 --select GM)")
    findings = analyze_file(original)
    for finding in findings:
        print(f"  {example.name}:{finding.line}:{finding.col + 1}: {finding.text}")
    outcome = fix_file(fixed_copy)
    print(f"{example.name}: fix (graphmend fix), {outcome.fixed} site(s)")
    if keep is None:  # the copies go away: name the checkout's file, the diff applies to it
        labels = (f"a/examples/{example.name}", f"b/examples/{example.name}")
    else:
        labels = (str(original), str(fixed_copy))
    diff = relabel(outcome.diff, *labels)
    sys.stdout.write("".join("  " + line for line in diff.splitlines(True)))
    print(f"{example.name}: verify original against fixed")
    sys.stdout.flush()
    try:
        options = VerifyOptions(entry=parse_entry(f"{original}:build"), repeat=5)
        verification = verify(options, progress=sys.stderr)
    except VerifyError as error:
        failed.append(f"{example.name}: {error}")
        return None
    found = problems(verification)
    if found:
        failed.append(f"{example.name}: {'; '.join(found)}")
    return table_row(example.name, len(findings), outcome.fixed, verification)


def run_demo(args: argparse.Namespace) -> int:
    examples = sorted(p for p in EXAMPLES.glob("*.py") if p.name != "__init__.py")
    if not examples:
        print(f"graphmend demo: error: no examples in {EXAMPLES}", file=sys.stderr)
        return 2
    keep = getattr(args, "keep", None)
    if keep is not None and keep.exists():
        print(f"graphmend demo: error: {keep} already exists; name a new folder", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="graphmend-demo-")) if keep is None else keep
    for folder in (scratch / "original", scratch / "fixed"):
        folder.mkdir(parents=True, exist_ok=True)
    rows: List[Tuple[str, ...]] = []
    failed: List[str] = []
    try:
        for example in examples:
            row = _demo_example(example, scratch, keep, failed)
            if row is not None:
                rows.append(row)
    finally:
        if keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    print(_rule())
    sys.stdout.write(render_table(rows))
    if keep is not None:
        print(f"\nthe examples as run are in {keep / 'original'}, fixed in {keep / 'fixed'}")
    print("\n" + textwrap.fill(NEXT_STEPS, 100, subsequent_indent="  "))
    for failure in failed:
        print(f"graphmend demo: FAILED: {failure}", file=sys.stderr)
    return 1 if failed else 0
