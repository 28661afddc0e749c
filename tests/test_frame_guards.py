"""A fix in a loop that checkpoints keeps a break before checkpoint (``frames.FrameGuard``).

A LayerDrop draw breaks the graph in the loop of transformers' BART-family encoders and
decoders whenever they train, so Dynamo runs their frame eagerly, activation checkpointing
included. Fixed, Dynamo would trace checkpoint as an operator of its own, which loses
checkpoint's warnings and sums shared gradients in another order (sweep 56). Where checkpoint
runs only when the draw's break would have happened (``self.gradient_checkpointing and
self.training`` after ``if self.training:``), the fix calls ``_graphmend_eager_frame()`` before
it: traced, a break in the loop again, so Dynamo runs the frame eagerly as before; without
checkpointing, the loop compiles. Elsewhere the fix is declined, and so is the fix of a site in
a layer that such a loop runs (``frames._exposed``): its break, too, made Dynamo run the loop's
frame eagerly.
"""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from textwrap import dedent, indent
from typing import Any, Dict, List, Optional, Tuple

import pytest

from flake8_graphmend.engine import analyze_source
from flake8_graphmend.planning.frames import EAGER_FRAME

torch = pytest.importorskip("torch")

from libcst.codemod import CodemodContext, TransformSuccess, transform_module  # noqa: E402
from test_fixers_dynamo import load, same  # noqa: E402

from fixers.fix_all import FixAll  # noqa: E402
from flake8_graphmend.verify.dynamo import probe  # noqa: E402

HEADER = """\
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, h, shared):
        return torch.tanh(self.fc(h) * shared)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.shared = nn.Linear(4, 4)
        self.layers = nn.ModuleList(Layer() for _ in range(3))
        self.layerdrop = 0.0
        self.gradient_checkpointing = False

    def forward(self, x):
        shared = self.shared(x)
        h = x
"""
#: What each layer runs, as BART does: checkpointed only while training.
RUN_LAYER = """\
            if self.gradient_checkpointing and self.training:
                h = checkpoint(layer.__call__, h, shared, use_reentrant=True)
            else:
                h = layer(h, shared)
"""
END = "        return h.sum() + shared.sum()\n"
#: BART's LayerDrop: a draw, compared under ``if self.training:``.
BART_DRAW = """\
            if self.training:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:
                    continue
"""


def _model(loop: str) -> str:
    return HEADER + loop + END


def _deeper(block: str) -> str:
    """``block`` (lines of the loop's body) one level deeper."""
    return indent(block, "    ")


#: Fixed, with a break kept before checkpoint.
GUARDED: Dict[str, str] = {
    "BART's LayerDrop": _model("        for layer in self.layers:\n" + BART_DRAW + RUN_LAYER),
    "wav2vec2's LayerDrop, a conditional expression": _model(
        """\
        for layer in self.layers:
            dropout_probability = torch.rand([])
            skip_the_layer = (
                True if self.training and (dropout_probability < self.layerdrop) else False
            )
            if not skip_the_layer:
""" + _deeper(RUN_LAYER)
    ),
    "a print while training": _model(
        "        for layer in self.layers:\n"
        "            if self.training:\n"
        '                print("a training step")\n' + RUN_LAYER
    ),
    "a draw in a while loop": _model(
        """\
        i = 0
        while i < len(self.layers):
            layer = self.layers[i]
            i += 1
""" + BART_DRAW + RUN_LAYER
    ),
}

