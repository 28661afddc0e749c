"""The fixed arm's overlay: rewritten copies of the entry file and the ``--fix`` targets.

A target is a file, a folder, or an importable module or package name. Each is copied into a
temporary folder (an installed package is copied, never modified) and the copies are rewritten
by the graphmend fixers. The fixed arm installs ``OverlayFinder`` first on ``sys.meta_path``:
whenever an import resolves to an original file that has a copy, the copy is loaded instead,
under the same module name. Module names, relative imports and the rest of the package stay as
they are, so only the targets need copying (not, say, all 1,900 files of transformers to
rewrite ``transformers.models.t5``).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass, field
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .errors import VerifyError

_SKIPPED_IN_COPIES = shutil.ignore_patterns("__pycache__", "*.pyc")


@dataclass
class Overlay:
    """The rewritten copies: ``copies`` maps each original ``.py`` file to its copy."""

    root: Path
    entry_copy: Path
    copies: Dict[str, str] = field(default_factory=dict)
    fix_outcomes: List[Any] = field(default_factory=list)
    #: Entry points that compiled code in one rewritten file reaches in another (see
    #: ``flake8_graphmend.analysis.project``): the files were fixed with these added.
    linked_entry_points: Tuple[str, ...] = ()

    def original_of(self, copy: str) -> Optional[str]:
        """The original file a copy was made from, if ``copy`` is one."""
        originals = {os.path.realpath(made): original for original, made in self.copies.items()}
        return originals.get(os.path.realpath(copy))


def resolve_target(target: str) -> Path:
    """The file or folder a ``--fix`` target names: a path, else a module or package name."""
    path = Path(target)
    if path.is_dir() or (path.is_file() and path.suffix == ".py"):
        return path.resolve()
    if path.exists():
        raise VerifyError(f"--fix target {target!r} is not a Python file or a folder")
    try:
        spec = importlib.util.find_spec(target)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise VerifyError(
            f"--fix target not found: {target!r} is not a file, a folder or an importable module"
        )
    if spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0]).resolve()
    if spec.origin and spec.origin.endswith(".py"):
        return Path(spec.origin).resolve()
    raise VerifyError(f"--fix target {target!r} is not Python source (it loads from {spec.origin})")


def build_overlay(
    entry_file: Path, targets: Sequence[Path], root: Path, scope: str = "compiled"
) -> Overlay:
    """Copy the targets and the entry file under ``root`` and rewrite the copies in place.

    ``scope`` is the fixers' scope: ``compiled`` (what Dynamo traces from ``forward`` and
    ``torch.compile`` entry points) or ``all`` (every function of a file that imports torch).
    """
    copies: Dict[str, str] = {}
    rewrite_roots: List[Path] = []
    for index, target in enumerate(_outermost(targets)):
        destination = root / f"{index}_{target.name}"
        if target.is_dir():
            shutil.copytree(target, destination, ignore=_SKIPPED_IN_COPIES)
            for copy in destination.rglob("*.py"):
                copies[os.path.realpath(target / copy.relative_to(destination))] = str(copy)
        else:
            destination.mkdir(parents=True)
            destination = destination / target.name
            shutil.copy2(target, destination)
            copies[os.path.realpath(target)] = str(destination)
        rewrite_roots.append(destination)

    entry_key = os.path.realpath(entry_file)
    if entry_key not in copies:
        entry_copy = root / "entry" / entry_file.name
        entry_copy.parent.mkdir(parents=True)
        shutil.copy2(entry_file, entry_copy)
        copies[entry_key] = str(entry_copy)
        rewrite_roots.insert(0, entry_copy)
    overlay = Overlay(root=root, entry_copy=Path(copies[entry_key]), copies=copies)
    overlay.fix_outcomes, overlay.linked_entry_points = _rewrite(rewrite_roots, copies, scope)
    return overlay


def _outermost(targets: Sequence[Path]) -> List[Path]:
    """The targets without duplicates and without those inside another target folder."""
    unique = list(dict.fromkeys(targets))
    return [
        t for t in unique if not any(o != t and o.is_dir() and t.is_relative_to(o) for o in unique)
    ]


def _rewrite(
    paths: List[Path], copies: Dict[str, str], scope: str
) -> Tuple[List[Any], Tuple[str, ...]]:
    """Fix the copies together: calls from one file's compiled code into another are followed,
    through the imports of the originals (each copy keeps its original's module name)."""
    try:
        from fixers.apply import fix_paths
    except ImportError as error:
        raise VerifyError(f"the graphmend fixers cannot be imported ({error})") from None
    from flake8_graphmend.analysis.project import Project, module_name
    from flake8_graphmend.engine import Options
    from flake8_graphmend.files import iter_python_files

    options = Options(scope=scope)
    files = list(iter_python_files(paths))
    original = {os.path.realpath(copy): Path(source) for source, copy in copies.items()}
    names = {
        path: module_name(original[os.path.realpath(path)])
        for path in files
        if os.path.realpath(path) in original
    }
    links = Project(files, names).links(options)  # fresh copies: nothing to cache
    linked = tuple(sorted({spec for pairs in links.values() for spec, _ in pairs}))
    return list(fix_paths(files, options=options, links=links, names=names)), linked


class OverlayFinder(importlib.abc.MetaPathFinder):
    """Loads the rewritten copy whenever an import resolves to an original file that has one."""

    def __init__(self, copies: Dict[str, str]) -> None:
        self._copies = copies

    def install(self) -> None:
        sys.meta_path.insert(0, self)

    def find_spec(self, name: str, path: Any, target: Any = None) -> Optional[ModuleSpec]:
        spec = self._spec_from_other_finders(name, path, target)
        if spec is None or not spec.origin:
            return None
        copy = self._copies.get(os.path.realpath(spec.origin))
        if copy is None:
            return None
        return importlib.util.spec_from_file_location(
            name, copy, submodule_search_locations=spec.submodule_search_locations
        )

    def _spec_from_other_finders(self, name: str, path: Any, target: Any) -> Optional[ModuleSpec]:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                return spec
        return None
