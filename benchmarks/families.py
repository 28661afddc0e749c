"""Model specs over transformers' families, and what one run of a spec does at run time.

Shared by ``survey.py`` (issue 14: breaks before and after ``graphmend.FixAll``) and
``agreement.py`` (issue 15: Dynamo's break sites against the linter's findings).

A *family spec* is a transformers model type (``bert``) with a dtype suffix for the fp16 twin
(``bart@fp16``). ``family_specs()`` enumerates them from transformers' auto mappings: every model
type with a base model class (``AutoModel``), and an fp16 twin where the family's modeling file
mentions ``float16`` (its fp16-only branches: overflow clamps and the like). ``build_family``
builds one with the type's default config shrunk generically (``shrink_overrides``: hidden
sizes, layers, heads, vocabulary, intermediate sizes, image and audio sizes, in sub-configs too),
random weights (seed 0), eval mode, and a plausible input found by trying (``_find_inputs``):
the model's main input (token ids, pixel values, audio features or samples) with an attention
mask and decoder ids where ``forward`` takes them, then the other inputs ``forward`` knows.

``probe_entry`` runs one entry (``file.py:factory``, as ``graphmend verify`` takes it) in this
process: two eager calls under ``sys.settrace`` that record the lines executed in transformers'
files, then one compiled call with the runner's counting backend (``verify.dynamo.probe``) that
records graphs and break sites. ``probe_in_subprocess`` does that in a fresh process with a time
limit, which is how the scripts use it (a family that hangs or crashes costs only its own run).

    python benchmarks/families.py --list               # the specs this transformers gives
    python benchmarks/families.py bert bart@fp16       # probe them, one line each
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(ROOT))

#: The entry every family spec runs through (``graphmend verify`` takes an entry file).
FAMILY_ENTRY = HERE / "entries" / "family.py"
#: The environment variable that tells ``FAMILY_ENTRY`` which spec to build (arms inherit it).
FAMILY_ENVIRONMENT = "GRAPHMEND_FAMILY_SPEC"
FP16 = "fp16"
EAGER_CALLS = 2  # as the runner's arms: what happens once only shows on the first
SEQUENCE = 8
BATCH = 1

# -- enumerating families ------------------------------------------------------------------


@dataclass(frozen=True)
class FamilySpec:
    """A model type and its dtype: ``name`` is ``bert`` or ``bart@fp16``."""

    model_type: str
    dtype: str = "fp32"

    @property
    def name(self) -> str:
        return self.model_type if self.dtype == "fp32" else f"{self.model_type}@{self.dtype}"

    @classmethod
    def parse(cls, name: str) -> "FamilySpec":
        model_type, _, dtype = name.partition("@")
        return cls(model_type, dtype or "fp32")


def modeling_file(model_type: str) -> Optional[Path]:
    """The family's ``modeling_<module>.py`` (None when transformers has none under that name)."""
    import transformers
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    module = model_type_to_module_name(model_type)
    models = Path(transformers.__file__).parent / "models"
    for folder in (models / module, models / "deprecated" / module):
        candidate = folder / f"modeling_{module}.py"
        if candidate.is_file():
            return candidate
    return None


def has_fp16_branches(model_type: str) -> bool:
    """Whether the family's modeling file mentions ``float16`` (an fp16-only branch)."""
    path = modeling_file(model_type)
    return path is not None and "float16" in path.read_text(encoding="utf-8")


