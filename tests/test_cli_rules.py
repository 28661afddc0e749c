"""``graphmend rules``: the table with its header, and the single-rule view."""

import pytest

from flake8_graphmend.cli import main
from flake8_graphmend.docs import gb_url
from flake8_graphmend.registry import RULES, RULES_BY_CODE


def graphmend(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_table_header_names_the_columns(capsys):
    code, out, _ = graphmend(capsys, "rules")
    header = out.splitlines()[0]
    assert code == 0
    for column in ("code", "family", "name", "GB ids", "fixer"):
        assert column in header
    # the columns line up under the header
    row = out.splitlines()[1]
    assert row.index("print-in-compiled-code") == header.index("name")
    assert row.index("GB0059") == header.index("GB ids")
    assert row.index("graphmend.DeferSideEffects") == header.index("fixer")


def test_prefix_lists_the_matching_rules(capsys):
    code, out, _ = graphmend(capsys, "rules", "GM2")
    rows = out.splitlines()[1:-1]
    assert code == 0 and [row.split()[0] for row in rows] == ["GM201", "GM202", "GM203", "GM204"]


def test_single_rule_view(capsys):
    code, out, _ = graphmend(capsys, "rules", "GM201")
    rule = RULES_BY_CODE["GM201"]
    assert code == 0
    assert out.startswith("GM201 data-dependent-if\n")
    assert (
        "reported as: GM201 Python `if` on a tensor value in compiled forward() breaks the graph "
        "[GB0170]; fix: graphmend.PredicateControlFlow"
    ) in out
    assert "DC: Data-dependent control flow" in out
    assert gb_url("GB0170") in out
    assert "graphmend.PredicateControlFlow PATH" in out
    for title in ("What breaks", "Failing example", "Passing example", "What the fix changes",
                  "Without a fix"):
        assert f"\n{title}\n" in out
    assert "            if x.sum() > 0:  # <- GM201\n" in out  # the failing example, indented
    assert "Eager values are bitwise identical." in out  # the fix note
    flat = " ".join(out.split())
    assert " ".join(rule.explanation.split()) in flat
    assert all(len(line) <= 100 for line in out.splitlines() if not line.startswith("  reported"))


def test_rule_without_fixer(capsys):
    code, out, _ = graphmend(capsys, "rules", "gm402")
    assert code == 0 and out.startswith("GM402 tensor-tolist\n")
    assert "fix:" in out and "none: " in out
    assert "What the fix changes" not in out


def test_several_codes(capsys):
    out = graphmend(capsys, "rules", "GM101", "GM604")[1]
    assert out.startswith("GM101 ") and "\nGM604 data-ptr\n" in out


@pytest.mark.parametrize("code", ["GM999", "GM9", "XY", "GM000"])
def test_unknown_code_is_a_one_line_error(capsys, code):
    status, out, err = graphmend(capsys, "rules", code)
    assert (status, out) == (2, "")
    assert err == f"graphmend: error: unknown GM code or prefix: {code!r}\n"


def test_every_rule_has_a_view(capsys):
    for rule in RULES:
        status, out, _ = graphmend(capsys, "rules", rule.code)
        assert status == 0 and f"reported as: {rule.code} " in out, rule.code
