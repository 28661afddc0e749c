"""Every GM code is the same set everywhere: the registry, docs/rules/, CHANGELOG.md, the lint
fixtures, and, for the fixable codes, the fix fixtures and the fixers' CODES."""

import re
from pathlib import Path

import fixers.graphmend as commands
from flake8_graphmend.registry import CODES_BY_FIXER, RULES
from test_lint_fixtures import FIXTURES as LINT_FIXTURES, expectations

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "rules"
FIX_FIXTURES = ROOT / "tests" / "fixtures" / "fix"
CODE = re.compile(r"\bGM\d{3}\b")

REGISTRY = {rule.code for rule in RULES}
FIXABLE = {rule.code for rule in RULES if rule.fixer}


def assert_same(found, expected, where):
    """``found`` (the codes of ``where``) equals ``expected`` (the registry's)."""
    assert found == expected, (
        f"{where}: lacks {sorted(expected - found)}, "
        f"has {sorted(found - expected)} that the registry does not"
    )


def test_docs_pages():
    assert_same({page.stem for page in DOCS.glob("GM*.md")}, REGISTRY, "docs/rules/GM*.md")


def test_docs_index():
    index = (DOCS / "index.md").read_text()
    linked = set(re.findall(r"\[(GM\d{3})\]\(\1\.md\)", index))
    assert_same(linked, REGISTRY, "docs/rules/index.md")


def test_changelog():
    assert_same(set(CODE.findall((ROOT / "CHANGELOG.md").read_text())), REGISTRY, "CHANGELOG.md")


def test_lint_fixtures():
    expected = {
        code for path in LINT_FIXTURES.glob("*.py") for _, code in expectations(path.read_text())
    }
    assert_same(expected, REGISTRY, "the `# error:` markers of tests/fixtures/lint/*.py")


def test_fix_fixtures():
    mentioned = {
        code
        for path in FIX_FIXTURES.rglob("*")
        if path.is_file()
        for code in CODE.findall(path.read_text(encoding="utf-8", errors="replace"))
    }
    assert_same(mentioned, FIXABLE, "tests/fixtures/fix/ (the fixable codes)")


def test_fixer_codes():
    for name, codes in CODES_BY_FIXER.items():
        command = getattr(commands, name, None)
        assert command is not None, f"the registry names fixer {name}, not in fixers.graphmend"
        assert_same(set(command.CODES), set(codes), f"{name}.CODES")
    claiming = {
        name: set(getattr(commands, name).CODES)
        for name in commands.__all__
        if name not in CODES_BY_FIXER and getattr(commands, name).CODES
    }
    # Only FixAll, which runs every fixer, claims codes that no registry rule names it for.
    assert set(claiming) <= {"FixAll"}, f"commands without registry rules: {sorted(claiming)}"
    for name, codes in claiming.items():
        assert_same(codes, FIXABLE, f"{name}.CODES")
