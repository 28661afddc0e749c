"""Compiled regions across files: calls from one file's compiled code into another are followed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from typing import Dict, Sequence

import pytest

from flake8_graphmend.analysis.project import Project
from flake8_graphmend.analysis.regions import RegionFinder
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
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def linked(paths: Sequence[Path], options: Options = Options()) -> Dict[str, Dict[str, str]]:
    """File name -> {entry point: what reaches it}."""
    return {
        Path(key).name: dict(pairs) for key, pairs in Project(paths).links(options).items()
    }


def test_calls_into_another_file_become_its_entry_points(tmp_path: Path) -> None:
    mixin = write(tmp_path, "mixin.py", MIXIN)
    model = write(tmp_path, "model.py", MODEL)
    links = linked([model, mixin])
    assert links == {
        "mixin.py": {
            "@with_update": "model.py: Model.forward",
            "MaskMixin.extended_mask": "model.py: Model.forward",
            "scale": "model.py: Model.forward",
        }
    }

    alone = analyze_file(mixin, options=Options())
    assert alone == [], "on its own the mixin file has no compiled code"
    findings = analyze_file(mixin, options=Options().linked(tuple(links["mixin.py"].items())))
    lines = MIXIN.splitlines()
    found = {(lines[f.line - 1].strip(), f.code) for f in findings}
    assert found == {
        ('warnings.warn("device is deprecated", FutureWarning)', "GM103"),
        ('print("scaling")', "GM101"),
        ('print("updating")', "GM101"),
    }
    assert all("(called from model.py: Model.forward)" in f.message for f in findings)


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
    assert linked([first, second, third]) == {
        "second.py": {"step": "first.py: Model.forward"},
        "third.py": {"finish": "first.py: Model.forward"},
    }, "a transitive link names the compiled entry point it starts from"


def test_nothing_is_linked_without_compiled_callers_or_outside_the_files(tmp_path: Path) -> None:
    mixin = write(tmp_path, "mixin.py", MIXIN)
    plain = write(tmp_path, "plain.py", """
        import torch
        from .mixin import scale

        def run(x):
            return scale(x)  # run() is not compiled
        """)
    assert linked([plain, mixin]) == {}
    model = write(tmp_path, "model.py", MODEL)
    assert linked([model]) == {}, "the mixin file is not among the files"


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
    assert linked([model, mixin]) == {}


def test_unparsable_files_are_left_out(tmp_path: Path) -> None:
    mixin = write(tmp_path, "mixin.py", MIXIN)
    model = write(tmp_path, "model.py", MODEL)
    broken = write(tmp_path, "broken.py", "def broken(:\n")
    assert set(linked([broken, model, mixin])["mixin.py"]) == {
        "@with_update",
        "MaskMixin.extended_mask",
        "scale",
    }


def test_an_analysis_crash_in_one_file_leaves_the_others_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mixin = write(tmp_path, "mixin.py", MIXIN)
    model = write(tmp_path, "model.py", MODEL)
    crashing = write(tmp_path, "crashing.py", "import torch\n\ndef f(x):\n    return x\n")
    regions = RegionFinder.regions

    def fails_on_one_file(finder: RegionFinder) -> object:
        if "f" in finder.symbols.functions:
            raise RuntimeError("an analysis bug")
        return regions(finder)

    monkeypatch.setattr(RegionFinder, "regions", fails_on_one_file)
    assert set(linked([crashing, model, mixin])["mixin.py"]) == {
        "@with_update", "MaskMixin.extended_mask", "scale",
    }


def test_decorator_entry_point_form_marks_the_inner_functions(tmp_path: Path) -> None:
    mixin = write(tmp_path, "mixin.py", MIXIN)
    findings = analyze_file(mixin, options=Options(entry_points=("@with_update",)))
    lines = MIXIN.splitlines()
    assert [lines[f.line - 1].strip() for f in findings] == ['print("updating")']


def test_methods_resolve_through_the_imported_base_classes_only(tmp_path: Path) -> None:
    """``self.name()`` links to the class the base chain imports, across files; an unrelated
    class of another file with a method of that name, and a submodule attribute called like a
    method (``self.dropout(x)``), are not linked."""
    write(tmp_path, "pkg/__init__.py", "from .mixins import MaskMixin\n")
    write(tmp_path, "pkg/mixins.py", MIXIN)
    write(tmp_path, "pkg/base.py", """
        import torch
        from torch import nn
        from . import MaskMixin  # re-exported by the package

        class PreTrained(MaskMixin, nn.Module):
            def init_weights(self):
                pass
        """)
    write(tmp_path, "pkg/models/__init__.py", "")
    write(tmp_path, "pkg/models/bert.py", """
        import torch
        from torch import nn
        from ..base import PreTrained

        class Bert(PreTrained):
            def forward(self, x, mask):
                x = self.dropout(x)
                return self.extended_mask(mask) * x
        """)
    write(tmp_path, "pkg/other.py", """
        import torch

        class Unrelated:
            def extended_mask(self, mask):
                print("not reached")
                return mask

            def dropout(self, x):
                print("not reached either")
                return x
        """)
    files = sorted(tmp_path.rglob("*.py"))
    assert linked(files) == {
        "mixins.py": {"MaskMixin.extended_mask": "bert.py: Bert.forward"},
    }


def test_super_calls_and_helpers_in_parent_packages(tmp_path: Path) -> None:
    write(tmp_path, "lib/__init__.py", "")
    write(tmp_path, "lib/utils.py", """
        import torch

        def rescale(x):
            print("rescaling")
            return x

        class Attention(torch.nn.Module):
            def forward(self, x):
                return x

            def prepare(self, x):
                return rescale(x)
        """)
    write(tmp_path, "lib/models/__init__.py", "")
    write(tmp_path, "lib/models/fast.py", """
        import torch
        from lib.utils import Attention

        class FastAttention(Attention):
            def prepare(self, x):
                return super().prepare(x) * 2

            def forward(self, x):
                return self.prepare(x)
        """)
    files = sorted(tmp_path.rglob("*.py"))
    links = linked(files)
    assert links == {"utils.py": {"Attention.prepare": "fast.py: FastAttention.forward"}}
    utils = tmp_path / "lib" / "utils.py"
    findings = analyze_file(utils, options=Options().linked(tuple(links["utils.py"].items())))
    assert [f.message.split(" [")[0] for f in findings] == [
        "print() inside compiled rescale() (called from fast.py: FastAttention.forward) breaks "
        "the graph"
    ], "what the linked method calls in its own file is compiled through the same entry point"


DECORATORS = """
import functools

