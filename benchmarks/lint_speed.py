#!/usr/bin/env python3
"""Lint speed: what the GM plugin costs compared with flake8's default checks.

Runs over the ``models/`` tree of the installed transformers (or ``--path``) and
measures, in one process and on the same files:

* ``default``: flake8's default checks, pycodestyle and pyflakes (``--select E,W,F``),
  with no other plugin loaded (neither GM nor mccabe nor anything else installed);
* ``gm-flake8``: flake8 with only the GM plugin loaded (``--select GM``);
* ``gm-alone``: the plugin class itself, run over trees that flake8's file processor
  parsed beforehand (flake8 hands the plugin a parsed ``ast``, so this is the plugin's
  own cost), plus its ``parse_options``, which builds the index of calls between the
  files once per run (cold: the index cache is off in this script);
* ``default+gm`` (with ``--combined``): the default checks and the plugin together.

flake8 runs every loaded plugin whatever ``--select`` says (selection only filters
what is reported), so ``flake8 --select GM`` alone would still pay for pycodestyle and
pyflakes. This script therefore loads flake8's plugins as usual and then keeps only
the plugins whose codes the measurement selects. ``gm-flake8`` still includes flake8's
own per-file work (reading, tokenizing, splitting logical lines), which flake8 does
whichever plugins run, and its option parsing (where the GM plugin builds its index; the
default checks do almost nothing there). Everything runs with ``--isolated`` (no config
files) and ``--jobs 1``. The measurements alternate within each round, the order rotating from
round to round, and the median of the rounds is reported. Both wall-clock time and this
process's CPU time are recorded; CPU time is less disturbed by other work on the machine.

The goal: ``gm-alone / default`` at most 0.25, in CPU time.

    python benchmarks/lint_speed.py             # full transformers models/ tree, 3 rounds
    python benchmarks/lint_speed.py --quick     # 30 files, a smoke test
    python benchmarks/lint_speed.py --path src/ --rounds 5 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

GOAL = 0.25
PLUGIN_CODE = "GM"
DEFAULT_SELECT = ["E", "W", "F"]
QUICK_FILES = 30


def default_models_path() -> Path:
    try:
        import transformers
    except ImportError:
        sys.exit("transformers is not installed: pass --path, or install the 'bench' extra")
    return Path(transformers.__file__).resolve().parent / "models"


def collect_files(paths: List[Path], limit: Optional[int]) -> List[str]:
    files: List[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(p for p in path.rglob("*.py") if p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            sys.exit(f"no such file or directory: {path}")
    files = sorted(set(files))
    if limit is not None and len(files) > limit:
        # Evenly spaced over the sorted list, so the subset is the same every run and
        # spreads over the whole tree rather than its first directories.
        step = len(files) / limit
        files = [files[int(i * step)] for i in range(limit)]
    return [str(f) for f in files]


def count_lines(files: List[str]) -> int:
    total = 0
    for name in files:
        with open(name, "rb") as fh:
            total += sum(1 for _ in fh)
    return total


def load_flake8(argv: List[str]):
    """flake8's plugins and options for ``argv``, as the flake8 command would load them."""
    from flake8.options.parse_args import parse_args

    return parse_args(argv)


def restrict(plugins, entry_names: List[str]):
    """``plugins`` with only the checker plugins registered under ``entry_names``.

    The entry point name is the code prefix: ``E`` and ``W`` (pycodestyle), ``F``
    (pyflakes), ``C90`` (mccabe), ``GM`` (this project), plus any other installed plugin.
    """
    from flake8.plugins.finder import Checkers

    keep = set(entry_names)
    c = plugins.checkers
    return plugins._replace(
        checkers=Checkers(
            tree=[p for p in c.tree if p.entry_name in keep],
            logical_line=[p for p in c.logical_line if p.entry_name in keep],
            physical_line=[p for p in c.physical_line if p.entry_name in keep],
        )
    )


def gm_plugin(plugins):
    """The loaded GM plugin, or None when flake8 does not find it."""
    for p in plugins.checkers.tree:
        if p.entry_name == PLUGIN_CODE:
            return p
    return None


def flake8_argv(select: List[str], extra: List[str], files: List[str]) -> List[str]:
    return [
        "--isolated", "--jobs", "1", "--exit-zero", "--output-file", os.devnull,
        "--select", ",".join(select), *extra, *files,
    ]


