"""Settings for the standalone ``graphmend`` command, read from the files users already have.

flake8 reads its own configuration for the plugin. The ``graphmend`` command reads the same
``graphmend-*`` keys from the ``[flake8]`` section of ``setup.cfg``, ``tox.ini`` or ``.flake8``,
then ``[tool.graphmend]`` in ``pyproject.toml`` (which wins), from the nearest folder upwards.
"""

from __future__ import annotations

import configparser
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - older Pythons
    import tomli as tomllib  # type: ignore[no-redef]

from .engine import Options

_FLAKE8_FILES = ("setup.cfg", "tox.ini", ".flake8")
_KEYS = ("scope", "entry-points", "compiled-modules", "select", "ignore")


class ConfigError(ValueError):
    """A configuration file says something we cannot use."""


@dataclass
class Settings:
    options: Options = field(default_factory=Options)
    select: List[str] = field(default_factory=lambda: ["GM"])
    ignore: List[str] = field(default_factory=list)
    #: Where the settings came from, for messages.
    sources: List[str] = field(default_factory=list)


def _split(value: object) -> List[str]:
    if isinstance(value, str):
        return [part.strip() for part in value.replace("\n", ",").split(",") if part.strip()]
    if isinstance(value, (list, tuple)):
        return [str(part).strip() for part in value if str(part).strip()]
    raise ConfigError(f"expected a string or a list, got {value!r}")


def _flake8_section(path: Path) -> Dict[str, str]:
    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
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
        raise ConfigError(f"{path}: {exc}") from exc
    return data.get("tool", {}).get("graphmend", {})


def _find_upwards(start: Path, names: Sequence[str]) -> Optional[Path]:
    for folder in [start, *start.parents]:
        for name in names:
            candidate = folder / name
            if candidate.is_file():
                return candidate
    return None


def load_settings(start: Path) -> Settings:
    """Settings for a run started in ``start`` (a folder)."""
    raw: Dict[str, object] = {}
    sources = []
    for name in _FLAKE8_FILES:
        found = _find_upwards(start, [name])
        if found:
            section = _flake8_section(found)
            if section:
                raw.update(section)
                sources.append(str(found))
                break
    pyproject = _find_upwards(start, ["pyproject.toml"])
    if pyproject:
        section = _pyproject_section(pyproject)
        if section:
            raw.update(section)
            sources.append(str(pyproject))
    unknown = sorted(set(raw) - set(_KEYS))
    if unknown:
        raise ConfigError(
            f"unknown graphmend setting(s): {', '.join(unknown)} (known: {', '.join(_KEYS)})"
        )
    try:
        options = Options(
            scope=str(raw.get("scope", "compiled")).strip(),
            entry_points=tuple(_split(raw.get("entry-points", ""))),
            compiled_modules=tuple(_split(raw.get("compiled-modules", ""))),
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    return Settings(
        options=options,
        select=_split(raw.get("select", "GM")) or ["GM"],
        ignore=_split(raw.get("ignore", "")),
        sources=sources,
    )
