"""``symbols.attribute_stores``: every store of the file into an attribute, with its value
where the analysis sees it, so that "each value stored into ``self.X``" is judged over all."""

from __future__ import annotations

import ast
from textwrap import dedent
from typing import List

import pytest

from flake8_graphmend.analysis.symbols import UNKNOWN_STORE, attribute_stores

STORES = {
    "an assignment": ("self.proj = nn.Linear(2, 2)", ["nn.Linear(2, 2)"]),
    "a displayed unpacking": ("self.proj, self.n = nn.Identity(), 0", ["nn.Identity()"]),
    "a nested displayed unpacking": ("(self.n, (self.proj, m)) = 0, (nn.Identity(), 1)",
                                     ["nn.Identity()"]),
    "an unpacked value": ("self.proj, self.n = make()", [UNKNOWN_STORE]),
    "a starred unpacking": ("self.proj, *rest = a, b, c", [UNKNOWN_STORE]),
    "an augmented assignment": ("self.proj += 1", [UNKNOWN_STORE]),
    "a del": ("del self.proj", [UNKNOWN_STORE]),
    "a loop target": ("for self.proj in layers:\n    pass", [UNKNOWN_STORE]),
    "a with target": ("with open(p) as self.proj:\n    pass", [UNKNOWN_STORE]),
    "register_buffer": ("self.register_buffer('proj', torch.zeros(2))", ["torch.zeros(2)"]),
    "setattr": ("setattr(self, 'proj', nn.Identity())", ["nn.Identity()"]),
    "a read": ("y = self.proj(x)", []),
}


@pytest.mark.parametrize("name", STORES)
def test_every_store_into_an_attribute_is_recorded(name: str) -> None:
    code, expected = STORES[name]
    tree = ast.parse(dedent(code))
    stored: List[object] = [
        value if value is UNKNOWN_STORE else ast.unparse(value)
        for value in attribute_stores(tree).get("proj", ())
    ]
    assert stored == expected
