"""The rule registry is consistent, documented, and speaks torch's graph-break ids."""

import json
import importlib.util
import re
from pathlib import Path

import pytest

from flake8_graphmend.docs import render_docs
from flake8_graphmend.registry import FAMILIES, CODES_BY_FIXER, RULES, RULES_BY_CODE, expand_codes

ROOT = Path(__file__).resolve().parent.parent


def test_codes_are_unique_and_well_formed():
    codes = [rule.code for rule in RULES]
    assert len(codes) == len(set(codes))
    assert all(re.fullmatch(r"GM[1-9]\d\d", code) for code in codes)
    assert len({rule.name for rule in RULES}) == len(RULES)


def test_every_rule_names_a_known_family_and_fixer():
    for rule in RULES:
        assert rule.family in FAMILIES
        assert rule.fixer is None or rule.code in CODES_BY_FIXER[rule.fixer]
        assert rule.fixer is None or rule.fix_note, (
            f"{rule.code}: a fixable rule states what its fix changes"
        )
        assert "{function}" in rule.message


def test_gb_ids_exist_in_torch_registry():
    spec = importlib.util.find_spec("torch")
    if spec is None:
        pytest.skip("torch is not installed")
    registry = json.loads(
        (Path(spec.origin).parent / "_dynamo" / "graph_break_registry.json").read_text()
    )
    for rule in RULES:
        for gb_id in rule.gb_ids:
            assert gb_id in registry, (
                f"{rule.code}: {gb_id} is not in torch's graph_break_registry.json"
            )


def test_committed_docs_match_the_registry():
    """Regenerate with: graphmend rules --docs docs/rules"""
    folder = ROOT / "docs" / "rules"
    pages = render_docs()
    assert sorted(p.name for p in folder.glob("*.md")) == sorted(pages)
    for name, content in pages.items():
        assert (folder / name).read_text() == content, (
            f"docs/rules/{name} is stale: run graphmend rules --docs docs/rules"
        )


@pytest.mark.parametrize("document", ["README.md", "CHANGELOG.md", "docs/rules/index.md"])
def test_every_code_is_mentioned(document):
    text = (ROOT / document).read_text()
    missing = [rule.code for rule in RULES if rule.code not in text]
    assert not missing, f"{document} does not mention {missing}"


def test_expand_codes_accepts_prefixes_and_rejects_typos():
    assert expand_codes(["GM2"]) == [r.code for r in RULES if r.code.startswith("GM2")]
    assert expand_codes(["ALL"]) == [r.code for r in RULES]
    assert expand_codes(["gm101", "GM101"]) == ["GM101"]
    with pytest.raises(ValueError, match="GM999"):
        expand_codes(["GM999"])
    assert RULES_BY_CODE["GM102"].fixer == "DeferSideEffects"
