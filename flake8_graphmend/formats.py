"""The output formats of ``graphmend check``: text, json, sarif (SARIF 2.1.0) and github.

``github`` prints GitHub Actions workflow commands (``::warning file=...::message``), which the
runner turns into annotations on the pull request. ``sarif`` prints one SARIF 2.1.0 log, for
GitHub code scanning (``github/codeql-action/upload-sarif``) and other SARIF viewers; its rules
come from the registry.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple
from urllib.parse import quote

from . import __version__
from .docs import gb_url, summary
from .engine import Finding
from .registry import FAMILIES, RULES, Rule

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_DISTRIBUTION = "flake8-graphmend"


@dataclass(frozen=True)
class Reported:
    """A finding to print, with the path of its file as the user named it."""

    path: Path
    finding: Finding
    #: The finding's baseline key (``baseline.Key``), when a baseline is read or written.
    key: Optional[Tuple[str, str, str, str]] = None


def render_text(results: Sequence[Reported]) -> str:
    """``path:line:col: CODE message``, as flake8 prints it."""
    return "".join(
        f"{r.path}:{r.finding.line}:{r.finding.col + 1}: {r.finding.text}\n" for r in results
    )


def render_json(results: Sequence[Reported]) -> str:
    """A JSON list, one object per finding (1-based columns)."""
    payload = [
        {
            "path": str(r.path),
            "line": r.finding.line,
            "column": r.finding.col + 1,
            "code": r.finding.code,
            "message": r.finding.message,
            "fixer": r.finding.fixer,
            "decline": r.finding.decline,
        }
        for r in results
    ]
    return json.dumps(payload, indent=2) + "\n"


# ---------------------------------------------------------------------------------- github
def _escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF are escaped."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    """A workflow command's property value: also ``:`` and ``,``, which delimit properties."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(results: Sequence[Reported]) -> str:
    """``::warning file=...,line=...,col=...,endLine=...,endColumn=...,title=GMxxx::message``.

    GitHub accepts columns only when the annotation starts and ends on the same line, so a
    finding that spans lines gives ``line`` and ``endLine`` only.
    """
    lines = []
    for r in results:
        f = r.finding
        properties = [("file", Path(r.path).as_posix()), ("line", str(f.line))]
        if f.end_line == f.line:
            properties += [("col", str(f.col + 1)), ("endLine", str(f.end_line))]
            properties.append(("endColumn", str(max(f.end_col, f.col + 1))))
        else:
            properties.append(("endLine", str(f.end_line)))
        properties.append(("title", f.code))
        fields = ",".join(f"{name}={_escape_property(value)}" for name, value in properties)
        lines.append(f"::warning {fields}::{_escape_data(f.message)}\n")
    return "".join(lines)


# ----------------------------------------------------------------------------------- sarif
def project_url() -> Optional[str]:
    """The project's home page from the installed package's metadata, if it declares one."""
    try:
        info = metadata.metadata(_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    urls = list(info.get_all("Home-page") or [])
    urls += [entry.partition(",")[2].strip() for entry in info.get_all("Project-URL") or []]
    return next((url.rstrip("/") for url in urls if url.startswith("https://")), None)


def _rule_descriptor(rule: Rule, home: Optional[str]) -> Dict[str, Any]:
    """A SARIF ``reportingDescriptor``: ids, descriptions, help, GB ids and their pages."""
    page = f"docs/rules/{rule.code}.md"
    gb_links = ", ".join(f"[{gb}]({gb_url(gb)})" for gb in rule.gb_ids)
    fix = f"`graphmend fix` (`graphmend.{rule.fixer}`)" if rule.fixer else "no fixer: " + rule.hint
    properties: Dict[str, Any] = {
        "tags": ["torch.compile", "graph-break", rule.family],
        "family": f"{rule.family}: {FAMILIES[rule.family]}",
        "gbIds": list(rule.gb_ids),
        "gbUrls": [gb_url(gb) for gb in rule.gb_ids],
    }
    if rule.fixer:
        properties["fixer"] = f"graphmend.{rule.fixer}"
    descriptor: Dict[str, Any] = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": summary(rule)},
        "fullDescription": {"text": rule.explanation},
        "help": {
            "text": f"Fix: {fix}. PyTorch graph-break ids: {', '.join(rule.gb_ids)}. See {page}.",
            "markdown": f"Fix: {fix}.\n\nPyTorch graph-break ids: {gb_links}.\n\nSee `{page}`.",
        },
        # The rule page where the project's URL is known, else the page of its first GB id.
        "helpUri": f"{home}/blob/HEAD/{page}" if home else gb_url(rule.gb_ids[0]),
        "defaultConfiguration": {"level": "warning", "enabled": rule.default_enabled},
        "properties": properties,
    }
    return descriptor


def artifact_uri(path: Path) -> str:
    """The file as a relative URI (``/``, percent-escaped) where it is under the current folder,
    else as a ``file:`` URI."""
    absolute = Path(os.path.abspath(path))
    try:
        return quote(absolute.relative_to(Path.cwd().absolute()).as_posix())
    except ValueError:
        return absolute.as_uri()


def _sarif_result(r: Reported, rule_index: Dict[str, int]) -> Dict[str, Any]:
    f = r.finding
    region = {
        "startLine": f.line,
        "startColumn": f.col + 1,
        "endLine": f.end_line,
        "endColumn": f.end_col + 1,  # SARIF: the column after the last character
    }
    location = {"artifactLocation": {"uri": artifact_uri(r.path)}, "region": region}
    result: Dict[str, Any] = {
        "ruleId": f.code,
        "level": "warning",
        "message": {"text": f.message},
        "locations": [{"physicalLocation": location}],
    }
    if f.code in rule_index:
        result["ruleIndex"] = rule_index[f.code]
    return result


def sarif_log(results: Sequence[Reported]) -> Dict[str, Any]:
    """One SARIF 2.1.0 log with one run: the tool, every rule, and the results."""
    home = project_url()
    driver: Dict[str, Any] = {"name": _DISTRIBUTION, "version": __version__}
    if home:
        driver["informationUri"] = home
    driver["rules"] = [_rule_descriptor(rule, home) for rule in RULES]
    rule_index = {rule.code: index for index, rule in enumerate(RULES)}
    run = {
        "tool": {"driver": driver},
        # Finding columns count characters (code points), not UTF-16 units (SARIF's default).
        "columnKind": "unicodeCodePoints",
        "results": [_sarif_result(r, rule_index) for r in results],
    }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def render_sarif(results: Sequence[Reported]) -> str:
    return json.dumps(sarif_log(results), indent=2) + "\n"


FORMATS: Dict[str, Callable[[Sequence[Reported]], str]] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "github": render_github,
}


def unique(results: List[Reported]) -> List[Reported]:
    """Each site once: the same file (however its path was written), line, column and code."""
    seen = set()
    kept = []
    for r in results:
        key = (os.path.realpath(r.path), r.finding.line, r.finding.col, r.finding.code)
        if key not in seen:
            seen.add(key)
            kept.append(r)
    return kept
