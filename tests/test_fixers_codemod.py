"""Before/after and decline fixtures for the graphmend codemods (no torch needed)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest
from libcst.codemod import (
    CodemodContext,
    CodemodTest,
    TransformSkip,
    TransformSuccess,
    transform_module,
)

from fixers.apply import fix_paths
from fixers.defer import DeferSideEffects
from fixers.fix_all import FixAll
from fixers.helpers import CHECK, DEFERRED, DIFFER, FIXED_HELPERS, WHERE, deferred_helper_source
from fixers.trap import TrapGuards
from fixers.where import PredicateControlFlow
from flake8_graphmend.engine import analyze_source

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "fix"
HEADER = (
    "import logging\nimport warnings\n\nimport torch\nfrom torch import nn\n\n"
    "logger = logging.getLogger(__name__)\n"
)


def module(body: str, header: str = HEADER) -> str:
    """A module whose compiled ``Model.forward`` has ``body`` (dedented) as its body.

    The body starts from ``x = x.clone()``: a tensor of this call, as in real layers (an
    else-less update of the caller's own tensor that is returned is declined, see [Where]).
    """
    lines = ["x = x.clone()", *dedent(body).strip("\n").splitlines()]
    forward = "\n".join(("        " + line) if line else "" for line in lines)
    return f"{header}\n\nclass Model(nn.Module):\n    def forward(self, x, mask):\n{forward}\n"


def helpers(*names: str, deferred: tuple = ()) -> str:
    """The helper block a fix inserts: fixed helpers, then deferred (name, parameters, call)."""
    parts = [FIXED_HELPERS[name] for name in names]
    parts += [deferred_helper_source(*spec) for spec in deferred]
    return "".join("\n\n" + part for part in parts)


def fixed_module(body: str, helper_block: str, header: str = HEADER) -> str:
    """``module(body)`` with ``helper_block`` after the imports."""
    imports, rest = header.split("\nlogger", 1)
    return module(body, imports + helper_block + "\n\nlogger" + rest)


def run(command, source: str, **kwargs):
    return transform_module(command(CodemodContext(filename="model.py"), **kwargs), source)


# ---------------------------------------------------------------------------- [Defer]
class TestDefer(CodemodTest):
    TRANSFORM = DeferSideEffects

    def test_logger_print_and_warning(self) -> None:
        before = module("""
            y = x * 2
            print("scaled", 2, sep=": ")  # why
            logger.warning("scaling by %d", 2)
            logger.warning_once(
                "a long message "
                "on two lines"
            )
            warnings.warn("deprecated", FutureWarning)
            return y
        """)
        after = fixed_module(
            """
            y = x * 2
            _graphmend_print("scaled", 2)  # why
            _graphmend_logger_warning("scaling by %d", 2)
            _graphmend_logger_warning_once(
                "a long message "
                "on two lines"
            )
            _graphmend_warnings_warn("deprecated")
            return y
        """,
            helpers(
                DEFERRED,
                deferred=(
                    ("_graphmend_print", ["arg0", "arg1"], 'print(arg0, arg1, sep=": ")'),
                    (
                        "_graphmend_logger_warning",
                        ["message", "arg1"],
                        "logger.warning(message, arg1, stacklevel=3)",
                    ),
                    ("_graphmend_logger_warning_once", ["message"], "logger.warning_once(message)"),
                    (
                        "_graphmend_warnings_warn",
                        ["message"],
                        "warnings.warn(message, FutureWarning, stacklevel=3)",
                    ),
                ),
            ),
        )
        self.assertCodemod(before, after)

    def test_stacklevel_is_raised_past_the_helper_and_helpers_are_shared(self) -> None:
        before = module("""
            logger.info("a", stacklevel=2)
            logger.info("b", stacklevel=2)
            warnings.warn("c", DeprecationWarning)
            warnings.warn(
                "d",
                FutureWarning,
            )
            return x
        """)
        after = fixed_module(
            """
            _graphmend_logger_info("a")
            _graphmend_logger_info("b")
            _graphmend_warnings_warn("c")
            _graphmend_warnings_warn_2(
                "d",
            )
            return x
        """,
            helpers(
                DEFERRED,
                deferred=(
                    ("_graphmend_logger_info", ["message"], "logger.info(message, stacklevel=4)"),
                    (
                        "_graphmend_warnings_warn",
                        ["message"],
                        "warnings.warn(message, DeprecationWarning, stacklevel=3)",
                    ),
                    (
                        "_graphmend_warnings_warn_2",
                        ["message"],
                        "warnings.warn(message, FutureWarning, stacklevel=3)",
                    ),
                ),
            ),
        )
        self.assertCodemod(before, after)

    def test_import_torch_is_added(self) -> None:
        header = "import logging\n\nimport torch.nn as nn\n\nlogger = logging.getLogger(__name__)\n"
        before = module('logger.warning("w")\nreturn x', header)
        after = fixed_module(
            '_graphmend_logger_warning("w")\nreturn x',
            "\nimport torch\n"
            + helpers(
                DEFERRED,
                deferred=(
                    (
                        "_graphmend_logger_warning",
                        ["message"],
                        "logger.warning(message, stacklevel=3)",
                    ),
                ),
            ),
            header,
        )
        self.assertCodemod(
            before,
            after.replace(
                "import torch.nn as nn\n\nimport torch", "import torch.nn as nn\nimport torch"
            ),
        )

    def test_noqa_is_not_fixed(self) -> None:
        before = module('print("kept")  # noqa: GM101\nlogger.warning("kept")  # noqa\nreturn x')
        self.assertCodemod(before, before, expected_skip=True)

    def test_noqa_for_other_tools_codes_does_not_suppress(self) -> None:
        """Regression (torch/testing/_internal/logging_tensor.py): codes like pylint's PLE1205."""
        result = run(DeferSideEffects, module('print("fixed")  # noqa: PLE1205\nreturn x'))
        assert isinstance(result, TransformSuccess)
        assert '_graphmend_print("fixed")  # noqa: PLE1205' in result.code

    def test_name_taken_by_user_code_is_avoided(self) -> None:
        before = module('_graphmend_print = 1\nprint("p")\nreturn x')
        after = fixed_module(
            '_graphmend_print = 1\n_graphmend_print_2("p")\nreturn x',
            helpers(DEFERRED, deferred=(("_graphmend_print_2", ["arg0"], "print(arg0)"),)),
        )
        self.assertCodemod(before, after)


# ---------------------------------------------------------------------------- [Where]
CLAMP = """
    if x.dtype == torch.float16 and (torch.isinf(x).any() or torch.isnan(x).any()):
        clamp_value = torch.finfo(x.dtype).max - 1000
        x = torch.clamp(x, min=-clamp_value, max=clamp_value)
    return x
"""
CLAMP_FIXED = """
    if x.dtype == torch.float16:
        _graphmend_cond = torch.logical_or(
            torch.isinf(x).any(),
            torch.isnan(x).any(),
        )
        clamp_value = torch.finfo(x.dtype).max - 1000
        x = _graphmend_where(
            _graphmend_cond,
            torch.clamp(x, min=-clamp_value, max=clamp_value),
            x,
        )
    return x
"""


class TestWhere(CodemodTest):
    TRANSFORM = PredicateControlFlow

    def test_fp16_clamp_keeps_the_static_conjunct(self) -> None:
        self.assertCodemod(module(CLAMP), fixed_module(CLAMP_FIXED, helpers(WHERE)))

    def test_if_else_assignment(self) -> None:
        before = module("""
            # choose
            if x.sum() > 0:  # positive
                y = x * 2
            else:
                y = x - 1
            return y
        """)
        after = fixed_module(
            """
            # choose
            # positive
            y = _graphmend_where(x.sum() > 0, x * 2, x - 1)
            return y
        """,
            helpers(WHERE),
        )
        self.assertCodemod(before, after)

    def test_else_less_update_and_not(self) -> None:
        before = module("""
            if not (x > 0).all() or mask.any():
                x = x + 1
            return x
        """)
        after = fixed_module(
            """
            _graphmend_cond = torch.logical_or(
                torch.logical_not((x > 0).all()),
                mask.any(),
            )
            x = _graphmend_where(_graphmend_cond, x + 1, x)
            return x
        """,
            helpers(WHERE),
        )
        self.assertCodemod(before, after)

    def test_return_in_both_branches_and_trailing_return(self) -> None:
        before = module("""
            if x.mean() > 0:
                return x * 2
            else:
                return x
        """)
        after = fixed_module("return _graphmend_where(x.mean() > 0, x * 2, x)", helpers(WHERE))
        self.assertCodemod(before, after)
        before = module("""
            if x.mean() > 0:
                return x * 2
            return x - 1
        """)
        self.assertCodemod(
            before,
            fixed_module("return _graphmend_where(x.mean() > 0, x * 2, x - 1)", helpers(WHERE)),
        )

    def test_static_prefix_with_else_keeps_the_false_branch(self) -> None:
        before = module("""
            if self.training and x.sum() > 0:
                y = x * 2
                z = x
            else:
                y = x - 1
                z = mask
            return y + z
        """)
        after = fixed_module(
            """
            if self.training:
                _graphmend_cond = x.sum() > 0
                y = _graphmend_where(_graphmend_cond, x * 2, x - 1)
                z = _graphmend_where(_graphmend_cond, x, mask)
            else:
                y = x - 1
                z = mask
            return y + z
        """,
            helpers(WHERE),
        )
        self.assertCodemod(before, after)

    def test_parenthesized_test_one_line_branch_and_tabs(self) -> None:
        before = (
            "import torch\nfrom torch import nn\n\n\n"
            "class Model(nn.Module):\n\tdef forward(self, x):\n"
            "\t\tif(x.dtype == torch.float16 and x.isinf().any()): x = x.clamp(-1, 1)  # clamp\n"
            "\t\ty: torch.Tensor = x\n"
            "\t\tif x.sum() > 0:\n\t\t\ty: torch.Tensor = x * 2\n"
            "\t\treturn y\n"
        )
        after = (
            "class Model(nn.Module):\n\tdef forward(self, x):\n"
            "\t\tif x.dtype == torch.float16:  # clamp\n"
            "\t\t\t_graphmend_cond = x.isinf().any()\n"
            "\t\t\tx = _graphmend_where(_graphmend_cond, x.clamp(-1, 1), x)\n"
            "\t\ty: torch.Tensor = x\n"
            "\t\ty = _graphmend_where(x.sum() > 0, x * 2, y)\n"
            "\t\treturn y\n"
        )
        code = run(PredicateControlFlow, before).code
        assert code.endswith("\n\n\n" + after) and "\n\tif (\n\t    isinstance(condition" in code
        ast.parse(code)

    def test_multi_line_static_prefix_keeps_its_parentheses(self) -> None:
        """Regression (torch/_functorch/_aot_autograd/schemas.py): the kept `and` spans lines."""
        before = module("""
            if (
                x.dim() == 1
                and self.training
                and x.sum() > 0
            ):
                x = x * 2
            return x
        """)
        after = fixed_module(
            """
            if (
                x.dim() == 1
                and self.training
            ):
                _graphmend_cond = x.sum() > 0
                x = _graphmend_where(_graphmend_cond, x * 2, x)
            return x
        """,
            helpers(WHERE),
        )
        self.assertCodemod(before, after)

    def test_common_call_with_memoised_init_and_move(self) -> None:
        """The LongRoPE shape: both branches end in one call; what precedes it moves before it."""
        before = (FIXTURES / "longrope_before.py").read_text()
        self.assertCodemod(before, (FIXTURES / "longrope_after.py").read_text())

    def test_common_call_on_one_line_branches(self) -> None:
        before = module("""
            if x.sum() > 0: self.register_buffer("scale", x * 2, persistent=False)
            else: self.register_buffer("scale", x, persistent=False)
            return x
        """)
        after = fixed_module(
            """
            _graphmend_cond = x.sum() > 0
            self.register_buffer(
                "scale",
                _graphmend_where(_graphmend_cond, x * 2, x),
                persistent=False,
            )
            return x
        """,
            helpers(WHERE),
        )
        self.assertCodemod(before, after)


# ---------------------------------------------------------------------------- [Trap]
class TestTrap(CodemodTest):
    TRANSFORM = TrapGuards

    def test_guard_and_static_prefix(self) -> None:
        before = module("""
            if (mask == 0).all():
                raise ValueError("mask must keep one position")
            if x.dim() == 2 and not (x > 0).any():  # why
                raise RuntimeError(
                    "x needs a positive"
                )
            return x * mask
        """)
        after = fixed_module(
            """
            _graphmend_check(
                (mask == 0).all(),
                ValueError,
                "mask must keep one position",
            )
            if x.dim() == 2:  # why
                _graphmend_check(
                    torch.logical_not((x > 0).any()),
                    RuntimeError,
                    "x needs a positive",
                )
            return x * mask
        """,
            helpers(DEFERRED, CHECK),
        )
        self.assertCodemod(before, after)

    def test_torch_equal_guards(self) -> None:
        before = module("""
            if not torch.equal(mask, x):
                raise ValueError("unsupported mask")
            if torch.equal(mask, x):
                raise ValueError("equal mask")
            return x
        """)
        after = fixed_module(
            """
            _graphmend_check(
                _graphmend_differ(mask, x),
                ValueError,
                "unsupported mask",
            )
            _graphmend_check(
                torch.logical_not(_graphmend_differ(mask, x)),
                ValueError,
                "equal mask",
            )
            return x
        """,
            helpers(DEFERRED, CHECK, DIFFER),
        )
        self.assertCodemod(before, after)

    def test_one_line_guard_static_equal_and_formatted_message(self) -> None:
        before = module("""
            if mask is not None and not torch.equal(mask, x): raise ValueError(f"{x.dim()}")  # c
            return x
        """)
        after = fixed_module(
            """
            if mask is not None:  # c
                _graphmend_check(_graphmend_differ(mask, x), ValueError, f"{x.dim()}")
            return x
        """,
            helpers(DEFERRED, CHECK, DIFFER),
        )
        self.assertCodemod(before, after)


# ---------------------------------------------------------------------------- declines
DECLINES = [
    # [Defer] (rules/side_effects.py::defer_plan)
    ("value = print(x)\nreturn x", "the call's value is used"),
    ("print(*mask)\nreturn x", "it unpacks *args or **kwargs"),
    ('self.log.warning("w")\nreturn x', "is not a module-level name the helper can reach"),
    ("logger.isEnabledFor(10)\nreturn x", "its result is used to decide what runs"),
    (
        'logger.exception("e")\nreturn x',
        "exception and stack information are not available inside the compiled graph",
    ),
    ('logger.warning("w", stacklevel=x.dim())\nreturn x', "`stacklevel=` is computed at run time"),
    ('print("w", end=str(x.dim()))\nreturn x', "keyword `end=` is computed at run time"),
    ('warnings.warn("w", FutureWarning, 2)\nreturn x', "`stacklevel` is passed positionally"),
    ('logger.warning(f"sum {x.sum()}")\nreturn x', "the message formats tensor `x.sum()`"),
    ('logger.info("%r", x.shape)\nreturn x', "`x.shape` is a Python value that is neither a str"),
    (
        "try:\n    y = x\nexcept Exception as err:\n    logger.warning(err)\nreturn x",
        "`err` is the exception",
    ),
    # [Trap] (rules/control_flow.py::trap_plan)
    (
        'if (mask == 0).all():\n    raise ValueError("m") from None\nreturn x',
        "`raise ... from ...` cannot be rebuilt",
    ),
    ("if (mask == 0).all():\n    raise errors[0]\nreturn x", "is not built as `Name(message)`"),
    (
        'if (mask == 0).all():\n    raise MaskError("m")\nreturn x',
        "`MaskError` is not a builtin exception class",
    ),
    (
        'if (mask == 0).all():\n    raise ValueError("m", 1)\nreturn x',
        "other than exactly one message argument",
    ),
    (
        'if (mask == 0).all():\n    raise ValueError(f"bad {mask.sum()}")\nreturn x',
        "the message formats tensor data",
    ),
    (
        'if (mask == 0).all():\n    raise ValueError("m" + str(1))\nreturn x',
        "the message is not a string literal",
    ),
    (
        'if not torch.equal(mask, x) and (x > 0).all():\n    raise ValueError("m")\nreturn x',
        "combined with other tensor tests",
    ),
    (
        'if torch.equal(mask, x) == False:\n    raise ValueError("m")\nreturn x',
        "only `torch.equal(a, b)` and `not torch.equal(a, b)`",
    ),
    (
        'if not torch.equal(mask, other=x):\n    raise ValueError("m")\nreturn x',
        "not called with two positional tensors",
    ),
    (
        'if (mask == 0).all() or x.sum().item() > 0:\n    raise ValueError("m")\nreturn x',
        "turns tensor data into a Python value",
    ),
    (
        'if not torch.equal(mask, torch.randn(4)):\n    raise ValueError("m")\nreturn x',
        "torch.randn",
    ),
    ("if torch.equal(mask, x):\n    x = x * 2\nreturn x", "only guards that raise are rewritten"),
    # [Where] (rules/control_flow.py::where_plan)
    (
        "if x.sum() > 0 and mask is None:\n    x = x * 2\nreturn x",
        "is not a tensor, so it cannot be combined",
    ),
    (
        "if x.sum() > 0:\n    y = x\nelif x.sum() < -1:\n    y = -x\n"
        "else:\n    y = x * 0\nreturn y",
        "an elif chain has more than two outcomes",
    ),
    (
        "if x.sum() > 0:\n    return x\ny = x + 1\nreturn y",
        "the branch returns early while the other path goes on",
    ),
    (
        "if self.training and x.sum() > 0:\n    return x\nreturn x + 1",
        "a static conjunct guards an early return",
    ),
    ("if x.sum() > 0:\n    return None\nreturn x", "one path returns None"),
    ("if x.sum() > 0:\n    y = torch.randn(3)\nelse:\n    y = x\nreturn y", "torch.randn"),
    ("if x.sum() > 0:\n    self.cache = x\nreturn x", "which is not a plain local name"),
    ("if x.sum() > 0:\n    x += 1\nreturn x", "it updates `x` in place"),
    (
        "if x.sum() > 0:\n    assert x.dim() == 1\nreturn x",
        "a branch contains `assert x.dim() == 1`",
    ),
    (
        "if x.sum() > 0:\n    x = x + 1\n    x = x * 2\nreturn x",
        "`x` is assigned twice in one branch",
    ),
    ("y = x\nif x.sum() > 0:\n    y = None\nreturn y", "`y` is None on one path"),
    (
        "if mask is None:\n    y = x\nelif x.sum() > 0:\n    y = x * 2\nelse:\n    y = x\nreturn y",
        "an `elif` is rewritten only as a plain `if`",
    ),
    (
        'if mask is None:\n    x = x + 1\nelif (x < 0).any():\n    raise ValueError("negative")\n'
        "return x",
        "an `elif` is rewritten only as a plain `if`",
    ),
    (
        "y = x.all()\nif x.sum() > 0:\n    y = True\nreturn y",
        "`y` is the Python value `True` on one path, not a tensor",
    ),
    (
        "if x.sum() > 0:\n    unused = x * 2\nreturn x",
        "the branch computes nothing that is used afterwards",
    ),
    ("if x.sum() > 0:\n    fresh = x * 2\nreturn fresh", "`fresh` is not defined on both paths"),
    ("if x.sum() > 0:\n    x = x * 2\nx.mul_(2)\nreturn x", "`x` is mutated in place"),
    # [Where], one call at the end of both branches (rules/control_flow.py::_call_plan)
    (
        'if self.training and x.sum() > 0:\n    self.register_buffer("b", x)\n'
        'else:\n    self.register_buffer("b", mask)\nreturn x',
        "a static conjunct guards the common call",
    ),
    (
        'if x.sum() > 0:\n    self.register_buffer("b", x)\n'
        'else:\n    self.register_buffer("b", x)\nreturn x',
        "both branches make the same call",
    ),
    (
        'if x.sum() > 0:\n    self.register_buffer("b", x)\n'
        'else:\n    self.register_buffer("b", None)\n'
        "return x",
        "an argument that is None on one path",
    ),
    (
        'if x.sum() > 0:\n    self.register_buffer("a", x)\n'
        'else:\n    self.register_buffer("b", x)\nreturn x',
        "the calls differ in `'a'`, which is not a tensor",
    ),
    (
        "if x.sum() > 0:\n    self.register_buffer(*names)\n"
        "else:\n    self.register_buffer(*others)\n"
        "return x",
        "the common call unpacks",
    ),
    (
        'if x.sum() > 0:\n    y = x * 2\n    self.register_buffer("b", y)\n'
        'else:\n    self.register_buffer("b", x)\nreturn x',
        "a branch contains `y = x * 2` before the common call",
    ),
    (
        'if x.sum() > 0:\n    if not hasattr(self, "cache"):\n        self.cache = x * 2\n'
        '    self.register_buffer("b", self.cache)\nelse:\n    self.register_buffer("b", x)\n'
        "return x + self.cache",
        "`cache` is also used on line 19, so its initialisation cannot move",
    ),
    (
        'if x.sum() > 0:\n    if not hasattr(self, "cache"):\n        self.cache = x * 2\n'
        '        self.count += 1\n    self.register_buffer("b", self.cache)\n'
        'else:\n    self.register_buffer("b", x)\nreturn x',
        "the initialisation of `self.cache` does more than assign",
    ),
    (
        'if x.sum() > 0:\n    if not hasattr(self, "cache"):\n        self.cache = self.make(x)\n'
        '    self.register_buffer("b", self.cache)\nelse:\n    self.register_buffer("b", x)\n'
        "return x",
        "cannot run on both paths: `self.make()` is not a function of this module",
    ),
    (
        'if x.sum() > 0:\n    if not hasattr(self, "extra"):\n        self.extra = x * 2\n'
        '    self.register_buffer("b", self.extra)\n'
        'else:\n    self.register_buffer("b", self.extra + 1)\n'
        "return x",
        "`extra` is set on one path and read on the other",
    ),
    (
        'if x.sum() > 0:\n    self.register_buffer("b", x)\n'
        'else:\n    self.base = self.base.to(x.device)\n'
        '    self.register_buffer("b", self.base)\nreturn x + self.base',
        "`base` is used on line 18 without the same `.to()` before it",
    ),
    (
        'if x.sum() > 0:\n    self.register_buffer("b", x)\n'
        'else:\n    self.register_buffer("b", mask)\n'
        "self.b.mul_(2)\nreturn x",
        "`b` is modified in place (line 17); the selection is new",
    ),
    (
        "y = x\nif x.sum() > 0:\n    x = x * 2\n    y = x + 1\nreturn x + y",
        "`y` reads `x`, assigned earlier in the same branch",
    ),
    (
        "a = x\nb = x\nif x.sum() > 0:\n    a = x * 2\n    b = x * 3\n"
        "else:\n    b = a + 1\n    a = x\nreturn a + b",
        "reads a name that the same `if` reassigns",
    ),
]


@pytest.mark.parametrize("body, reason", DECLINES, ids=[reason[:40] for _, reason in DECLINES])
def test_declined_site_is_left_untouched_with_the_reason(body: str, reason: str) -> None:
    source = module(body)
    findings = [f for f in analyze_source(source, "model.py") if f.decline and reason in f.decline]
    assert (
        findings
    ), f"the lint side no longer declines with {reason!r}: {analyze_source(source, 'model.py')}"
    result = run(FixAll, source)
    assert isinstance(result, TransformSkip) or result.code == source
    assert any(
        reason in warning and warning.startswith(f"{findings[0].line}:")
        for warning in result.warning_messages
    ), result.warning_messages
    assert reason in findings[0].message


# ---------------------------------------------------------------------------- whole-file behaviour
def test_fix_all_is_idempotent_and_adds_helpers_once() -> None:
    source = (FIXTURES / "model_before.py").read_text()
    first = run(FixAll, source)
    assert isinstance(first, TransformSuccess)
    assert first.code == (FIXTURES / "model_after.py").read_text()
    for name in (DEFERRED, WHERE, CHECK, DIFFER):
        assert first.code.count(f"def {name}(") == 1
    assert first.code.count("import torch\n") == 1
    assert isinstance(run(FixAll, first.code), TransformSkip)
    for command in (DeferSideEffects, PredicateControlFlow, TrapGuards):
        assert isinstance(run(command, first.code), TransformSkip)


def test_fix_all_leaves_no_fixable_finding() -> None:
    fixed = (FIXTURES / "model_after.py").read_text()
    assert [f for f in analyze_source(fixed, "model.py") if f.fixer] == []


def test_families_one_after_the_other_equal_fix_all() -> None:
    code = (FIXTURES / "model_before.py").read_text()
    for command in (DeferSideEffects, TrapGuards, PredicateControlFlow):
        result = run(command, code)
        assert isinstance(result, TransformSuccess)
        code = result.code
    ast.parse(code)
    assert [f for f in analyze_source(code, "model.py") if f.fixer] == []
    assert isinstance(run(FixAll, code), TransformSkip)


def test_codemods_run_without_torch() -> None:
    script = (
        "import sys\nsys.modules['torch'] = None\n"
        "from libcst.codemod import CodemodContext, transform_module\n"
        "from fixers.graphmend import FixAll\n"
        f"source = open({str(FIXTURES / 'model_before.py')!r}).read()\n"
        "print(transform_module(FixAll(CodemodContext()), source).code, end='')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (FIXTURES / "model_after.py").read_text()


def test_libcst_tool_resolves_graphmend_commands_from_the_repository_root(tmp_path: Path) -> None:
    target = tmp_path / "model.py"
    shutil.copy(FIXTURES / "model_before.py", target)
    command = [
        sys.executable,
        "-m",
        "libcst.tool",
        "codemod",
        "graphmend.FixAll",
        "--hide-progress",
        str(target),
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert target.read_text() == (FIXTURES / "model_after.py").read_text()


def test_untouched_file_is_skipped() -> None:
    assert isinstance(run(FixAll, "import torch\n\n\ndef f(x):\n    return x\n"), TransformSkip)


def test_fix_paths_keeps_crlf_and_bom_and_reports_syntax_errors(tmp_path: Path) -> None:
    before = (FIXTURES / "model_before.py").read_bytes()
    after = (FIXTURES / "model_after.py").read_bytes()
    (tmp_path / "crlf.py").write_bytes(before.replace(b"\n", b"\r\n"))
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + before)
    (tmp_path / "broken.py").write_bytes(b"def f(:\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "plain.py").write_bytes(before)
    preview = fix_paths([tmp_path], diff=True)
    assert (tmp_path / "pkg" / "plain.py").read_bytes() == before
    assert all(o.diff for o in preview if o.changed) and sum(o.changed for o in preview) == 3
    outcomes = {o.path.name: o for o in fix_paths([tmp_path])}
    assert (tmp_path / "crlf.py").read_bytes() == after.replace(b"\n", b"\r\n")
    assert (tmp_path / "bom.py").read_bytes() == b"\xef\xbb\xbf" + after
    assert (tmp_path / "pkg" / "plain.py").read_bytes() == after
    assert (
        outcomes["broken.py"].error.startswith("syntax error")
        and (tmp_path / "broken.py").read_bytes() == b"def f(:\n"
    )
    assert outcomes["plain.py"].fixed == 8 and outcomes["plain.py"].declined == []
    assert not any(o.changed for o in fix_paths([tmp_path]))
