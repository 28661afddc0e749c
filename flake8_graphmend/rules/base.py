"""What a detector reports, and what it is given to look at."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import AbstractSet, Dict, List, Optional, Sequence, Set, Tuple, Union

from ..analysis.index import (
    FunctionFacts, assignment_targets, child_blocks, enclosing_functions, parent_map,
    scope_names, walk,
)
from ..analysis.mutation import in_place_mutations
from ..analysis.regions import Region
from ..analysis.symbols import ModuleSymbols, is_self, self_attribute
from ..analysis.values import Kind, ValueAnalysis
from ..planning import Plan, Position
from ..planning.aliasing import graph_input_update, joined_update, reaching_bindings
from ..planning.conditions import split_condition
from ..planning.frames import FrameGuard, traced_anew
from ..planning.callers import try_problem
from ..registry import RULES_BY_CODE, Rule


def _spans(node: ast.stmt, where: Tuple[int, int]) -> bool:
    """Whether ``node``'s source holds the position ``where`` (line, column)."""
    end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
    return (node.lineno, node.col_offset) <= where < end


def _spans_block(block: Sequence[ast.stmt], where: Tuple[int, int]) -> bool:
    return any(_spans(statement, where) for statement in block)


def only_when(condition: str) -> str:
    """The note of a finding that breaks only under ``condition`` (text with the code quoted:
    ``(only when `self.training`)``), in the lint message and the codemod's warnings alike."""
    return f"(only when {condition})"


@dataclass(frozen=True)
class Finding:
    """One GM finding. ``line`` is 1-based, ``col`` 0-based (in characters), as flake8 expects."""

    code: str
    line: int
    col: int
    end_line: int
    end_col: int
    #: The message without the code, complete with GB ids and the fix or hint.
    message: str
    #: ``graphmend.<fixer>`` fixes this site when set.
    fixer: Optional[str] = None
    #: Why the rule's fixer does not fix this site (None when it does, or the rule has no fixer).
    decline: Optional[str] = None
    #: What the fixer needs to rewrite the site (``planning/``); None when it is not fixed.
    plan: Optional[Plan] = field(default=None, compare=False, hash=False)
    #: The condition, known while tracing, without which the site does not break (the code
    #: quoted: ``self.training``), or None when it always breaks.
    condition: Optional[str] = None
    #: What the fix leaves as it was, or may cost (said with the finding and by the codemod).
    caveat: Optional[str] = None
    #: The statements before which the fix keeps a break (``frames.FrameGuard``).
    frame_guards: Tuple[FrameGuard, ...] = field(default=(), compare=False, hash=False)

    @property
    def text(self) -> str:
        return f"{self.code} {self.message}"

    @property
    def label(self) -> str:
        """The code, with the condition the break needs (``GM201 (only when `self.training`)``):
        how the codemod's warnings name the finding."""
        return f"{self.code} {only_when(self.condition)}" if self.condition else self.code


AnyNode = Union[ast.stmt, ast.expr]


@dataclass(frozen=True)
class FrameEnd:
    """An unconditional break after which Dynamo runs the rest of the function eagerly: the
    code between ``after`` (the break's last line) and ``until`` (the end of the branch or
    function) breaks only once that break is fixed."""

    after: int
    until: int
    line: int
    reason: str
    #: Where the finding of that break is.
    site: Position

    def shadows(self, node: AnyNode) -> Optional[str]:
        """The condition of a break at ``node`` that this one hides, or None."""
        if not self.after < node.lineno <= self.until:
            return None
        return (
            f"line {self.line} is fixed: Dynamo runs the rest of the function eagerly after "
            f"{self.reason}"
        )


def _statement_path(block: Sequence[ast.stmt], where: Tuple[int, int]) -> List[ast.stmt]:
    """The statements from ``block`` down to the innermost one that holds ``where``."""
    for statement in block:
        if _spans(statement, where):
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                return [statement]
            for child in child_blocks(statement):
                if _spans_block(child, where):
                    return [statement, *_statement_path(child, where)]
            return [statement]
    return []


