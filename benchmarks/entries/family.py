"""Any transformers family with a small random config: the entry of ``benchmarks/survey.py``.

The spec comes from the environment (``GRAPHMEND_FAMILY_SPEC=bert`` or ``bart@fp16``), which the
runner's arms inherit; ``benchmarks/families.py`` says how the model and its inputs are built.
"""

import os

# the checkout's root is on the arms' PYTHONPATH (the runner puts it there)
from benchmarks.families import FAMILY_ENVIRONMENT, build_family


def build():
    return build_family(os.environ[FAMILY_ENVIRONMENT])
