"""Packaging for flake8-graphmend: the GM flake8 plugin, the graphmend codemods and the runner."""

import re
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
VERSION = re.search(
    r'^__version__ = "([^"]+)"', (HERE / "flake8_graphmend" / "__init__.py").read_text(), re.M
).group(1)

TORCH = "torch==2.13.0"
TRANSFORMERS = "transformers==4.52.4"

setup(
    name="flake8-graphmend",
    version=VERSION,
    description=(
        "Find and fix torch.compile graph breaks at the source level "
        "(flake8 plugin + libcst codemods)"
    ),
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="MIT",
    python_requires=">=3.9",
    packages=find_packages(
        include=["flake8_graphmend", "flake8_graphmend.*", "fixers", "fixers.*"]
    ),
    include_package_data=True,
    # tomli: graphmend's pyproject.toml reader on Pythons before 3.11 (tomllib after).
    install_requires=["flake8>=6", "libcst>=1.1", "tomli>=1.1; python_version < '3.11'"],
    extras_require={
        "verify": [TORCH],
        "test": [TORCH, TRANSFORMERS, "pytest>=7", "pytest-xdist>=3", "hypothesis>=6"],
        "bench": [TORCH, TRANSFORMERS],
    },
    entry_points={
        "flake8.extension": ["GM = flake8_graphmend.plugin:GraphMendChecker"],
        "console_scripts": ["graphmend = flake8_graphmend.cli:main"],
    },
    classifiers=[
        "Framework :: Flake8",
        "Environment :: Console",
        "Intended Audience :: Developers",
        "License :: OSI Approved :: MIT License",
        "Programming Language :: Python :: 3",
        "Topic :: Software Development :: Quality Assurance",
    ],
)
