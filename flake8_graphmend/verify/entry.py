"""ENTRY specs (``path/to/file.py:factory``) and loading the factory's model and inputs."""

from __future__ import annotations

import importlib.util
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .errors import VerifyError

DEFAULT_FACTORY = "build"
ENTRY_MODULE_NAME = "__graphmend_entry__"
"""The name the entry file is imported under, in both arms, so pickled inputs resolve alike."""


@dataclass(frozen=True)
class EntrySpec:
    """The entry file and the name of its factory."""

    path: Path
    factory: str

    def __str__(self) -> str:
        return f"{self.path}:{self.factory}"


@dataclass
class Workload:
    """What a factory returns: the model (or any callable) and how to call it."""

    model: Callable[..., Any]
    args: tuple
    kwargs: dict

    def __call__(self) -> Any:
        return self.model(*self.args, **self.kwargs)


def parse_entry(text: str) -> EntrySpec:
    """Parse ``file.py[:factory]``; the factory defaults to ``build``. The file must exist."""
    path_text, separator, factory = text.rpartition(":")
    if not separator or not path_text.endswith(".py"):  # no ":factory" (or a drive letter's colon)
        path_text, factory = text, DEFAULT_FACTORY
    path = Path(path_text)
    if path.suffix != ".py":
        raise VerifyError(f"ENTRY must look like path/to/file.py:factory, got {text!r}")
    if not factory.isidentifier():
        raise VerifyError(f"the factory in ENTRY {text!r} is not a Python name: {factory!r}")
    if not path.is_file():
        raise VerifyError(f"entry file not found: {path}")
    return EntrySpec(path, factory)


def load_workload(source: Path, factory_name: str, shown_as: str) -> Workload:
    """Import ``source`` as the entry module, call its factory and check what it returns.

    ``shown_as`` is the entry file as the user named it, for messages (``source`` may be a
    rewritten copy).
    """
    spec = importlib.util.spec_from_file_location(ENTRY_MODULE_NAME, source)
    if spec is None or spec.loader is None:
        raise VerifyError(f"cannot import {shown_as}: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[ENTRY_MODULE_NAME] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise VerifyError(f"cannot import {shown_as}: {describe_failure(error)}") from None
    factory = getattr(module, factory_name, None)
    if factory is None:
        raise VerifyError(f"{shown_as} has no factory named {factory_name!r}")
    if not callable(factory):
        raise VerifyError(f"{shown_as}:{factory_name} is not callable")
    try:
        built = factory()
    except Exception as error:
        raise VerifyError(f"{factory_name}() raised {describe_failure(error)}") from None
    return _as_workload(built, factory_name)


def _as_workload(built: Any, factory_name: str) -> Workload:
    shape_hint = f"{factory_name}() must return (model, args) or (model, args, kwargs)"
    if not isinstance(built, tuple) or len(built) not in (2, 3):
        raise VerifyError(f"{shape_hint}; it returned {type(built).__name__}")
    model, args, *rest = built
    kwargs = rest[0] if rest else {}
    if not callable(model):
        raise VerifyError(f"{shape_hint}; its model is a {type(model).__name__}, not callable")
    if not isinstance(args, (tuple, list)) or not isinstance(kwargs, dict):
        raise VerifyError(f"{shape_hint} with args a tuple and kwargs a dict")
    return Workload(model, tuple(args), dict(kwargs))


def describe_failure(error: BaseException) -> str:
    """``Type: message (at file:line)``, at the innermost frame outside torch and the stdlib."""
    from .dynamo import is_library_file, summarize_exception

    frames = traceback.extract_tb(error.__traceback__)
    user_frames = [frame for frame in frames if not is_library_file(frame.filename)]
    where = next(reversed(user_frames or frames), None)
    location = f" (at {where.filename}:{where.lineno})" if where else ""
    return summarize_exception(error) + location