#: Declined: no break can be kept just where the draw's would have been.
DECLINED: Dict[str, str] = {
    "checkpoint also in inference": _model(
        "        for layer in self.layers:\n" + BART_DRAW
        + RUN_LAYER.replace(" and self.training:", ":")
    ),
    "checkpoint whenever the draw breaks": _model(
        "        for layer in self.layers:\n" + BART_DRAW
        + RUN_LAYER.replace("self.gradient_checkpointing and self.training", "self.training")
    ),
    "checkpoint before the draw": _model(
        "        for layer in self.layers:\n" + RUN_LAYER + BART_DRAW
    ),
    "checkpoint after the loop": _model(
        "        for layer in self.layers:\n" + BART_DRAW + "            h = layer(h, shared)\n"
        + indent(dedent(RUN_LAYER), " " * 8).replace("layer.__call__", "self.layers[0]")
        .replace("layer(h", "self.layers[0](h")
    ),
    "a draw in an else branch": _model(
        "        for layer in self.layers:\n"
        "            if self.layerdrop is None:\n"
        "                pass\n"
        "            else:\n" + BART_DRAW.replace("\n            ", "\n                ").replace(
            "            if self.training", "                if self.training", 1
        ) + RUN_LAYER
    ),
    "a condition the loop binds anew": _model(
        "        training = self.training\n"
        "        for layer in self.layers:\n"
        + BART_DRAW.replace("self.training", "training")
        + "            training = training and len(self.layers) > 2\n"
        + RUN_LAYER.replace("self.training", "training")
    ),
    "a loop that sets its layers training": _model(
        "        for layer in self.layers:\n" + BART_DRAW
        + "            layer.train(self.training)\n" + RUN_LAYER
    ),
    "a condition that calls a method": _model(
        "        for layer in self.layers:\n"
        + BART_DRAW.replace("self.training:", "self.is_training():")
        + RUN_LAYER.replace("self.training", "self.is_training()")
    ).replace(END, END + "\n    def is_training(self):\n        return self.training\n"),
    "checkpoint on the line of its if": _model(
        "        for layer in self.layers:\n" + BART_DRAW
        + "            if self.gradient_checkpointing and self.training: h = checkpoint(\n"
        "                layer.__call__, h, shared, use_reentrant=True)\n"
        "            if not (self.gradient_checkpointing and self.training):\n"
        "                h = layer(h, shared)\n"
    ),
    "checkpoint in a lambda": _model(
        "        for layer in self.layers:\n" + BART_DRAW
        + RUN_LAYER.replace(
            "h = checkpoint(layer.__call__, h, shared, use_reentrant=True)",
            "run = lambda: checkpoint(layer.__call__, h, shared, use_reentrant=True)\n"
            "                h = run()",
        )
    ),
}


def _fixed(source: str) -> Tuple[str, List[str]]:
    result = transform_module(FixAll(CodemodContext(filename="model.py")), source)
    assert isinstance(result, TransformSuccess), result
    return result.code, list(result.warning_messages)


def _draw_or_print(source: str) -> Any:
    """The one finding of the loop: the draw (GM201, GM203) or the print (GM101)."""
    findings = [
        f for f in analyze_source(source, "model.py") if f.code in ("GM201", "GM203", "GM101")
    ]
    assert len(findings) == 1, findings
    return findings[0]


@pytest.mark.parametrize("name", GUARDED)
def test_the_fix_keeps_a_break_before_checkpoint(name: str) -> None:
    finding = _draw_or_print(GUARDED[name])
    assert finding.fixer, finding.message
    assert "it keeps a break before line" in (finding.caveat or "")
    code, _ = _fixed(GUARDED[name])
    lines = [line.strip() for line in code.splitlines()]
    at = lines.index(f"{EAGER_FRAME}()")
    assert "checkpoint(layer.__call__" in lines[at + 1]
    again = transform_module(FixAll(CodemodContext(filename="model.py")), code)
    assert not isinstance(again, TransformSuccess) or again.code == code


@pytest.mark.parametrize("name", DECLINED)
def test_the_fix_is_declined_where_no_break_can_be_kept(name: str) -> None:
    finding = _draw_or_print(DECLINED[name])
    assert "as an operator of its own" in (finding.decline or ""), finding.message
    result = transform_module(FixAll(CodemodContext(filename="model.py")), DECLINED[name])
    assert not isinstance(result, TransformSuccess) or EAGER_FRAME not in result.code