class Timer:
    """Wall-clock and CPU time (this process) of the code inside ``with``, added up."""

    def __init__(self):
        self.wall = self.cpu = 0.0

    def __enter__(self):
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall += time.perf_counter() - self._wall
        self.cpu += time.process_time() - self._cpu


class Flake8Run:
    """flake8 with only the plugins whose codes are selected loaded."""

    def __init__(self, name: str, select: List[str], extra: List[str], files: List[str]):
        self.name = name
        self.argv = flake8_argv(select, extra, files)
        self.select = select

    def __call__(self) -> Tuple[Timer, Dict[str, int]]:
        from flake8.main.application import Application

        app = Application()
        with Timer() as timer:  # option parsing too: the GM plugin builds its index there
            plugins, options = load_flake8(self.argv)
            app.plugins = restrict(plugins, self.select)
            app.options = options
            app.make_formatter()
            app.make_guide()
            app.make_file_checker_manager(self.argv)
            app.run_checks()
            app.report()
        if app.catastrophic_failure:
            raise RuntimeError(f"{self.name}: flake8 failed (a plugin raised, see above)")
        codes = self.select + (["E999"] if "E" in self.select else [])
        counts = {code: sum(s.count for s in app.guide.stats.statistics_for(code))
                  for code in codes}
        return timer, counts


class PluginAlone:
    """The GM checker class run directly on each file, after flake8's processor parsed it.

    Only the plugin's own work is timed: reading, tokenizing and parsing a file and building
    the plugin's keyword arguments happen before its timer starts.
    """

    name = "gm-alone"

    def __init__(self, files: List[str], extra: List[str]):
        self.files = files
        plugins, self.options = load_flake8(flake8_argv([PLUGIN_CODE], extra, files))
        self.plugin = gm_plugin(plugins)
        self.unparsable: Dict[str, str] = {}

    def parse(self, name: str):
        """``(tree, keyword arguments)`` as flake8 would pass them, or None if unparsable."""
        from flake8.processor import FileProcessor

        try:
            processor = FileProcessor(name, self.options)
            tree = processor.build_ast()
            params = ({} if self.plugin is None else
                      processor.keyword_arguments_for(self.plugin.parameters, {"tree": tree}))
        except Exception as exc:  # SyntaxError, tokenize.TokenError, decoding errors
            self.unparsable[name] = f"{type(exc).__name__}: {exc}"
            return None
        return tree, params

    def __call__(self) -> Tuple[Timer, Dict[str, int]]:
        checker_cls = self.plugin.obj
        found = 0
        timer = Timer()
        with timer:  # the index of calls between the files, built once per run
            checker_cls.parse_options(self.options)
        for name in self.files:
            parsed = self.parse(name)
            if parsed is None:
                continue
            tree, params = parsed
            with timer:
                checker = checker_cls(tree=tree, **params)
                runner = checker.run() if hasattr(checker, "run") else checker
                for _ in runner:
                    found += 1
        return timer, {PLUGIN_CODE: found}


