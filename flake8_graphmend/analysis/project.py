"""Compiled code across files: what one file's compiled code calls in another.

flake8 and the codemods see one file at a time, so a function is compiled only when something in
its own file reaches it. Compiled code often calls into other files of the same project:
``self.get_extended_attention_mask()`` inherited from a mixin in ``modeling_utils.py``, or a
decorator such as ``@dynamic_rope_update`` whose inner functions run inside the compiled
``forward``. ``Project`` follows these calls through the imports of the files it is given (a
name imported from a module that is not among them is not followed) until nothing new is
reached, and returns, per file, the entry points that other files' compiled code reaches there
(the ``Class.method``, ``function`` and ``@decorator`` forms of ``Options.entry_points``), each
with the compiled function it is reached through. ``project_links`` caches that result on disk,
keyed on the files' contents, so that every tool and every flake8 worker gets it once.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import (
    TYPE_CHECKING, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple,
)

from .. import __version__
from ..files import UnreadableSource, read_source
from .index import ModuleIndex
from .regions import ExternalReferences, RegionFinder
from .symbols import ModuleSymbols, package_of, resolve_relative

if TYPE_CHECKING:
    from ..engine import Options

#: Per file (its real path): the linked entry points and what reaches each.
Links = Dict[str, Tuple[Tuple[str, str], ...]]
#: Where the cache lives unless ``GRAPHMEND_CACHE_DIR`` says otherwise ("" turns it off).
CACHE_DIR = ".graphmend_cache"
_CACHE_ENTRIES = 16
#: How many re-exports (``from .a import f`` in ``__init__.py``) a name is followed through.
_MAX_REEXPORTS = 8


def module_name(path: Path) -> str:
    """The dotted name of the module in ``path``: its folders up to the first one without an
    ``__init__.py``."""
    path = Path(os.path.abspath(path))
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


def _module_statements(body: Sequence[ast.stmt]) -> List[ast.stmt]:
    """The statements run at import time, inside module-level ``if``/``try``/``with`` too."""
    found: List[ast.stmt] = []
    for statement in body:
        found.append(statement)
        if isinstance(statement, (ast.If, ast.Try, ast.With)):
            blocks = [statement.body, getattr(statement, "orelse", [])]
            if isinstance(statement, ast.Try):
                blocks += [h.body for h in statement.handlers] + [statement.finalbody]
            for block in blocks:
                found += _module_statements(block)
    return found


def _import_targets(tree: ast.Module, package: str) -> Dict[str, str]:
    """Local name -> the absolute dotted name an import binds it to (relative imports resolved
    from ``package``)."""
    targets: Dict[str, str] = {}
    for statement in _module_statements(tree.body):
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                top = alias.name.split(".")[0]
                targets[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(statement, ast.ImportFrom):
            base = statement.module or ""
            if statement.level:
                base = resolve_relative(base, statement.level, package)
                if not base:
                    continue
            for alias in statement.names:
                if alias.name != "*":
                    target = f"{base}.{alias.name}" if base else alias.name
                    targets[alias.asname or alias.name] = target
    return targets


@dataclass(eq=False)  # one per file: compared and hashed by identity
class _Module:
    path: Path
    name: str
    symbols: ModuleSymbols
    index: ModuleIndex
    lines: List[str]
    targets: Dict[str, str]
    #: Entry point -> the compiled function of another file that reaches it.
    links: Dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return os.path.realpath(self.path)


class Project:
    """The modules of one run, by dotted name, and the links between their compiled code."""

    def __init__(self, paths: Sequence[Path], names: Optional[Mapping[Path, str]] = None) -> None:
        """``names`` gives the dotted name of files that do not sit in their package (the
        runner's rewritten copies); the others are named by their folders."""
        self.modules: Dict[str, _Module] = {}
        with _collector_paused():
            for path in paths:
                self._add(path, (names or {}).get(path) or module_name(path))

    def _add(self, path: Path, name: str) -> None:
        try:
            source = read_source(path)
            tree = ast.parse(source, filename=str(path))
        except (UnreadableSource, SyntaxError, ValueError, RecursionError):
            return  # reported when the file itself is linted or fixed
        package = package_of(name, str(path))
        self.modules.setdefault(name, _Module(
            Path(path), name, ModuleSymbols.collect(tree, package), ModuleIndex(tree),
            source.splitlines(), _import_targets(tree, package),
        ))

    def links(self, options: Options) -> Links:
        """Per file, the entry points that compiled code of the other files reaches there, each
        with the compiled function it is reached through (``model.py: Model.forward``)."""
        with _collector_paused():
            return self._links(options)

    def _links(self, options: Options) -> Links:
        pending = list(self.modules.values())
        while pending:
            reached: Dict[str, _Module] = {}
            for module in pending:
                try:
                    references = self._references(module, options)
                    resolved = self._resolved(module, references)
                except Exception:  # an analysis bug in one file: reported when it is linted,
                    continue  # and it must not stop the links of the others
                for (target, spec), through in resolved.items():
                    if spec not in target.links and spec not in options.entry_points:
                        target.links[spec] = through
                        reached[target.name] = target
            pending = list(reached.values())
        return {m.key: tuple(sorted(m.links.items())) for m in self.modules.values() if m.links}

    @staticmethod
    def _references(module: _Module, options: Options) -> ExternalReferences:
        finder = RegionFinder.for_module(
            module.symbols, module.index, module.lines, str(module.path), options, module.links
        )
        return finder.external_references(finder.regions(), module.path.name)

    def _resolved(
        self, module: _Module, references: ExternalReferences
    ) -> Dict[Tuple[_Module, str], str]:
        found: Dict[Tuple[_Module, str], str] = {}
        for name, through in references.functions.items():
            target = self._definition(module.targets.get(name, ""))
            if target is not None and target[1] in target[0].symbols.functions:
                found.setdefault(target, through)
        for name, through in references.decorators.items():
            target = self._definition(module.targets.get(name, ""))
            if target is not None and target[1] in target[0].symbols.functions:
                found.setdefault((target[0], f"@{target[1]}"), through)
        for (class_name, method, from_bases), through in references.methods.items():
            owner = self._method_owner(module, class_name, method, from_bases, set())
            if owner is not None and owner[0] is not module:
                found.setdefault((owner[0], f"{owner[1]}.{method}"), through)
        return found

    def _definition(self, dotted: str, depth: int = 0) -> Optional[Tuple[_Module, str]]:
        """The module and top-level name that ``dotted`` (``pkg.mod.name``) refers to, through
        re-exports; None outside the project."""
        module_part, _, name = dotted.rpartition(".")
        module = self.modules.get(module_part)
        if module is None or not name:
            return None
        if name in module.symbols.functions or name in module.symbols.classes:
            return module, name
        if name in module.targets and depth < _MAX_REEXPORTS:
            return self._definition(module.targets[name], depth + 1)
        return None

    def _class_of(self, module: _Module, base: ast.expr) -> Optional[Tuple[_Module, str]]:
        """The project class a base-class expression names (``Base``, ``modeling.Base``)."""
        parts: List[str] = []
        while isinstance(base, ast.Attribute):
            parts.insert(0, base.attr)
            base = base.value
        if not isinstance(base, ast.Name):
            return None
        if not parts and base.id in module.symbols.classes:
            return module, base.id
        if base.id not in module.targets:
            return None
        found = self._definition(".".join([module.targets[base.id], *parts]))
        return found if found is not None and found[1] in found[0].symbols.classes else None

    def _method_owner(
        self,
        module: _Module,
        class_name: str,
        method: str,
        from_bases: bool,
        seen: Set[Tuple[str, str]],
    ) -> Optional[Tuple[_Module, str]]:
        """The class that defines ``method`` for ``class_name``, searched depth-first in base
        order across the project (the class itself first unless ``from_bases``)."""
        if (module.name, class_name) in seen:
            return None
        seen.add((module.name, class_name))
        info = module.symbols.classes.get(class_name)
        if info is None:
            return None
        if not from_bases and method in info.methods:
            return module, class_name
        for base in info.node.bases:
            resolved = self._class_of(module, base)
            if resolved is not None:
                owner = self._method_owner(resolved[0], resolved[1], method, False, seen)
                if owner is not None:
                    return owner
        return None


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: syntax trees hold no cycles, and with thousands of
    them alive its passes would cost more than the analysis (3x on transformers)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def project_links(paths: Sequence[Path], options: Options) -> Links:
    """``Project(paths).links(options)``, from the cache when no file has changed."""
    key = _cache_key(paths, options)
    folder = os.environ.get("GRAPHMEND_CACHE_DIR", CACHE_DIR)
    cached = _read_cache(folder, key) if folder and key else None
    if cached is not None:
        return cached
    with _collector_paused():  # resumed once the project's trees are freed: cheap then
        links = Project(paths).links(options)
    if folder and key:
        _write_cache(folder, key, links)
    return links


def _cache_key(paths: Sequence[Path], options: Options) -> Optional[str]:
    digest = hashlib.sha256(
        json.dumps([__version__, options.scope, options.entry_points, options.compiled_modules])
        .encode()
    )
    for path in sorted(paths, key=str):
        try:
            content = Path(path).read_bytes()
        except OSError:
            return None
        digest.update(f"\0{os.path.realpath(path)}\0{module_name(path)}\0".encode())
        digest.update(hashlib.sha256(content).digest())
    return digest.hexdigest()


def _read_cache(folder: str, key: str) -> Optional[Links]:
    try:
        data = json.loads((Path(folder) / f"links-{key}.json").read_text(encoding="utf-8"))
        return {path: tuple((spec, through) for spec, through in pairs)
                for path, pairs in data.items()}
    except (OSError, ValueError, TypeError):
        return None


def _write_cache(folder: str, key: str, links: Links) -> None:
    """Write atomically (flake8 workers may race); keep the newest entries only; never fail."""
    try:
        directory = Path(folder)
        directory.mkdir(parents=True, exist_ok=True)
        ignore = directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# written by flake8-graphmend\n*\n", encoding="utf-8")
        partial = directory / f"links-{key}.{os.getpid()}.tmp"
        partial.write_text(json.dumps(links), encoding="utf-8")
        os.replace(partial, directory / f"links-{key}.json")
        entries = sorted(directory.glob("links-*.json"), key=lambda p: p.stat().st_mtime)
        for stale in entries[:-_CACHE_ENTRIES]:
            stale.unlink()
    except OSError:
        pass
