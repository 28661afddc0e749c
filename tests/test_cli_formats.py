"""``graphmend check --format {text,json,sarif,github}``, and each site reported once."""

import json
import os
import textwrap
from pathlib import Path

import pytest

from flake8_graphmend import __version__, formats
from flake8_graphmend.cli import main
from flake8_graphmend.docs import gb_url
from flake8_graphmend.engine import Finding, analyze_source
from flake8_graphmend.formats import Reported, artifact_uri, render_github
from flake8_graphmend.registry import RULES

#: ``helper`` is reached from two compiled forwards; the ``if`` test spans two lines.
MODEL = textwrap.dedent(
    """\
    import torch
    from torch import nn


    def helper(x):
        print("helper")
        return x


    class A(nn.Module):
        def forward(self, x):
            x = helper(x)
            if (x.sum()
                    > 0):
                x = x * 2
            return x


    class B(nn.Module):
        def forward(self, x):
            return helper(x) + 1
    """
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def sarif(graphmend, *paths):
    code, out, err = graphmend("check", "--format", "sarif", *paths)
    assert code == 1, err
    return json.loads(out)


def test_sarif_log_run_and_tool(project, graphmend):
    log = sarif(graphmend, "pkg")
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "flake8-graphmend" and driver["version"] == __version__
    assert [rule["id"] for rule in driver["rules"]] == [rule.code for rule in RULES]
    assert run["columnKind"] == "unicodeCodePoints"


def test_sarif_rules_carry_registry_metadata(project, graphmend):
    driver = sarif(graphmend, "pkg")["runs"][0]["tool"]["driver"]
    rules = {rule["id"]: rule for rule in driver["rules"]}
    gm201 = rules["GM201"]
    assert gm201["name"] == "data-dependent-if"
    assert gm201["shortDescription"]["text"] == (
        "Python `if` on a tensor value in compiled forward() breaks the graph"
    )
    assert gm201["fullDescription"]["text"].startswith("A Python `if` needs a Python bool")
    assert gm201["properties"]["gbIds"] == ["GB0170"]
    assert gm201["properties"]["gbUrls"] == [
        "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html"
    ]
    assert gm201["properties"]["fixer"] == "graphmend.PredicateControlFlow"
    assert "docs/rules/GM201.md" in gm201["help"]["text"]
    # no project URL in the package metadata: the help URI is the GB page
    assert gm201["helpUri"] == gb_url("GB0170")
    assert "fixer" not in rules["GM402"]["properties"]
    assert rules["GM402"]["properties"]["gbIds"] == ["GB0109", "GB0033"]


def test_sarif_help_uri_is_the_rule_page_when_the_project_url_is_known(
    project, graphmend, monkeypatch
):
    monkeypatch.setattr(formats, "project_url", lambda: "https://example.org/graphmend")
    driver = sarif(graphmend, "pkg")["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://example.org/graphmend"
    assert driver["rules"][0]["helpUri"] == (
        "https://example.org/graphmend/blob/HEAD/docs/rules/GM101.md"
    )


def test_sarif_results(project, graphmend):
    run = sarif(graphmend, "pkg")["runs"][0]
    findings = analyze_source(MODEL, "pkg/model.py")
    assert [r["ruleId"] for r in run["results"]] == [f.code for f in findings] == ["GM101", "GM201"]
    codes = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    for result, finding in zip(run["results"], findings):
        assert codes[result["ruleIndex"]] == finding.code
        assert result["level"] == "warning"
        assert result["message"]["text"] == finding.message
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"] == {"uri": "pkg/model.py"}
        assert physical["region"] == {
            "startLine": finding.line,
            "startColumn": finding.col + 1,
            "endLine": finding.end_line,
            "endColumn": finding.end_col + 1,
        }
    # the `if` test spans two lines: (x.sum()\n > 0)
    assert run["results"][1]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 13, "startColumn": 9, "endLine": 14, "endColumn": 20,
    }


def test_sarif_required_fields_of_the_schema(project, graphmend):
    """The properties SARIF 2.1.0's schema requires, and the types it gives them (checked by
    hand: the schema file is not shipped; see test_sarif_validates_against_the_schema)."""
    log = sarif(graphmend, "pkg")
    assert set(log) >= {"version", "runs"}
    for run in log["runs"]:
        assert isinstance(run["tool"]["driver"]["name"], str)
        for rule in run["tool"]["driver"]["rules"]:
            assert isinstance(rule["id"], str)
            for key in ("shortDescription", "fullDescription"):
                assert isinstance(rule[key]["text"], str) and rule[key]["text"]
            assert rule["helpUri"].startswith("https://")
            assert rule["defaultConfiguration"]["level"] in {"none", "note", "warning", "error"}
            tags = rule["properties"]["tags"]
            assert len(tags) == len(set(tags))
        for result in run["results"]:
            assert isinstance(result["message"]["text"], str)
            region = result["locations"][0]["physicalLocation"]["region"]
            assert all(isinstance(value, int) and value >= 1 for value in region.values())


def test_sarif_validates_against_the_schema(project, graphmend):
    """Set GRAPHMEND_SARIF_SCHEMA to a copy of sarif-schema-2.1.0.json (OASIS) to run this."""
    jsonschema = pytest.importorskip("jsonschema")
    schema_path = os.environ.get("GRAPHMEND_SARIF_SCHEMA")
    if not schema_path:
        pytest.skip("GRAPHMEND_SARIF_SCHEMA is not set")
    schema = json.loads(Path(schema_path).read_text())
    jsonschema.validate(sarif(graphmend, "pkg"), schema)


def test_sarif_without_findings_is_a_valid_empty_run(project, graphmend):
    (project / "clean.py").write_text("import torch\n")
    code, out, _ = graphmend("check", "--format", "sarif", "clean.py")
    assert code == 0 and json.loads(out)["runs"][0]["results"] == []


def test_artifact_uri(project):
    assert artifact_uri(Path("pkg/my model.py")) == "pkg/my%20model.py"
    assert artifact_uri(project / "pkg" / "model.py") == "pkg/model.py"
    outside = project.parent / "elsewhere.py"
    assert artifact_uri(outside) == outside.as_uri()


def test_github_annotations(project, graphmend):
    code, out, _ = graphmend("check", "--format", "github", "pkg")
    assert code == 1
    first, second = out.splitlines()
    assert first == (
        "::warning file=pkg/model.py,line=6,col=5,endLine=6,endColumn=19,title=GM101::"
        "print() inside compiled helper() breaks the graph [GB0059]; "
        "fix: graphmend.DeferSideEffects"
    )
    # spans two lines: GitHub takes no columns then
    head, _, message = second.partition("::Python `if` on a tensor value in compiled forward()")
    assert head == "::warning file=pkg/model.py,line=13,endLine=14,title=GM201"
    assert message.startswith(" breaks the graph [GB0170]; ")


def test_github_escaping():
    odd = Finding(
        code="GM101", line=1, col=0, end_line=1, end_col=5, message="100% a,b: c\r\nd"
    )
    (line,) = render_github([Reported(Path("dir,x/a:b%.py"), odd)]).splitlines()
    assert line == (
        "::warning file=dir%2Cx/a%3Ab%25.py,line=1,col=1,endLine=1,endColumn=5,title=GM101::"
        "100%25 a,b: c%0D%0Ad"
    )


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_each_site_is_reported_once(project, graphmend, fmt):
    """The same file named twice (``pkg`` and ``./pkg/../pkg/model.py``), and a helper that two
    compiled forwards reach: two sites, each reported once."""
    code, out, _ = graphmend(
        "check", "--format", fmt, "pkg", os.path.join(".", "pkg", "..", "pkg", "model.py")
    )
    assert code == 1
    if fmt == "sarif":
        count = len(json.loads(out)["runs"][0]["results"])
    elif fmt == "json":
        count = len(json.loads(out))
    else:
        count = len(out.splitlines())
    assert count == 2


def test_json_format_keeps_its_keys(project, graphmend):
    code, out, _ = graphmend("check", "--format", "json", "pkg")
    assert code == 1
    assert sorted(json.loads(out)[0]) == [
        "code", "column", "decline", "fixer", "line", "message", "path"
    ]


def test_unknown_format_is_a_usage_error(project, capsys, graphmend):
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "--format", "xml", "pkg"])
    assert exit_info.value.code == 2 and "invalid choice: 'xml'" in capsys.readouterr().err
