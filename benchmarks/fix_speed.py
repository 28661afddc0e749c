#!/usr/bin/env python3
"""Fix speed: what ``graphmend.FixAll`` costs compared with libcst's own no-op codemod.

Both run in this process, on the same files, through ``libcst.codemod.transform_module``
(what ``python -m libcst.tool codemod -j 1 --no-format`` does for each file, without the
process pool and the file writes): ``noop`` is libcst's ``NOOPCommand`` (parse the module,
visit nothing, render it), ``fixall`` is ``graphmend.FixAll`` (parse, analyse, plan, rewrite
the fixable sites in one pass, render). Files are the ``models/`` tree of the installed
transformers (or ``--path``), evenly sampled with ``--files``. The two alternate within each
round, their order rotating, and the median CPU time of the rounds is reported.

The goal (issue "The house"): ``fixall / noop`` at most 1.5.

    python benchmarks/fix_speed.py                  # 60 modeling files, 3 rounds
    python benchmarks/fix_speed.py --files 0        # every file of the tree
    python benchmarks/fix_speed.py --path src/ --rounds 5 --json out.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lint_speed import collect_files, default_models_path  # noqa: E402

GOAL = 1.5


def modeling_files(paths: List[Path], limit: int) -> List[str]:
    """``modeling_*.py`` files under ``paths`` (every ``.py`` file for an explicit path)."""
    if paths:
        return collect_files(paths, limit or None)
    files = [f for f in collect_files([default_models_path()], None) if "/modeling_" in f]
    if limit and len(files) > limit:
        step = len(files) / limit
        files = [files[int(i * step)] for i in range(limit)]
    return files


def run_command(make: Callable[[str], object], sources: Dict[str, str]) -> Dict[str, int]:
    """Run the codemod ``make(filename)`` over ``sources``; counts of libcst's outcomes."""
    from libcst.codemod import transform_module

    outcomes: Dict[str, int] = {}
    for name, source in sources.items():
        kind = type(transform_module(make(name), source)).__name__  # type: ignore[arg-type]
        outcomes[kind] = outcomes.get(kind, 0) + 1
    return outcomes


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", type=Path, action="append", default=[])
    parser.add_argument("--files", type=int, default=60, help="sample size (0: every file)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    from libcst.codemod import CodemodContext
    from libcst.codemod.commands.noop import NOOPCommand

    from fixers.fix_all import FixAll

    files = modeling_files(args.path, args.files)
    if not files:
        sys.exit("no Python files found")
    sources = {name: Path(name).read_text(encoding="utf-8-sig") for name in files}
    commands: Dict[str, Callable[[str], object]] = {
        "noop": lambda name: NOOPCommand(CodemodContext(filename=name)),
        "fixall": lambda name: FixAll(CodemodContext(filename=name)),
    }
    times: Dict[str, List[float]] = {name: [] for name in commands}
    outcomes: Dict[str, Dict[str, int]] = {}
    order = list(commands)
    for round_number in range(args.rounds):
        for name in order[round_number % 2:] + order[: round_number % 2]:
            start = time.process_time()
            outcomes[name] = run_command(commands[name], sources)
            times[name].append(time.process_time() - start)
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratio = medians["fixall"] / medians["noop"]
    lines = sum(source.count("\n") for source in sources.values())
    print(f"{len(files)} files, {lines} lines, {args.rounds} rounds (CPU seconds, median)")
    for name in commands:
        spread = f"{min(times[name]):.2f}-{max(times[name]):.2f}"
        print(f"  {name:7} {medians[name]:7.2f} s  (rounds {spread})  {outcomes[name]}")
    verdict = "ok" if ratio <= GOAL else "over the goal"
    print(f"fixall / noop = {ratio:.2f} (goal <= {GOAL}: {verdict})")
    if args.json:
        figures = {
            "files": len(files), "lines": lines, "rounds": args.rounds, "seconds": times,
            "median": medians, "ratio": ratio, "goal": GOAL, "outcomes": outcomes,
            "python": platform.python_version(),
        }
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
