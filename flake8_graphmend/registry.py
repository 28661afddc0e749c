"""The rule table: every GM code, what it means, what Dynamo says, and how it is fixed.

This is the single source the flake8 plugin, the codemods, the CLI, the generated docs and the
tests read. Each rule carries a failing and a passing example: small modules whose ``build()``
returns ``(callable, args)``. The test suite lints them and runs them under Dynamo, so every
claim here ("this breaks with GB0291", "this compiles to one graph") is checked on the installed
torch. A line of a failing example that ends with ``# <- GMxxx`` is where the finding must land.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

FAMILIES: Dict[str, str] = {
    "LC": "Logging and other side effects (print, logging, warnings)",
    "DC": "Data-dependent control flow",
    "VG": "Validation guards",
    "DO/TI": "Data-dependent scalars (.item(), .tolist(), int(t))",
    "DS": "Data-dependent output shapes",
    "other": "Other untraceable calls",
}


@dataclass(frozen=True)
class Rule:
    """One GM code."""

    code: str
    name: str
    family: str
    #: What the finding says; ``{call}`` and ``{function}`` are filled in by the detector.
    #: ``{function}`` is ``compiled forward()`` where the function is known to run compiled, and
    #: just ``forward()`` where it is checked only because its whole file is (scope=all,
    #: compiled modules).
    message: str
    #: The PyTorch graph-break ids (``graph_break_registry.json``) this pattern produces.
    gb_ids: Tuple[str, ...]
    #: The codemod that fixes it (``graphmend.<fixer>``), or None.
    fixer: Optional[str]
    #: What to do by hand where no fix applies.
    hint: str
    explanation: str
    failing: str
    passing: str
    #: What changes under compile after the fix (stated in the docs), if anything.
    fix_note: str = ""
    default_enabled: bool = True


_TORCH_SETUP = "import torch\nfrom torch import nn\n"
_LOGGER_SETUP = "import logging\n\n" + _TORCH_SETUP + "\nlogger = logging.getLogger(__name__)\n"


def _example(
    body: str, *, header: str = _TORCH_SETUP, build: str = "Model(), (torch.randn(8),)"
) -> str:
    """An example module: ``header``, ``body`` (dedented, first newline dropped), and a
    ``build()`` that returns ``build``."""
    body = textwrap.dedent(body).removeprefix("\n")
    return f"{header}\n\n{body}\n\ndef build():\n    return {build}\n"


#: How [Defer] keeps a call (GM101-GM103), and what differs under compile.
_DEFER_MECHANISM = (
    "The fix routes the call through a small module-level helper. Eager, the helper makes the "
    "call as written. Under `torch.compile` it becomes an ordered custom op "
    "(`graphmend::deferred`, registered once per process) that runs the call inside the graph, "
    "at the same point, in every frame Dynamo inlines (submodules, helpers, `super()`), with the "
    "tensors as they are there, so later in-place updates do not show in it."
)
_DEFER_NOTE = (
    "Eager behaviour is unchanged. Under compile the same text, records and warnings are "
    "emitted in the same order and number. Arguments are passed as tensors, `str`, `int`, "
    "`float` or `bool` (module-level names such as a warning category are written into the "
    "helper, unless the module may change them: `global`, item stores, `.append()`, an "
    "update in place, a call of a method of an object made at module level "
    "(`COUNTER.bump()`) other than one that only reads (`.get()`); those are passed, read "
    "where the call reads them); `t.item()` of a tensor that always holds one element (a "
    "whole reduction such as `x.abs().max()` or `x.std()`, its negation, a comparison of "
    "one, a local "
    "only ever assigned one) passes `t`, and the helper takes the number, so that break "
    "(GM401) goes too (also while `t` requires grad: a number has no `grad_fn` to show); an "
    "f-string that formats such a number (`f\"loss {loss.item():.4f}\"`), or a tensor known "
    "to hold one element with a format spec (`{loss:.4f}`, which formats its number), is built by "
    "the helper: the tensors are passed, the other values as their own text (a spec that "
    "may fail for some number, `%` or `d`, a tensor shown whole, `{x=}` and an implicit "
    "concatenation are declined); sizes "
    "(`x.shape[0]`, `x.size(0)`, also through a local or in arithmetic: `rows "
    "// 2`) and signed literals are passed as numbers; tensor metadata (`x.shape`, "
    "`x.size()`, `x.dtype`, `x.device`) is printed as its `str()`, and a logger receives "
    "the very `torch.Size`, dtype or device: the helper is passed `x` and reads it (when "
    "`x` is not a tensor, the call is made as written; a helper's parameter named "
    "`number<N>` or `meta<N>` is one it reads so, and goes to the op while autograd "
    "records); the fixer "
    "declines other module-level lists, dicts and sets (code may change them through "
    "another name, `self.stats = STATS`, before the call, and Dynamo applies that after "
    "the graph) and locals only ever bound to a container (`names = sorted(...)`: the op "
    "cannot carry it), calls whose function the function itself binds (`import warnings` inside "
    "it, a closure's `print`), calls in a function that sets `torch.set_printoptions` "
    "(that runs while Dynamo traces) or, before the call (there, in a function of the "
    "file that calls on towards it, or in one of the file's functions it calls first: "
    "`silence()`), an attribute of an object "
    "other than `self` (`sys.stdout = sink`, `self.filter.active = True`, `setattr`: "
    "Dynamo applies that after the graph, which makes the call first), logger calls whose "
    "record keeps a tensor that may change after the call (one the function returns or "
    "stores, a view of an input or of module state, one it updated in place first: a "
    "handler that formats records later would show the change), and values "
    "(`x.shape[1:]`, `loss.item()` of a tensor "
    "of unknown size, an exception object), and where one turns up at run time (an Enum, a "
    "numpy scalar, an int beyond int64, a string with a lone surrogate such as "
    "`os.fsdecode` gives), or a printed tensor requires grad (its `repr` names a "
    "`grad_fn`) or is of a subclass (the graph hands the op a plain tensor, which prints "
    "without the subclass's name or code: a frozen `nn.Parameter`, a `__torch_function__` "
    "wrapper; a Parameter read only for its shape or number goes to the op), or the call "
    "runs inside a transform of `torch.func` (`vmap`, `jvp`, "
    "`grad`, for which the op has no rule), "
    "the helper makes the call as written and the break stays, counted once as "
    "in the original (the helper's frames are marked with `_graphmend_inline_only`: Dynamo "
    "traces them where it inlines them, and runs them as plain Python where it would "
    "compile them apart; torch without that API counts up to three break events; a "
    "deferred call with no tensor work between it and breaks that stay on both sides, such "
    "a kept break included, makes a graph of its own, one more than the original, where that "
    "stretch ran as Python). The helper's "
    "parameters never take a name that its body reads. In an `if` deferred as a whole, the "
    "tests after the first and the calls' arguments are computed on every call, so they "
    "must compute for every dtype and shape, and the later tests may read only the first "
    "test's names or locals bound to tensors on every path (`elif mask.any()` of an "
    "optional `mask` is declined), the arguments no name that may be unbound there: tests "
    "are `any`/`all`/`sum`/`prod`/`count_nonzero` of a name, of a name compared with a "
    "number, or of `torch.isnan`/`isinf`/`isfinite` of a name (`elif ids.mean() > 0` fails "
    "on integers); arguments are literals, names, tensor metadata (`x.shape`, `x.dim()`), "
    "attributes that `__init__` sets (`self.layer_idx`, a registered buffer), such "
    "reductions, or f-strings of those (not `x @ y`, `x.mT`, `self.missing`). Known "
    "problems: under compile, where an operation after the call fails at run time on its "
    "data (an index out of range in `nn.Embedding`), Python state that the function "
    "changed before the call (`self.calls += 1`; with `aot_eager` and Inductor a buffer "
    "updated in place too) is lost with the graph, where the original's break had applied "
    "it (Dynamo applies such changes after a graph; a call inside a `try` is declined); "
    "an ordering test (`(x < 0).any()`) of a complex tensor fails where Python "
    "never reached it; under compile, a logging handler or filter of another file runs "
    "inside the graph, where state that the compiled code changed before the call is not "
    "applied yet, and a change it makes that the compiled code reads afterwards "
    "(`len(STATE)`) comes after Dynamo read that state while tracing (a file that gives such "
    "code of its own is declined: a class based on one of `logging`'s, a lambda, function "
    "or class of the file handed to `addFilter`, `addHandler`, `setFormatter` and the like, "
    "a replaced `sys.stdout`, `sys.stderr`, `warnings.showwarning`); eager, a `Logger` "
    "subclass that overrides the method "
    "and calls `super()` gets its records located one frame off; an exception (a warning "
    "that `-W error` raises) handled by a `try` in another file is raised inside the graph "
    "under compile, where that handler does not see it; under compile, where an operation "
    "after the call fails while Dynamo traces (a shape error such as `y.view(2, 2)` of 3 "
    "elements), the fixed code fails before its graph runs, so the deferred call is not "
    "made, where the original made it and then failed; with every warning an error "
    "(`-W error`, pytest's `filterwarnings = error`), torch 2.13's Dynamo fails "
    "(`InternalTorchDynamoError`) where it traces a frame resumed after a break and meets a "
    "tensor that requires grad and is not a leaf (it reads `.grad`, which warns): the "
    "original fails so too, unless its resumed frame broke again at once, as it did at a "
    "call now deferred; a logging handler that raises makes "
    "logging print a traceback to stderr, which then shows the helper's frames and lines; "
    "under compile, where no caller frame is left, records and warnings are made from the "
    "helper's line in the caller's module (the helper's `in_graph` keyword), so the file "
    "and module are the caller's but the line and function are the helper's: a filter or "
    "handler that tests the line (`filterwarnings(lineno=...)`, a formatter printing "
    "`%(lineno)d`) sees the helper's; with Inductor, a deferred call without tensor "
    "arguments may move relative to other deferred calls in a graph that also updates a "
    "buffer in place (torch 2.13's Inductor does not order effectful ops there; its own "
    "`print` HOP shares this); in training under activation checkpointing "
    "(`torch.utils.checkpoint`, transformers' `gradient_checkpointing`), eager code makes "
    "a checkpointed function's calls again while backward recomputes it (up to its last "
    "saved tensor), and compiled, a deferred call there runs once (AOTAutograd backends) or "
    "at every recomputation (the `eager` backend); with the AOT backends and Inductor, "
    "a graph that holds a deferred call and updates in place an input that shares memory "
    "with another input (a cache and a view of it) fails in torch 2.13's AOTAutograd (the "
    "op's effect token goes missing): calls in a function that itself updates such a "
    "tensor in place (a parameter's, a view of one, a global's, a tensor attribute of "
    "`self`) are declined, but an update in another frame of the same graph (the caller, "
    "a submodule) is not seen; a warning that one line makes both "
    "eagerly and from the graph is seen by the once-per-location filter at two locations "
    "(the caller's line, the helper's), so it shows twice where the original showed it "
    "once; such state changed by a caller in another file before it calls the function "
    "(a parent module that calls `torch.set_printoptions` or replaces `sys.stdout`, then "
    "calls the submodule that prints) is not seen, and is applied after the graph under "
    "compile (callers in the same file are seen, as for GM301); a value the call is given "
    "becomes a constant of the graph where it is a str or a float (and, formatted into a "
    "text made in the graph, an int): sizes and ints the message formats are handed to "
    "the helper as they are (not in a message written as several literals, which is made "
    "in the graph as before), and an argument of the function that only the call reads is "
    "declined, but an attribute that other code changes between calls (`self.epoch`, set "
    "by a training loop) is taken to stay, so each new value compiles the graph again; "
    "`torch.export` keeps the op in the exported program (a process that loads a saved "
    "one must import the fixed module first, which registers the op); a "
    "module that is not written for `torch.jit.script` (no `torch.jit` in it) but is "
    "scripted by its users no longer scripts (the helper takes `*args`); with CUDA graphs "
    "(`mode=\"reduce-overhead\"`) the fixed Table 2 rows ran once (an H200, torch 2.11, "
    "outputs equal), but whether a deferred call runs at every replay was not checked. A "
    "call without tensor arguments hands the op an empty tensor, so that the op has a "
    "device: without one, torch 2.13's CPU Inductor freed graph inputs before the fused "
    "kernel that read them (`UnboundLocalError`). A call in an `if` on a tensor whose "
    "branches only print, log or warn is fixed with that `if`, which is deferred as a "
    "whole (GM201: `graphmend.PredicateControlFlow`, `graphmend.FixAll`); "
    "`graphmend.DeferSideEffects` alone leaves it, and says so."
)
RULES: Tuple[Rule, ...] = (
    # ---------------------------------------------------------------- LC: side effects
    Rule(
        code="GM101",
        name="print-in-compiled-code",
        family="LC",
        message="{call}() inside {function} breaks the graph",
        gb_ids=("GB0059",),
        fixer="DeferSideEffects",
        hint="move the print out of the compiled code, or defer it with graphmend.DeferSideEffects",
        explanation=(
            "Dynamo cannot put a call to the builtin `print` into an FX graph. It ends the graph "
            "before the call, runs the print in Python and starts a new graph after it. "
            "`torch._dynamo.config.reorderable_logging_functions` replays calls after the graph, "
            "but on torch 2.13 only in the frame Dynamo starts from: a call in a submodule or a "
            "helper is silently dropped. "
        ) + _DEFER_MECHANISM,
        fix_note=_DEFER_NOTE,
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    y = x * 2
                    print("scaled input")  # <- GM101
                    return y + 1
            """,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    y = x * 2
                    return y + 1


            def report(model, x):
                print("output", model(x))  # outside compiled code: fine
            """,
        ),
    ),
    Rule(
        code="GM102",
        name="logger-call-in-compiled-code",
        family="LC",
        message="{call}() inside {function} breaks the graph",
        gb_ids=("GB0291",),
        fixer="DeferSideEffects",
        hint=(
            "move the log call out of the compiled code, "
            "or defer it with graphmend.DeferSideEffects"
        ),
        explanation=(
            "Every `logging.Logger` method (`debug`, `info`, `warning`, `warn`, `error`, "
            "`critical`, `log`, `isEnabledFor`, and transformers' `warning_once`) breaks the "
            "graph, even when the logger's level means nothing is emitted. Registering the "
            "logger method itself in `reorderable_logging_functions` does not help on torch "
            "2.13, and `ignore_logging_functions` or `if not torch.compiler.is_compiling():` "
            "silently drop the message. A `logging.LoggerAdapter` is reported too (its "
            "methods call the logger's). "
        ) + _DEFER_MECHANISM + (
            " The record is emitted once per call (and once only for `warning_once`)."
        ),
        fix_note=(
            "The helper passes `stacklevel` so that eager records keep the caller's file, line "
            "and function. It is used only on loggers the analysis sees made by "
            "`logging.getLogger` (or transformers' and diffusers' `logging.get_logger`, which "
            "return one, or a child of such a logger made by `getChild`) and on the `logging` "
            "module: another object with an `info` method "
            "(loguru, an adapter with its own `log`) may treat `stacklevel` otherwise, so it "
            "is declined, and so is a logger whose methods the file replaces (`log.warning "
            "= f`, `logging.Logger.info = f`). `logger.exception`, `exc_info=` and "
            "`stack_info=` (other than "
            "`False` or `None`), the deprecated `.warn` (its "
            "`DeprecationWarning` names the line that calls it, which would be the helper's), "
            "loggers that are not module-level names and calls whose value is used are "
            "declined. "
        ) + _DEFER_NOTE,
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    y = x * 2
                    logger.warning("scaling by two")  # <- GM102
                    return y + 1
            """,
            header=_LOGGER_SETUP,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    logger.info("model built")  # __init__ is not compiled: fine

                def forward(self, x):
                    return x * 2 + 1
            """,
            header=_LOGGER_SETUP,
        ),
    ),
    Rule(
        code="GM103",
        name="warnings-warn-in-compiled-code",
        family="LC",
        message="{call}() inside {function} breaks the graph",
        gb_ids=("GB0007",),
        fixer="DeferSideEffects",
        hint="warn outside the compiled code, or defer it with graphmend.DeferSideEffects",
        explanation=(
            "`warnings.warn` is a C function that Dynamo skips: the graph ends before it. Adding "
            "`warnings.warn` itself to `reorderable_logging_functions` fails as soon as a "
            "category is passed (GB0296). "
        ) + _DEFER_MECHANISM + " The category is written into the helper.",
        fix_note=(
            "Eager warnings keep their message, category and reported location, so the "
            "once-per-location filters behave the same. A filter such as `-W error` makes "
            "`warnings.warn` raise, inside the graph under compile: the call is declined where "
            "that loses something, as a [Trap] guard is (GM301): inside a `try` or `with` of its "
            "function or of a caller in the module, or after a change of Python state. Each "
            "call gets a helper of its own, and under compile the warning is made from that "
            "helper's line in the calling module: the once-per-location filter shows a message "
            "repeated on two lines twice, and filters scoped to the module "
            "(`filterwarnings(\"error\", module=__name__)`, Python's own `default` for "
            "DeprecationWarning in `__main__`) match, as in the original. A warning attributed "
            "to a caller (`stacklevel=2` or more) is declined: the graph cannot name the caller, "
            "whose module's filters, and the once-per-location filter over several callers, "
            "would then act on the helper's line. "
        ) + _DEFER_NOTE,
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    y = x * 2
                    warnings.warn("the scale argument is deprecated", FutureWarning)  # <- GM103
                    return y + 1
            """,
            header="import warnings\n\n" + _TORCH_SETUP,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def __init__(self, scale=None):
                    super().__init__()
                    if scale is not None:
                        warnings.warn("the scale argument is deprecated", FutureWarning)

                def forward(self, x):
                    return x * 2 + 1
            """,
            header="import warnings\n\n" + _TORCH_SETUP,
        ),
    ),
    # ---------------------------------------------------------------- DC: control flow
    Rule(
        code="GM201",
        name="data-dependent-if",
        family="DC",
        message="Python `if` on a tensor value in {function} breaks the graph",
        gb_ids=("GB0170",),
        fixer="PredicateControlFlow",
        hint="select with torch.where, or use torch.cond when only one branch may run",
        explanation=(
            "A Python `if` needs a Python bool, but inside a compiled region a tensor's value is "
            "not known until the graph runs. Dynamo ends the graph, computes the condition, and "
            "resumes in a new graph on each side. Conditions on static facts (`x.dtype`, "
            "`x.shape`, `self.training`, `x is None`, `isinstance`) do not break. The fix "
            "predicates the branch: both sides are computed and `torch.where` selects one, "
            "through an emitted helper that uses `torch.where` only when that is exact (0-d "
            "bool condition, same shape, dtype and device, no autograd recording) and branches "
            "as before otherwise. A leading static conjunct such as `x.dtype == torch.float16` "
            "stays a plain `if`. When both branches are the same call with different "
            "arguments (`self.register_buffer(\"inv_freq\", A)` / `(..., B)`), the call is "
            "made once with the selected argument; a branch that does anything before the call "
            "(a memoised `if not hasattr(self, \"k\"): ...`, `self.a = self.a.to(x.dtype)`) is "
            "declined, since that would run on both paths and change the module's state on the "
            "path that did not run it. A branch on a uniform random draw, LayerDrop in training "
            "(`dropout_probability = torch.rand([])`, then `if dropout_probability < "
            "self.layerdrop:` skip the layer), cannot be predicated; the fix compares only when "
            "the probability is positive (`if _graphmend_draw_below(dropout_probability, "
            "self.layerdrop):`, which is `draw < p` then and `False` otherwise). `torch.rand` "
            "draws from [0, 1), so the test cannot hold when the probability is 0 or less; "
            "Dynamo reads the Python number as a constant: the break is gone with "
            "`layerdrop = 0`, the default, and stays when it is positive, where a random draw "
            "decides. The draw still goes into the graph where the comparison took it: the "
            "helper hands it to an ordered op that does nothing with it (`_graphmend_keep`), "
            "since AOTAutograd and Inductor would drop a draw used nowhere, and the numbers "
            "drawn after it would change. In a loop that also runs activation checkpointing "
            "when training with it (BART's `if self.gradient_checkpointing and self.training:`), "
            "the draw's break made Dynamo run the frame eagerly, checkpoint included; the fix "
            "keeps a break before the checkpoint call (`_graphmend_eager_frame()`, nothing "
            "eagerly), so that Dynamo does so again there and compiles the loop otherwise. "
            "An `if` whose branches only print, log or warn (musicgen's "
            "`if attention_mask is not None and (...).any(): logger.warning_once(...)`, `elif` and "
            "`else` included) is deferred as a whole: one call of an emitted helper, the ordered "
            "custom op of GM101, receives the operands of the tests (the tensors themselves) and "
            "the calls' arguments, and runs the original `if` on them inside the graph, so the "
            "calls happen after the condition is computed, only when it holds, in their order. "
            "A leading Python test (`attention_mask is not None`, `self.training`) stays a plain "
            "`if` when there is no `elif` or `else`. An `if` whose branches do both (`if "
            "torch.isinf(h).any(): logger.warning(...); h = h.clamp(-1e4, 1e4)`) becomes two "
            "statements on the same test: first its calls, deferred as a whole, then the "
            "selection of the rest; that is declined when a call reads a name its branch assigns "
            "before it (the selection makes a new tensor), when computing the test again could "
            "differ (a random draw, an update in place) and when either part declines."
        ),
        fix_note=(
            "Eager values are bitwise identical. Both branches are evaluated, so the fixer "
            "declines branches with an operation outside a positive list of operations that have "
            "no effects and fail only on shapes or dtypes, never on values (not: indexing, gather,"
            " embedding, view/reshape, integer `//` and `%`, linalg solvers, submodule calls, and "
            "`max`, `min`, `amax`, `amin`, `argmax`, `argmin`, which raise on an empty tensor: how "
            "many elements a tensor holds is data, such as the number of detections; `std` and "
            "`var`, which warn on a batch of one; `hardtanh`, which raises for an unsigned "
            "tensor where a limit is negative; `torch.where(c)` of one argument (indices: a "
            "size that is data); `torch.tensor` of anything but a number "
            "literal, which warns when copying a tensor; `F.softmax` without `dim`, and `x.T`, "
            "which warns on a tensor that is not 2-D; `torch.arange`, `zeros`, `ones`, `full` and "
            "`linspace` sized by anything but a literal count or a shape read, since "
            "`arange(n - 1)` fails for `n < 1`; a fill value of `masked_fill` (a 0-d "
            "`torch.tensor(300)` too), `full` and `full_like`, a bound of `clamp` and `clip`, a "
            "number `torch.where` selects, an end of `linspace`, an exponent (`h ** 300`) or an "
            "`alpha` that may not fit "
            "the tensor's dtype (measured on torch 2.13: `1e5` into float16 and `1000` into int8 "
            "raise): only number literals that fit every dtype (a float up to 65504 for a "
            "bound, a selected number, an end or an exponent, which turns an integer tensor into "
            "a float one; otherwise an int in [-128, 127]; never an int beyond int64, `2 ** 70`) "
            "and numbers of `torch.finfo(h.dtype)` for `h` itself are known to fit (`clamp_value "
            "= torch.finfo(h.dtype).max - 1000`); an exponent that may be a negative int, to "
            "which an integer tensor cannot be raised (`counts ** p`); arithmetic of Python "
            "numbers that raises for some values, though a tensor would give inf or NaN: `/`, "
            "`//`, `%` by anything but a nonzero literal (`1.0 / self.count`), `**` by a "
            "negative or non-literal exponent (`self.gamma ** -1`, `10 ** k`), functions of "
            "`math` and `numpy` of anything but literals (`math.sqrt(d)`); a norm of an order "
            "other than `\"fro\"` or a "
            "finite number literal, not negative: `\"nuc\"` takes an SVD, which fails on NaN, "
            "and a negative or infinite order fails on an empty tensor). An operation that raises "
            "for integer and bool tensors (`mean`, `norm`, `softmax`, `log_softmax`, `gelu`, "
            "`silu`, `softplus`, `torch.finfo(x.dtype)`; measured on torch 2.13) is computed only "
            "of a tensor known to be floating point: bound to what an `nn` layer of the file "
            "(`nn.Linear`, `nn.LayerNorm`, convolutions, embeddings) returns, a cast "
            "(`x.float()`), arithmetic with a float, a true division, a clamp of such a "
            "tensor, `exp` or `sigmoid` (of any tensor: floating point or complex), or shown "
            "so by the test computed first (`if x.mean() > 0:`, `if x.dtype == torch.float16 "
            "and ...`; not through an operation given `dtype=`, which `mean`, `softmax` and "
            "`log_softmax` need not: `norm(dtype=)` still raises) or by code that ran before the "
            "`if` on every path to it and raised for integer tensors (`m = x.mean()` before "
            "the `if`), the name not bound again since (not in a `with` item, an enclosing "
            "test, a chained comparison's later part or a local's annotation). Under compile "
            "`mean`, `norm`, `elu` and `leaky_relu` check the dtype while Dynamo traces, the "
            "others (`std`, `softmax`, `gelu`, `round(decimals=)`) only when the graph runs, "
            "and traced they give an integer tensor of an integer one: what such an operation "
            "proved (`std = adv.std()`) serves only operations of the second kind, else the "
            "fixed code would fail while tracing where the original failed when run, and only "
            "where the `if`'s test surely reads its value (not in one arm of a conditional "
            "expression, after `and`/`or`, nor only for its metadata, `x.std().numel()`: "
            "AOTAutograd drops a value nothing reads, and its "
            "failure with it; `softplus` given a float `beta` checks while tracing); a method "
            "named like an operation of `self`, `super()` or a module it holds (`self.exp(x)`, "
            "`ops = self.ops; ops.exp(x)`) makes nothing known, nor `exp` given an argument "
            "(a tensor's takes none); an "
            "input that may be an integer tensor is "
            "declined, as is the mask of `masked_fill` or `torch.where` not known to be a bool "
            "tensor, and a product (`@`, `matmul`, `mm`, `bmm`, `F.linear`, the end and weight "
            "of `lerp`) of a tensor not known to be floating point (an integer or bool tensor "
            "times floating weights raises), and `~`, `&`, `|`, `^` of a tensor not known to "
            "be bool (they raise for floating ones: a float attention mask), shifts of any. "
            "The indices of `x.max(dim)` and `x.min(dim)` are int64; a name bound by an "
            "import, a `match` capture, `except ... as`, `del`, or declared `global` is not "
            "known by its assignments. Of the tensors `self` holds, an `nn` layer's weight and "
            "an `nn.Parameter` every build of the file makes are floating point (where the "
            "file stores into no attribute by a computed name: `setattr(self, k, v)`, "
            "`model._modules[name] = m`, `register_buffer(name, t)`); nothing is "
            "known of a buffer or another attribute, which code the file does not show may "
            "replace (`load_state_dict(..., assign=True)`, `torch.func.functional_call`, "
            "`_apply`): an integer or bool buffer is common. "
            "Known problem: complex tensors are not judged (their `clamp`, `relu` and `<` raise), "
            "nor bool ones (`-mask`, `x - mask`, `relu`, `abs`, `floor`, `round`, `trunc`), "
            "float8 ones (taken for floating point), parameters replaced by integer tensors "
            "(`functional_call`, `module.type(torch.long)`), "
            "operands of `lerp` or `matmul` of two floating dtypes, a bound of "
            "`torch.finfo(x.dtype)` applied after `x` is cast again, a call missing an "
            "argument it needs (`F.linear(x)`, a TypeError the original never meets). Known "
            "problem: a value "
            "that is not what the file shows (a list passed for `bias=0.0`) is not seen; nor "
            "is a Python int beyond int64 that a side computes from others. Known problem: a cast "
            "of a complex "
            "tensor to a real dtype (`x.float()`) warns and is still speculated. It "
            "declines returns of tuples or Python values, selections whose paths differ in memory "
            "layout (`x.t()` against `x * 2`) or where one is a view with gaps between its "
            "elements (`h[:, :half]`, `x[::2]`, `expand`: torch.where makes a dense tensor, so "
            "the helper would keep the branch), and a path that keeps an existing tensor (`stats = "
            "self.running_mean`, an else-less update) when that tensor is updated in place, or "
            "passed afterwards to an `inplace` call or submodule (by keyword or by position: "
            "`F.relu(h, True)`, `nn.LeakyReLU(0.2, True)`) or to a method, function or submodule "
            "of the same file that updates its argument in place (through a list that holds it "
            "too), or when it may be the caller's tensor (an input, `self`'s state, what a "
            "submodule returned) and the result is returned, stored (an attribute, an item, a "
            "global, `setattr`, a method or function of the file that stores its argument), "
            "put into a container (`states + (h,)`, `cache.append(h)`), or followed by a call "
            "that may change state (`self.decay()` that updates buffers in place). "
            "What a submodule of the same file returned counts as the caller's own when every "
            "class `self.layer[k]` may hold there (from the appends of `__init__`, less those "
            "whose `forward` would not accept the call's arguments) returns, at the element "
            "taken (`outputs[:2][0]`), a tensor it computed and keeps nowhere, and no other read "
            "of the local tuple takes that element (T5-style blocks' fp16 clamps). The list must "
            "be built only there: a base or subclass of the file that changes it, `del`, `pop`, "
            "`insert`, an alias, `setattr`/`add_module`, a rebound class name, a decorated "
            "`forward` or a `__call__` on the way make the classes unknown. So does what a "
            "method of the file returns (`self.project(x)`, `super().forward(x)`) where every "
            "method the call may run (a subclass of the file may override it) returns a tensor "
            "it computed and keeps nowhere: not a decorated one, `super(Cls, self)`, a name the "
            "class body binds otherwise (`project = Base.skip`), nor where a class on the way "
            "has several bases, a decorator, a metaclass, `__getattribute__` or a base of "
            "another file but `nn.Module`, or where the file builds classes inside functions "
            "or by `type(...)` (known problem: a subclass in another file that overrides the "
            "method is not seen). A kept tensor that "
            "another name or container got before the `if` (`residual = h`) is declined too, "
            "and so is one that a name bound after it to the tensor or a view of it "
            "(`shortcut = x`, `y = x.view(-1)`) hands on or hands to an in-place call. "
            "Known problems: under compile, where an operation after the `if` fails at run "
            "time on its data (an index out of range), Python state that the function changed "
            "before it (`self.steps += 1`) is lost with the graph, where the original's break "
            "had applied it (an `if` inside a `try` is declined); "
            "a forward hook that another module registers (to keep a submodule's output, or "
            "replace it with a tensor held elsewhere; the file's own make what a submodule "
            "returns unknown), and a subclass in another file that builds other layers, are "
            "not seen; "
            "likewise a path that returns such a tensor itself (`return x`), and branches that "
            "hand one to a call that may keep it (LongRoPE's `register_buffer(\"inv_freq\", "
            "self.long_inv_freq)`: the buffer would no longer be that very tensor). A condition "
            "with an effect (`:=`, `self.steps.add_(1) > 1`) is computed before the setups moved "
            "out of the branches. The helper also branches in Python on sparse tensors. Known "
            "problem: speculated code may index a shape (`x.shape[2]`) or reduce along a dim "
            "(`h.amax(2)`, taken only where the test took the whole extremum of `h`, so that "
            "`h` is not empty), which fails on a tensor of lower rank on a path the original "
            "did not run; the helper "
            "keeps the Python branch (and the break) when shapes, dtypes, devices or strides "
            "differ at run time (the test's device too: torch.where fails for a condition on "
            "another device than the sides), and, under `torch.no_grad()`, when a side requires "
            "grad (a kept "
            "Parameter, which the selection would not keep). It also declines attribute writes, "
            "early returns, names not defined on both paths, names declared `global` or "
            "`nonlocal` or unbound by `del`, in-place mutation of the names involved, sides "
            "that read what may not be there on the path not taken (a parameter that defaults "
            "to None or is annotated `Optional`, an attribute the file may set to None, sets "
            "only on some paths of an `__init__`, deletes or probes with `hasattr`, a local "
            "bound on some paths, deleted, unbound by `except ... as` or only annotated, a "
            "global the module may not bind) unless the test rules it out (`mask is not None "
            "and ...`), a result that later code tells apart by identity or storage (`y is x`, "
            "`y.data_ptr()`) where a path keeps an existing tensor, a "
            "function that reads its own frame (`locals()`, `vars()`, `sys._getframe()`: the fix "
            "may bind a temporary or a moved name), a condition that "
            "materialises a Python scalar (except a whole tensor test that compares the "
            "`.item()` of a whole reduction with an int literal below 2**53 or a size, `if "
            "h.abs().max().item() > 100:`, which `_graphmend_item` keeps a 0-d tensor that "
            "compares as the number does, see GM401; such an `if` is reported beside its "
            "`.item()`), and an `and`/`or` whose later operand Python may "
            "never compute, where the lowered test computes it on every call: one that may hold "
            "several elements, fail for some shapes or dtypes (`(x == ref).all()` of another "
            "size; only `any`/`all`/`sum`/`prod`/`count_nonzero` of a name, of a name compared "
            "with a number (a literal, or an attribute of `self` that the file only ever sets to "
            "number literals: `self.num_train_timesteps = 1000`) or of `isnan`/`isinf`/`isfinite` "
            "of a name, and an extremum the first operand took compared with a number, are known "
            "not to), or read a local or attribute that the first operand does not and that may "
            "be None or unbound there (an optional `mask`). "
            "While autograd records (training), `torch.where` gives the selected side the "
            "gradient and the other side zeros; the fixer selects there too "
            "(`_graphmend_where_grad`) only where that is provably the original's gradient for any"
            " values, inf and NaN included: the side not selected is built from operations whose "
            "backward turns a zero gradient into zeros (`+`, `-`, products with finite literals, "
            "`clamp`, `where`, `masked_fill`, `relu`, `maximum`, sums, slices, reshaping, float "
            "casts; not `x * w`, `/` by a tensor, `log`, `sqrt`, `exp`, `tanh`, matmul, "
            "submodules), both sides read the same tensors (so no parameter gets a zero `.grad` "
            "where the original left None), and no tensor the caller holds, or the function "
            "updates in place later (`F.relu(h, inplace=True)`), is saved for backward by a side "
            "the original did not run; a literal factor must stay finite in float16 (at most "
            "65504), a literal divisor also nonzero (at least 2**-24). Elsewhere the `if` stays as "
            "written under `if _graphmend_keeps_branch(h, self.w):` (given what the sides "
            "compute with; a layer for its weight, `self.proj` for `self.proj.weight`, whose "
            "parameters it looks at, since reading the weight may run a parametrization), which "
            "holds eager, and compiled while autograd records through one "
            "of those (the break stays in training: `fixed, but it keeps the branch while "
            "autograd records: ...`), so that the path not taken never runs in a graph whose "
            "backward (AOTAutograd's) would send it a zero gradient, NaN through `h / h.sum()`; "
            "its `else` holds the selection, which runs compiled without autograd, or with "
            "frozen weights and inputs. Where one of those may be unbound before the `if` (a "
            "local bound on some paths, a loop variable), or a side binds names of its own (a "
            "comprehension), the test is given nothing and keeps the branch whenever grad mode "
            "is on. Where the selection is exact for gradients "
            "but shows another autograd node (printed, logged, returned to hooks), the `if` is "
            "kept the same way; the finding and the codemod say why (`fixed, but it keeps the "
            "branch for tensors that require grad: ...`). "
            "Eager, both helpers branch in Python like the original "
            "and return the branch's own tensor (autograd node and aliases included); only "
            "compiled code selects with `torch.where`, so what follows about the selection holds "
            "under `torch.compile`. There a selected tensor is a new graph output: while autograd "
            "records, one that the function prints, logs, formats whole or reads the `grad_fn` "
            "of, or returns from a file that registers module hooks, keeps the Python branch "
            "(it would show `grad_fn=<WhereBackward0>`, or a compiled node where the branch "
            "kept a leaf). Known problem: with the debugging backend "
            "`backend=\"eager\"`, a returned selected tensor names `WhereBackward0` as its "
            "`grad_fn` (other backends name a compiled node either way). Known problem: hooks "
            "that observe operations (`saved_tensors_hooks`, dispatch modes, the profiler) see "
            "those of the path not taken, which the selection computes (eager too, where the "
            "helper is given both sides); so does a tensor subclass with `__torch_function__`, "
            "which may log them, or raise for one it does not support. Known problem: under "
            "`torch.func.vmap`, compiled without autograd, where the original's `if` raises "
            "(data-dependent control flow), the selection computes per sample; a function that "
            "Dynamo does not trace (a generator) runs the helpers, which Dynamo then compiles "
            "alone: there a selection is a new tensor where the branch returned an existing one. "
            "A side reads only what is known to be there: an attribute of an object other "
            "than `self` (`cfg.scale`, `blk.gamma` of `blk = self.blocks[0]`) is declined, "
            "but for tensor metadata (`x.shape`), imported modules (`torch.float16`) and "
            "what torch returns (`torch.finfo(x.dtype).min`); `self.proj.weight` only of an "
            "`nn` layer known to hold it, in a file that gives modules no code to run (as "
            "GM301 tells it; `spectral_norm(self.proj)` computes the weight, and updates its "
            "state, on every "
            "read; known problem: one that another module registers runs once more, compiled "
            "without autograd, for the path not taken); a method named like a tensor operation "
            "only on "
            "what is not an object `self` holds or the module defines (`self.head.relu(x)` "
            "calls a module). "
            "Known problem: what may be None or unset is judged from this file (its "
            "defaults, `None` stores, `.get()`, callers and constructor calls, what its own "
            "functions, lambdas and modules may return, the `nn` layers it builds without a "
            "`bias` or an affine part or replaces): a value that is None in ways it does not "
            "show (a method inherited from another file, a config object built elsewhere, a "
            "caller in another file, attributes set through `self.__dict__`) and identity "
            "compared by a helper or through a set or dict of tensors are not seen; nor is a "
            "module passed as an argument (`apply(x, self.head)` whose side calls "
            "`head.relu(x)`). "
            "Known problem: the path "
            "not taken is computed, so a "
            "shape or dtype error that the original never met there (`h * mask` of shapes that do "
            "not broadcast, `1 - mask` of a bool mask, on the path no input takes) raises in the "
            "fixed code; a helper imported from another module that returns its argument, later "
            "updated in place, is not seen; where the original saved a kept tensor for backward, "
            "a caller that updates it in place before `backward()` gets autograd's version error "
            "from the original and none from the fixed code (the selection is a new tensor); an "
            "input gradient of -0.0 may become 0.0 (the side not selected adds +0); with "
            "`torch.where` "
            "kept for backward, a condition updated in place after the selection "
            "(`self.gate.logical_not_()`) makes the backward raise. The comparison is by name: "
            "two paths that read different locals built from the same tensors (`return y` / "
            "`return z`) keep the branch. A merged call receives a new tensor where the original "
            "passed an existing one, so it is declined when that tensor"
            " or the buffer it is stored as is modified in place. The random-draw guard declines a "
            "draw made in the test itself (the guard would skip it), `<=` (`torch.rand` may "
            "return 0.0), draws of more than one element, of a dtype other than a real floating "
            "one or on a device given (a complex or `meta` draw fails at the test the fix "
            "skips), a draw updated in place or read before the test (it may leave [0, 1)), "
            "and a probability that is a tensor or not a plain name or attribute; a probability "
            "that is not a Python number at run time (None, an array) is compared as written, "
            "with the original's result or error. An `if` deferred as a whole "
            "tests its operands "
            "with Python's own `if` inside the op, so `bool()` is applied as in the original: a "
            "one-element tensor decides (NaN is true), a larger one raises the same "
            "`RuntimeError`, `and`/`or`/`not` stop where they stopped. Every operand but the "
            "first, and the calls' arguments, are computed on every call instead of only when "
            "reached, so each must be a tensor (or, for arguments, a value [Defer] carries) "
            "built from the positive list above: the fixer declines indexing, calls it cannot "
            "prove free of effects and errors, a Python value among the operands (it may guard "
            "what follows it: `mask is not None and (mask == 0).any()`), a leading Python test "
            "with an `elif` or `else`, branches holding anything but print, log or warnings.warn "
            "calls (a `return`, an assignment), calls [Defer] declines, and two "
            "`warnings.warn` calls that may show the same message with the same category "
            "(eager, both would be made from the line of the deferred call, where the "
            "once-per-location filter shows the message once; a message other than a string "
            "literal, or a category other than a builtin name, may be the same). Eager, records "
            "and warnings keep the caller's file and function, with the line of the deferred "
            "call for all the calls of the `if`; compiled, each is made from its own line of the "
            "helper, and the known problems of GM101 apply."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    if x.sum() > 0:  # <- GM201
                        y = x * 2
                    else:
                        y = x - 1
                    return y + 1
            """,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x, mask=None):
                    if mask is not None:
                        x = x * mask
                    if x.dtype == torch.float16 and self.training:
                        x = x.float()
                    for i in range(x.shape[0] // 4):
                        x = x + i
                    return torch.where(x.sum() > 0, x * 2, x - 1)
            """,
        ),
    ),
    Rule(
        code="GM202",
        name="data-dependent-while",
        family="DC",
        message="`while` on a tensor value in {function} breaks the graph",
        gb_ids=("GB0170",),
        fixer=None,
        hint="bound the loop by a static count (range over a shape) and select with torch.where",
        explanation=(
            "A `while` loop whose condition is a tensor breaks the graph at every test, and "
            "Dynamo cannot unroll it. Use a static bound (a Python int or a shape) and mask the "
            "iterations that should not happen, or move the loop out of compiled code."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    while x.abs().max() > 1:  # <- GM202
                        x = x / 2
                    return x + 1
            """,
            build="Model(), (torch.randn(8) * 4,)",
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    steps = 0
                    while steps < 3:
                        x = x / 2
                        steps += 1
                    return x + 1
            """,
        ),
    ),
    Rule(
        code="GM203",
        name="data-dependent-conditional-expression",
        family="DC",
        message="conditional expression on a tensor value in {function} breaks the graph",
        gb_ids=("GB0170",),
        fixer="PredicateControlFlow",
        hint="write torch.where(condition, a, b) instead of `a if condition else b`",
        explanation=(
            "`a if cond else b` with a tensor `cond` is a data-dependent branch like an `if` "
            "statement. When both sides are cheap and valid, `torch.where(cond, a, b)` computes "
            "the same value in one graph. The fix rewrites the expression where it is the whole "
            "value of a `return` or of an assignment to one name (`y = a if cond else b`), with "
            "the proofs of GM201's selection: `_graphmend_where(cond, a, b)`, the helper that "
            "uses `torch.where` only where that is exact; a leading static conjunct stays a "
            "Python test (`_graphmend_where(c, a, b) if s else b` for `a if s and c else b`). "
            "A test of a uniform random draw (LayerDrop's `skip_the_layer = True if "
            "self.training and dropout_probability < self.layerdrop else False`) compares only "
            "when the probability is positive, as GM201's does."
        ),
        fix_note=(
            "As GM201's selection: eager values are bitwise identical; both sides are evaluated, "
            "so the fixer declines sides that could fail or change anything (GM201's list), "
            "sides that are None, containers or Python values, and a side that may be an "
            "existing tensor someone can tell apart from the new one `torch.where` makes (a "
            "tensor the caller holds that is returned, a name updated in place later). Where "
            "the selection could change gradients or show another autograd node, the statement "
            "stays as written while autograd records through the sides "
            "(`if _graphmend_keeps_branch(...):`). A conditional expression elsewhere (an "
            "argument, an operand, inside a comprehension) is reported and not rewritten."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    y = x * 2 if x.mean() > 0 else x  # <- GM203
                    return y + 1
            """,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x, scale=None):
                    y = x * 2 if scale is None else x * scale
                    return y + 1
            """,
        ),
    ),
    Rule(
        code="GM204",
        name="any-all-over-tensors",
        family="DC",
        message="{call}() over tensor values in {function} breaks the graph",
        gb_ids=("GB0170",),
        fixer=None,
        hint=(
            "reduce in torch: `torch.stack([a, b]).any()`, or `(a | b)` and `(a & b)` for a few "
            "0-d bools, and keep the result a tensor"
        ),
        explanation=(
            "The builtins `any()` and `all()` take the truth of each element, a data-dependent "
            "branch on every tensor they are given (`if any(t.isnan().any() for t in "
            "outputs):`). Over a list or tuple the branch is an ordinary break. Over a "
            "generator it is taken in the loop Dynamo runs for the generator, and Dynamo then "
            "runs the whole function eagerly, the code before the call included (measured on "
            "torch 2.13: no graph at all). No fix is offered: `any()` stops at the first true "
            "element and `all()` at the first false one, and a rewrite that reduces them all "
            "would compute what the original skips."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    h = x * 2
                    if all([x.sum() > 0, h.mean() < 1]):  # <- GM204
                        h = h + 1
                    return h
            """,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    h = x * 2
                    both = torch.stack([x.sum() > 0, h.mean() < 1]).all()
                    return torch.where(both, h + 1, h)
            """,
        ),
    ),
    # ---------------------------------------------------------------- VG: validation guards
    Rule(
        code="GM301",
        name="tensor-validation-guard",
        family="VG",
        message="validation guard on a tensor value in {function} breaks the graph",
        gb_ids=("GB0170",),
        fixer="TrapGuards",
        hint="check with torch._assert_async(condition, message) instead of `if ...: raise`",
        explanation=(
            "`if <tensor condition>: raise SomeError(\"...\")` is a data-dependent branch whose "
            "only purpose is to fail. The fix turns it into a graph-native check: an emitted "
            "helper makes the test as a deferred call (the ordered custom op of GM101): "
            "eager it raises as before, and under compile the op tests the condition inside "
            "the graph and raises the same exception. A guard whose test is the number of a "
            "whole reduction compared with an int (`.item()`, GM401) is reported here too, "
            "`assert lengths.max().item() <= seq_len` included."
        ),
        fix_note=(
            "Eager and compiled, a failing check raises the same exception type with the same "
            "message (torch 2.13; a torch without custom ops keeps the break). The fixer "
            "declines guards whose exception is not a builtin, that use `raise ... from`, whose "
            "message is not a string literal or an f-string of plain values (a literal, or a "
            "module-level string constant bound once, is passed as it is; a continuation line "
            "keeps its spaces. An f-string is built by a "
            "check of its own, only when it fails, such as the VLMs' `f\"tokens: "
            "{n_image_tokens}, features {n_image_features}\"`: a value that computes whatever "
            "the shapes, dtypes and values (a literal, a name, metadata of a tensor the test "
            "computed with: `x.shape`, `x.size()`, `x.dim()`; a whole `sum`/`any`/`all` of a "
            "name, an attribute of `self` that `__init__` sets, a `self` chain the test reads: "
            "`self.config.vocab_size`; the class's name: `type(self).__name__`, "
            "`self.__class__.__name__`, where no class of `self`'s lineage has a metaclass, "
            "a `__class__` property or a base of another file) is passed on every call; one "
            "that may "
            "fail (`{x.shape[0]}` of a 0-d tensor, `{x.mean()}` of integers, `{a / b}`, "
            "`{n:.2f}` of a tensor) is computed by the check only when it fails, from the "
            "locals and `self` attributes it reads, which are passed; declined where "
            "it has an effect, reads a property, indexes or calls a `self` attribute "
            "(`self.layers[0]`), or a local that may be unbound or None there "
            "(`{scale:.2f}` of `scale=None`)), whose "
            "condition it cannot evaluate without side effects or failures "
            "that Python's `or`/`and` would have skipped (an operand after the first must be a "
            "0-d test that computes for every shape and dtype and reads no local that may be "
            "None there, as for GM201), guards inside a `try` or `with` of their "
            "function or around a call that leads to it in the module, up the chain of "
            "callers (`check(x)`, `self.check(x)`, `self.inner(x)` or `layer(x)` over "
            "`self.layers` for a `forward`: the check fails inside the graph, no handler sees "
            "it, and `with torch.no_grad()` would leave grad mode off), and guards preceded by "
            "a change of Python state (`self.calls += 1`, `seen.append(x)`, a call of a method "
            "of `self` that makes one, one later in a loop around the guard, one made by a "
            "caller up the chain before its call or in a loop around it, also through a "
            "local bound to what `self` holds, `setattr`, `getattr(self, ...)` or "
            "`self.__dict__`) or by an update in "
            "place of a tensor that outlives the call (`self.steps.add_(1)`, `x[i] = 0` or "
            "`x += y` of an input), made there, in the guard's own test "
            "(`if self.steps.add_(1) > 2:`), also through a name bound to a part or a view of "
            "it in a function the analysis follows (`flat = t.view(-1); flat.add_(1)`, "
            "`getattr(module, name).mul_(d)`, a list it collects buffers into, what a getter "
            "of the file returns, `torch.Tensor.zero_` handed to `map`), through the type "
            "(`type(self).count += 1`, `object.__setattr__(self, ...)`), by a function of "
            "the file decorated by a decorator of the file (its wrapper), or by "
            "a submodule called there: a batch or instance norm that keeps running statistics, "
            "a module built to work in place (`nn.ReLU(inplace=True)`) handed such a tensor, "
            "an `nn.Sequential` of these (its modules are read from its arguments, from a list "
            "the method builds, `*layers`, or from an `OrderedDict`), any module that code "
            "changes or hands on after building it (`self.seq.append(m)`, `seq = self.seq`, "
            "`self.act.inplace = True`, a walk over `self.modules()` that sets attributes), "
            "a class of this file "
            "whose `forward` makes one, and any module the analysis cannot name (built by a "
            "factory such as `norm_layer(dim)`, a class of another file), any submodule in a "
            "file that gives modules code to run (a module hook, also for all modules or put in "
            "a hook dict, a patched torch class or `forward`, `spectral_norm`, `weight_norm`, "
            "pruning, also named by a string: `getattr(m, \"register_forward_hook\")`; known "
            "problem: a name computed at run time is not seen); "
            "the running statistics handed to `F.batch_norm` or `torch.batch_norm`; "
            "`setattr(self, ...)`, a store into a tensor's `.data` or `.grad`, `ids += [n]` of a "
            "list the module holds (`ids = self.ids`), `self.register_buffer(...)` and the other "
            "`nn.Module` methods that change a module, a method of an object of this file held "
            "by `self` (`self.tracker.record(n)`), a module-level lambda, "
            "`torch._foreach_mul_([self.ema], d)` and `operator.imul(self.ema, d)`, a callee "
            "computed at run time (`getattr(self, name)(x)`; a module reached through "
            "`self._modules`, a slice of `list(self.modules())` or `.__call__` may be any "
            "module of the file), a method called through the class "
            "(`type(self)._update(self, x)`), and code of another module, which the analysis "
            "does not read (the decline names it): a function or class imported from one "
            "(`normalize(x)`, `mylib.bump()`, `DynamicCache()`), a method of an object built "
            "by one (`TRACKER.record(x)` of a module-level `TRACKER = Tracker()`, "
            "`self.tracker.record(x)`), a method that `self`, `super()` or `type(self)` "
            "inherits from a base of another module (`self.get_head_mask(...)` of a "
            "`PreTrainedModel`, `super().forward(x)`), a module of a class of another module, "
            "a method that no tensor and no builtin type has of an object whose class the "
            "analysis does not find in the file (`TRACK.record(x)` of `TRACK = "
            "helpers.TRACKER`, `self.tracker.record(x)` of a tracker handed to `__init__`, "
            "`HOOKS['f'](x)`, a callable bound in the class body, `functools.partial(f)`), a "
            "function of another module handed to `map`, `filter` or `sorted(key=...)`, a "
            "descriptor of another module in the class body, a `__getattr__` of the class "
            "that makes one, an object built of a class of this file whose special methods or "
            "properties make one (`Wrap(x) * 2`, `with Scope():`), a "
            "submodule in a file that registers a parametrization; torch, Python's builtins "
            "and pure standard modules, "
            "numpy (not `numpy.random`), einops, `transformers.activations` and "
            "transformers' and diffusers' availability probes (`is_torch_xla_available()`) "
            "are known to change nothing (a relative import is resolved from the file's "
            "package), and a logger's calls are made in order; and, in the guard's "
            "function, a method of an object it was handed or made whose class the analysis "
            "does not know (`cache.store(x)`, `note.keep(n)`: a method that no tensor and no "
            "builtin type has). Calls that lead to the "
            "guard include `super().forward(x)`, `Model.check(x)`, the call of an object "
            "whose class of this file defines `__call__`, and the call of a module whose class "
            "the analysis cannot name where the guard's class is built so (copied by "
            "`copy.deepcopy` or `type(m)()`, directly or by a function such as "
            "`_get_clones(layer, n)`, picked from a dict of classes, made by a factory "
            "method or by `cls()` in a class method, handed to code of the file that may keep "
            "it: `Runner(self.block)`, `self.runner.attach(self.block)`, built outside the "
            "classes: `SHARED = Block()`, a function that returns "
            "`nn.ModuleList([Block() ...])`). Dynamo applies the first after the "
            "graph, and Inductor and "
            "`aot_eager` write the second back after it, so a failing check would lose them "
            "(not so a change of the function's own `**kwargs` dict). A range check "
            "`x.min() < lo or x.max() > hi` is fixed: `max`, `min`, `amax` "
            "and `amin` fail only on an empty tensor, so once the first extremum of `x` has been "
            "taken, another one of the same `x` cannot fail; extrema of two tensors are "
            "declined (`b.max()` raises on an empty `b`). A test `<reduction>.item() <op> <int>` "
            "(the int a literal below 2**53 or a size such as `x.size(0)` or a name unpacked from "
            "`x.size()`), or the number alone (`if torch.isnan(x).any().item():`, whose truth the "
            "0-d tensor has), keeps the number a 0-d tensor: the emitted `_graphmend_item` "
            "promotes it "
            "to float64 or int64, where it compares with the int exactly as Python compares the "
            "number, and gives `.item()` itself where that is not so (complex, unsigned 64-bit, "
            "MPS, meta). Such an `assert` becomes `if __debug__: _graphmend_assert(...)`, "
            "skipped by `python -O` as the `assert` was, raising AssertionError with the same "
            "message eager and compiled. Comparisons with floats or unknown values, and inside "
            "larger tests, are declined. Known problems: such a change, or a `try`, made by a "
            "calling frame in another file is not seen by the analysis, nor one by a hook, "
            "parametrization or patch that code outside the file gives a module (a builder "
            "in another module, a training script), by the wrapper of a decorator of another "
            "module, by "
            "a property or special method of a class of another module, by the `__call__` of "
            "a base of another module (a calling frame), nor one by a caller "
            "that reaches the guard's module "
            "through an `nn.Sequential` whose modules it cannot list or a "
            "module handed to its `__init__` (the analysis finds no call that leads there); "
            "where a `try`, a `with` or a state change of a caller is concerned, a call of the "
            "file that may run a module in a form the analysis does not name counts as leading "
            "to the guard of any class the caller's class builds, of a subclass of it or of "
            "one whose `forward` it inherits (a property, a bound method "
            "stored in `__init__`, a plain list or object that holds the module, an item of an "
            "`nn.Sequential`, a parameter or local called, `functools.partial`, `map`, "
            "`reduce`, `checkpoint` or a function of another module handed `self` or what it "
            "holds, `type(m).forward(m, x)`, `nn.Module.__call__(m, x)`, a walrus or "
            "conditional expression, `__getattr__`, a method of a class of the file called on "
            "another object than `self`: `runner.run(x)`, an attribute into which the file "
            "stores objects or a dataclass field, called on another object: "
            "`self.holder.module(x)`, `model.block(x)`, a function defined inside the "
            "caller that calls one: `def step(h): return self.block(h)`, also handed to "
            "`map`), not a call made in `__init__` or in a function of the module that no "
            "compiled code runs (one that only the script's top level calls, never handed on "
            "as a value nor named by a string: it runs eagerly, around the compiled call; a "
            "function no code of the file calls may be another file's API, and counts), nor "
            "one that calls no "
            "module it is handed "
            "(`math.sqrt(self.dim)`, numpy, a logger, `max(self.n, k)` without `key=`, a "
            "method of tensors or builtin types: `h.view(-1, self.dim)`, a `torch.nn` layer "
            "built from settings: `nn.Softmax(self.axis)(h)`, torch's computing functions: "
            "not `checkpoint`, `tree_map` or `nn.Module.__call__`, also through a local, nor "
            "`nn.DataParallel` and the `nn.Transformer` stacks, which run the modules they "
            "wrap); a forward pre-hook that the file registers on the guard's module, or on "
            "every module (also at the module's top level or into `_forward_pre_hooks`, "
            "through the method taken as a value or by its name, a string naming it "
            "anywhere, the global registration under another name, or `__dict__`/`vars()` "
            "at a hook dict's key), "
            "declines it (known problems: a hook dict reached at a key computed at run "
            "time; a generator expression or method "
            "made before the caller's `try` or change and consumed after it; calls that "
            "`nn.Module.apply`, a descriptor, a `defaultdict` factory or a property read by "
            "`getattr` make; a parametrization whose module keeps state; a special "
            "method of a class "
            "of the file that calls a module: `self.runner[x]`); a "
            "module handed in through a setter (`set_input_embeddings`) is taken to be of the "
            "class the module builds; on an input "
            "that makes the original raise (`lengths.max()` of an empty tensor), the fixed code "
            "lets Dynamo trace further, and an operation after the check that fails while "
            "tracing (`x.amax()` of the same empty tensor) then raises Dynamo's "
            "TorchRuntimeError (a RuntimeError) where the compiled original raised the first "
            "operation's RuntimeError; likewise, an input that fails the check and also the "
            "shapes of a later operation (a mask of another batch size) raises Dynamo's "
            "TorchRuntimeError from tracing under compile, not the guard's exception, because "
            "Dynamo traces the whole graph before the check runs. A size compared with a float "
            "reduction is exact below 2**53 elements, which only an expanded view exceeds. Under "
            "`torch.utils.checkpoint` with the `eager` backend, the message carries the FX node "
            "text that torch appends (not with `aot_eager` or Inductor). A guard in a function "
            "decorated with `@torch.no_grad()`, `@torch.inference_mode()` or `@torch.autocast(...)`"
            " (or called from one) is declined, as inside `with`. Inside a transform of "
            "`torch.func` (`vmap`, `jvp`) the check runs as written, as the original did. The "
            "check is an ordered op in the graph, as GM101's deferred calls are, and has their "
            "known problem: a guard in a function that updates a parameter's or a buffer's "
            "tensor in place is declined, since torch 2.13's AOTAutograd fails on such a graph "
            "where the caller passes inputs that share memory; an update in another frame of "
            "the same graph is not seen."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x, mask):
                    y = x * 2
                    if (mask == 0).all():  # <- GM301
                        raise ValueError("mask must keep at least one position")
                    return y * mask
            """,
            build="Model(), (torch.randn(8), torch.ones(8))",
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x, mask):
                    if x.dim() != 1:
                        raise ValueError("expected a vector")
                    return x * 2 * mask
            """,
            build="Model(), (torch.randn(8), torch.ones(8))",
        ),
    ),
    Rule(
        code="GM302",
        name="torch-equal-guard",
        family="VG",
        message="torch.equal() guard in {function} breaks the graph",
        gb_ids=("GB0033",),
        fixer="TrapGuards",
        hint="compare shapes statically and check (a == b).all() with torch._assert_async",
        explanation=(
            "`torch.equal` returns a Python bool computed from tensor data, which Dynamo cannot "
            "produce inside a graph. As a guard (`if not torch.equal(a, b): raise ...`) it is "
            "fixed like GM301, with a static shape check first: `(a == b).all()` alone would "
            "broadcast and accept tensors of different shapes that `torch.equal` rejects."
        ),
        fix_note=(
            "As GM301: eager and compiled, a failure raises the same exception "
            "with the same message."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x, mask, expected):
                    y = x * 2
                    if not torch.equal(mask, expected):  # <- GM302
                        raise ValueError("unsupported attention mask")
                    return y * mask
            """,
            build="Model(), (torch.randn(8), torch.ones(8), torch.ones(8))",
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x, mask, expected):
                    torch._assert_async((mask == expected).all(), "unsupported attention mask")
                    return x * 2 * mask
            """,
            build="Model(), (torch.randn(8), torch.ones(8), torch.ones(8))",
        ),
    ),
    # ---------------------------------------------------------------- DO/TI: scalars
    Rule(
        code="GM401",
        name="tensor-item",
        family="DO/TI",
        message=".item() in {function} breaks the graph",
        gb_ids=("GB0124",),
        fixer="TrapGuards",
        hint=(
            "keep the value as a 0-d tensor (x.sum() instead of x.sum().item()), or set "
            "torch._dynamo.config.capture_scalar_outputs = True"
        ),
        explanation=(
            "`.item()` copies a tensor value into a Python number, which forces the graph to "
            "end (and a device sync on GPU). Arithmetic with the 0-d tensor itself stays in the "
            "graph. `capture_scalar_outputs=True` (or `fullgraph=True`) traces it as an unbacked "
            "symbol instead, which some models do not survive. In a guard whose whole test "
            "compares the number of a whole reduction with an int (`if mask.sum().item() != n: "
            "raise ...`, `assert lengths.max().item() <= seq_len`), the guard's fix (GM301) "
            "keeps the number a tensor; so it does when such a comparison is first kept in a "
            "flag that only the guard just after it reads (`is_padding_right = "
            "mask[:, -1].sum().item() != batch_size` then `if is_padding_right: raise ...`, the "
            "flash-attention padding check of many transformers models): that `.item()` is "
            "fixed here, the guard by GM301. In an `if` whose whole tensor test is such a "
            "comparison and whose branches [Where] selects (`if h.abs().max().item() > 100: h = "
            "h / 100`), the `if` is reported too (GM201), and its fix keeps the number a tensor."
        ),
        fix_note=(
            "Only the flag form is fixed: `flag = <whole reduction>.item() <op> <int>`, alone on "
            "its line, as the statement just before `if [static and] flag: raise "
            "Error(\"...\")` (not `not flag`: the flag may stay a Python bool), with `flag` a "
            "local that nothing else reads, binds or deletes (`flag += 1`, `locals()`), and the "
            "guard one that GM301 fixes (the comparison as "
            "GM301 takes it: the int a literal below 2**53 or a size). `_graphmend_item` keeps "
            "the number a 0-d float64 or int64 tensor, so the flag holds a 0-d bool tensor with "
            "the truth the Python bool had; the guard becomes the check of GM301. Each of the "
            "two rewrites is exact alone too: a tensor flag tested by the original `if`, or a "
            "Python flag checked by the helper. An `.item()` of a one-element tensor passed to "
            "`print`, a logger or `warnings.warn` goes with the call's fix (GM101-GM103: the "
            "helper takes the number). In the test of an `if` that GM201's fix selects, the "
            "`.item()` goes with that fix. Other `.item()` calls keep the hint."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    scale = x.abs().max().item()  # <- GM401
                    return x / (scale + 1)
            """,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    scale = x.abs().max()
                    return x / (scale + 1)
            """,
        ),
    ),
    Rule(
        code="GM402",
        name="tensor-tolist",
        family="DO/TI",
        message=".tolist() in {function} breaks the graph",
        gb_ids=("GB0109", "GB0033"),
        fixer=None,
        hint="compute with tensor ops instead of Python lists, or move the conversion out",
        explanation=(
            "`.tolist()` turns tensor data into Python values. On a floating-point tensor it "
            "always breaks (GB0109); on an integer tensor it breaks unless "
            "`capture_scalar_outputs=True` (GB0033)."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    first = x[:2].tolist()  # <- GM402
                    return x + sum(first)
            """,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    return x + x[:2].sum()
            """,
        ),
    ),
    Rule(
        code="GM403",
        name="tensor-to-python-scalar",
        family="DO/TI",
        message="{call}() of a tensor in {function} breaks the graph",
        gb_ids=("GB0124",),
        fixer=None,
        hint="keep the 0-d tensor, or hoist the conversion out of the compiled code",
        explanation=(
            "`int(t)`, `float(t)` and `bool(t)` call `.item()` under the hood. When the result "
            "sizes a tensor (`torch.zeros(int(t.max()))`) no exact source rewrite exists; use "
            "`capture_scalar_outputs=True` or compute the size outside."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    total = float(x.sum())  # <- GM403
                    return x * total
            """,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    rows = int(x.shape[0])
                    return x * x.sum() + rows
            """,
        ),
    ),
    Rule(
        code="GM404",
        name="tensor-as-python-int",
        family="DO/TI",
        message="tensor {call} in {function} breaks the graph",
        gb_ids=("GB0124", "GB0033", "GB0059"),
        fixer=None,
        hint=(
            "take the int from static shapes (`x.size(0)`, `len(...)`) or pass it in from the "
            "uncompiled caller as a Python int; else write `.item()` and set "
            "torch._dynamo.config.capture_scalar_outputs = True, with torch._check on its range"
        ),
        explanation=(
            "Slice bounds, `range()`, `torch.arange`/`linspace` bounds and steps, and the sizes "
            "of `torch.zeros`, `x.view`, `x.repeat` and the like must be Python ints. Given a "
            "tensor (`offsets[i]` of a `cumsum`, an element of a tensor of shapes, "
            "`lengths.max()`), PyTorch reads its value with `.item()`, which Dynamo cannot do "
            "while tracing: a slice breaks with GB0124, a factory or a view with GB0033 (data-"
            "dependent operator), `range()` with GB0059. Parameters count as tensors when every "
            "call of the function in compiled code passes one, and so do the elements of a "
            "loop over a tensor (`for h, w in spatial_shapes`). A one-element tensor computed "
            "from Python scalars alone (`torch.div(x.size(1), 2, rounding_mode=\"trunc\")`) "
            "sizes and bounds without a break (Dynamo knows its value), and is not reported. "
            "There is no automatic fix: the exact int is data. Known problems: a parameter that "
            "one call gives an int and another a tensor is not taken for a tensor, so its uses "
            "go unreported; a 0-d index is recognised only as a whole-tensor reduction "
            "(`x[t.argmax()]`), not as an element of another tensor."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x, counts):
                    offsets = torch.cumsum(counts, dim=0)
                    start = offsets[0]
                    return x[start:] * 2  # <- GM404
            """,
            build="Model(), (torch.randn(8), torch.tensor([2, 3]))",
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x, counts):
                    half = x.size(0) // 2
                    return x[half:] * 2 + counts.sum()
            """,
            build="Model(), (torch.randn(8), torch.tensor([2, 3]))",
        ),
    ),
    # ---------------------------------------------------------------- DS: dynamic shapes
    Rule(
        code="GM501",
        name="nonzero",
        family="DS",
        message="{call}() has a data-dependent output shape; it breaks the graph in {function}",
        gb_ids=("GB0036",),
        fixer=None,
        hint=(
            "count with torch.count_nonzero or mask with torch.where(cond, x, 0); or set "
            "torch._dynamo.config.capture_dynamic_output_shape_ops = True"
        ),
        explanation=(
            "`nonzero`, `argwhere` and one-argument `torch.where(cond)` return as many indices "
            "as the data holds, so the output shape is unknown when the graph is built. Keep "
            "fixed shapes (masks and reductions) where the indices only feed a reduction."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    idx = torch.nonzero(x > 0)  # <- GM501
                    return x.sum() + idx.shape[0]
            """,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    return x.sum() + torch.count_nonzero(x > 0)
            """,
        ),
    ),
    Rule(
        code="GM502",
        name="boolean-mask-indexing",
        family="DS",
        message=(
            "boolean-mask indexing has a data-dependent output shape; "
            "it breaks the graph in {function}"
        ),
        gb_ids=("GB0036",),
        fixer=None,
        hint=(
            "inside reductions use torch.where(mask, x, 0).sum(); "
            "or set capture_dynamic_output_shape_ops"
        ),
        explanation=(
            "`x[mask]` with a boolean tensor mask selects a data-dependent number of elements "
            "(it calls `nonzero`). When the selection only feeds a reduction, "
            "`torch.where(mask, x, 0)` keeps the shape fixed."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    positive = x[x > 0]  # <- GM502
                    return positive.sum() + x
            """,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    index = torch.arange(4)
                    return torch.where(x > 0, x, 0).sum() + x[index].sum()
            """,
        ),
    ),
    Rule(
        code="GM503",
        name="torch-unique",
        family="DS",
        message="{call}() has a data-dependent output shape; it breaks the graph in {function}",
        gb_ids=("GB0036",),
        fixer=None,
        hint="move torch.unique out of the compiled code, or set capture_dynamic_output_shape_ops",
        explanation="`torch.unique` returns as many values as the data holds distinct ones.",
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    values = torch.unique(x.round())  # <- GM503
                    return x + values.sum()
            """,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    return x + x.round().sum()
            """,
        ),
    ),
    Rule(
        code="GM504",
        name="masked-select",
        family="DS",
        message="{call}() has a data-dependent output shape; it breaks the graph in {function}",
        gb_ids=("GB0036",),
        fixer=None,
        hint="use torch.where(mask, x, 0) when the result feeds a reduction",
        explanation="`masked_select` is boolean-mask indexing under another name.",
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    kept = torch.masked_select(x, x > 0)  # <- GM504
                    return x + kept.sum()
            """,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    return x + torch.where(x > 0, x, 0).sum()
            """,
        ),
    ),
    # ---------------------------------------------------------------- other
    Rule(
        code="GM601",
        name="time-call-in-compiled-code",
        family="other",
        message="{call}() inside {function} breaks the graph",
        gb_ids=("GB0007",),
        fixer=None,
        hint="time the compiled call from the uncompiled caller",
        explanation=(
            "Clock functions are skipped by Dynamo and end the graph; their value would be "
            "taken at trace time anyway. Measure around the compiled call instead."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    y = x * 2
                    started = time.perf_counter()  # <- GM601
                    return y + started
            """,
            header="import time\n\n" + _TORCH_SETUP,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    return x * 2


            def timed(model, x):
                started = time.perf_counter()
                out = model(x)
                return out, time.perf_counter() - started
            """,
            header="import time\n\n" + _TORCH_SETUP,
        ),
    ),
    Rule(
        code="GM602",
        name="deepcopy-of-tensor",
        family="other",
        message="copy.deepcopy() of {call} in {function} breaks the graph",
        gb_ids=("GB4198",),
        fixer=None,
        hint=(
            "use tensor.clone() (and .detach() if the copy must not track gradients); copy "
            "modules and containers of tensors outside the compiled code"
        ),
        explanation=(
            "Dynamo refuses to deepcopy a tensor, also one inside the value copied (a module's "
            "parameters, a list of dicts of tensors); `clone()` copies a tensor inside the "
            "graph. A tuple, list or dict of Python values copies without a break. Where the "
            "value is not known to be a tensor, the finding says that it breaks only when the "
            "value holds one."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x: torch.Tensor):
                    y = x * 2
                    snapshot = copy.deepcopy(y)  # <- GM602
                    return y + snapshot
            """,
            header="import copy\n\n" + _TORCH_SETUP,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.config = copy.deepcopy(config)

                def forward(self, x):
                    y = x * 2
                    return y + y.clone()
            """,
            header="import copy\n\n" + _TORCH_SETUP,
            build='Model({"scale": 2}), (torch.randn(8),)',
        ),
    ),
    Rule(
        code="GM603",
        name="manual-seed-in-compiled-code",
        family="other",
        message="{call}() inside {function} breaks the graph",
        gb_ids=("GB0007",),
        fixer=None,
        hint="seed in the uncompiled caller, before the compiled call",
        explanation="Seeding the global generator is skipped by Dynamo and ends the graph.",
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    y = x * 2
                    torch.manual_seed(0)  # <- GM603
                    return y + torch.rand_like(y)
            """,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    return x * 2 + torch.rand_like(x)


            def seeded(model, x):
                torch.manual_seed(0)
                return model(x)
            """,
        ),
    ),
    Rule(
        code="GM604",
        name="data-ptr",
        family="other",
        message=".data_ptr() in {function} breaks the graph",
        gb_ids=("GB5976",),
        fixer=None,
        hint="decide aliasing in the uncompiled caller; `a is b` is not equivalent for views",
        explanation="Storage addresses do not exist while Dynamo traces with fake tensors.",
        failing=_example(
            """
            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.seen_ptr = 0

                def forward(self, x, y):
                    z = x * 2
                    if x.data_ptr() == self.seen_ptr:  # <- GM604
                        return z
                    return z + y
            """,
            build="Model(), (torch.randn(8), torch.randn(8))",
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x, y):
                    return x * 2 + y
            """,
            build="Model(), (torch.randn(8), torch.randn(8))",
        ),
    ),
    Rule(
        code="GM605",
        name="untraceable-random-draw",
        family="other",
        message="{call}() inside {function} breaks the graph",
        gb_ids=("GB0033", "GB0007"),
        fixer=None,
        hint=(
            "draw with torch (`torch.rand(())`, seeded through torch's generator), or draw in "
            "the uncompiled caller and pass the value in"
        ),
        explanation=(
            "Dynamo cannot trace NumPy's random generators (`np.random.uniform`, "
            "`np.random.rand`, ...: GB0033) nor Python's `random.random()` (a builtin method: "
            "GB0007; `random.uniform` and the other Python-level helpers do trace). A torch "
            "draw stays in the graph, but it comes from another generator, so the numbers "
            "differ: no exact source rewrite exists."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    y = x * 2
                    noise = np.random.uniform(0, 1)  # <- GM605
                    return y + noise
            """,
            header="import numpy as np\n" + _TORCH_SETUP,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    return x * 2 + torch.rand(())
            """,
        ),
    ),
    Rule(
        code="GM606",
        name="parameters-made-in-compiled-code",
        family="other",
        message="{call} makes parameters inside {function}, which breaks the graph",
        gb_ids=("GB0264",),
        fixer=None,
        hint=(
            "build modules and parameters in __init__; convert dtypes and devices once, before "
            "compiling (model.to(...)), or only when a parameter's dtype differs"
        ),
        explanation=(
            "Dynamo cannot run the `torch.nn.Parameter` constructor (GB0264), so building a "
            "parameter, or a torch.nn module that owns some (`nn.Linear(...)`, "
            "`nn.LayerNorm(...)`), inside compiled code ends the graph. Converting a submodule "
            "(`self.classifier = self.classifier.to(self.dtype)`, `self.proj.half()`) builds "
            "new parameters too, but only when the dtype or device changes; such a finding "
            "says so (`(only when it converts ...)`): a model converted before the compiled call "
            "does not break there."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    y = x * 2
                    scale = nn.Parameter(torch.ones(8))  # <- GM606
                    return y * scale
            """,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.scale = nn.Parameter(torch.ones(8))

                def forward(self, x):
                    return x * 2 * self.scale
            """,
        ),
    ),
    Rule(
        code="GM607",
        name="requires-grad-changed-in-compiled-code",
        family="other",
        message="{call} changes `requires_grad` of a tensor computed inside {function}, which "
        "breaks the graph",
        gb_ids=("GB0206", "GB8985"),
        fixer=None,
        hint=(
            "make the tensor require grad where it enters: on the input in the uncompiled caller "
            "(`x.requires_grad_()`), or on a leaf built outside the compiled code"
        ),
        explanation=(
            "Dynamo does not trace `h.requires_grad = ...` of a tensor the graph computes (a "
            "view of an input, `x.detach()`, a new tensor: GB0206, a break whichever value is "
            "set), nor `h.requires_grad_()` of one that leaves the graph, itself or through "
            "what is computed from it (GB8985); the finding says so (`(only when it, or a "
            "tensor computed from it, is an output ...)`). Both make a new leaf of autograd "
            "mid-graph. A parameter, a buffer or an input of the compiled function is not "
            "reported: Dynamo traces those changes. wav2vec2's feature encoder (and its "
            "copies) sets `hidden_states.requires_grad = True` in training; no source rewrite "
            "keeps what autograd records, so there is no fixer."
        ),
        failing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    h = x[:, None]
                    h.requires_grad = True  # <- GM607
                    return h * 2
            """,
        ),
        passing=_example(
            """
            class Model(nn.Module):
                def forward(self, x):
                    # the caller makes the input require grad: x.requires_grad_()
                    return x[:, None] * 2
            """,
        ),
    ),
)

RULES_BY_CODE: Dict[str, Rule] = {rule.code: rule for rule in RULES}

#: The codemods (``graphmend.<fixer>``) and the codes each one fixes; the commands take their
#: ``CODES`` from here.
CODES_BY_FIXER: Dict[str, Tuple[str, ...]] = {}
for _rule in RULES:
    if _rule.fixer:
        CODES_BY_FIXER.setdefault(_rule.fixer, ())
        CODES_BY_FIXER[_rule.fixer] += (_rule.code,)
del _rule


def expand_codes(selectors: Iterable[str]) -> List[str]:
    """Codes matched by flake8-style prefixes (``GM``, ``GM1``, ``GM201``) or ``ALL``.

    Raises ValueError on a selector that matches no rule, so typos do not pass silently.
    """
    codes: List[str] = []
    for selector in selectors:
        selector = selector.strip().upper()
        if not selector:
            continue
        matched = [r.code for r in RULES if selector == "ALL" or r.code.startswith(selector)]
        if not matched:
            raise ValueError(f"unknown GM code or prefix: {selector!r}")
        codes.extend(c for c in matched if c not in codes)
    return codes