def test_a_site_before_the_loop_names_the_kept_break() -> None:
    """Once the draw is fixed, the break kept before checkpoint is the loop's first while
    checkpointing: a warning before the loop that runs only then is declined for it."""
    source = _model(
        "        if self.gradient_checkpointing and self.training:\n"
        '            print("checkpointing")\n'
        "        for layer in self.layers:\n" + BART_DRAW + RUN_LAYER
    )
    printed = next(f for f in analyze_source(source, "model.py") if f.code == "GM101")
    assert "kept before `checkpoint(...)`" in (printed.decline or ""), printed.message
    code, _ = _fixed(source)
    again = next(f for f in analyze_source(code, "model.py") if f.code == "GM101")
    assert f"`{EAGER_FRAME}()`, a break kept" in (again.decline or ""), again.message


def test_a_helper_name_taken_declines_the_fix() -> None:
    source = GUARDED["BART's LayerDrop"].replace(
        "\n\nclass Layer", f"\n\n{EAGER_FRAME} = None\n\n\nclass Layer"
    )
    result = transform_module(FixAll(CodemodContext(filename="model.py")), source)
    assert not isinstance(result, TransformSuccess) or result.code == source
    assert any("GM201" in w and "not fixed" in w for w in result.warning_messages)


def _behaviour(model: Any, x: Any, grad: bool) -> Tuple[Any, ...]:
    """Output, warnings and gradients of one call (a backward pass with autograd on)."""
    model.zero_grad()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with contextlib.nullcontext() if grad else torch.no_grad():
            torch.manual_seed(1)
            out = model(x)
            if grad:
                out.backward()
    said = [str(w.message) for w in caught if "torch/_dynamo" not in w.filename]
    grads = [None if p.grad is None else p.grad.clone() for p in model.parameters()]
    return out.detach(), said, grads


def _same_behaviour(first: Tuple[Any, ...], second: Tuple[Any, ...]) -> bool:
    return (
        same(first[0], second[0]) and first[1] == second[1]
        and all(a is b is None or same(a, b) for a, b in zip(first[2], second[2]))
    )


def _runs(source: str, folder: Path, checkpointing: bool, backend: Optional[str]) -> List[Any]:
    """What the model does, trained, with and without autograd, eagerly or compiled."""
    torch._dynamo.reset()
    model = load(source, folder).Model().train()
    model.gradient_checkpointing = checkpointing
    run = model if backend is None else torch.compile(model, backend=backend)
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(0))
    return [_behaviour(run, x, grad) for grad in (False, True, True)]


@pytest.mark.parametrize("name", GUARDED)
@pytest.mark.parametrize("backend", ["eager", pytest.param("aot_eager", marks=pytest.mark.slow)])
def test_the_guarded_fix_keeps_behaviour(name: str, backend: str, tmp_path: Path) -> None:
    """Checkpointing or not, eagerly and compiled, the fixed model returns, warns and
    differentiates as the original did (bitwise), the checkpoint warning of a call without
    autograd included."""
    source = GUARDED[name]
    code, _ = _fixed(source)
    for checkpointing in (True, False):
        expected = _runs(source, tmp_path / f"original{checkpointing}", checkpointing, None)
        for mode in (None, backend):
            got = _runs(code, tmp_path / f"fixed{checkpointing}{mode}", checkpointing, mode)
            assert all(_same_behaviour(a, b) for a, b in zip(got, expected)), (mode, got)
        if checkpointing:
            assert "None of the inputs have requires_grad=True" in " ".join(expected[0][1])


def test_without_checkpointing_the_training_loop_compiles(tmp_path: Path) -> None:
    """The gain: trained without checkpointing, the fixed loop is one graph; the original's
    draw breaks in it."""
    source = GUARDED["BART's LayerDrop"]
    code, _ = _fixed(source)
    x = torch.randn(2, 4)
    fixed = load(code, tmp_path / "fixed").Model().train()
    report = probe(fixed, x)
    assert (report.graphs, report.breaks) == (1, 0), [str(s) for s in report.break_sites]
    original = load(source, tmp_path / "original").Model().train()
    assert probe(original, x).breaks > 0


