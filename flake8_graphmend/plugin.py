"""The flake8 adapter: ``flake8 --select GM`` reports the engine's findings.

flake8 hands the plugin the parsed ``ast`` and the source lines, so the plugin never parses a
file again. Columns are 0-based (flake8 adds one); ``# noqa`` is flake8's business.

flake8 checks ``choices`` on the command line only, not in its configuration files, so the
values are checked again here: a bad one is a one-line error (exit status 2), as on the command
line.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path
from typing import Any, ClassVar, Iterator, List, Tuple

from . import __version__
from .analysis.project import Links, project_links
from .config import ConfigError, check_entry_points, check_scope
from .engine import SCOPES, Options, analyze_tree, internal_error
from .registry import RULES


class GraphMendChecker:
    name = "flake8-graphmend"
    version = __version__
    options: ClassVar[Options] = Options()
    #: Calls from compiled code into the other files of the run (``analysis/project.py``),
    #: found once here, before flake8 starts its workers.
    links: ClassVar[Links] = {}

    def __init__(self, tree: ast.Module, filename: str, lines: List[str]) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, manager: Any) -> None:
        manager.extend_default_ignore([rule.code for rule in RULES if not rule.default_enabled])
        manager.add_option(
            "--graphmend-scope",
            default="compiled",
            choices=SCOPES,
            parse_from_config=True,
            help="GM: which functions count as compiled: 'compiled' (entry points and what they "
            "call; default) or 'all' (every function of a file that imports torch)",
        )
        manager.add_option(
            "--graphmend-entry-points",
            default="",
            comma_separated_list=True,
            parse_from_config=True,
            help=(
                "GM: extra compiled entry points: NAME, CLASS (its forward), "
                "CLASS.METHOD or @DECORATOR (its wrappers)"
            ),
        )
        manager.add_option(
            "--graphmend-compiled-modules",
            default="",
            comma_separated_list=True,
            parse_from_config=True,
            help="GM: glob patterns of files whose every function counts as compiled",
        )

    @classmethod
    def parse_options(cls, options: Any) -> None:
        try:
            cls.options = Options(
                scope=check_scope(options.graphmend_scope, "graphmend-scope"),
                entry_points=check_entry_points(
                    options.graphmend_entry_points or (), "graphmend-entry-points"
                ),
                compiled_modules=tuple(options.graphmend_compiled_modules or ()),
            )
        except ConfigError as exc:  # a value from a configuration file: argparse never saw it
            print(f"flake8: error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        selected = _selected(options)
        cls.links = project_links(_checked_files(options), cls.options) if selected else {}

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        try:
            findings = analyze_tree(
                self.tree,
                [line.rstrip("\r\n") for line in self.lines],
                self.filename,
                self.options.linked(self.links.get(os.path.realpath(self.filename), ())),
            )
        except Exception as exc:  # one broken file must never abort the whole flake8 run
            line, col, text = internal_error(exc)
            yield line, col, text, type(self)
            return
        for finding in findings:
            yield finding.line, finding.col, finding.text, type(self)


def _selected(options: Any) -> bool:
    """Whether the run may report GM codes (``--select E,F`` without GM: no need for links)."""
    select = list(getattr(options, "select", None) or ())
    chosen = select + list(getattr(options, "extend_select", None) or ())
    return not select or any(code.startswith("GM") or "GM".startswith(code) for code in chosen)


def _checked_files(options: Any) -> List[Path]:
    """The files flake8 checks in this run, found as flake8 finds them."""
    from flake8.discover_files import expand_paths

    if not hasattr(options, "filenames"):  # options not from flake8's command line
        return []
    found = expand_paths(
        paths=options.filenames,
        stdin_display_name=options.stdin_display_name,
        filename_patterns=options.filename,
        exclude=(*options.exclude, *getattr(options, "extend_exclude", ())),
    )
    return [Path(name) for name in found if name.endswith(".py") and os.path.isfile(name)]
