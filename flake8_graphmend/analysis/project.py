"""Compiled regions across several files: what one file's compiled code calls in another.

flake8 analyses one file at a time, so a function is compiled only when something in its own file
reaches it. When several files are fixed together (``graphmend verify --fix``), compiled code in
one file often calls into another: ``self.get_extended_attention_mask()`` inherited from a mixin
in ``modeling_utils.py``, or a decorator such as ``@dynamic_rope_update`` whose inner functions
run inside the compiled ``forward``. ``linked_entry_points`` follows these calls by name until
nothing new is reached and returns them as entry points (the ``Class.method``, ``function`` and
``@decorator`` forms of ``Options.entry_points``), so every file is analysed as Dynamo traces it.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Sequence, Set, Tuple

from ..files import UnreadableSource, read_source
from .index import ModuleIndex
from .regions import ExternalReferences, RegionFinder
from .symbols import ModuleSymbols

if TYPE_CHECKING:
    from ..engine import Options


def linked_entry_points(paths: Sequence[Path], options: Options) -> Tuple[str, ...]:
    """The entry points that compiled code in ``paths`` reaches in other files of ``paths``.

    ``options`` is the ``engine.Options`` the files are analysed with; its own entry points are
    not repeated in the result. Files that cannot be read or parsed are left out.
    """
    modules = _parsed(paths)
    known: Set[str] = set(options.entry_points)
    while True:
        finders = [
            RegionFinder.for_module(symbols, index, lines, str(path), options, sorted(known))
            for path, (symbols, index, lines) in modules.items()
        ]
        references = ExternalReferences()
        for finder in finders:
            references.update(finder.external_references(finder.regions()))
        found = set().union(*(finder.entry_points_for(references) for finder in finders))
        if found <= known:
            return tuple(sorted(known - set(options.entry_points)))
        known |= found


def _parsed(paths: Sequence[Path]) -> Dict[Path, Tuple[ModuleSymbols, ModuleIndex, List[str]]]:
    modules = {}
    for path in paths:
        try:
            source = read_source(path)
            tree = ast.parse(source, filename=str(path))
        except (UnreadableSource, SyntaxError, ValueError, RecursionError):
            continue  # reported when the file itself is fixed
        modules[path] = (ModuleSymbols.collect(tree), ModuleIndex(tree), source.splitlines())
    return modules
