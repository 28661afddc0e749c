"""``graphmend demo``'s table, legend and diff headers (no torch run: the arms are made up).

The whole demo runs under ``tox -e demo``."""

import shutil
from types import SimpleNamespace

import pytest

from flake8_graphmend import demo
from flake8_graphmend.cli import main
from flake8_graphmend.demo import COLUMNS, NEXT_STEPS, one_graph, relabel, render_table, table_row
from flake8_graphmend.verify.compare import OutputComparison


def arm(graphs, breaks, fullgraph_error=None, gb_ids=()):
    sites = [SimpleNamespace(gb_id=gb) for gb in gb_ids]
    return SimpleNamespace(
        graphs=graphs, breaks=breaks, fullgraph_error=fullgraph_error, break_sites=sites,
        comparison=OutputComparison(equal=True), behaviour=[],
    )


def test_one_graph_needs_no_break_events_and_fullgraph():
    assert one_graph(arm(1, 0))
    # torch 2.13's fullgraph=True captures .item() and nonzero that break by default
    assert not one_graph(arm(3, 3, fullgraph_error=None))
    assert not one_graph(arm(1, 0, fullgraph_error="Unsupported: ..."))
    assert not one_graph(None)


def test_row_of_an_example_with_breaks_left():
    verification = SimpleNamespace(
        original=arm(3, 3), fixed=arm(3, 3, gb_ids=("GB0124", "GB0036", "GB0036"))
    )
    row = table_row("scalars.py", 3, 0, verification)
    assert dict(zip([name for name, _ in COLUMNS], row)) == {
        "example": "scalars.py",
        "GM findings": "3",
        "fixed sites": "0",
        "graphs": "3 -> 3",
        "break events": "3 -> 3",
        "outputs equal": "yes",
        "behaviour equal": "yes",
        "one graph": "no",
        "left (GB ids)": "GB0036, GB0124",
    }
    fixed = table_row("gate.py", 3, 3, SimpleNamespace(original=arm(3, 3), fixed=arm(1, 0)))
    assert fixed[-2:] == ("yes", "-")


def test_table_has_a_header_and_a_legend_for_every_column():
    row = ("gate.py", "3", "3", "3 -> 1", "3 -> 0", "yes", "yes", "yes", "-")
    text = render_table([row])
    lines = text.splitlines()
    assert lines[0].split("  ")[0] == "example" and lines[1].startswith("gate.py")
    assert lines[2:4] == ["", "columns:"]
    assert all(len(line) <= 100 for line in lines[4:])
    legend_text = " ".join(line.strip() for line in lines[4:])
    for name, meaning in COLUMNS:
        assert f"{name}: {meaning}" in legend_text
    legend = {name: meaning for name, meaning in COLUMNS}
    assert "linter reports" in legend["GM findings"]
    assert "Dynamo recorded" in legend["break events"]
    assert "fullgraph=True" in legend["one graph"] and "no break events" in legend["one graph"]


def test_relabel_names_existing_files():
    diff = "--- a//tmp/x/fixed/gate.py\n+++ b//tmp/x/fixed/gate.py\n@@ -1 +1 @@\n-a\n+b\n"
    assert relabel(diff, "a/examples/gate.py", "b/examples/gate.py") == (
        "--- a/examples/gate.py\n+++ b/examples/gate.py\n@@ -1 +1 @@\n-a\n+b\n"
    )
    assert relabel("", "a", "b") == ""


def test_next_steps_name_real_commands():
    for command in ("graphmend check", "graphmend fix --diff", "graphmend verify", "rules"):
        assert command in NEXT_STEPS


def test_keep_must_name_a_new_folder(tmp_path, capsys):
    assert main(["demo", "--keep", str(tmp_path)]) == 2
    assert "already exists" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_keeps_its_copies(tmp_path, capsys, monkeypatch):
    """One example, end to end (one verification: two arms in subprocesses)."""
    examples = tmp_path / "examples"
    examples.mkdir()
    shutil.copy(demo.EXAMPLES / "gate.py", examples / "gate.py")
    monkeypatch.setattr(demo, "EXAMPLES", examples)
    keep = tmp_path / "kept"
    assert main(["demo", "--keep", str(keep)]) == 0
    out = capsys.readouterr().out
    original, fixed = keep / "original" / "gate.py", keep / "fixed" / "gate.py"
    assert f"  --- {original}\n  +++ {fixed}\n" in out
    assert original.read_text() == (examples / "gate.py").read_text() != fixed.read_text()
    row = next(line for line in out.splitlines() if line.startswith("gate.py "))
    assert row.split()[-2:] == ["yes", "-"]  # one graph, no break left
    assert " ".join(out.split()).endswith(NEXT_STEPS)