def family_specs(families: Optional[List[str]] = None) -> List[FamilySpec]:
    """Every model type with a base model class (or those named), with fp16 twins."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    model_types = sorted(MODEL_MAPPING_NAMES) if families is None else families
    specs: List[FamilySpec] = []
    for model_type in model_types:
        specs.append(FamilySpec(model_type))
        if has_fp16_branches(model_type):
            specs.append(FamilySpec(model_type, FP16))
    return specs


# -- shrinking a config --------------------------------------------------------------------

HIDDEN = 32
INTERMEDIATE = 64
LAYERS = 2
HEADS = 2
VOCAB = 256
IMAGE = 32
MAX_POSITIONS = 512
_HIDDEN_NAMES = {
    "hidden_size", "d_model", "n_embd", "embed_dim", "dim", "hidden_dim", "d_embed",
    "projection_dim", "word_embed_proj_dim", "embedding_size", "text_embed_dim",
    "vision_embed_dim", "encoder_hidden_size", "n_embed", "d_inner_hidden",
}
_HEAD_DIM_NAMES = {
    "head_dim", "d_kv", "d_head", "attention_head_size", "kv_channels", "rotary_dim",
}
_LAYER_NAMES = re.compile(r"^(num_|n_)?(hidden_|encoder_|decoder_|text_|vision_)?layers?$|"
                          r"^(encoder|decoder)_layers$|^num_(encoder|decoder)_layers$")
_INTERMEDIATE_NAMES = re.compile(r"intermediate_size|ffn_dim|^d_ff$|^n_inner$|ffn_hidden_size")
_POSITION_NAMES = re.compile(r"^max_position_embeddings$|^n_positions$|^n_ctx$|"
                             r"^max_(source|target|text)_positions$")
_EXPERT_NAMES = {"num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"}


def _shrunk_int(name: str, value: int) -> Optional[int]:
    """A smaller value for a size attribute named ``name`` (None: leave it)."""
    rules: List[Tuple[bool, int]] = [
        (name in _HIDDEN_NAMES, HIDDEN),
        (name in _HEAD_DIM_NAMES, HIDDEN // HEADS),
        (bool(_LAYER_NAMES.match(name)), LAYERS),
        ("heads" in name or name == "n_head", HEADS),
        ("vocab_size" in name, VOCAB),
        (bool(_INTERMEDIATE_NAMES.search(name)), INTERMEDIATE),
        (bool(_POSITION_NAMES.match(name)), MAX_POSITIONS),
        (name == "image_size", IMAGE),
        (name == "num_groups", 8),  # group norms of the shrunk widths (bit)
        (name in _EXPERT_NAMES, 4),
        (name == "num_experts_per_tok", 2),
    ]
    for matches, small in rules:
        if matches:
            return small if value > small else None
    return None


def _shrunk_list(name: str, value: List[Any]) -> Optional[List[Any]]:
    """Stage lists of vision backbones: one block per stage, one head, small widths."""
    if not value or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return None
    if name in ("depths", "num_layers") or "heads" in name:
        return [1] * len(value)
    if name in ("hidden_sizes", "embed_dims", "conv_dim", "dims", "embed_dim"):
        return [16] * len(value) if name == "conv_dim" else [16 * 2 ** i for i in range(len(value))]
    return None


def shrink_overrides(config: Any) -> Dict[str, Any]:
    """The keyword arguments that rebuild ``config``'s class small (sub-configs as dicts that
    keep their ``model_type``). Token ids are kept inside the shrunk vocabulary."""
    from transformers import PretrainedConfig

    overrides: Dict[str, Any] = {}
    for name, value in vars(config).items():
        if name.startswith("_"):
            continue
        if isinstance(value, PretrainedConfig):
            overrides[name] = {"model_type": value.model_type, **shrink_overrides(value)}
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int):
            small = _shrunk_int(name, value)
            if small is not None:
                overrides[name] = small
        elif isinstance(value, list):
            small_list = _shrunk_list(name, value)
            if small_list is not None:
                overrides[name] = small_list
    vocab = overrides.get("vocab_size", getattr(config, "vocab_size", None))
    if isinstance(vocab, int):
        for name, value in vars(config).items():
            token = name.endswith(("_token_id", "_token_index"))
            if token and isinstance(value, int) and not isinstance(value, bool) and value >= vocab:
                overrides[name] = vocab - 1
    return overrides


def small_config(model_type: str) -> Any:
    """The model type's default config, shrunk (attributes set afterwards when its class does
    not take them as keyword arguments)."""
    from transformers import AutoConfig

    default = AutoConfig.for_model(model_type)
    overrides = shrink_overrides(default)
    try:
        config = type(default)(**overrides)
    except Exception:  # a class that derives what it is given differently: set the fields
        config = default
        for name, value in overrides.items():
            if not isinstance(value, dict):
                setattr(config, name, value)
    return config


# -- building a model and its inputs -------------------------------------------------------


def base_model_class(model_type: str) -> Any:
    """The family's base model class, ``AutoModel``'s choice, looked up by name only (the auto
    mapping's key lookup imports every family, which fails when an optional package such as timm
    is half installed)."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    names = MODEL_MAPPING_NAMES[model_type]
    return getattr(transformers, names if isinstance(names, str) else names[0])


def build_family(name: str) -> Tuple[Any, tuple, Dict[str, Any]]:
    """``(model, (), kwargs)`` for the family spec ``name`` (the factory protocol of
    ``graphmend verify``); raises what building or the trial calls raise."""
    import torch

    spec = FamilySpec.parse(name)
    torch.manual_seed(0)
    config = small_config(spec.model_type)
    model = base_model_class(spec.model_type)(config).eval()
    dtype = torch.float16 if spec.dtype == FP16 else torch.float32
    model = model.to(dtype)
    return model, (), _find_inputs(model, config, dtype)


