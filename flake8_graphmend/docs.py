"""The per-rule documentation pages, generated from the registry
(``graphmend rules --docs docs/rules``)."""

from __future__ import annotations

import functools
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Tuple

from .registry import FAMILIES, RULES, Rule

_GENERATED = (
    "<!-- Generated from flake8_graphmend/registry.py by `graphmend rules --docs docs/rules`; "
    "do not edit. -->"
)
_GB_SITE = "https://meta-pytorch.github.io/compile-graph-break-site/gb/{}.html"


def gb_url(gb_id: str) -> str:
    """The page of a PyTorch graph-break id (``GB0170``) on the graph-break site."""
    return _GB_SITE.format(gb_id.lower())


@dataclass(frozen=True)
class Section:
    """One part of a rule's page: a title, paragraphs and an optional code example."""

    title: str
    paragraphs: Tuple[str, ...]
    code: str = ""


def _fix(rule: Rule) -> str:
    if rule.fixer:
        return (
            f"`python -m libcst.tool codemod graphmend.{rule.fixer} PATH` "
            "(or `graphmend fix PATH`)"
        )
    return "none: " + rule.hint


def rule_fields(rule: Rule, link: Callable[[str], str]) -> List[Tuple[str, str]]:
    """The rule's facts as (label, value); ``link`` renders a GB id with its URL."""
    return [
        ("family", f"{rule.family}: {FAMILIES[rule.family]}"),
        ("PyTorch graph-break ids", ", ".join(link(gb) for gb in rule.gb_ids)),
        ("fix", _fix(rule)),
        ("enabled by default", "yes" if rule.default_enabled else "no"),
    ]


def rule_sections(rule: Rule) -> List[Section]:
    """The explanation, the examples, the fix note and the hint, in page order."""
    sections = [
        Section("What breaks", (rule.explanation,)),
        Section(
            "Failing example",
            ("The marked line is reported; under `torch.compile` it breaks the graph.",),
            rule.failing,
        ),
        Section("Passing example", ("Compiles to one graph.",), rule.passing),
    ]
    if rule.fixer:
        sections.append(Section("What the fix changes", (rule.fix_note,)))
    sections.append(Section("Without a fix", (rule.hint[0].upper() + rule.hint[1:] + ".",)))
    return sections


def _example(source: str) -> str:
    return "```python\n" + source.rstrip() + "\n```"


def render_rule(rule: Rule) -> str:
    """The Markdown page of one rule (``docs/rules/GMxxx.md``)."""
    lines = [_GENERATED, "", f"# {rule.code} {rule.name}", "", "| | |", "|---|---|"]
    lines += [
        f"| {label} | {value} |"
        for label, value in rule_fields(rule, lambda gb: f"[{gb}]({gb_url(gb)})")
    ]
    lines.append("")
    for section in rule_sections(rule):
        lines += [f"## {section.title}", ""]
        for paragraph in section.paragraphs:
            lines += [paragraph, ""]
        if section.code:
            lines += [_example(section.code), ""]
    return "\n".join(lines)


@functools.lru_cache(maxsize=None)
def example_message(rule: Rule) -> str:
    """What the rule reports on its own failing example (its message template if nothing)."""
    from .engine import analyze_source

    for finding in analyze_source(rule.failing, f"{rule.code}.py"):
        if finding.code == rule.code:
            return finding.message
    return rule.message


def summary(rule: Rule) -> str:
    """One line: the message on the failing example, without the GB ids and the fix."""
    return example_message(rule).split(" [", 1)[0]


def render_rule_text(rule: Rule, width: int = 100) -> str:
    """The terminal view of one rule (``graphmend rules GM201``): the page's content, wrapped."""
    lines = [f"{rule.code} {rule.name}", "", f"  reported as: {rule.code} {example_message(rule)}"]
    fields = rule_fields(rule, lambda gb: f"{gb} {gb_url(gb)}")
    label_width = max(len(label) for label, _ in fields)
    for label, value in fields:
        lines += textwrap.wrap(
            value,
            width,
            initial_indent=f"  {label + ':':<{label_width + 1}} ",
            subsequent_indent=" " * (label_width + 4),
            break_on_hyphens=False,
        )
    for section in rule_sections(rule):
        lines += ["", section.title]
        for paragraph in section.paragraphs:
            lines += textwrap.wrap(paragraph, width, initial_indent="  ", subsequent_indent="  ")
        if section.code:
            lines += [""] + ["    " + line if line else "" for line in section.code.splitlines()]
    lines += ["", f"  docs/rules/{rule.code}.md has the same text."]
    return "\n".join(lines) + "\n"


def render_index() -> str:
    lines = [
        _GENERATED,
        "",
        "# GM rules",
        "",
        "| code | name | family | GB ids | fix |",
        "|---|---|---|---|---|",
    ]
    for rule in RULES:
        fix = f"`graphmend.{rule.fixer}`" if rule.fixer else "hint only"
        lines.append(
            f"| [{rule.code}]({rule.code}.md) | {rule.name} | {rule.family} "
            f"| {', '.join(rule.gb_ids)} | {fix} |"
        )
    lines += [
        "",
        (
            "`GM000` is not a rule: it reports that the analysis failed on a file "
            "(the message says why),"
        ),
        "so that one bad file never aborts a flake8 run.",
        "",
    ]
    return "\n".join(lines)


def render_docs() -> Dict[str, str]:
    """File name -> content of every page."""
    pages = {f"{rule.code}.md": render_rule(rule) for rule in RULES}
    pages["index.md"] = render_index()
    return pages


def write_docs(folder: Path) -> List[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, content in render_docs().items():
        path = folder / name
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written