def _in_loop(path: List[ast.stmt]) -> bool:
    """Whether the innermost statement of ``path`` is in the body of a loop of it (not its
    ``else``)."""
    return any(
        isinstance(statement, (ast.For, ast.AsyncFor, ast.While))
        and any(inner is s for s in statement.body)
        for statement, inner in zip(path, path[1:])
    )


def _branch_end(path: List[ast.stmt], where: Tuple[int, int], function: ast.AST) -> int:
    """The last line of the innermost ``if`` branch on ``path`` that holds ``where`` (the
    function's last line when none does)."""
    for statement in reversed(path[:-1]):
        if isinstance(statement, ast.If):
            for branch in (statement.body, statement.orelse):
                if _spans_block(branch, where):
                    return branch[-1].end_lineno or branch[-1].lineno
    return getattr(function, "end_lineno", None) or where[0]


@dataclass(frozen=True)
class Site:
    """A finding with what tells whether it still breaks once the others are fixed: how the
    fixes of a function change where Dynamo's frames start (``planning/frames.py``)."""

    finding: Finding
    #: The message up to its GB ids (what it says before the fix or the decline).
    head: str
    #: In the body of a ``for`` or ``while`` of the function: Dynamo skips a frame whose first
    #: break is there.
    in_loop: bool
    #: It breaks whenever Dynamo traces its line: no condition, not in a branch of an ``if``
    #: on a tensor.
    certain: bool
    #: The site whose break, in a loop or where Dynamo cannot resume, makes Dynamo run this
    #: one's line eagerly (``FrameEnd``), if any.
    shadowed_by: Optional[Position]

    @property
    def position(self) -> Position:
        return self.finding.line, self.finding.col

    def declined(self, reason: str) -> Finding:
        """The finding, its fix declined for ``reason``."""
        message = self.head + _outcome(RULES_BY_CODE[self.finding.code], False, None, reason)
        return replace(
            self.finding, message=message, fixer=None, decline=reason, plan=None, caveat=None,
            frame_guards=(),
        )

    def cautioned(self, note: str) -> Finding:
        """The finding, fixed, with ``note`` added to what its fix says it may cost."""
        caveat = self.finding.caveat
        caveat = f"{caveat}; {note}" if caveat else note
        message = self.head + _outcome(RULES_BY_CODE[self.finding.code], True, caveat, None)
        return replace(self.finding, message=message, caveat=caveat)


def _outcome(rule: Rule, fixed: bool, caveat: Optional[str], decline: Optional[str]) -> str:
    """How a finding's message ends: the fix (with its caveat), the fixer's decline and the
    hint, or the hint alone."""
    if rule.fixer and fixed:
        return f"; fix: graphmend.{rule.fixer}" + (f" ({caveat})" if caveat else "")
    if rule.fixer and decline:
        return f"; graphmend.{rule.fixer} declines: {decline}; hint: {rule.hint}"
    return f"; hint: {rule.hint}"


