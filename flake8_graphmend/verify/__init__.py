"""The verification runner: graphs, breaks, outputs, behaviour (values, exceptions, stdout,
stderr, log records, warnings) and timings of the original and fixed code.

``graphmend verify`` lives in ``cli`` (``python -m flake8_graphmend.verify`` runs it too);
``probe`` and ``assert_graph_breaks`` check code in-process. Importing this package does not
import torch; the functions that need it import it when called.
"""

from .dynamo import BreakSite, CompileReport, fullgraph_error, gb_id_for, probe
from .testing import assert_graph_breaks

__all__ = [
    "BreakSite",
    "CompileReport",
    "assert_graph_breaks",
    "fullgraph_error",
    "gb_id_for",
    "probe",
]
