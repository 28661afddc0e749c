"""End to end: ``benchmarks/table2.py --quick`` on transformers 4.52.4 (a few Table 2 rows).

Runs the benchmark as a user would (``graphmend verify --fix`` on each row's transformers
modules, both arms in fresh processes) and checks each row against the GraphMend paper: breaks
after at most what the paper's fix rate implies, fix rate at least the paper's, and outputs of
the fixed code bitwise identical to the original's.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "table2.py"

#: Rows known to fall short of the paper, and why. The test fails when such a row reaches the
#: paper's rate (remove it here then), and xfails while it does not.
KNOWN_GAPS: dict[str, str] = {}


@pytest.mark.slow
def test_table2_quick(tmp_path: Path) -> None:
    out = tmp_path / "table2.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=1200,
    )
    assert out.is_file(), done.stdout[-2000:] + done.stderr[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    rows = {row["name"]: row for row in report["rows"]}
    assert set(rows) == {"t5", "bart_fp16", "layoutlmv3"}

    problems: dict[str, list[str]] = {}
    for name, row in rows.items():
        found = problems.setdefault(name, [])
        if row["breaks_before"] is None or row["breaks_after"] is None:
            found.append(f"not measured: {row['error']}")
            continue
        if row["identical"] is not True:
            found.append(f"outputs differ (max abs diff {row['max_abs_diff']})")
        assert row["breaks_before"] > 0, f"{name}: the break sites were not reached"
        allowed = math.floor(row["breaks_before"] * (100 - row["paper_rate"]) / 100)
        if row["breaks_after"] > allowed or row["fix_rate"] < row["paper_rate"]:
            sites = [f"{s['file']}:{s['line']} {s['gb_id']}" for s in row["sites_after"]]
            found.append(
                f"breaks {row['breaks_before']} -> {row['breaks_after']} (paper allows "
                f"{allowed}), fix rate {row['fix_rate']:.0f} % < {row['paper_rate']} %: {sites}"
            )
    problems = {name: found for name, found in problems.items() if found}

    unexpected = {
        name: found for name, found in problems.items()
        if name not in KNOWN_GAPS or any(not text.startswith("breaks ") for text in found)
    }
    assert not unexpected, json.dumps(unexpected, indent=1) + "\n" + done.stdout[-3000:]
    closed = [name for name in KNOWN_GAPS if name in rows and name not in problems]
    assert not closed, f"{closed} now meet the paper's fix rate: remove them from KNOWN_GAPS"
    if problems:
        pytest.xfail("; ".join(f"{name}: {KNOWN_GAPS[name]}" for name in problems))