import torch


def add_docstring(*lines):
    def docstring_decorator(fn):
        print("runs when the class is defined")
        fn.__doc__ = "".join(lines)
        return fn

    return docstring_decorator


def deprecate_argument(name):
    def wrapper(func):
        print("runs when the class is defined too")

        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            if name in kwargs:
                print("deprecated argument")
            return func(*args, **kwargs)

        return wrapped

    return wrapper
"""


def test_only_the_wrappers_of_a_decorator_are_compiled(tmp_path: Path) -> None:
    """A decorator's wrappers call the decorated function and run in its place; its other inner
    functions run when the decorator is applied."""
    decorators = write(tmp_path, "decorators.py", DECORATORS)
    model = write(tmp_path, "model.py", """
        import torch
        from .decorators import add_docstring, deprecate_argument

        class Model(torch.nn.Module):
            @add_docstring("The model.")
            @deprecate_argument("scale")
            def forward(self, x):
                return x
        """)
    links = linked([model, decorators])
    assert set(links["decorators.py"]) == {"@add_docstring", "@deprecate_argument"}
    options = Options().linked(tuple(links["decorators.py"].items()))
    lines = DECORATORS.splitlines()
    found = [lines[f.line - 1].strip() for f in analyze_file(decorators, options=options)]
    assert found == ['print("deprecated argument")']


# ---------------------------------------------------------------------------- every tool
ROOT = Path(__file__).resolve().parents[1]
WARN_LINE = 'warnings.warn("device is deprecated", FutureWarning)'


@pytest.fixture()
def package(tmp_path: Path) -> Path:
    """``pkg/`` with a model whose compiled ``forward`` calls into ``pkg/mixin.py``."""
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/mixin.py", MIXIN)
    write(tmp_path, "pkg/model.py", MODEL)
    return tmp_path


def run(command: Sequence[str], cwd: Path, cache: str) -> subprocess.CompletedProcess:
    """``python -m command`` with the links cache in ``cache`` ("": no cache)."""
    env = {**os.environ, "GRAPHMEND_CACHE_DIR": cache}
    return subprocess.run(
        [sys.executable, "-m", *command], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300,
    )


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_flake8_follows_calls_into_other_files_of_the_run(package: Path, jobs: str) -> None:
    done = run(["flake8", "--select", "GM", "-j", jobs, "pkg"], package, str(package / "cache"))
    mixin = [line for line in done.stdout.splitlines() if line.startswith("pkg/mixin.py")]
    assert len(mixin) == 3, done.stdout + done.stderr
    assert all("(called from model.py: Model.forward)" in line for line in mixin)
    assert len(list((package / "cache").glob("links-*.json"))) == 1


def test_the_cache_follows_the_files_contents(package: Path) -> None:
    command = ["flake8_graphmend.cli", "check", "pkg"]
    first = run(command, package, str(package / "cache"))
    assert first.stdout.count("pkg/mixin.py") == 3, first.stdout + first.stderr
    again = run(command, package, str(package / "cache"))
    assert again.stdout == first.stdout
    model = package / "pkg" / "model.py"
    model.write_text(model.read_text().replace("return scale(x) * mask", "return x * mask"))
    changed = run(command, package, str(package / "cache"))
    assert changed.stdout.count("pkg/mixin.py") == 2, "scale() is no longer called"
    assert len(list((package / "cache").glob("links-*.json"))) == 2
    off = run(command, package, "")
    assert off.stdout == changed.stdout
    assert len(list((package / "cache").glob("links-*.json"))) == 2


def test_graphmend_fix_and_the_codemod_fix_the_other_file(package: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(package / "pkg", copy / "pkg")
    fixed = run(["flake8_graphmend.cli", "fix", "pkg"], package, str(package / "cache"))
    assert fixed.returncode == 0, fixed.stderr
    codemod = run(
        ["libcst.tool", "codemod", "--hide-progress", "graphmend.FixAll", str(copy / "pkg")],
        ROOT, str(package / "cache"),
    )
    assert codemod.returncode == 0, codemod.stderr
    for folder in (package, copy):
        text = (folder / "pkg" / "mixin.py").read_text()
        assert WARN_LINE not in text and "_graphmend_warnings_warn(" in text, folder
        assert 'print("never called from compiled code")' in text, "not compiled: not fixed"
    assert (copy / "pkg" / "mixin.py").read_text() == (package / "pkg" / "mixin.py").read_text()


def test_compiled_module_globs_match_relative_paths(package: Path) -> None:
    """``*/pkg/mixin.py`` matches ``pkg/mixin.py`` given relative to the current folder."""
    done = run(
        ["flake8", "--select", "GM", "--graphmend-compiled-modules", "*/pkg/mixin.py",
         "pkg/mixin.py"],
        package, str(package / "cache"),
    )
    assert done.stdout.count("pkg/mixin.py") == 5, done.stdout + done.stderr


GUARD_AFTER_AN_ACTIVATION = textwrap.dedent(
    """\
    import torch
    from torch import nn

    from ...activations import ACT2FN


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.act = ACT2FN["gelu"]

        def forward(self, x):
            h = self.act(x)
            if (x < 0).any():
                raise ValueError("negative input")
            return h
    """
)


def test_relative_imports_are_resolved_from_the_file_or_the_name_given(tmp_path: Path) -> None:
    """``from ...activations import ACT2FN`` in ``transformers/models/m/modeling_m.py`` is
    transformers' activation, known to change nothing: the guard after it is fixed. A copy of
    the file outside its package (the runner's) resolves it from the module name it is given."""
    from fixers.apply import fix_paths

    package = tmp_path / "transformers"
    folders = [package, package / "models", package / "models" / "m"]
    for folder in folders:
        folder.mkdir(exist_ok=True)
        (folder / "__init__.py").write_text("")
    (package / "activations.py").write_text("ACT2FN = {}\n")
    original = folders[-1] / "modeling_m.py"
    copy = tmp_path / "copy" / "modeling_m.py"
    copy.parent.mkdir()
    for path in (original, copy):
        path.write_text(GUARD_AFTER_AN_ACTIVATION)

    def guard(path: Path, options: Options = Options()):  # type: ignore[no-untyped-def]
        return next(f for f in analyze_file(path, options=options) if f.code == "GM301")

    assert guard(original).fixer is not None
    assert guard(copy).fixer is None and "ACT2FN" in (guard(copy).decline or "")
    named = Options(module="transformers.models.m.modeling_m")
    assert guard(copy, named).fixer is not None
    [outcome] = fix_paths([copy], diff=True, names={copy: "transformers.models.m.modeling_m"})
    assert outcome.fixed == 1 and not outcome.declined
