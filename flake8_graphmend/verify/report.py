"""Present a verification: the verdict, the before/after table and the JSON file.

JSON keys (stable): ``entry``, ``settings``, ``original`` and ``fixed`` (each with ``graphs``,
``compiled_calls``, ``breaks``, ``break_sites``, ``fullgraph``, ``fullgraph_error``,
``exceptions``),
``outputs_equal``, ``max_abs_diff``, ``output_differences``, ``behaviour_equal``, ``behaviour``,
``timings`` (``original`` and ``fixed``, seconds; null when the compiled calls raise), ``fixes``,
``ok`` and ``problems``. ``behaviour`` maps ``eager_original_vs_compiled_fixed``,
``eager_original_vs_eager_fixed``, ``eager_original_vs_compiled_fixed_aot_eager`` (only when a
compiled call raised; these are the ones that ``behaviour_equal`` and ``ok`` count) and
``eager_original_vs_compiled_original`` (for reference) to ``behaviour_equal``, one
``<part>_equal`` per part (``values``, ``state``, ``exceptions``, ``stdout``, ``stderr``,
``logs``, ``warnings``), ``differences`` (part: the first difference) and ``documented``
(part: why its difference is allowed). When the fixed side failed, ``fixed``, ``outputs_equal``,
``behaviour_equal`` and ``timings.fixed`` are null, ``behaviour`` has the reference only and
``problems`` holds the error; ``outputs_equal`` is null too when a first compiled call raised.

With ``--grad`` (``settings.grad``): each behaviour comparison has ``gradients_equal`` too;
``gradients_equal`` says whether the fixed code's gradients are the eager original's (compiled
and eager) and its first compiled call's are the original's first compiled call's
(``compiled_gradients``: ``equal``, ``difference``, ``documented``), differences in the sign of
zero allowed (both null, like ``outputs_equal``, when a first compiled call raised); each arm
has ``backward_graphs`` (null, with ``backward_graphs_error``, when they could not be counted).
Without ``--grad`` these are null.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ._arm import EAGER
from .behaviour import PARTS, BehaviourComparison, PartComparison
from .results import ArmResult, SiteResult
from .runner import Verification

_FIRST_CALLS = ("compiled original", "compiled fixed (first calls)")
"""The labels of the comparison of the two arms' first compiled calls' gradients."""


def problems(verification: Verification, max_breaks: Optional[int] = None) -> List[str]:
    """Why the fixed arm fails verification; empty when it passes."""
    if verification.failure:
        return [str(verification.failure)]
    original, fixed = verification.original, _fixed(verification)
    found = []
    if fixed.comparison is not None and not fixed.comparison.equal:
        found.append("the outputs of the two arms differ")
    if fixed.gradient_comparison is not None and not fixed.gradient_comparison.ok:
        found.append("the gradients of the two arms' first compiled calls differ")
    found += [
        f"the behaviour differs, {comparison.expected} vs {comparison.actual}: "
        + ", ".join(comparison.failing())
        for comparison in fixed.behaviour
        if not comparison.equal
    ]
    if fixed.graphs > original.graphs:
        found.append(
            f"the fixed code has more graphs ({fixed.graphs}) than the original ({original.graphs})"
        )
    less = compiles_less(original, fixed)
    if less:
        found.append(less)
    if fixed.breaks > original.breaks:
        found.append(
            f"the fixed code has more break events ({fixed.breaks}) "
            f"than the original ({original.breaks})"
        )
    if max_breaks is not None and fixed.breaks > max_breaks:
        found.append(
            f"the fixed code has {fixed.breaks} break events, more than --max-breaks {max_breaks}"
        )
    return found


def calls_fell(before: Optional[int], after: Optional[int], breaks_after: Optional[int]) -> bool:
    """Whether the fixed code's graphs make fewer of the program's calls (``before``,
    ``after``) while it still breaks: code that compiled runs eagerly (a frame whose first
    break is now one in a loop, which Dynamo skips). Fixed code without breaks runs nothing
    eagerly: fewer calls there come from paths that the program takes only when traced whole
    (transformers builds no causal mask under `is_torchdynamo_compiling()` in training)."""
    return before is not None and after is not None and after < before and breaks_after != 0


def compiles_less(original: ArmResult, fixed: ArmResult) -> Optional[str]:
    """Why the fixed arm compiles less of the program than the original (``calls_fell``), or
    None."""
    if not calls_fell(original.compiled_calls, fixed.compiled_calls, fixed.breaks):
        return None
    return (
        f"the fixed code's graphs make fewer of the program's calls ({fixed.compiled_calls}) "
        f"than the original's ({original.compiled_calls}): some code that compiled runs eagerly"
    )


def _fixed(verification: Verification) -> ArmResult:
    """The fixed arm, which ran where nothing failed."""
    if verification.fixed is None:
        raise ValueError(f"the fixed arm did not run: {verification.failure}")
    return verification.fixed


def to_json(verification: Verification, max_breaks: Optional[int] = None) -> Dict[str, Any]:
    """The JSON document written by ``--json``."""
    options, original, fixed = verification.options, verification.original, verification.fixed
    comparison = fixed.comparison if fixed else None
    behaviour = [*(fixed.behaviour if fixed else []), *original.behaviour]
    found = problems(verification, max_breaks)
    return {
        "entry": str(options.entry),
        "settings": {
            "device": original.device,
            "backend": options.backend,
            "mode": options.mode,
            "grad": options.grad,
            "seed": options.seed,
            "repeat": options.repeat,
            "torch": original.torch_version,
            "fix_targets": options.fix_targets,
            "fix_scope": options.fix_scope,
        },
        "original": _arm_json(original),
        "fixed": _arm_json(fixed) if fixed else None,
        "outputs_equal": comparison.equal if comparison else None,
        "max_abs_diff": comparison.max_abs_diff if comparison else None,
        "output_differences": comparison.differences if comparison else [],
        "behaviour_equal": behaviour_equal(verification),
        "behaviour": {b.key: _behaviour_json(b) for b in behaviour},
        "gradients_equal": gradients_equal(verification),
        "compiled_gradients": (
            asdict(fixed.gradient_comparison) if fixed and fixed.gradient_comparison else None
        ),
        "timings": {
            "original": _timings_json(original),
            "fixed": _timings_json(fixed) if fixed else None,
        },
        "fixes": verification.fix_outcomes,
        "linked_entry_points": list(verification.linked_entry_points),
        "ok": not found,
        "problems": found,
    }


def _arm_json(arm: ArmResult) -> Dict[str, Any]:
    return {
        "graphs": arm.graphs,
        "compiled_calls": arm.compiled_calls,
        "breaks": arm.breaks,
        "break_sites": [asdict(site) for site in arm.break_sites],
        "fullgraph": arm.fullgraph_error is None,
        "fullgraph_error": arm.fullgraph_error,
        "exceptions": arm.exceptions,
        "backward_graphs": arm.backward_graphs,
        "backward_graphs_error": arm.backward_graphs_error,
    }


def _timings_json(arm: ArmResult) -> Optional[Dict[str, Any]]:
    return asdict(arm.timings) if arm.timings else None


def _behaviour_json(comparison: BehaviourComparison) -> Dict[str, Any]:
    parts = comparison.parts
    return {
        "behaviour_equal": comparison.equal,
        **{f"{name}_equal": part.equal for name, part in parts.items()},
        "differences": {name: part.difference for name, part in parts.items() if part.difference},
        "documented": {name: part.documented for name, part in parts.items() if part.documented},
    }


def behaviour_equal(verification: Verification) -> Optional[bool]:
    """Whether the fixed code behaves as the eager original, compiled and eager (documented
    differences allowed); None when the fixed side failed."""
    fixed = verification.fixed
    return all(comparison.equal for comparison in fixed.behaviour) if fixed else None


def gradients_equal(verification: Verification) -> Optional[bool]:
    """Whether the fixed code's gradients are the eager original's (compiled and eager) and its
    first compiled call's the original's (differences in the sign of zero allowed); None without
    ``--grad``, when the fixed side failed or, as for ``outputs_equal``, when a first compiled
    call raised (see the behaviour)."""
    fixed = verification.fixed
    if fixed is None or not verification.options.grad or fixed.gradient_comparison is None:
        return None
    return all(part.ok for _, part in _gradient_parts(fixed))


def _gradient_parts(fixed: ArmResult) -> List[Tuple[str, PartComparison]]:
    """(what is compared, its gradients part) for each gradient comparison of the fixed arm."""
    parts = [
        (f"{comparison.expected} vs {comparison.actual}", comparison.parts["gradients"])
        for comparison in fixed.behaviour
        if "gradients" in comparison.parts
    ]
    if fixed.gradient_comparison is not None:
        parts.append((" vs ".join(_FIRST_CALLS), fixed.gradient_comparison))
    return parts


def gradients_summary(fixed: ArmResult) -> str:
    """``yes`` or ``no: <comparisons>``, then ``; documented difference (<why>)``; ``-`` when a
    first compiled call raised."""
    if fixed.gradient_comparison is None:
        return "- (a first compiled call raised; see behaviour)"
    parts = _gradient_parts(fixed)
    failing = [label for label, part in parts if not part.ok]
    documented = dict.fromkeys(part.documented for _, part in parts if part.documented)
    verdict = f"no: {', '.join(failing)}" if failing else "yes"
    return "; ".join([verdict, *(f"documented difference ({why})" for why in documented)])


def behaviour_summary(comparisons: List[BehaviourComparison]) -> str:
    """``yes`` or ``no: <parts>`` over ``comparisons`` together, then
    ``; <part>: documented difference (<why>)`` for each documented difference."""
    failing = [name for name in PARTS if any(name in c.failing() for c in comparisons)]
    documented = {
        name: comparison.parts[name].documented
        for comparison in comparisons
        for name in comparison.documented()
    }
    verdict = f"no: {', '.join(failing)}" if failing else "yes"
    notes = [f"{name}: documented difference ({why})" for name, why in documented.items()]
    return "; ".join([verdict, *notes])


def write_json(verification: Verification, path: Path, max_breaks: Optional[int] = None) -> None:
    path.write_text(
        json.dumps(to_json(verification, max_breaks), indent=2) + "\n", encoding="utf-8"
    )


def render_table(verification: Verification) -> str:
    """The human-readable report (of a verification that did not fail): settings, the
    before/after table, sites, fixes."""
    options, original, fixed = verification.options, verification.original, _fixed(verification)
    timing_note = f"compile = cold - warm, warm = median of {options.repeat} calls"
    mode = f", mode {options.mode}" if options.mode else ""
    if options.grad:
        timing_note += "; --grad: a backward pass after each recorded call (not timed)"
    lines = [
        f"graphmend verify {options.entry}",
        f"torch {original.torch_version} on {original.device}, "
        f"{options.backend} backend{mode}, {timing_note}",
        "",
        _row("", "original", "fixed"),
        _row("graphs", original.graphs, fixed.graphs),
        _row("calls in graphs", original.compiled_calls, fixed.compiled_calls),
        _row("break events", original.breaks, fixed.breaks),
        *(_backward_graphs_rows(original, fixed) if options.grad else []),
        _row("fullgraph=True", _fullgraph(original), _fullgraph(fixed)),
        _row("compile (ms)", _ms(original, "compile_s"), _ms(fixed, "compile_s")),
        _row("cold call (ms)", _ms(original, "cold_s"), _ms(fixed, "cold_s")),
        _row("warm call (ms)", _ms(original, "warm_median_s"), _ms(fixed, "warm_median_s")),
        f"{'outputs':<18}{_outputs(fixed)}",
        f"{'behaviour':<18}{behaviour_summary(fixed.behaviour)}",
        *([f"{'gradients':<18}{gradients_summary(fixed)}"] if options.grad else []),
    ]
    lines += _behaviour_section(original, fixed)
    lines += _sites_section("break sites, original", original.break_sites)
    lines += _sites_section("break sites, fixed (lines of the rewritten copies)", fixed.break_sites)
    lines += _fixes_section(verification.fix_outcomes, verification.linked_entry_points)
    return "\n".join(lines) + "\n"


def _row(label: str, before: Any, after: Any) -> str:
    return f"{label:<18}{before!s:>12}{after!s:>12}"


def _backward_graphs_rows(original: ArmResult, fixed: ArmResult) -> List[str]:
    """The ``backward graphs`` row (``-`` where not counted), then why a count is missing."""
    arms = {"original": original, "fixed": fixed}
    counts = ["-" if arm.backward_graphs is None else arm.backward_graphs for arm in arms.values()]
    return [_row("backward graphs", *counts)] + [
        f"  backward graphs not counted, {role}: {arm.backward_graphs_error}"
        for role, arm in arms.items()
        if arm.backward_graphs_error
    ]


def _fullgraph(arm: ArmResult) -> str:
    return "ok" if arm.fullgraph_error is None else "fails"


def _ms(arm: ArmResult, timing: str) -> str:
    """A timing in ms; ``-`` when the compiled calls raise (nothing is timed)."""
    return f"{getattr(arm.timings, timing) * 1000:.2f}" if arm.timings else "-"


def _outputs(fixed: ArmResult) -> str:
    comparison = fixed.comparison
    if comparison is None:
        return "- (a first compiled call raised; see behaviour)"
    if comparison.equal:
        return "bitwise equal"
    gap = f" (largest difference {comparison.max_abs_diff:.3g})" if comparison.max_abs_diff else ""
    return "DIFFERENT" + gap + "".join(f"\n  {difference}" for difference in comparison.differences)


def _behaviour_section(original: ArmResult, fixed: ArmResult) -> List[str]:
    """Each comparison with eager original, its first differences, and what the original raises."""
    lines = []
    compared = [(c, "") for c in fixed.behaviour]
    if fixed.gradient_comparison is not None:
        parts = {"gradients": fixed.gradient_comparison}
        compared.append((BehaviourComparison(*_FIRST_CALLS, parts), ""))
    compared += [(c, " (reference: what compiling alone changes)") for c in original.behaviour]
    for comparison, note in compared:
        lines.append(
            f"  {comparison.expected} vs {comparison.actual}{note}: "
            + behaviour_summary([comparison])
        )
        lines += [
            f"      {part.difference}" for part in comparison.parts.values() if part.difference
        ]
    raised = dict.fromkeys(text for text in original.exceptions.get(EAGER, []) if text)
    lines += [f"  eager original raises {text}" for text in raised]
    return lines


def _sites_section(title: str, sites: List[SiteResult]) -> List[str]:
    if not sites:
        return ["", f"{title}: none"]
    lines = ["", f"{title}:"]
    for site in sites:
        events = f" x{site.events}" if site.events > 1 else ""
        lines.append(
            f"  {site.file}:{site.line}  {site.gb_id or '(no GB id)'}{events}  {site.gb_type}"
        )
        lines.append(f"      {site.reason}")
        if site.lint_error:
            lines.append(f"      not linted: {site.lint_error}")
        elif site.findings:
            lines += [f"      {f['code']} {f['message']}" for f in site.findings]
        else:
            lines.append("      no GM rule covers this line")
    return lines


def _fixes_section(outcomes: List[Dict[str, Any]], linked: Tuple[str, ...]) -> List[str]:
    applied = sum(outcome["fixed"] for outcome in outcomes)
    changed = sum(1 for outcome in outcomes if outcome["changed"])
    lines = ["", f"fixes: {applied} applied in {changed} file{'s' if changed != 1 else ''}"]
    if linked:  # what flake8, one file at a time, needs as graphmend-entry-points to see the same
        lines.append(f"  compiled through calls between the fixed files: {', '.join(linked)}")
    for outcome in outcomes:
        # the codemod's warnings: `line:col: CODE not fixed: why` and `... fixed, but ...`
        lines += [f"  {outcome['path']}:{reason}" for reason in outcome["declined"]]
        if outcome["error"]:
            lines.append(f"  not rewritten, {outcome['path']}: {outcome['error']}")
    return lines