def _find_inputs(model: Any, config: Any, dtype: Any) -> Dict[str, Any]:
    """The first input set ``model`` runs on: its main input (and the usual companions), then
    with every other input this builder knows that ``forward`` takes."""
    import torch

    parameters = set(inspect.signature(model.forward).parameters)
    main = getattr(model, "main_input_name", "input_ids")
    first = _input_for(main, config, dtype)
    for companion in ("attention_mask", "decoder_input_ids"):
        if companion in parameters and companion != main:
            value = _input_for(companion, config, dtype)
            if companion != "decoder_input_ids" or getattr(config, "is_encoder_decoder", False):
                first[companion] = value[companion]
    attempts = [first, {**_known_inputs(parameters, config, dtype), **first}]
    error: Optional[BaseException] = None
    for kwargs in attempts:
        try:
            with torch.no_grad():
                model(**kwargs)
        except Exception as failure:  # the next attempt, or the reason this spec is skipped
            error = failure
            continue
        return kwargs
    assert error is not None
    raise error


_KNOWN = ("input_ids", "pixel_values", "input_features", "input_values", "decoder_input_ids",
          "attention_mask")


def _known_inputs(parameters: Any, config: Any, dtype: Any) -> Dict[str, Any]:
    kwargs: Dict[str, Any] = {}
    for name in _KNOWN:
        if name in parameters:
            kwargs.update(_input_for(name, config, dtype))
    return kwargs


def _sub(config: Any, *names: str) -> Any:
    """The first sub-config named (``vision_config``), else ``config`` itself."""
    for name in names:
        sub = getattr(config, name, None)
        if sub is not None and not isinstance(sub, dict):
            return sub
    return config


def _input_for(name: str, config: Any, dtype: Any) -> Dict[str, Any]:
    import torch

    if name in ("input_ids", "decoder_input_ids"):
        text = _sub(config, "text_config", "decoder")
        vocab = int(getattr(text, "vocab_size", None) or VOCAB)
        return {name: torch.randint(min(3, vocab - 1), vocab, (BATCH, SEQUENCE))}
    if name == "attention_mask":
        return {name: torch.ones(BATCH, SEQUENCE, dtype=torch.long)}
    if name == "pixel_values":
        vision = _sub(config, "vision_config", "backbone_config")
        size = getattr(vision, "image_size", IMAGE)
        height, width = (size, size) if isinstance(size, int) else tuple(size)[:2]
        channels = int(getattr(vision, "num_channels", 3))
        return {name: torch.randn(BATCH, channels, height, width).to(dtype)}
    if name == "input_features":
        audio = _sub(config, "audio_config", "encoder")
        bins = int(getattr(audio, "num_mel_bins", None) or getattr(audio, "feature_size", 80))
        frames = 2 * int(getattr(audio, "max_source_positions", 0) or SEQUENCE * 4)
        layout = (BATCH, bins, frames) if hasattr(audio, "num_mel_bins") else (BATCH, frames, bins)
        return {name: torch.randn(*layout).to(dtype)}
    if name == "input_values":
        return {name: torch.randn(BATCH, 4000).to(dtype)}
    raise ValueError(f"no input builder for {name!r}")


# -- what one run does ---------------------------------------------------------------------


@dataclass
class SiteRecord:
    """A distinct break site of one compiled call, with its number of break events."""

    file: str
    line: int
    gb_id: Optional[str]
    gb_type: str
    events: int


@dataclass
class ProbeResult:
    """What ``probe_entry`` measured (JSON-ready). ``error`` set: nothing was measured and it
    says why (the spec is skipped with that reason)."""

    name: str
    entry: str
    seconds: float = 0.0
    error: Optional[str] = None
    graphs: Optional[int] = None
    events: Optional[int] = None
    sites: List[SiteRecord] = field(default_factory=list)
    #: Lines executed in transformers' files by the eager calls: file -> sorted line numbers.
    executed: Dict[str, List[int]] = field(default_factory=dict)
    compiled_error: Optional[str] = None

    @property
    def breaks(self) -> Optional[int]:
        return None if self.graphs is None else max(self.graphs - 1, 0)

    @property
    def broke(self) -> bool:
        return bool(self.events) or bool(self.breaks)

    def to_json(self) -> Dict[str, Any]:
        return {**asdict(self), "breaks": self.breaks}

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "ProbeResult":
        fields = {k: v for k, v in data.items() if k != "breaks"}
        return cls(**{**fields, "sites": [SiteRecord(**s) for s in data.get("sites", [])]})


def transformers_root() -> str:
    import transformers

    return os.path.realpath(os.path.dirname(transformers.__file__))


