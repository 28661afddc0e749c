"""Exit codes of `graphmend verify` and the error that carries one."""

EXIT_OK = 0
"""Both arms ran; the fixed arm has no more graphs or breaks than the original, equal outputs,
and the eager original's behaviour (but for documented differences), compiled and eager."""
EXIT_FAILED = 1
"""Verification failed: the fixed code does not run, gives different outputs or behaviour, or
is worse."""
EXIT_USAGE = 2
"""Bad input: no entry file or factory, a factory that fails, an unknown --fix target (a model
that raises is not: its exception is its behaviour)."""
EXIT_INTERRUPTED = 130
"""Stopped with Ctrl-C."""


class VerifyError(Exception):
    """A failure shown to the user as one line on stderr, ending the run with ``exit_code``."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code
