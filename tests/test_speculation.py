"""Which calls [Where] may run on a path that did not run them (analysis/purity.py)."""

import ast
from textwrap import dedent

import pytest

from flake8_graphmend.analysis.purity import speculation_problem
from flake8_graphmend.analysis.symbols import ModuleSymbols

MODULE = dedent(
    """
    import logging
    import math

    import torch

    logger = logging.getLogger(__name__)


    def default(config, device=None, seq_len=None, **legacy):
        \"\"\"Docstrings are fine.\"\"\"
        if config is not None and len(legacy) > 0:
            raise ValueError("legacy arguments and a config are exclusive")
        if len(legacy) > 0:
            base = legacy["base"]
        else:
            base = config.rope_theta
        dim = getattr(config, "head_dim", None) or config.hidden_size
        return 1.0 / (base ** (torch.arange(0, dim, 2, device=device).float() / dim)), 1.0


    def scaled(config, device=None, seq_len=None, **legacy):
        inv_freq, factor = default(config, device, seq_len, **legacy)
        factor = config.rope_scaling.get("factor", 1.0)
        for _ in range(2):
            factor = math.sqrt(factor)
        return inv_freq / factor, factor


    def strict(config, device=None, seq_len=None):
        if seq_len is None:
            raise ValueError("seq_len is required")
        return default(config, device)


    def chatty(config, device=None, seq_len=None):
        logger.warning("computing")
        return default(config, device)


    def caching(config, device=None, seq_len=None):
        config.cache = default(config, device)
        return config.cache


    def validate(config, ignore_keys=None):
        raise ValueError("never speculated: it does not accept the call's arguments")


    INIT = {"default": default, "scaled": scaled}
    VALIDATORS = {"default": validate}
    """
)


def problem(call: str, module: str = MODULE):
    symbols = ModuleSymbols.collect(ast.parse(module))
    return speculation_problem(ast.parse(call, mode="eval").body, symbols)


@pytest.mark.parametrize(
    "call",
    [
        "default(config, device)",
        "scaled(config, device, seq_len=17)",
        "self.init_fn(self.config, device, seq_len=17)",  # every INIT function qualifies
    ],
)
def test_pure_module_code_may_run_speculatively(call):
    assert problem(call) is None


@pytest.mark.parametrize(
    "call, reason",
    [
        ("default(config, device, base=2)", "`default` contains `raise ValueError"),
        ("scaled(config, base=2)", "`scaled` calls `default`, which contains `raise"),
        ("strict(config, device)", "`strict` contains `raise ValueError('seq_len is required')`"),
        ("chatty(config)", "`chatty` contains `logger.warning('computing')`"),
        ("caching(config)", "`caching` assigns `config.cache`, not a local name"),
        ("unknown(config)", "`unknown()` is not a function of this module"),
        ("self.init_fn(*arguments)", "`self.init_fn()` is not a function of this module"),
    ],
)
def test_effects_raises_and_unknown_callees_are_named(call, reason):
    assert reason in (problem(call) or "")


def test_a_dispatch_table_with_an_unsafe_function_is_refused():
    module = MODULE.replace('INIT = {"default": default', 'INIT = {"default": chatty')
    assert "`chatty` contains `logger.warning" in problem("self.init_fn(config, device)", module)
