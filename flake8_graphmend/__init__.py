"""flake8-graphmend: find and fix the source patterns that make torch.compile break the graph."""

__version__ = "0.1.0"
