"""The ``graphmend`` command: check, fix, verify, rules, demo.

Exit codes: 0 clean, 1 findings (check) or a failed verification, 2 bad input (a path that does
not exist, a file that cannot be read or parsed, a bad option or configuration).
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Set, Tuple

from . import __version__
from .analysis.project import project_links
from .baseline import Baseline, finding_keys, path_key
from .config import ConfigError, Settings, check_entry_points, check_module_name, load_settings
from .engine import SCOPES, Options, analyze_tree, internal_error, suppressed
from .files import (
    TOO_DEEP_TO_ANALYSE, UnreadableSource, iter_python_files, parse_failure, read_source,
)
from .formats import FORMATS, Reported, unique
from .registry import RULES, RULES_BY_CODE, expand_codes

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def _add_scope_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scope", choices=SCOPES, help="what counts as compiled code (default: compiled)"
    )
    parser.add_argument(
        "--entry-points",
        metavar="NAMES",
        help=(
            "extra compiled entry points: NAME, CLASS, CLASS.METHOD or @DECORATOR, "
            "comma-separated"
        ),
    )
    parser.add_argument(
        "--compiled-modules",
        metavar="GLOBS",
        help="glob patterns of files whose every function counts as compiled",
    )
    parser.add_argument(
        "--select",
        metavar="CODES",
        help="codes or prefixes to report, comma-separated (default: GM)",
    )
    parser.add_argument(
        "--ignore", metavar="CODES", help="codes or prefixes not to report, comma-separated"
    )


def _settings(args: argparse.Namespace) -> Settings:
    """Configuration files first, then command-line flags on top."""
    settings = load_settings(Path.cwd())
    options = settings.options
    entry_points = [name.strip() for name in (args.entry_points or "").split(",") if name.strip()]
    settings.options = Options(
        scope=args.scope or options.scope,
        entry_points=check_entry_points(entry_points, "--entry-points") or options.entry_points,
        compiled_modules=(
            tuple(filter(None, (args.compiled_modules or "").split(",")))
            or options.compiled_modules
        ),
    )
    if args.select:
        settings.select = args.select.split(",")
    if args.ignore:
        settings.ignore = args.ignore.split(",")
    return settings


def _selected_codes(settings: Settings) -> List[str]:
    ignored = set(expand_codes(settings.ignore)) if settings.ignore else set()
    return [code for code in expand_codes(settings.select) if code not in ignored]


def _error(message: str) -> None:
    print(f"graphmend: error: {message}", file=sys.stderr)


def _check_file(
    path: Path, args: argparse.Namespace, options: Options, codes: Set[str]
) -> Tuple[List[Reported], Optional[str]]:
    """The findings of one file to report, or the one-line reason it was skipped."""
    try:
        source = read_source(path)
        tree = ast.parse(source, filename=str(path))
    except UnreadableSource as exc:
        return [], f"{path}: {exc}; file skipped"
    except SyntaxError as exc:
        return [], f"{path}:{exc.lineno or 0}: syntax error: {exc.msg}; file skipped"
    except (ValueError, RecursionError) as exc:  # NUL bytes, nesting too deep for the parser
        return [], f"{path}: {parse_failure(exc)}; file skipped"
    lines = source.splitlines()
    try:
        findings = analyze_tree(tree, lines, str(path), options)
    except RecursionError:
        return [], f"{path}: {TOO_DEEP_TO_ANALYSE}; file skipped"
    except Exception as exc:  # an analysis bug must not stop the other files
        return [], f"{path}: {internal_error(exc)[2]}"
    live = [
        f
        for f in findings
        if f.code in codes and (args.disable_noqa or not suppressed(f, lines))
    ]
    baseline_file = args.baseline or args.write_baseline
    if baseline_file is None:
        return [Reported(path, f) for f in live], None
    keys = finding_keys(path, baseline_file.parent, tree, lines, live)
    return [Reported(path, f, key) for f, key in zip(live, keys)], None


def _write_baseline(path: Path, results: List[Reported], status: int) -> int:
    Baseline.write(path, [r.key for r in results if r.key is not None])
    files = len({r.path for r in results})
    print(
        f"graphmend: wrote {path}: {len(results)} finding(s) in {files} file(s)", file=sys.stderr
    )
    if status != EXIT_OK:
        _error(f"{path} lacks the findings of the files skipped above")
    return status


def _new_findings(
    path: Path, baseline: Baseline, results: List[Reported], checked: Sequence[Path]
) -> List[Reported]:
    """The findings not in the baseline; says how many were in it."""
    new, matched, unmatched = baseline.split(
        [r.key for r in results if r.key is not None],
        {path_key(file, path.parent) for file in checked},
    )
    note = (
        f"; {unmatched} baseline entr{'y' if unmatched == 1 else 'ies'} matched nothing "
        f"(fixed?): rewrite the baseline with --write-baseline {path} to drop them"
        if unmatched
        else ""
    )
    print(f"graphmend: {matched} finding(s) in the baseline {path}, {len(new)} new{note}",
          file=sys.stderr)
    return [results[index] for index in new]


def run_check(args: argparse.Namespace) -> int:
    settings = _settings(args)
    codes = set(_selected_codes(settings))
    baseline = Baseline.load(args.baseline) if args.baseline else None
    results: List[Reported] = []
    status = EXIT_OK
    checked = list(iter_python_files(args.paths))
    links = project_links(checked, settings.options)
    for path in checked:
        options = settings.options.linked(links.get(os.path.realpath(path), ()))
        reported, skipped = _check_file(path, args, options, codes)
        if skipped:
            _error(skipped)
            status = EXIT_USAGE
        results += reported
    results = unique(results)
    if args.write_baseline:
        return _write_baseline(args.write_baseline, results, status)
    if baseline is not None:
        results = _new_findings(args.baseline, baseline, results, checked)
    sys.stdout.write(FORMATS[args.format](results))
    if results and status == EXIT_OK:
        status = EXIT_FINDINGS
    return status


def helpers_module_path(module: str, paths: Sequence[Path]) -> Path:
    """The file of ``module`` (``mypkg._graphmend``): under the nearest folder above one of
    ``paths`` that holds the package ``mypkg``. ConfigError when there is none."""
    top, *rest = module.split(".")
    for path in paths:
        start = path.resolve() if path.is_dir() else path.resolve().parent
        for folder in [start, *start.parents]:
            if (folder / top).is_dir():
                return folder.joinpath(top, *rest).with_suffix(".py")
    raise ConfigError(f"--helpers-module {module}: no folder `{top}` above the fixed paths")


def _write_helpers_module(target: Path, dry_run: bool) -> None:
    """Write the helpers module the fixed files import, unless it is there and up to date."""
    from fixers.helpers import helpers_module_source

    source = helpers_module_source()
    if target.is_file() and target.read_text(encoding="utf-8") == source:
        return
    if dry_run:
        print(f"graphmend: would write the helpers module {target}", file=sys.stderr)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source, encoding="utf-8")
    print(f"graphmend: wrote the helpers module {target}", file=sys.stderr)


def run_fix(args: argparse.Namespace) -> int:
    from fixers.apply import fix_paths

    settings = _settings(args)
    dry_run = args.diff or args.check
    helpers_module = (
        check_module_name(args.helpers_module, "--helpers-module")
        if args.helpers_module
        else settings.helpers_module
    )
    # found before anything is fixed, so that no file imports a module that cannot be written
    target = helpers_module_path(helpers_module, args.paths) if helpers_module else None
    outcomes = fix_paths(
        args.paths,
        options=settings.options,
        diff=dry_run,
        codes=_selected_codes(settings),
        helpers_module=helpers_module or None,
    )
    if target is not None and any(outcome.changed for outcome in outcomes):
        _write_helpers_module(target, dry_run)
    status = EXIT_OK
    changed = fixed = 0
    for outcome in outcomes:
        if outcome.error:
            _error(f"{outcome.path}: {outcome.error}; file left untouched")
            status = EXIT_USAGE
            continue
        if args.diff and outcome.diff:
            sys.stdout.write(outcome.diff)
        elif args.check and outcome.changed:
            print(f"would fix {outcome.path}: {outcome.fixed} site(s)")
        for reason in outcome.declined:
            print(f"{outcome.path}:{reason}", file=sys.stderr)
        changed += outcome.changed
        fixed += outcome.fixed
    verb = "would fix" if dry_run else "fixed"
    print(
        f"graphmend: {verb} {fixed} site(s) in {changed} of {len(outcomes)} file(s)",
        file=sys.stderr,
    )
    if args.check and changed and status == EXIT_OK:
        status = EXIT_FINDINGS
    return status


def _rules_table(codes: Sequence[str]) -> str:
    rules = [RULES_BY_CODE[code] for code in codes]
    header = ("code", "family", "name", "GB ids (PyTorch graph breaks)", "fixer (- : hint only)")
    rows = [header] + [
        (
            rule.code,
            rule.family,
            rule.name,
            ", ".join(rule.gb_ids),
            f"graphmend.{rule.fixer}" if rule.fixer else "-",
        )
        for rule in rules
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1]
        for row in rows
    ]
    lines.append("graphmend rules CODE shows one rule in full (explanation, examples, fix notes).")
    return "\n".join(lines) + "\n"


def run_rules(args: argparse.Namespace) -> int:
    from .docs import render_rule_text

    if args.docs:
        from .docs import write_docs

        written = write_docs(Path(args.docs))
        print(f"graphmend: wrote {len(written)} pages to {args.docs}", file=sys.stderr)
        return EXIT_OK
    selected = [code.strip() for code in args.codes if code.strip()]
    exact = all(code.upper() in RULES_BY_CODE for code in selected)
    codes = expand_codes(selected) if selected else [rule.code for rule in RULES]
    if selected and exact:  # named codes: each rule in full
        sys.stdout.write("\n".join(render_rule_text(RULES_BY_CODE[code]) for code in codes))
    else:  # nothing or a prefix (GM2): the table
        sys.stdout.write(_rules_table(codes))
    return EXIT_OK


def run_helpers(args: argparse.Namespace) -> int:
    from fixers.helpers import helpers_module_source

    if args.write:
        args.write.write_text(helpers_module_source(), encoding="utf-8")
        print(f"graphmend: wrote the helpers module {args.write}", file=sys.stderr)
    else:
        sys.stdout.write(helpers_module_source())
    return EXIT_OK


def run_verify(args: argparse.Namespace) -> int:
    from .verify.cli import run_verify as verify_main

    return verify_main(args)


def run_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo as demo_main

    return demo_main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphmend",
        description="Find and fix the source patterns that make torch.compile break the graph.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    check = commands.add_parser("check", help="report GM findings (like flake8 --select GM)")
    check.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    _add_scope_arguments(check)
    check.add_argument(
        "--disable-noqa", action="store_true", help="report findings suppressed by # noqa too"
    )
    check.add_argument(
        "--format",
        choices=tuple(FORMATS),
        default="text",
        help="text (flake8's), json, sarif (SARIF 2.1.0) or github (Actions annotations)",
    )
    baseline = check.add_mutually_exclusive_group()
    baseline.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="report only the findings that FILE does not list; exit 1 only for those",
    )
    baseline.add_argument(
        "--write-baseline",
        type=Path,
        metavar="FILE",
        help="write the current findings to FILE (a baseline) instead of reporting them",
    )
    check.set_defaults(handler=run_check)

    fix = commands.add_parser(
        "fix", help="rewrite the fixable findings in place (graphmend.FixAll)"
    )
    fix.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    _add_scope_arguments(fix)
    fix.add_argument(
        "--diff", action="store_true", help="print the changes as a unified diff; write nothing"
    )
    fix.add_argument(
        "--check",
        action="store_true",
        help="write nothing; name each file that would change and exit 1 if any would",
    )
    fix.add_argument(
        "--helpers-module",
        metavar="MODULE",
        help=(
            "import the fixed helpers from MODULE (mypkg._graphmend), written once next to the "
            "package, instead of writing them into each fixed file"
        ),
    )
    fix.set_defaults(handler=run_fix)

    helpers = commands.add_parser(
        "helpers", help="print (or --write) the module of helpers that --helpers-module names"
    )
    helpers.add_argument("--write", type=Path, metavar="PATH", help="write it to PATH")
    helpers.set_defaults(handler=run_helpers)

    verify = commands.add_parser(
        "verify", help="compile the original and the fixed code and compare them"
    )
    from .verify.cli import add_verify_arguments

    add_verify_arguments(verify)
    verify.set_defaults(handler=run_verify)

    rules = commands.add_parser(
        "rules", help="list the rules, or show one (graphmend rules GM201) in full"
    )
    rules.add_argument(
        "codes",
        nargs="*",
        metavar="CODE",
        help="a code shows that rule in full; a prefix (GM2) lists the rules it matches",
    )
    rules.add_argument(
        "--docs", metavar="DIR", help="(re)generate the per-rule documentation pages in DIR"
    )
    rules.set_defaults(handler=run_rules)

    demo = commands.add_parser(
        "demo", help="lint, fix and verify the bundled examples in a temporary folder"
    )
    demo.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="keep the copies as run (DIR/original) and fixed (DIR/fixed); DIR must not exist",
    )
    demo.set_defaults(handler=run_demo)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (ConfigError, FileNotFoundError, ValueError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