def test_without_the_kept_break_checkpoint_warns_no_more(tmp_path: Path) -> None:
    """Why the break is kept (torch 2.13, measured): the fix without it loses checkpoint's
    warning under torch.compile, where the original's frame ran eagerly."""
    source = GUARDED["BART's LayerDrop"]
    code, _ = _fixed(source)
    unguarded = code.replace(f"{' ' * 16}{EAGER_FRAME}()\n", "")
    assert unguarded != code
    model = load(unguarded, tmp_path / "unguarded").Model().train()
    model.gradient_checkpointing = True
    torch._dynamo.reset()
    said = _behaviour(torch.compile(model, backend="eager"), torch.randn(2, 4), False)[1]
    assert not any("requires_grad=True" in text for text in said), said


def _layer_model(loop: str, layer_extra: str = "") -> str:
    """``Model`` whose layers print while training (and run ``layer_extra`` after): the
    print's break made Dynamo run the loop's frame eagerly, checkpoint included."""
    source = HEADER.replace(
        "    def forward(self, h, shared):\n",
        "    def forward(self, h, shared):\n"
        "        if self.training:\n"
        '            print("a training step")\n' + layer_extra,
    )
    return source + loop + END


#: The closure older transformers and diffusers code hands to checkpoint.
CUSTOM_FORWARD = """

def create_custom_forward(module):
    def custom_forward(*inputs):
        return module(*inputs)

    return custom_forward
"""
STEP = '\n\ndef step(layer, h, shared):\n    return layer(h, shared)\n'
REPORT = '\n\ndef report():\n    print("a training step")\n'
EXPOSED: Dict[str, Tuple[str, bool]] = {
    "a layer checkpointed in a loop": (
        _layer_model("        for layer in self.layers:\n" + RUN_LAYER), True
    ),
    "a helper of the layer": (
        _layer_model("        for layer in self.layers:\n" + RUN_LAYER)
        .replace('            print("a training step")\n', "            report()\n")
        .replace("\n\nclass Layer", REPORT + "\n\nclass Layer"),
        True,
    ),
    "a layer checkpointed on every call": (
        _layer_model(
            "        for layer in self.layers:\n"
            "            h = checkpoint(layer.__call__, h, shared, use_reentrant=True)\n"
        ),
        True,
    ),
    "a function of the file checkpointed": (
        _layer_model(
            "        for layer in self.layers:\n"
            "            h = checkpoint(step, layer, h, shared, use_reentrant=True)\n"
        ).replace("\n\nclass Layer", STEP + "\n\nclass Layer"),
        True,
    ),
    "a layer checkpointed through a closure": (
        _layer_model(
            "        for layer in self.layers:\n"
            "            h = checkpoint(\n"
            "                create_custom_forward(layer), h, shared, use_reentrant=True\n"
            "            )\n"
        ).replace("\n\nclass Layer", CUSTOM_FORWARD + "\n\nclass Layer"),
        True,
    ),
    "layers moved one by one elsewhere": (  # transformers' `parallelize`
        _layer_model("        for layer in self.layers:\n" + RUN_LAYER)
        + "\n    def to_cpu(self):\n        for i in range(len(self.layers)):\n"
        "            self.layers[i] = self.layers[i].to(\"cpu\")\n",
        True,
    ),
    "a layer that keeps a break of its own": (
        _layer_model(
            "        for layer in self.layers:\n" + RUN_LAYER,
            "        h = h * (int(h.abs().sum().item()) % 3 + 1)\n",
        ),
        False,
    ),
    "a loop whose own fix keeps a break before checkpoint": (
        _layer_model("        for layer in self.layers:\n" + BART_DRAW + RUN_LAYER), False
    ),
    "a loop that does not checkpoint": (
        _layer_model("        for layer in self.layers:\n            h = layer(h, shared)\n"),
        False,
    ),
}


@pytest.mark.parametrize("name", EXPOSED)
def test_a_fix_in_a_layer_that_a_checkpointing_loop_runs(name: str) -> None:
    """The layer's print is declined where its fix would make Dynamo trace the loop's
    checkpoint, and fixed where the loop keeps a break there anyway."""
    source, declined = EXPOSED[name]
    printed = next(f for f in analyze_source(source, "model.py") if f.code == "GM101")
    if declined:
        assert any(  # the loop's call or the checkpoint call that runs it
            reason in (printed.decline or "")
            for reason in ("it runs in a call in a loop of `Model.forward`", "it runs in `")
        ), printed.message
        assert "as an operator of its own" in (printed.decline or ""), printed.message
    else:
        assert printed.fixer, printed.message


