"""The per-rule documentation pages, generated from the registry
(``graphmend rules --docs docs/rules``)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

from .registry import FAMILIES, RULES, Rule

_GENERATED = (
    "<!-- Generated from flake8_graphmend/registry.py by `graphmend rules --docs docs/rules`; "
    "do not edit. -->"
)
_GB_SITE = "https://meta-pytorch.github.io/compile-graph-break-site/gb/{}.html"


def _example(source: str) -> str:
    return "```python\n" + source.rstrip() + "\n```"


def render_rule(rule: Rule) -> str:
    gb_links = ", ".join(f"[{gb}]({_GB_SITE.format(gb.lower())})" for gb in rule.gb_ids)
    fix = (
        f"`python -m libcst.tool codemod graphmend.{rule.fixer} PATH` (or `graphmend fix PATH`)"
        if rule.fixer
        else "none: " + rule.hint
    )
    lines = [
        _GENERATED,
        "",
        f"# {rule.code} {rule.name}",
        "",
        "| | |",
        "|---|---|",
        f"| family | {rule.family}: {FAMILIES[rule.family]} |",
        f"| PyTorch graph-break ids | {gb_links} |",
        f"| fix | {fix} |",
        f"| enabled by default | {'yes' if rule.default_enabled else 'no'} |",
        "",
        "## What breaks",
        "",
        rule.explanation,
        "",
        "## Failing example",
        "",
        "The marked line is reported; under `torch.compile` it breaks the graph.",
        "",
        _example(rule.failing),
        "",
        "## Passing example",
        "",
        "Compiles to one graph.",
        "",
        _example(rule.passing),
        "",
    ]
    if rule.fixer:
        lines += ["## What the fix changes", "", rule.fix_note, ""]
    lines += ["## Without a fix", "", rule.hint[0].upper() + rule.hint[1:] + ".", ""]
    return "\n".join(lines)


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
