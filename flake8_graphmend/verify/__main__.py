"""``python -m flake8_graphmend.verify ENTRY ...``: the verify command without the graphmend CLI."""

import argparse
import sys

from .cli import add_verify_arguments, run_verify


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m flake8_graphmend.verify",
        description="Compile the original and the graphmend-fixed code under torch.compile and "
        "compare graphs, graph breaks, outputs and timings.",
    )
    add_verify_arguments(parser)
    return run_verify(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