def test_a_layer_fix_under_a_checkpointing_loop_would_lose_its_warnings(tmp_path: Path) -> None:
    """Why the layer's print is declined (torch 2.13, measured): fixed anyway, the loop's
    frame is traced with gradient checkpointing on, and checkpoint's warning is lost."""
    source = EXPOSED["a layer checkpointed in a loop"][0]
    fixed = source.replace('            print("a training step")\n', "            pass\n")
    said = {}
    for name, code in (("original", source), ("fixed", fixed)):
        model = load(code, tmp_path / name).Model().train()
        model.gradient_checkpointing = True
        torch._dynamo.reset()
        said[name] = _behaviour(torch.compile(model, backend="eager"), torch.randn(2, 4), False)[1]
    assert any("requires_grad=True" in text for text in said["original"]), said
    assert not any("requires_grad=True" in text for text in said["fixed"]), said


def test_a_site_in_a_checkpointed_layer_is_declined() -> None:
    """The fifty-eighth sweep: no loop needed. The print's break made Dynamo run the
    checkpoint eagerly, whose backward recomputes the layer and prints again; fixed, Dynamo
    traces checkpoint with the deferred print in it, which backward does not run again."""
    source = HEADER.replace(
        "    def forward(self, h, shared):\n",
        '    def forward(self, h, shared):\n        print("layer in", h.shape[0])\n',
    ) + "        h = checkpoint(self.layers[0], h, shared, use_reentrant=False)\n" + END
    printed = next(f for f in analyze_source(source, "model.py") if f.code == "GM101")
    assert "it runs in `checkpoint(...)`" in (printed.decline or ""), printed.message


def test_checkpoint_bound_to_a_global_is_guarded() -> None:
    """``remat = functools.partial(torch.utils.checkpoint.checkpoint, ...)`` at module level
    is checkpoint too (the fifty-eighth sweep: the draw was fixed with no break kept)."""
    source = GUARDED["BART's LayerDrop"].replace(
        "from torch.utils.checkpoint import checkpoint\n",
        "import functools\nimport torch.utils.checkpoint\n\n"
        "remat = functools.partial(torch.utils.checkpoint.checkpoint, use_reentrant=True)\n",
    ).replace(
        "checkpoint(layer.__call__, h, shared, use_reentrant=True)", "remat(layer, h, shared)"
    )
    code, _ = _fixed(source)
    lines = [line.strip() for line in code.splitlines()]
    assert lines[lines.index(f"{EAGER_FRAME}()") + 1] == "h = remat(layer, h, shared)"


#: torch calls that warn whenever they run (the fifty-eighth sweep), in a loop whose only
#: break is a print: fixed, Dynamo would trace them and give the warning once, if at all.
WARNING_CALLS = {
    "a loss that broadcasts its target": "aux = aux + F.mse_loss(h, target)",
    "a deprecated keyword of a loss": "aux = aux + F.l1_loss(h, target, size_average=True)",
    "a tensor copied by new_tensor": "aux = aux + h.new_tensor(target).sum()",
    "a deprecated autocast": "with torch.cpu.amp.autocast(enabled=False):\n"
    "                h = h * 1",
}


@pytest.mark.parametrize("name", WARNING_CALLS)
def test_a_print_in_a_loop_that_warns_is_declined(name: str) -> None:
    source = (
        "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
        "class Model(nn.Module):\n"
        "    def forward(self, h, target):\n"
        "        aux = 0.0\n"
        "        for i in range(2):\n"
        "            h = torch.tanh(h)\n"
        '            print("layer", i)\n'
        f"            {WARNING_CALLS[name]}\n"
        "        return h, aux\n"
    )
    printed = next(f for f in analyze_source(source, "model.py") if f.code == "GM101")
    assert "which torch may warn about when it runs" in (printed.decline or ""), printed.message
