"""libcst codemods that fix the GM findings the lint side proves fixable ([Defer], [Where], [Trap]).

The commands live in ``fixers.graphmend`` (``graphmend.FixAll`` with ``modules: [fixers]`` in
``.libcst.codemod.yaml``); ``fixers.apply.fix_paths`` runs them on files without libcst's CLI.
Nothing here imports torch: the fixed code carries its own small helpers.
"""
