"""The ``verify`` command line: ``graphmend verify ENTRY [--fix TARGET ...] [--json FILE] ...``.

Exit codes (``EXIT_STATUS``, also in ``--help``): 0 verified, 1 verification failed, 2 bad input,
130 interrupted. Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

from .entry import parse_entry
from .errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, VerifyError
from .gradients import WEIGHT_SEED
from .report import problems, render_table, write_json
from .runner import VerifyOptions, verify

_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
EXIT_STATUS = (
    "exit status: 0 verified; 1 verification failed: the fixed code cannot be rewritten or run, "
    "its compiled outputs (with --grad: gradients) differ from the original's, its behaviour "
    "(values, buffers, parameters, attributes and inputs after each call and their aliasing, "
    "exceptions, stdout, stderr, log "
    "records, warnings, with --grad gradients; compiled, eager, and with aot_eager when a "
    "compiled call raised) differs from the eager original's other than as documented "
    "([Trap]: RuntimeError under compile; gradients differing only in the sign of zero), or "
    "it has more graphs or break events than the original or than --max-breaks, or fewer "
    "calls in graphs than the original (code that compiled runs eagerly); 2 bad input "
    "(entry file, factory, a factory that raises, inputs that cannot be saved, a --backend "
    "that fails on the original, --fix target, options); 130 interrupted. A model that raises "
    "is not bad input: its exception is compared as behaviour."
)


def add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``verify`` arguments (and the exit status, as the epilog) to ``parser``."""
    parser.epilog = EXIT_STATUS
    parser.add_argument(
        "entry",
        metavar="ENTRY",
        help="path/to/file.py:factory; the factory (default: build) returns (model, args) "
        "or (model, args, kwargs)",
    )
    parser.add_argument(
        "--fix",
        metavar="TARGET",
        action="append",
        default=[],
        help="also rewrite this file, folder or importable module or package in the fixed arm "
        "(repeatable); installed packages are copied, never modified",
    )
    parser.add_argument(
        "--fix-scope",
        choices=("compiled", "all"),
        default="compiled",
        help="what the fixers rewrite: code Dynamo traces (default), or every function of a file "
        "that imports torch (for helpers called from another module's forward)",
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        type=Path,
        help="also write the results to FILE as JSON "
        "(the original arm's alone when the fixed side fails)",
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="auto: CUDA when available (default)",
    )
    parser.add_argument(
        "--backend",
        default="eager",
        help="torch.compile backend for the timings (default: eager; inductor for real timings); "
        "graphs and breaks are always counted with a counting backend",
    )
    parser.add_argument(
        "--mode", choices=_MODES, help="torch.compile mode (needs --backend inductor)"
    )
    parser.add_argument(
        "--repeat", type=int, default=20, metavar="N", help="warm calls to time (default: 20)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="torch seed for building and calling (default: 0)"
    )
    parser.add_argument(
        "--grad",
        action="store_true",
        help="measure training: run with autograd on and follow every recorded call with a "
        "backward pass on sum((t.float() * w).sum()) over the output's tensors t that require "
        "grad, each w a torch.randn tensor of t's shape drawn in order from a private "
        f"generator seeded with {WEIGHT_SEED} for each call; compare the gradients of the "
        "model's parameters and of the inputs that require grad (None is not zeros), and count "
        "AOTAutograd's backward graphs "
        "(default: torch.no_grad(), no backward pass)",
    )
    parser.add_argument(
        "--max-breaks",
        type=int,
        metavar="N",
        help="fail when the fixed code has more than N break events",
    )
    parser.add_argument(
        "--overlay-dir",
        type=Path,
        metavar="DIR",
        help="keep the rewritten copies in DIR (must not exist yet; default: a temporary folder)",
    )


def run_verify(args: argparse.Namespace) -> int:
    """Run ``graphmend verify`` for parsed ``args``; print the table; return the exit code."""
    try:
        options = VerifyOptions(
            entry=parse_entry(args.entry),
            fix_targets=list(args.fix),
            fix_scope=args.fix_scope,
            device=args.device,
            backend=args.backend,
            mode=args.mode,
            grad=args.grad,
            seed=args.seed,
            repeat=args.repeat,
            overlay_dir=args.overlay_dir,
        )
        _check_options(options, args.json)
        verification = verify(options, progress=sys.stderr)
    except VerifyError as error:
        print(f"graphmend verify: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("graphmend verify: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED

    if args.json:
        write_json(verification, args.json, args.max_breaks)
    if verification.failure:
        print(f"graphmend verify: error: {verification.failure}", file=sys.stderr)
        return verification.failure.exit_code
    sys.stdout.write(render_table(verification))
    found = problems(verification, args.max_breaks)
    if found:
        print(f"graphmend verify: FAILED: {'; '.join(found)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _check_options(options: VerifyOptions, json_path: Optional[Path]) -> None:
    if options.mode and options.backend != "inductor":
        raise VerifyError(
            f"--mode {options.mode} needs --backend inductor (got --backend {options.backend})"
        )
    if options.repeat < 1:
        raise VerifyError("--repeat must be at least 1")
    if options.overlay_dir and options.overlay_dir.exists():
        raise VerifyError(f"--overlay-dir {options.overlay_dir} already exists; name a new folder")
    if json_path and not json_path.resolve().parent.is_dir():
        raise VerifyError(f"--json {json_path}: its folder does not exist")