def versions() -> Dict[str, str]:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in ("flake8", "pycodestyle", "pyflakes", "flake8-graphmend", "transformers"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def main(argv: Optional[List[str]] = None) -> int:
    os.environ["GRAPHMEND_CACHE_DIR"] = ""  # every run builds the cross-file index anew
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--path", type=Path, nargs="+",
                    help="files or directories to lint (default: transformers' models/ tree)")
    ap.add_argument("--quick", action="store_true",
                    help=f"use {QUICK_FILES} evenly spaced files only (smoke test)")
    ap.add_argument("--limit", type=int, help="use at most this many files (evenly spaced)")
    ap.add_argument("--rounds", type=int, default=3, help="repetitions; the median is reported")
    ap.add_argument("--combined", action="store_true",
                    help="also time the default checks and the plugin together")
    ap.add_argument("--flake8-args", default="",
                    help="extra flake8 arguments for every run, e.g. '--graphmend-scope=all'")
    ap.add_argument("--json", type=Path, help="write the measurements to this file")
    ap.add_argument("--check", action="store_true",
                    help=f"exit with status 1 when gm-alone/default (CPU time) exceeds {GOAL}")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")

    paths = args.path or [default_models_path()]
    limit = QUICK_FILES if args.quick else args.limit
    files = collect_files(paths, limit)
    if not files:
        sys.exit("no Python files found")
    extra = shlex.split(args.flake8_args)
    lines = count_lines(files)

    runs = [Flake8Run("default", DEFAULT_SELECT, extra, files)]
    alone = PluginAlone(files, extra)
    have_plugin = alone.plugin is not None
    if have_plugin:
        runs.append(Flake8Run("gm-flake8", [PLUGIN_CODE], extra, files))
        runs.append(alone)
        if args.combined:
            runs.append(Flake8Run("default+gm", DEFAULT_SELECT + [PLUGIN_CODE], extra, files))

    wall: Dict[str, List[float]] = {r.name: [] for r in runs}
    cpu: Dict[str, List[float]] = {r.name: [] for r in runs}
    found: Dict[str, Dict[str, int]] = {}
    for rnd in range(args.rounds):
        shift = rnd % len(runs)
        for run in runs[shift:] + runs[:shift]:
            timer, counts = run()
            wall[run.name].append(timer.wall)
            cpu[run.name].append(timer.cpu)
            found[run.name] = counts
            print(f"  round {rnd + 1}/{args.rounds}  {run.name:<11}"
                  f" wall {timer.wall:8.2f} s  cpu {timer.cpu:8.2f} s", file=sys.stderr, flush=True)

    med_wall = {name: statistics.median(ts) for name, ts in wall.items()}
    med_cpu = {name: statistics.median(ts) for name, ts in cpu.items()}
    label = {
        "default": "flake8 default checks (E,W,F only)",
        "gm-flake8": "flake8 with only the GM plugin (--select GM)",
        "gm-alone": "GM plugin alone, on pre-parsed trees",
        "default+gm": "flake8 default checks + GM plugin",
    }
    print(f"\nlint speed: {', '.join(str(p) for p in paths)}")
    print(f"files: {len(files)}  lines: {lines}  rounds: {args.rounds} (median reported)")
    print(f"unparsable (E999 in the default run; gm-alone skips them): "
          f"{found['default'].get('E999', 0)}")
    for name, why in list(alone.unparsable.items())[:10]:
        print(f"  {name}: {why}")
    print(f"versions: {', '.join(f'{k} {v}' for k, v in versions().items())}")
    print(f"\n{'measurement':<46} {'wall s':>8} {'cpu s':>8} {'lines/cpu s':>12}  findings")
    for name in wall:
        rate = f"{lines / med_cpu[name]:12.0f}" if med_cpu[name] > 0 else f"{'-':>12}"
        counts = ", ".join(f"{k} {v}" for k, v in found[name].items())
        print(f"{label[name]:<46} {med_wall[name]:8.3f} {med_cpu[name]:8.3f} {rate}  {counts}")

    result = {
        "paths": [str(p) for p in paths], "files": len(files), "lines": lines,
        "rounds": args.rounds, "wall": wall, "cpu": cpu, "median_wall": med_wall,
        "median_cpu": med_cpu, "findings": found, "versions": versions(), "goal": GOAL,
    }
    status = 0
    if not have_plugin:
        print(f"\nThe {PLUGIN_CODE} flake8 plugin was not found (is flake8-graphmend installed?);"
              " only the default checks were measured.")
        status = 1
    else:
        def ratios(med: Dict[str, float]) -> Dict[str, float]:
            base = med["default"]
            out = {"gm-alone / default": med["gm-alone"] / base,
                   "gm-flake8 / default": med["gm-flake8"] / base}
            if "default+gm" in med:
                out["(default+gm - default) / default"] = (med["default+gm"] - base) / base
            return out

        result["ratios_cpu"], result["ratios_wall"] = ratios(med_cpu), ratios(med_wall)
        print(f"\n{'ratio':<36} {'cpu':>6} {'wall':>6}")
        for name, value in result["ratios_cpu"].items():
            print(f"{name:<36} {value:6.3f} {result['ratios_wall'][name]:6.3f}")
        verdict = "met" if result["ratios_cpu"]["gm-alone / default"] <= GOAL else "NOT met"
        print(f"goal: gm-alone / default <= {GOAL} (CPU time): {verdict}")
        if args.check and verdict != "met":
            status = 1
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
