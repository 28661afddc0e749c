"""FixAll on files and folders, without libcst's CLI (used by ``graphmend fix`` and the runner)."""

from __future__ import annotations

import ast
import codecs
import difflib
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import List, Mapping, Optional, Sequence

from libcst.codemod import CodemodContext, TransformFailure, TransformSuccess, transform_module

from flake8_graphmend.analysis.project import Links, project_links
from flake8_graphmend.engine import Options, analyze_source, suppressed
from flake8_graphmend.files import (
    TOO_DEEP_TO_ANALYSE,
    UnreadableSource,
    iter_python_files,
    parse_failure,
    read_source,
)

from .base import decline_message
from .fix_all import FixAll


@dataclass
class FileOutcome:
    """What fixing one file did.

    ``declined`` holds the codemod warnings: ``line:col: CODE not fixed: why`` for a site left as
    it was, ``line:col: CODE fixed, but ...`` for what a fix leaves as it was.
    """

    path: Path
    changed: bool = False
    error: Optional[str] = None
    fixed: int = 0
    declined: List[str] = field(default_factory=list)
    diff: str = ""


def fix_paths(
    paths: Sequence[Path],
    *,
    options: Optional[Options] = None,
    diff: bool = False,
    codes: Optional[Sequence[str]] = None,
    helpers_module: Optional[str] = None,
    links: Optional[Links] = None,
    names: Optional[Mapping[Path, str]] = None,
) -> List[FileOutcome]:
    """Fix every ``.py`` file under ``paths`` in place (``diff=True``: only compute the diffs).

    Files are found as ``graphmend check`` finds them; a missing path raises FileNotFoundError.
    Calls from one file's compiled code into another are followed (``project_links``, unless
    ``links`` gives them). ``names`` gives the dotted module name of files that do not sit in
    their package (copies), for their relative imports.
    """
    options = options or Options()
    files = list(iter_python_files(paths))
    if links is None:
        links = project_links(files, options)
    return [
        fix_file(
            path,
            options=replace(
                options.linked(links.get(os.path.realpath(path), ())),
                module=(names or {}).get(path, ""),
            ),
            diff=diff,
            codes=codes,
            helpers_module=helpers_module,
        )
        for path in files
    ]


def fix_file(
    path: Path,
    *,
    options: Optional[Options] = None,
    diff: bool = False,
    codes: Optional[Sequence[str]] = None,
    helpers_module: Optional[str] = None,
) -> FileOutcome:
    """Fix one file; a file that cannot be read or parsed, or a failed rewrite, stays untouched.

    ``codes``: fix only the findings of these codes (``--select``/``--ignore``); None: all.
    ``helpers_module``: import the fixed helpers from that module (``--helpers-module``).
    A UTF-8 BOM and the line endings are kept.
    """
    outcome = FileOutcome(Path(path))
    try:
        source = read_source(path)
        ast.parse(source, filename=str(path))
    except UnreadableSource as error:
        outcome.error = str(error)
        return outcome
    except (SyntaxError, ValueError, RecursionError) as error:
        outcome.error = parse_failure(error)
        return outcome
    options = options or Options()
    try:
        findings = analyze_source(source, str(path), options)
    except RecursionError:
        outcome.error = TOO_DEEP_TO_ANALYSE
        return outcome
    except Exception as error:  # an analysis bug must not stop the other files
        outcome.error = _internal_error(error)
        return outcome
    lines = source.splitlines()
    live = [
        finding
        for finding in findings
        if not suppressed(finding, lines) and (codes is None or finding.code in codes)
    ]
    if not any(finding.fixer for finding in live):  # nothing to rewrite: spare the libcst parse
        outcome.declined = [decline_message(f, f.decline) for f in live if f.decline]
        return outcome
    command = FixAll(
        CodemodContext(filename=str(path)),
        options=options,
        codes=codes,
        helpers_module=helpers_module,
    )
    result = transform_module(command, source)
    outcome.declined = list(result.warning_messages)
    if isinstance(result, TransformFailure):
        outcome.error = _internal_error(result.error)
        return outcome
    if not isinstance(result, TransformSuccess) or result.code == source:
        return outcome
    outcome.changed, outcome.fixed = True, command.fixed_count
    outcome.diff = "".join(
        difflib.unified_diff(
            source.splitlines(True), result.code.splitlines(True), f"a/{path}", f"b/{path}"
        )
    )
    if not diff:
        try:
            bom = codecs.BOM_UTF8 if Path(path).read_bytes().startswith(codecs.BOM_UTF8) else b""
            Path(path).write_bytes(bom + result.code.encode("utf-8"))
        except OSError as error:
            outcome.changed, outcome.fixed = False, 0
            outcome.error = f"cannot write: {error.strerror or error}"
    return outcome


def _internal_error(error: BaseException) -> str:
    return f"internal error: {type(error).__name__}: {error}"
