"""Run both arms of a verification and collect what they measured.

The original arm measures the code as it is. Then the entry file and the ``--fix`` targets are
copied into an overlay and rewritten, and the fixed arm measures the copies (see ``overlay``).
Each arm is a fresh Python process (``_arm``) with its own Inductor and Triton cache folders.
This process never imports torch.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, TextIO, Tuple

import flake8_graphmend

from ._arm import FIXED, ORIGINAL, ArmSpec
from .attribution import LintFailure, findings_at
from .entry import EntrySpec
from .errors import EXIT_FAILED, EXIT_USAGE, VerifyError
from .overlay import Overlay, build_overlay, resolve_target
from .results import ArmResult

_PACKAGE_ROOT = str(Path(flake8_graphmend.__file__).resolve().parent.parent)


@dataclass
class VerifyOptions:
    """Everything a verification run needs (the CLI flags, parsed)."""

    entry: EntrySpec
    fix_targets: List[str] = field(default_factory=list)
    fix_scope: str = "compiled"
    device: str = "auto"
    backend: str = "eager"
    mode: Optional[str] = None
    grad: bool = False
    seed: int = 0
    repeat: int = 20
    overlay_dir: Optional[Path] = None


@dataclass
class Verification:
    """The outcome: both arms (sites annotated, paths as the user knows them) and the fixes.

    When the fixed side fails (rewriting or the fixed arm), ``fixed`` is None and ``failure``
    says why; the original arm's measurements are kept.
    """

    options: VerifyOptions
    original: ArmResult
    fixed: Optional[ArmResult]
    fix_outcomes: List[Dict[str, Any]]
    failure: Optional[VerifyError] = None
    #: Entry points followed from one rewritten file into another (``Overlay``).
    linked_entry_points: Tuple[str, ...] = ()


def verify(options: VerifyOptions, progress: TextIO) -> Verification:
    """Measure the original arm, build the overlay, measure the fixed arm.

    Raises ``VerifyError`` for bad input and when the original arm fails.
    """
    targets = [resolve_target(target) for target in options.fix_targets]
    with tempfile.TemporaryDirectory(prefix="graphmend-verify-") as scratch:
        work = Path(scratch)
        original = _run_arm(options, ORIGINAL, options.entry.path.resolve(), {}, work, progress)
        _attribute(original, overlay=None)
        verification = Verification(options, original, fixed=None, fix_outcomes=[])
        try:
            with _step(progress, f"rewriting {describe_targets(options)}"):
                overlay_root = options.overlay_dir or work / "overlay"
                overlay = build_overlay(
                    options.entry.path, targets, overlay_root, options.fix_scope
                )
            verification.fix_outcomes = [
                _outcome_json(outcome, overlay) for outcome in overlay.fix_outcomes
            ]
            verification.linked_entry_points = overlay.linked_entry_points
            verification.fixed = _run_arm(
                options, FIXED, overlay.entry_copy, overlay.copies, work, progress
            )
            _attribute(verification.fixed, overlay)
        except VerifyError as error:
            verification.failure = error
    return verification


def _run_arm(
    options: VerifyOptions,
    role: str,
    source: Path,
    copies: Dict[str, str],
    work: Path,
    progress: TextIO,
) -> ArmResult:
    spec = ArmSpec(
        role=role,
        entry_source=str(source),
        entry_shown=str(options.entry.path),
        factory=options.entry.factory,
        handover_dir=str(work),
        result_path=str(work / f"{role}-result.json"),
        device=options.device,
        backend=options.backend,
        mode=options.mode,
        grad=options.grad,
        seed=options.seed,
        repeat=options.repeat,
        copies=copies,
    )
    environment = {
        "TORCHINDUCTOR_CACHE_DIR": str(work / f"{role}-inductor-cache"),
        "TRITON_CACHE_DIR": str(work / f"{role}-triton-cache"),
        "PYTHONPATH": os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")])),
    }
    exit_code = EXIT_USAGE if role == ORIGINAL else EXIT_FAILED
    with _step(progress, f"{role} arm: compiling and timing ({options.backend} backend)"):
        payload = run_worker(
            ["-m", "flake8_graphmend.verify._arm"],
            asdict(spec),
            work / f"{role}-spec.json",
            environment,
            f"the {role} arm",
            exit_code,
        )
        if "error" in payload:
            message = payload["error"] if role == ORIGINAL else f"fixed arm: {payload['error']}"
            if role == FIXED and options.overlay_dir is None:
                message += " (rerun with --overlay-dir DIR to keep the rewritten files)"
            raise VerifyError(message, exit_code)
    return ArmResult.from_json(payload)


def run_worker(
    arguments: List[str],
    spec: Dict[str, Any],
    spec_path: Path,
    environment: Dict[str, str],
    who: str,
    exit_code: int = EXIT_FAILED,
) -> Dict[str, Any]:
    """Write ``spec`` (which names its ``result_path``) to ``spec_path``, run ``python
    *arguments spec_path`` in a fresh process with ``environment`` added to this one's, and
    return the JSON it wrote; ``VerifyError`` (``who`` ... stopped without a result) when it
    wrote none. Every worker hashes str with the same seed (the caller's ``PYTHONHASHSEED``, or
    0), so that a set of names iterates in the same order in both arms (diffusers keeps
    ``list(set(...))`` in its config)."""
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    hashing = {"PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
    process = subprocess.run(
        [sys.executable, *arguments, str(spec_path)],
        env={**os.environ, **hashing, **environment},
        capture_output=True,
        text=True,
        errors="replace",  # what the model prints need not be UTF-8 (a lone surrogate)
    )
    result_path = Path(spec["result_path"])
    if not result_path.is_file():
        raise VerifyError(f"{who} stopped without a result ({_exit_reason(process)})", exit_code)
    payload: Dict[str, Any] = json.loads(result_path.read_text(encoding="utf-8"))
    return payload


def _exit_reason(process: subprocess.CompletedProcess) -> str:
    last_lines = [line for line in process.stderr.splitlines() if line.strip()][-1:]
    killed = " (killed; out of memory?)" if process.returncode in (-9, 137) else ""
    said = f"; last stderr line: {last_lines[0].strip()}" if last_lines else ""
    return f"exit code {process.returncode}{killed}{said}"


def _attribute(arm: ArmResult, overlay: Optional[Overlay]) -> None:
    """Annotate each site with the GM findings at its line, then show it under its user path."""
    for site in arm.break_sites:
        try:
            site.findings = findings_at(site.file, site.line)
        except LintFailure as error:
            site.lint_error = str(error)
        original = overlay.original_of(site.file) if overlay else None
        site.file = display_path(original or site.file)


def display_path(path: str) -> str:
    """``path`` relative to the working folder or the ``sys.path`` entry closest to it."""
    resolved = Path(path).resolve()
    roots = [Path.cwd(), *(Path(entry).resolve() for entry in sys.path if entry)]
    relatives = [resolved.relative_to(root) for root in roots if resolved.is_relative_to(root)]
    return str(min(relatives, key=lambda relative: len(relative.parts))) if relatives else path


def describe_targets(options: VerifyOptions) -> str:
    """The program and the fix targets, as the rewriting step names them (each once)."""
    targets = [display_path(str(options.entry.path)), *options.fix_targets]
    return ", ".join(dict.fromkeys(targets))  # the program is often its own fix target


def _outcome_json(outcome: Any, overlay: Overlay) -> Dict[str, Any]:
    return {
        "path": display_path(overlay.original_of(str(outcome.path)) or str(outcome.path)),
        "changed": outcome.changed,
        "fixed": outcome.fixed,
        "declined": list(outcome.declined),
        "error": outcome.error,
    }


@contextlib.contextmanager
def _step(stream: TextIO, what: str) -> Iterator[None]:
    """Writes ``graphmend verify: <what> ...`` and, when done, how long it took."""
    started = time.perf_counter()
    stream.write(f"graphmend verify: {what} ... ")
    stream.flush()
    try:
        yield
    except BaseException:
        stream.write("failed\n")
        raise
    stream.write(f"done in {time.perf_counter() - started:.1f} s\n")
    stream.flush()
