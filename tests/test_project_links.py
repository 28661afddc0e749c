"""Compiled regions across files: calls from one file's compiled code into another are followed."""

from __future__ import annotations

import textwrap
from pathlib import Path

from flake8_graphmend.analysis.project import linked_entry_points
from flake8_graphmend.engine import Options, analyze_file

MIXIN = """
import warnings

import torch


class MaskMixin:
    def extended_mask(self, mask, device=None):
        if device is not None:
            warnings.warn("device is deprecated", FutureWarning)
        return mask[:, None, None, :]

    def unused_here(self, x):
        print("never called from compiled code")
        return x


def scale(x):
    print("scaling")
    return x * 2


def with_update(forward):
    def update(self, x):
        print("updating")

    def wrapper(self, x):
        update(self, x)
        return forward(self, x)

    return wrapper


def helper_outside(x):
    print("not reached")
    return x
"""

MODEL = """
import torch
from torch import nn

from .mixin import MaskMixin, helper_outside, scale, with_update


class Model(MaskMixin, nn.Module):
    def __init__(self):
        super().__init__()
        helper_outside(1)  # __init__ is not compiled

    @with_update
    def forward(self, x, mask):
        mask = self.extended_mask(mask, device=x.device)
        return scale(x) * mask
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_calls_into_another_file_become_its_entry_points(tmp_path: Path) -> None:
    mixin = write(tmp_path, "mixin.py", MIXIN)
    model = write(tmp_path, "model.py", MODEL)
    linked = linked_entry_points([model, mixin], Options())
    assert linked == ("@with_update", "MaskMixin.extended_mask", "scale")

    alone = analyze_file(mixin, options=Options())
    assert alone == [], "on its own the mixin file has no compiled code"
    findings = analyze_file(mixin, options=Options(entry_points=linked))
    lines = MIXIN.splitlines()
    found = {(lines[f.line - 1].strip(), f.code) for f in findings}
    assert found == {
        ('warnings.warn("device is deprecated", FutureWarning)', "GM103"),
        ('print("scaling")', "GM101"),
        ('print("updating")', "GM101"),
    }


def test_links_are_followed_transitively(tmp_path: Path) -> None:
    first = write(tmp_path, "first.py", """
        import torch
        from torch import nn
        from .second import step

        class Model(nn.Module):
            def forward(self, x):
                return step(x)
        """)
    second = write(tmp_path, "second.py", """
        import torch
        from .third import finish

        def step(x):
            return finish(x + 1)
        """)
    third = write(tmp_path, "third.py", """
        import torch

        def finish(x):
            print("done")
            return x
        """)
    assert linked_entry_points([first, second, third], Options()) == ("finish", "step")


def test_nothing_is_linked_without_compiled_callers_or_outside_the_files(tmp_path: Path) -> None:
    mixin = write(tmp_path, "mixin.py", MIXIN)
    plain = write(tmp_path, "plain.py", """
        import torch
        from .mixin import scale

        def run(x):
            return scale(x)  # run() is not compiled
        """)
    assert linked_entry_points([plain, mixin], Options()) == ()
    model = write(tmp_path, "model.py", MODEL)
    assert linked_entry_points([model], Options()) == (), "the mixin file is not among the files"


def test_a_method_defined_in_the_same_file_is_not_linked_elsewhere(tmp_path: Path) -> None:
    mixin = write(tmp_path, "mixin.py", MIXIN)
    model = write(tmp_path, "model.py", """
        import torch
        from torch import nn

        class Model(nn.Module):
            def forward(self, x):
                return self.extended_mask(x)

            def extended_mask(self, x):
                return x[:, None]
        """)
    assert linked_entry_points([model, mixin], Options()) == ()


def test_unparsable_files_are_left_out(tmp_path: Path) -> None:
    mixin = write(tmp_path, "mixin.py", MIXIN)
    model = write(tmp_path, "model.py", MODEL)
    broken = write(tmp_path, "broken.py", "def broken(:\n")
    assert linked_entry_points([broken, model, mixin], Options()) == (
        "@with_update",
        "MaskMixin.extended_mask",
        "scale",
    )


def test_decorator_entry_point_form_marks_the_inner_functions(tmp_path: Path) -> None:
    mixin = write(tmp_path, "mixin.py", MIXIN)
    findings = analyze_file(mixin, options=Options(entry_points=("@with_update",)))
    lines = MIXIN.splitlines()
    assert [lines[f.line - 1].strip() for f in findings] == ['print("updating")']