class LineRecorder:
    """``sys.settrace`` while active: the lines executed in files under ``root``."""

    def __init__(self, root: str) -> None:
        self.root = root + os.sep
        self.lines: Dict[str, set] = {}
        self._inside: Dict[str, bool] = {}

    def _global(self, frame: Any, event: str, arg: Any) -> Any:
        filename = frame.f_code.co_filename
        inside = self._inside.get(filename)
        if inside is None:
            inside = self._inside[filename] = os.path.realpath(filename).startswith(self.root)
        if not inside:
            return None
        self.lines.setdefault(filename, set()).add(frame.f_lineno)
        return self._local

    def _local(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            self.lines[frame.f_code.co_filename].add(frame.f_lineno)
        return self._local

    def __enter__(self) -> "LineRecorder":
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.settrace(None)

    def as_json(self) -> Dict[str, List[int]]:
        return {os.path.realpath(f): sorted(lines) for f, lines in sorted(self.lines.items())}


def probe_entry(name: str, entry: str) -> ProbeResult:
    """Build ``entry``, record the executed lines of its eager calls, then compile it once
    (counting backend) and record graphs and break sites. Never raises: a failure to build or
    to call eagerly is the result's ``error``; a compiled call that raises keeps what was
    logged before it (``compiled_error``)."""
    import torch

    from flake8_graphmend.verify.dynamo import CompileReport, probe_into
    from flake8_graphmend.verify.entry import describe_failure, load_workload, parse_entry

    result = ProbeResult(name, entry)
    started = time.perf_counter()
    try:
        spec = parse_entry(entry)
        sys.path.insert(0, str(spec.path.resolve().parent))
        torch.manual_seed(0)
        workload = load_workload(spec.path, spec.factory, str(spec.path))
        with torch.no_grad():
            recorder = LineRecorder(transformers_root())
            with recorder:
                for _ in range(EAGER_CALLS):
                    workload()
            result.executed = recorder.as_json()
            report = CompileReport(graphs=0)
            try:
                probe_into(report, workload.model, *workload.args, **workload.kwargs)
            except Exception as error:  # the breaks logged before it still count
                result.compiled_error = describe_failure(error)
    except Exception as error:
        result.error = describe_failure(error)
    else:
        result.graphs, result.events = report.graphs, report.breaks
        result.sites = [
            SiteRecord(os.path.realpath(s.filename), s.lineno, s.gb_id, s.gb_type, events)
            for s, events in report.site_counts().items()
        ]
    result.seconds = time.perf_counter() - started
    return result


def family_entry(name: str) -> Tuple[str, Dict[str, str]]:
    """The entry and the environment that build the family spec ``name``."""
    return f"{FAMILY_ENTRY}:build", {FAMILY_ENVIRONMENT: name}


def probe_in_subprocess(
    name: str, entry: str, environment: Dict[str, str], timeout: float, threads: int = 1
) -> ProbeResult:
    """``probe_entry`` in a fresh process; a crash or ``timeout`` seconds is the error."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="graphmend-probe-") as scratch:
        out = Path(scratch) / "probe.json"
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), **environment}
        command = [sys.executable, str(Path(__file__)), "--probe-entry", entry,
                   "--name", name, "--out", str(out)]
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return ProbeResult(name, entry, time.perf_counter() - started,
                               error=f"timed out after {timeout:.0f} s")
        if not out.is_file():
            last = [line for line in done.stderr.splitlines() if line.strip()][-1:]
            return ProbeResult(name, entry, time.perf_counter() - started,
                               error=f"probe exited {done.returncode}: {' '.join(last)}")
        return ProbeResult.from_json(json.loads(out.read_text(encoding="utf-8")))


def probe_family(name: str, timeout: float, threads: int = 1) -> ProbeResult:
    entry, environment = family_entry(name)
    return probe_in_subprocess(name, entry, environment, timeout, threads)


def short_path(path: str) -> str:
    """``models/bert/modeling_bert.py`` for a file of transformers (else the path)."""
    marker = f"transformers{os.sep}"
    return path[path.rindex(marker) + len(marker):] if marker in path else path


def fix_targets(result: ProbeResult) -> List[str]:
    """The transformers files the eager calls ran (package ``__init__`` files left out: they
    hold no model code, and their copies would replace the package's lazy module)."""
    return sorted(f for f in result.executed if not f.endswith("__init__.py"))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="*", help="family specs to probe (bert, bart@fp16)")
    parser.add_argument("--list", action="store_true", help="list the family specs and exit")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per spec")
    parser.add_argument("--probe-entry", help=argparse.SUPPRESS)  # the subprocess side
    parser.add_argument("--name", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe_entry:
        result = probe_entry(args.name or args.probe_entry, args.probe_entry)
        args.out.write_text(json.dumps(result.to_json()), encoding="utf-8")
        return 0
    if args.list:
        for spec in family_specs():
            print(spec.name)
        return 0
    for name in args.specs:
        result = probe_family(name, args.timeout)
        sites = ", ".join(f"{short_path(s.file)}:{s.line} {s.gb_id} x{s.events}"
                          for s in result.sites)
        print(f"{name}: {result.error or f'graphs {result.graphs}, events {result.events}'}"
              f" ({result.seconds:.0f} s) {sites}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
