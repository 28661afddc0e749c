"""The codemod commands, for libcst's `graphmend.<Command>` lookup (``modules: [fixers]``).

Every command of the package is here: each ``GraphMendCommand`` subclass that a module of
``fixers`` defines (the package imports all its modules).
"""

from .base import GraphMendCommand

COMMANDS = {command.__name__: command for command in GraphMendCommand.__subclasses__()}
globals().update(COMMANDS)
__all__ = sorted(COMMANDS)
