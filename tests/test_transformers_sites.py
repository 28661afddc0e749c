"""The plugin finds the known break sites in the real modeling files of transformers 4.52.4.

Lines are those of transformers 4.52.4 (see shared reference: Table 2 rows measured on torch 2.13).
Shared library modules are linted as wholly compiled, the way a project would configure them.
"""

from pathlib import Path

import pytest

from flake8_graphmend.engine import Options, analyze_file

transformers = pytest.importorskip("transformers")
if transformers.__version__ != "4.52.4":  # pragma: no cover
    pytest.skip(
        f"line numbers are those of transformers 4.52.4, not {transformers.__version__}",
        allow_module_level=True,
    )

ROOT = Path(transformers.__file__).parent
SHARED = Options(
    compiled_modules=("*/transformers/modeling_utils.py", "*/transformers/modeling_rope_utils.py")
)

KNOWN_SITES = [
    # (file, line, code, fixable): LC sites of Table 2
    ("models/t5/modeling_t5.py", 1019, "GM102", True),          # T5Stack.forward warning_once
    ("models/bart/modeling_bart.py", 1246, "GM102", True),      # BartDecoder.forward warning_once
    ("models/marian/modeling_marian.py", 946, "GM102", True),   # MarianDecoder.forward
    ("models/whisper/modeling_whisper.py", 1104, "GM102", True),  # WhisperDecoder.forward
    ("models/biogpt/modeling_biogpt.py", 685, "GM102", True),
    ("models/blenderbot/modeling_blenderbot.py", 951, "GM102", True),
    ("models/pegasus/modeling_pegasus.py", 997, "GM102", True),
    ("models/longformer/modeling_longformer.py", 1496, "GM102", True),  # _pad_to_window_size
    # reached from LayoutLMv3Model.forward (line 1569 warns the same message); the `self.dtype`
    # before it calls `is_torch_xla_available()`, an availability probe (changes nothing)
    ("modeling_utils.py", 1614, "GM103", True),
    # DC: the fp16 overflow clamp (static dtype conjunct + tensor test)
    ("models/bart/modeling_bart.py", 567, "GM201", True),       # BartEncoderLayer.forward
    ("models/marian/modeling_marian.py", 327, "GM201", True),
    ("models/blenderbot_small/modeling_blenderbot_small.py", 313, "GM201", True),
    # DC: LongRoPE frequency update: declined, the buffer would no longer be the very tensor
    # `self.long_inv_freq` / `self.original_inv_freq` (an update in place of one shows in both)
    ("modeling_rope_utils.py", 50, "GM201", False),
    # DO / DS: out of the paper's scope, reported with hints
    ("models/longformer/modeling_longformer.py", 1272, "GM401", False),
    ("models/longformer/modeling_longformer.py", 919, "GM501", False),
    ("models/longformer/modeling_longformer.py", 927, "GM501", False),
    ("models/longformer/modeling_longformer.py", 930, "GM501", False),
    ("models/clap/modeling_clap.py", 904, "GM501", False),
    ("models/grounding_dino/modeling_grounding_dino.py", 1906, "GM501", False),
    # VG: the deformable-attention guard is reached from GroundingDinoModel.forward through
    # `self.encoder(...)` (a PreTrainedModel subclass), after `self.backbone(...)`, which may
    # update buffers in place (batch norm in training): a failing check would lose that
    ("models/grounding_dino/modeling_grounding_dino.py", 608, "GM301", False),
]


@pytest.fixture(scope="module")
def findings():
    cache = {}

    def of(relative):
        if relative not in cache:
            cache[relative] = analyze_file(ROOT / relative, options=SHARED)
        return cache[relative]

    return of


@pytest.mark.parametrize("relative, line, code, fixable", KNOWN_SITES, ids=lambda v: str(v))
def test_known_site_is_reported(findings, relative, line, code, fixable):
    at_line = [f for f in findings(relative) if f.line == line]
    assert [f.code for f in at_line] == [code], [f.text for f in at_line]
    assert (at_line[0].fixer is not None) == fixable, at_line[0].message


def test_layoutlmv3_reaches_modeling_utils_only_through_shared_scope():
    assert not [f for f in analyze_file(ROOT / "modeling_utils.py") if f.line == 1614]


def test_static_checks_in_real_models_are_not_reported(findings):
    """T5's clamp already uses torch.where; `if self.training`/`is None` tests never show up."""
    for relative in (
        "models/t5/modeling_t5.py",
        "models/bart/modeling_bart.py",
        "models/llama/modeling_llama.py",
    ):
        lines = (ROOT / relative).read_text().splitlines()
        for finding in findings(relative):
            test = lines[finding.line - 1].strip()
            assert finding.code != "GM201" or not test.startswith("if self.training"), test
    # Llama's only data-dependent branch is on the flash-attention-2 path (a real break there).
    llama = [
        (f.line, f.code)
        for f in findings("models/llama/modeling_llama.py")
        if f.code.startswith(("GM2", "GM3"))
    ]
    assert llama == [(492, "GM201")]
