"""libcst codemods that fix the GM findings the lint side proves fixable ([Defer], [Where], [Trap]).

The commands live in ``fixers.graphmend`` (``graphmend.FixAll`` with ``modules: [fixers]`` in
``.libcst.codemod.yaml``); ``fixers.apply.fix_paths`` runs them on files without libcst's CLI.
Nothing here imports torch: the fixed code carries its own small helpers.

Every module of the package is imported with it, so that the rewrites each one registers
(``@rewrites_statement``, ``@rewrites_call``) and the commands it defines are known whichever
command runs.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "graphmend":  # it lists the commands the others define
        importlib.import_module(f"{__name__}.{_module.name}")
