"""The ``graphmend`` command: check, fix, verify, rules, demo.

Exit codes: 0 clean, 1 findings (check) or a failed verification, 2 bad input (a path that does
not exist, a file that cannot be read or parsed, a bad option or configuration).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from . import __version__
from .config import ConfigError, Settings, load_settings
from .engine import SCOPES, Options, analyze_source, internal_error, suppressed
from .files import TOO_DEEP, UnreadableSource, iter_python_files, read_source
from .registry import RULES, expand_codes

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
    settings.options = Options(
        scope=args.scope or options.scope,
        entry_points=(
            tuple(filter(None, (args.entry_points or "").split(","))) or options.entry_points
        ),
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


def run_check(args: argparse.Namespace) -> int:
    settings = _settings(args)
    codes = set(_selected_codes(settings))
    results = []
    status = EXIT_OK
    for path in iter_python_files(args.paths):
        try:
            source = read_source(path)
            findings = analyze_source(source, str(path), settings.options)
        except UnreadableSource as exc:
            _error(f"{path}: {exc}; file skipped")
            status = EXIT_USAGE
            continue
        except SyntaxError as exc:
            _error(f"{path}:{exc.lineno or 0}: syntax error: {exc.msg}; file skipped")
            status = EXIT_USAGE
            continue
        except ValueError as exc:  # e.g. NUL bytes
            _error(f"{path}: cannot parse: {exc}; file skipped")
            status = EXIT_USAGE
            continue
        except RecursionError:
            _error(f"{path}: {TOO_DEEP}; file skipped")
            status = EXIT_USAGE
            continue
        except Exception as exc:  # an analysis bug must not stop the other files
            _error(f"{path}: {internal_error(exc)[2]}")
            status = EXIT_USAGE
            continue
        lines = source.splitlines()
        for finding in findings:
            if finding.code in codes and (args.disable_noqa or not suppressed(finding, lines)):
                results.append((path, finding))
    if args.format == "json":
        payload = [
            {
                "path": str(path),
                "line": f.line,
                "column": f.col + 1,
                "code": f.code,
                "message": f.message,
                "fixer": f.fixer,
                "decline": f.decline,
            }
            for path, f in results
        ]
        print(json.dumps(payload, indent=2))
    else:
        for path, finding in results:
            print(f"{path}:{finding.line}:{finding.col + 1}: {finding.text}")
    if results and status == EXIT_OK:
        status = EXIT_FINDINGS
    return status


def run_fix(args: argparse.Namespace) -> int:
    from fixers.apply import fix_paths

    settings = _settings(args)
    outcomes = fix_paths(args.paths, options=settings.options, diff=args.diff)
    status = EXIT_OK
    changed = fixed = 0
    for outcome in outcomes:
        if outcome.error:
            _error(f"{outcome.path}: {outcome.error}; file left untouched")
            status = EXIT_USAGE
            continue
        if args.diff and outcome.diff:
            sys.stdout.write(outcome.diff)
        for reason in outcome.declined:
            print(f"{outcome.path}: declined: {reason}", file=sys.stderr)
        changed += outcome.changed
        fixed += outcome.fixed
    verb = "would fix" if args.diff else "fixed"
    print(
        f"graphmend: {verb} {fixed} site(s) in {changed} of {len(outcomes)} file(s)",
        file=sys.stderr,
    )
    return status


def run_rules(args: argparse.Namespace) -> int:
    if args.docs:
        from .docs import write_docs

        written = write_docs(Path(args.docs))
        print(f"graphmend: wrote {len(written)} pages to {args.docs}", file=sys.stderr)
        return EXIT_OK
    width = max(len(rule.name) for rule in RULES)
    for rule in RULES:
        fixer = f"graphmend.{rule.fixer}" if rule.fixer else "-"
        print(
            f"{rule.code}  {rule.family:<5}  {rule.name:<{width}}  "
            f"{', '.join(rule.gb_ids):<14}  {fixer}"
        )
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
    check.add_argument("--disable-noqa", action="store_true", help="report findings suppressed by # noqa too")
    check.add_argument("--format", choices=("text", "json"), default="text")
    check.set_defaults(handler=run_check)

    fix = commands.add_parser(
        "fix", help="rewrite the fixable findings in place (graphmend.FixAll)"
    )
    fix.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    _add_scope_arguments(fix)
    fix.add_argument(
        "--diff", action="store_true", help="print the changes as a unified diff; write nothing"
    )
    fix.set_defaults(handler=run_fix)

    verify = commands.add_parser(
        "verify", help="compile the original and the fixed code and compare them"
    )
    from .verify.cli import add_verify_arguments

    add_verify_arguments(verify)
    verify.set_defaults(handler=run_verify)

    rules = commands.add_parser("rules", help="list the rules")
    rules.add_argument(
        "--docs", metavar="DIR", help="(re)generate the per-rule documentation pages in DIR"
    )
    rules.set_defaults(handler=run_rules)

    demo = commands.add_parser(
        "demo", help="lint, fix and verify the bundled examples in a temporary folder"
    )
    demo.add_argument(
        "--keep", type=Path, metavar="DIR", help="keep the fixed copies in DIR (must not exist)"
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
