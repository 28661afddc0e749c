"""Settings for the standalone ``graphmend`` command, read from the files users already have.

flake8 reads its own configuration for the plugin. The ``graphmend`` command reads the same
``graphmend-*`` keys from the ``[flake8]`` section of ``setup.cfg``, ``tox.ini`` or ``.flake8``,
then ``[tool.graphmend]`` in ``pyproject.toml`` (which wins), from the nearest folder upwards.
"""

from __future__ import annotations

import configparser
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - older Pythons
    import tomli as tomllib

from .engine import SCOPES, Options
from .registry import expand_codes

_FLAKE8_FILES = ("setup.cfg", "tox.ini", ".flake8")
_KEYS = ("scope", "entry-points", "compiled-modules", "select", "ignore", "helpers-module")
ENTRY_POINT_FORMS = "NAME, CLASS, CLASS.METHOD or @DECORATOR"
_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


class ConfigError(ValueError):
    """A configuration file says something we cannot use."""


def check_scope(value: str, where: str) -> str:
    """``value`` if it is a scope; ConfigError naming ``where`` (file and key) otherwise."""
    if value not in SCOPES:
        choices = ", ".join(repr(scope) for scope in SCOPES)
        raise ConfigError(f"{where}: invalid choice: {value!r} (choose from {choices})")
    return value


def check_entry_points(values: Sequence[str], where: str) -> Tuple[str, ...]:
    """The entry points, each ``NAME``, ``CLASS``, ``CLASS.METHOD`` or ``@DECORATOR``."""
    for spec in values:
        parts = spec[1:].split(".") if spec.startswith("@") else spec.split(".")
        well_formed = len(parts) <= (1 if spec.startswith("@") else 2)
        if not (well_formed and all(part.isidentifier() for part in parts)):
            raise ConfigError(
                f"{where}: invalid entry point {spec!r} (expected {ENTRY_POINT_FORMS})"
            )
    return tuple(values)


def check_codes(values: Sequence[str], where: str) -> List[str]:
    """The codes or prefixes, each matching at least one rule."""
    try:
        expand_codes(values)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return list(values)


@dataclass
class Settings:
    options: Options = field(default_factory=Options)
    select: List[str] = field(default_factory=lambda: ["GM"])
    ignore: List[str] = field(default_factory=list)
    #: Where the settings came from, for messages.
    sources: List[str] = field(default_factory=list)
    #: The module fixed files import the helpers from ("" : written into each file).
    helpers_module: str = ""


def check_module_name(value: str, where: str) -> str:
    """``value`` if it is a dotted module name (``mypkg._graphmend``); ConfigError otherwise."""
    if not _MODULE_NAME.fullmatch(value):
        raise ConfigError(f"{where}: not a module name: {value!r} (like mypkg._graphmend)")
    return value


def _split(value: object, where: str) -> List[str]:
    if isinstance(value, str):
        return [part.strip() for part in value.replace("\n", ",").split(",") if part.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(part, str) for part in value):
        return [part.strip() for part in value if part.strip()]
    raise ConfigError(f"{where}: expected a string or a list of strings, got {value!r}")


def _flake8_section(path: Path) -> Dict[str, str]:
    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as exc:
        reason = " ".join(str(exc).split())  # configparser's messages span lines
        raise ConfigError(f"{path}: {reason}") from None
    if not parser.has_section("flake8"):
        return {}
    found = {}
    for key, value in parser.items("flake8"):
        normalized = key.replace("_", "-")
        if normalized.startswith("graphmend-"):
            found[normalized[len("graphmend-"):]] = value
    return found


def _pyproject_section(path: Path) -> Dict[str, object]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    tool = data.get("tool", {})
    section = tool.get("graphmend", {}) if isinstance(tool, dict) else {}
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.graphmend] must be a table, not {section!r}")
    return section


def _find_upwards(start: Path, names: Sequence[str]) -> Optional[Path]:
    """The nearest file of one of ``names``; relative to the current folder when inside it."""
    for folder in [start, *start.parents]:
        for name in names:
            candidate = folder / name
            if candidate.is_file():
                try:
                    return candidate.absolute().relative_to(Path.cwd())
                except ValueError:
                    return candidate
    return None


class _Setting(NamedTuple):
    """One configured value and where it was set."""

    value: object
    file: Path
    section: str
    key: str

    @property
    def where(self) -> str:
        return f"{self.file}: {self.section} {self.key}"


def _raw_settings(start: Path) -> Tuple[Dict[str, _Setting], List[str]]:
    """The configured values by key (pyproject.toml's win) and the files they came from."""
    raw: Dict[str, _Setting] = {}
    sources = []
    for name in _FLAKE8_FILES:
        found = _find_upwards(start, [name])
        section = _flake8_section(found) if found else {}
        if found and section:
            for key, value in section.items():
                raw[key] = _Setting(value, found, "[flake8]", f"graphmend-{key}")
            sources.append(str(found))
            break
    pyproject = _find_upwards(start, ["pyproject.toml"])
    table = _pyproject_section(pyproject) if pyproject else {}
    if pyproject and table:
        for name, setting in table.items():
            raw[name] = _Setting(setting, pyproject, "[tool.graphmend]", name)
        sources.append(str(pyproject))
    return raw, sources


def load_settings(start: Path) -> Settings:
    """Settings for a run started in ``start`` (a folder); ConfigError names a bad file and key."""
    raw, sources = _raw_settings(start)
    unknown = sorted(key for key in raw if key not in _KEYS)
    if unknown:
        first = raw[unknown[0]]
        raise ConfigError(
            f"{first.file}: {first.section}: unknown graphmend setting(s): "
            f"{', '.join(raw[key].key for key in unknown)} (known: {', '.join(_KEYS)})"
        )

    def values(key: str, default: str = "") -> Tuple[List[str], str]:
        setting = raw.get(key)
        if setting is None:
            return _split(default, key), key
        return _split(setting.value, setting.where), setting.where

    scope = raw.get("scope")
    if scope is not None and not isinstance(scope.value, str):
        raise ConfigError(f"{scope.where}: expected a string, got {scope.value!r}")
    options = Options(
        scope=check_scope(str(scope.value).strip(), scope.where) if scope else "compiled",
        entry_points=check_entry_points(*values("entry-points")),
        compiled_modules=tuple(values("compiled-modules")[0]),
    )
    helpers = raw.get("helpers-module")
    if helpers is not None and not isinstance(helpers.value, str):
        raise ConfigError(f"{helpers.where}: expected a string, got {helpers.value!r}")
    return Settings(
        options=options,
        select=check_codes(*values("select", "GM")) or ["GM"],
        ignore=check_codes(*values("ignore")),
        sources=sources,
        helpers_module=(
            check_module_name(str(helpers.value).strip(), helpers.where) if helpers else ""
        ),
    )