@dataclass
class FunctionContext:
    """A compiled function under inspection."""

    region: Region
    symbols: ModuleSymbols
    facts: FunctionFacts
    values: ValueAnalysis
    #: The source lines (ast columns count UTF-8 bytes; findings count characters).
    lines: Sequence[str]
    #: Where Dynamo stops tracing this function, once a finding shows it (``_note_frame_end``).
    frame_end: Optional["FrameEnd"] = None
    #: The findings made so far, in the order they were made.
    sites: List[Site] = field(default_factory=list)

    @property
    def function_name(self) -> str:
        return self.region.function.name

    @cached_property
    def local_names(self) -> Set[str]:
        """Names that are not module globals here: this function's and its enclosing functions'."""
        function = self.region.function
        names = scope_names(function)
        top_level = function in self.symbols.functions.values() or any(
            function in info.methods.values() for info in self.symbols.classes.values()
        )
        if not top_level:  # a nested def: the names of the functions around it are not global
            for outer in enclosing_functions(self.symbols.tree, function):
                names |= scope_names(outer)
        return names

    @cached_property
    def mutations(self) -> Dict[str, List[int]]:
        return in_place_mutations(self.facts, self.values, self.symbols)

    def may_be_tensor_method(self, func: ast.expr, names: AbstractSet[str]) -> bool:
        """Whether ``func`` may be ``x.<name>`` of a tensor ``x``, for one of ``names``: not a
        torch function (``torch.unique``), not a method of a static value, and not what the
        class of ``self`` defines under that name (``self.repeat = nn.Sequential(...)``, a
        ``def expand``)."""
        if not (isinstance(func, ast.Attribute) and func.attr in names):
            return False
        if (self.symbols.qualified_name(func) or "").startswith("torch."):
            return False
        if self.values.kind(func.value) is Kind.STATIC:
            return False
        return not (is_self(func.value) and self._defines(func.attr))

    def _defines(self, attribute: str) -> bool:
        """Whether the class of the function has a method or sets ``self.<attribute>``."""
        owner = self.region.owner
        if owner is None:
            return False
        if attribute in owner.methods:
            return True
        return any(
            self_attribute(target) == attribute
            for node in walk(owner.node)
            if isinstance(node, (ast.Assign, ast.AnnAssign))
            for target in assignment_targets(node)
        )

    def static_condition(self, node: Union[ast.stmt, ast.expr]) -> Optional[str]:
        """What the site's break needs to be true, as far as it is known while tracing: the tests
        of the ``if`` statements whose body holds the site (``if dtype == torch.float16:``), and,
        for an ``if``, ``while`` or conditional expression, the static conjuncts that start its
        own test (``self.training and x.any()``); None without any. A test on tensors counts with
        its static start only; conjuncts that Dynamo folds to True (``is_compiling()``) go
        unsaid."""
        conditions = self.static_conjuncts(node)
        if not conditions:
            return None
        shown = conditions[0] if len(conditions) == 1 else ast.BoolOp(ast.And(), conditions)
        return f"`{ast.unparse(shown)}`"

    def static_conjuncts(self, node: Union[ast.stmt, ast.expr]) -> List[ast.expr]:
        """The conjuncts of ``static_condition``, outermost test first."""
        tests = self._enclosing_tests(node, self.region.function.body)
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            tests.append(node.test)
        conditions: List[ast.expr] = []
        for test in tests:
            static, rest = split_condition(test, self)
            if not self.values.is_data_dependent(test):
                static += rest
            else:
                static += [c for part in rest for c in self._assigned_static_start(part, test)]
            conditions += [c for c in static if self.values.dynamo_truth(c) is not True]
        return conditions

    def _assigned_static_start(self, operand: ast.expr, test: ast.expr) -> List[ast.expr]:
        """For ``name`` or ``not name`` (first of an ``or``: always tested) whose only value here
        is ``static and ... and tensor`` (``skip = self.training and draw < p``), the static
        start: ``name`` holds a tensor only when those are true (``and`` stops at the first
        false one, a Python value)."""
        while True:
            if isinstance(operand, ast.UnaryOp) and isinstance(operand.op, ast.Not):
                operand = operand.operand
            elif isinstance(operand, ast.BoolOp) and isinstance(operand.op, ast.Or):
                operand = operand.values[0]
            else:
                break
        if not isinstance(operand, ast.Name):
            return []
        bindings, from_caller = reaching_bindings(operand.id, test, self)
        if from_caller or len(bindings) != 1:
            return []
        binding = bindings[0]
        if not (
            isinstance(binding, ast.Assign)
            and len(binding.targets) == 1
            and isinstance(binding.targets[0], ast.Name)
            and isinstance(binding.value, ast.BoolOp)
        ):
            return []
        return split_condition(binding.value, self)[0]

    def _enclosing_tests(self, node: ast.AST, block: Sequence[ast.stmt]) -> List[ast.expr]:
        """The tests of the ``if`` statements of ``block`` whose body holds ``node``, outermost
        first (not those of an ``else`` that holds it: an ``elif`` chain is no plain
        condition)."""
        path = _statement_path(block, (node.lineno, node.col_offset))  # type: ignore[attr-defined]
        definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        if any(isinstance(statement, definitions) and statement is not node for statement in path):
            return []
        return [
            statement.test
            for statement, inner in zip(path, path[1:])
            if isinstance(statement, ast.If) and any(inner is s for s in statement.body)
        ]

    def _placement_problem(self, node: AnyNode) -> Optional[str]:
        """Why no fix may go where ``node`` is, whatever the fix: a module meant for
        ``torch.jit.script``, the body of a ``while`` on tensor data, a method of a
        ``torch.autograd.Function``."""
        marker = self.symbols.scripting_marker(self.lines)
        if marker:
            return (
                f"the module uses `{marker}`, so it is meant for torch.jit.script too, "
                "which cannot compile the emitted helpers"
            )
        loop = self._tensor_loop(node)
        if loop is not None:
            return (
                f"the `while` of line {loop.lineno} tests a tensor, which breaks the graph "
                "on every iteration: fixed, its body would only be compiled as one more "
                "graph"
            )
        handled = try_problem(node, self)
        if handled:
            return handled
        owner = self.region.owner
        if owner is not None and any(
            (self.symbols.qualified_name(base) or "").startswith("torch.autograd.")
            and ast.unparse(base).endswith("Function")
            for base in owner.node.bases
        ):
            return (
                f"`{owner.node.name}` is a torch.autograd.Function: Dynamo runs it eagerly "
                "after the break, so its output keeps the Function's own backward node; "
                "fixed, Dynamo would trace it, and the output's grad_fn would be another"
            )
        return None

    def _tensor_loop(self, node: AnyNode) -> Optional[ast.While]:
        """The ``while`` on tensor data whose body holds ``node``, if any: Dynamo breaks at its
        test on every iteration, and runs a body without breaks as a graph of its own."""
        path = self.statement_path(node)
        for statement in path[:-1]:
            if (
                isinstance(statement, ast.While)
                and _spans_block(statement.body, (node.lineno, node.col_offset))
                and self.values.is_data_dependent(statement.test)
            ):
                return statement
        return None

    def statement_path(self, node: AnyNode) -> List[ast.stmt]:
        """The statements of the function, from its body down to the innermost that holds
        ``node``."""
        return _statement_path(self.region.function.body, (node.lineno, node.col_offset))

    def _note_frame_end(
        self,
        node: AnyNode,
        end: AnyNode,
        stops_tracing: Optional[str],
        loops: bool,
        site: Position,
    ) -> None:
        """Record that Dynamo traces no further than an unconditional break at ``node``, when
        it does not: a break in a loop (of the function, or that ``loops``) makes Dynamo skip
        the whole frame (GB7000), and one that ``stops_tracing`` the rest of the function."""
        function = self.region.function
        path = self.statement_path(node)
        if loops or _in_loop(path):
            reason = "a break in a loop"
            scope_end = function.end_lineno or node.lineno
        elif stops_tracing:
            reason = stops_tracing
            scope_end = _branch_end(path, (node.lineno, node.col_offset), function)
        else:
            return
        after = end.end_lineno or node.lineno
        self.frame_end = FrameEnd(after, scope_end, node.lineno, reason, site)

    def _in_generator(self, node: AnyNode) -> bool:
        """Whether ``node`` is inside a generator expression: what consumes it (``any()``,
        ``max()``, ``sum()``) runs it in a loop, where a break makes Dynamo skip the frame."""
        parents = parent_map(self.region.function)
        parent = parents.get(id(node))
        while parent is not None:
            if isinstance(parent, ast.GeneratorExp):
                return True
            parent = parents.get(id(parent))
        return False

    def runs_in(self, node: AnyNode) -> Tuple[bool, bool]:
        """Whether ``node`` is in the body of a loop of the function, and whether it is in a
        branch of an ``if`` on a tensor (it runs only when the data say so)."""
        path = self.statement_path(node)
        in_tensor_branch = any(
            isinstance(statement, ast.If) and self.values.is_data_dependent(statement.test)
            for statement in path[:-1]
        )
        return _in_loop(path), in_tensor_branch

    def _char_col(self, line: int, byte_col: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))

    def finding(
        self,
        code: str,
        node: Union[ast.stmt, ast.expr],
        call: str = "",
        decline: Optional[str] = None,
        plan: Optional[Plan] = None,
        end_node: Optional[Union[ast.stmt, ast.expr]] = None,
        condition: Optional[str] = None,
        stops_tracing: Optional[str] = None,
        loops: bool = False,
    ) -> Finding:
        """Build the finding for ``code`` at ``node``.

        For a rule with a fixer, pass ``plan`` when the site is fixable, else ``decline``.
        ``end_node`` ends the reported span (the test of an ``if``, not its whole body).
        ``condition`` says when the site breaks, if not always; at a conditional it is the
        static start of its test (``static_condition``). ``stops_tracing`` names a break
        that is not at a call, so that Dynamo cannot resume after it ("a tensor slice bound").
        ``loops``: the break is taken in a loop that Dynamo runs for the call (``any()`` over a
        generator), which makes it skip the frame as a break in a loop of the function does;
        so is every break inside a generator expression.
        """
        rule = RULES_BY_CODE[code]
        loops = loops or self._in_generator(node)
        guards: Tuple[FrameGuard, ...] = ()
        line, col = node.lineno, self._char_col(node.lineno, node.col_offset)
        if plan is not None and rule.fixer:
            placement = self._placement_problem(node)
            if not placement:
                placement, guards = traced_anew(node, self)
            placement = placement or (
                graph_input_update(self) if plan.ordered else None
            ) or joined_update(node, self)
            if placement:
                plan, decline, guards = None, placement, ()
        where = f"{self.function_name}()"
        if self.region.compiled:
            where = f"compiled {where}"
        if self.region.through:
            where += f" (called from {self.region.through})"
        text = rule.message.format(call=call, function=where)
        static = self.static_condition(node)
        own_condition = f"{static} and {condition}" if static and condition else condition or static
        frame_end = self.frame_end
        shadow = frame_end.shadows(node) if frame_end else None
        condition = own_condition
        if shadow:
            condition = f"{condition} and {shadow}" if condition else shadow
        elif condition is None:
            self._note_frame_end(node, end_node or node, stops_tracing, loops, (line, col))
        if condition:
            text += f" {only_when(condition)}"
        text += " [" + ", ".join(rule.gb_ids) + "]"
        head = text
        fixed = bool(rule.fixer) and plan is not None
        fixer = rule.fixer if fixed else None
        caveat = plan.caveat() if fixed and plan is not None else None
        if fixed and guards:
            kept = "; ".join(guard.note() for guard in guards)
            caveat = f"{caveat}; {kept}" if caveat else kept
        text += _outcome(rule, fixed, caveat, decline)
        end = end_node or node
        end_line = end.end_lineno or node.lineno
        made = Finding(
            code=code,
            line=line,
            col=col,
            end_line=end_line,
            end_col=self._char_col(end_line, end.end_col_offset or 0),
            message=text,
            fixer=fixer,
            decline=None if fixer else decline,
            plan=plan if fixer else None,
            condition=condition,
            caveat=caveat,
            frame_guards=guards if fixed else (),
        )
        in_loop, in_tensor_branch = self.runs_in(node)
        certain = own_condition is None and not in_tensor_branch
        shadowed_by = frame_end.site if shadow and frame_end else None
        self.sites.append(Site(made, head, in_loop or loops, certain, shadowed_by))
        return made
