"""Run the linter and graphmend.FixAll over whole real code bases and count what went wrong.

    python benchmarks/corpus_sweep.py                      # transformers and torch, all .py files
    python benchmarks/corpus_sweep.py --corpus transformers --limit 300 --jobs 2
    python benchmarks/corpus_sweep.py --scope all          # every function of a torch file

``--scope compiled`` (the default) is what a user of ``flake8 --select GM`` gets; ``--scope all``
treats every function of a torch-importing file as compiled, which gives the fixers far more
real code to rewrite (a stress test of their legality checks and of the writer).

Each corpus is copied to a temporary folder first; nothing installed is modified. Per corpus it
prints: files, lines, findings, fixable findings, files fixed, sites fixed, crashes (goal 0),
fixed files that no longer parse (goal 0), files a second fix run changes again (goal 0), files
left unfixed that are not byte-identical to the original (goal 0), unparsable inputs, and time.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from flake8_graphmend.engine import SCOPES, Options, analyze_source
from flake8_graphmend.files import (
    TOO_DEEP_TO_ANALYSE, UnreadableSource, iter_python_files, read_source,
)


@dataclass
class FileRecord:
    path: str
    lines: int = 0
    findings: int = 0
    fixable: int = 0
    unparsable_input: bool = False
    crash: Optional[str] = None
    fixed_sites: int = 0
    changed: bool = False
    output_unparsable: bool = False
    second_run_changed: bool = False
    untouched_but_different: bool = False


@dataclass
class CorpusFigures:
    name: str
    scope: str
    files: int = 0
    lines: int = 0
    findings: int = 0
    fixable: int = 0
    files_fixed: int = 0
    sites_fixed: int = 0
    crashes: int = 0
    outputs_unparsable: int = 0
    second_run_changes: int = 0
    untouched_not_identical: int = 0
    unparsable_inputs: int = 0
    seconds: float = 0.0
    problems: List[str] = field(default_factory=list)


def sweep_file(path_text: str, scope: str = "compiled") -> FileRecord:
    """Lint, fix, re-fix one file (a copy) and record every deviation from the contract."""
    from fixers.apply import fix_file

    options = Options(scope=scope)
    path = Path(path_text)
    record = FileRecord(path_text)
    original = path.read_bytes()
    findings = []
    try:
        source = read_source(path)
        record.lines = source.count("\n") + 1
        ast.parse(source)
    except (SyntaxError, ValueError, UnreadableSource, RecursionError):
        record.unparsable_input = True
    else:
        try:
            findings = analyze_source(source, path_text, options)
        except Exception as exc:  # the figure we are counting (a RecursionError too: it parsed)
            record.crash = f"lint: {type(exc).__name__}: {exc}"
            return record
    record.findings = len(findings)
    record.fixable = sum(1 for f in findings if f.fixer)
    try:
        first = fix_file(path, options=options)
    except Exception as exc:
        record.crash = f"fix: {type(exc).__name__}: {exc}"
        return record
    if first.error and not record.unparsable_input:
        if first.error.startswith("internal error") or first.error == TOO_DEEP_TO_ANALYSE:
            record.crash = f"fix: {first.error}"
    record.changed, record.fixed_sites = first.changed, first.fixed
    after = path.read_bytes()
    if record.changed:
        try:
            ast.parse(after.decode("utf-8-sig"))
        except (SyntaxError, ValueError, UnicodeDecodeError):
            record.output_unparsable = True
        second = fix_file(path, options=options)
        record.second_run_changed = second.changed
    elif after != original:
        record.untouched_but_different = True
    return record


def _copy_corpus(source: Path, target: Path) -> List[Path]:
    copied = []
    for path in iter_python_files([source]):
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
        copied.append(destination)
    return copied


def sweep(
    name: str, root: Path, jobs: int, limit: Optional[int], scope: str = "compiled"
) -> CorpusFigures:
    """Sweep every ``.py`` file under ``root`` (copied first) with ``jobs`` processes."""
    figures = CorpusFigures(name, scope)
    label = Path(name).name or "corpus"  # a folder's own name: a prefix holds no separator
    with tempfile.TemporaryDirectory(prefix=f"graphmend-sweep-{label}-") as scratch:
        files = _copy_corpus(root, Path(scratch))
        if limit:
            files = files[:limit]
        started = time.perf_counter()
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            paths = list(map(str, files))
            records = list(pool.map(sweep_file, paths, [scope] * len(paths), chunksize=8))
        figures.seconds = round(time.perf_counter() - started, 1)
    for record in records:
        figures.files += 1
        figures.lines += record.lines
        figures.findings += record.findings
        figures.fixable += record.fixable
        figures.files_fixed += record.changed
        figures.sites_fixed += record.fixed_sites
        figures.unparsable_inputs += record.unparsable_input
        for flag, label in (
            (record.crash, f"crash: {record.crash}"),
            (record.output_unparsable, "fixed output does not parse"),
            (record.second_run_changed, "second fix run changed it"),
            (record.untouched_but_different, "not fixed but not byte-identical"),
        ):
            if flag:
                figures.problems.append(f"{record.path}: {label}")
        figures.crashes += bool(record.crash)
        figures.outputs_unparsable += record.output_unparsable
        figures.second_run_changes += record.second_run_changed
        figures.untouched_not_identical += record.untouched_but_different
    return figures


def corpus_root(name: str) -> Path:
    """An installed package's source folder, or a path."""
    spec = importlib.util.find_spec(name) if "/" not in name else None
    if spec is not None and spec.origin:
        return Path(spec.origin).parent
    path = Path(name)
    if not path.is_dir():
        raise SystemExit(f"corpus_sweep: {name} is neither an installed package nor a folder")
    return path


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus", action="append",
        help="installed package or folder (default: transformers and torch)",
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--limit", type=int, help="only the first N files of each corpus")
    parser.add_argument(
        "--scope", choices=SCOPES, default="compiled", help="what counts as compiled"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    results: Dict[str, CorpusFigures] = {}
    for name in args.corpus or ["transformers", "torch"]:
        figures = sweep(name, corpus_root(name), args.jobs, args.limit, args.scope)
        results[name] = figures
        print(
            f"{name} (scope {args.scope}): {figures.files} files, {figures.lines} lines, "
            f"{figures.findings} findings ({figures.fixable} fixable), {figures.sites_fixed} "
            f"sites fixed in {figures.files_fixed} files; "
            f"crashes {figures.crashes}, outputs not parsing {figures.outputs_unparsable}, "
            f"second-run changes {figures.second_run_changes}, unfixed files not identical "
            f"{figures.untouched_not_identical}; unparsable inputs {figures.unparsable_inputs}; "
            f"{figures.seconds} s with {args.jobs} jobs"
        )
        for problem in figures.problems[:20]:
            print(f"  {problem}")
    if args.json:
        args.json.write_text(json.dumps({k: asdict(v) for k, v in results.items()}, indent=2))
    failed = any(
        f.crashes or f.outputs_unparsable or f.second_run_changes or f.untouched_not_identical
        for f in results.values()
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
