"""One file in, diagnostics out.

The work is ordered from cheap to costly so that most files pay little: a text prefilter
drops rules whose trigger strings the file lacks (if none remain, CPython's cheaper parser
only checks the syntax); libcst parses once; one walk runs every remaining rule with a
shared context (`walk.py`: libcst's visiting order without its cost of rebuilding every
node); positions and noqa comments are resolved only when a finding needs them.
"""

from __future__ import annotations

import ast
import re
import sys
import warnings
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

import libcst as cst
from libcst.metadata import CodeRange

from xlalint import screen
from xlalint.analysis import project_modules
from xlalint.analysis.host_reads import copied_value
from xlalint.analysis.module_callers import hot_elsewhere
from xlalint.analysis.xla_api import LATEST, Release
from xlalint.context import FileContext
from xlalint.cst_parse import parse_module
from xlalint.diagnostics import (
    Applicability,
    Diagnostic,
    Edit,
    FileError,
    FileResult,
    Fix,
    Location,
)
from xlalint.lint_memo import lint_scope
from xlalint.positions import Focus, Positions, positions_of
from xlalint.registry import RuleSet
from xlalint.rule import NodeFix, PendingReport, Rule, analyses_used
from xlalint.suppression import directive_rows, parse_suppressions
from xlalint.walk import TRIVIA, WalkUnavailable, listed_owners, shared_children, walk

Handler = Callable[[cst.CSTNode], object]


def rules_for_text(text: str, rules: Iterable[type[Rule]]) -> list[type[Rule]]:
    """The rules whose trigger strings occur in `text` (rules without triggers always run),
    less those that need torch where the text never mentions it. A `RuleSet` answers from
    its index entries first, so the rules a file cannot trigger are never imported."""
    if isinstance(rules, RuleSet):
        rules = rules.for_text(text)
    uses_torch = "torch" in text
    return [
        rule
        for rule in rules
        if (not rule.triggers or any(t in text for t in rule.triggers))
        and (uses_torch or not rule.needs_torch)
    ]


class _Walker(cst.CSTVisitor):
    """Visits every node once, keeping the context current and dispatching to rules, as
    `walk.walk` does, on libcst's own walk (where libcst's sources cannot be read)."""

    def __init__(
        self,
        ctx: FileContext,
        visits: dict[type[cst.CSTNode], list[Handler]],
        leaves: dict[type[cst.CSTNode], list[Handler]],
    ) -> None:
        self._ctx = ctx
        self._visits = visits
        self._leaves = leaves

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._ctx.enter(node)
        for handler in self._visits.get(type(node), ()):
            handler(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        for handler in self._leaves.get(type(original_node), ()):
            handler(original_node)
        self._ctx.leave(original_node)

    # libcst looks up a `visit_<Node>_<attribute>` method for every attribute of every node
    # (about a tenth of the walk); no rule uses them, so skip the lookup.
    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        pass

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass


def _dispatch_tables(
    rules: Sequence[Rule],
) -> tuple[dict[type[cst.CSTNode], list[Handler]], dict[type[cst.CSTNode], list[Handler]]]:
    visits: dict[type[cst.CSTNode], list[Handler]] = defaultdict(list)
    leaves: dict[type[cst.CSTNode], list[Handler]] = defaultdict(list)
    for rule in rules:
        for attr in dir(type(rule)):
            prefix, _, node_name = attr.partition("_")
            if prefix not in ("visit", "leave") or not node_name:
                continue
            node_type = getattr(cst, node_name, None)
            if not (isinstance(node_type, type) and issubclass(node_type, cst.CSTNode)):
                continue
            table = visits if prefix == "visit" else leaves
            table[node_type].append(getattr(rule, attr))
    return visits, leaves


def lint_source(
    text: str,
    filename: str,
    rules: Sequence[type[Rule]],
    hot_functions: Sequence[str] = (),
    target: Release = LATEST,
    module: cst.Module | None = None,
    whole: dict[str, cst.Module] | None = None,
    analyses: Collection[str] | None = None,
) -> FileResult:
    """Lint one file's decoded text with the given rule classes, for the torch_xla
    release `target`. `module`: libcst's tree of the whole of `text`, where the caller
    parsed it already (the fixer's parse guard); the lint then reads that tree unscreened
    (the findings are the same with and without the screen, `tests/test_screen.py`)
    rather than parsing the text a second time. `whole`: where the lint parsed all of
    `text` (the screen blanked nothing), it lends that tree as `whole[text]`, for a
    fixer that goes on with the same text (`check`'s closing forecast). `analyses`: the
    walk-time analyses to feed (`Rule.uses`), where not those of the rules that run (the
    forecast's lint by the rules that offer fixes feeds those of all the rules)."""
    # The analyses' hand-written walks list each node's children once; their memos by
    # node go when the lint ends (`lint_memo`), with the trees they held.
    with shared_children(), lint_scope():
        return _lint_source(text, filename, rules, hot_functions, target, module, whole, analyses)


ANALYSIS_RECURSED = (
    "not checked: xlalint's analysis recursed without end on it (an xlalint bug; please report it)"
)


def _lint_source(
    text: str,
    filename: str,
    rules: Sequence[type[Rule]],
    hot_functions: Sequence[str],
    target: Release,
    parsed: cst.Module | None = None,
    whole: dict[str, cst.Module] | None = None,
    analyses: Collection[str] | None = None,
) -> FileResult:
    active = rules_for_text(text, rules)
    verdict, tree = cpython_parse(text, filename)
    if verdict is TOO_DEEP:
        reason = "too deeply nested to analyse safely (Python's own parser refuses it too)"
        return FileResult(filename, error=FileError(filename, reason))
    if not active and verdict is None:
        # No rule can flag this file and CPython vouches for its syntax: skip libcst.
        return FileResult(filename)
    if active and tree is not None:
        project_modules.lend(filename, text, tree)
    screened = None
    if active and tree is not None and parsed is None and screen.enabled():
        # Other modules' per-step callers (`module_callers.py`), where the file is on disk.
        elsewhere = partial(hot_elsewhere, filename)
        screened = screen.screen_text(tree, text, active, hot_functions, elsewhere)
        if screened is not None and screened.holds_nothing:
            # No finding could count, and CPython vouches for the syntax: skip libcst.
            return FileResult(filename)
        if whole is not None and screened is not None and _blanks_little(screened, text):
            # The closing forecast parses the whole text of a file with a fix: a screen
            # that blanks next to nothing saves less than that parse (the findings are the
            # same with and without the screen).
            screened = None
    source = text if screened is None else screened.text
    try:
        module = parse_module(source) if parsed is None else parsed
    except cst.ParserSyntaxError as error:
        if isinstance(verdict, SyntaxProblem):
            # CPython's words and position ("'(' was never closed" where it opened), not
            # libcst's parser state at the point it gave up.
            problem = verdict
        else:
            problem = SyntaxProblem(error.message, Location(error.raw_line, error.raw_column + 1))
        return FileResult(filename, error=problem.file_error(filename))
    except RecursionError:
        return FileResult(filename, error=FileError(filename, "too deeply nested to parse"))
    if whole is not None and screened is None:
        whole[text] = module
    if not active:
        return FileResult(filename)

    full_text = None if screened is None else (text, screened.blanked)
    try:
        try:
            ctx, instances = _analyse(
                module, filename, active, hot_functions, target, True, full_text, text, analyses
            )
        except WalkUnavailable:  # start over with fresh state on libcst's own walk
            ctx, instances = _analyse(
                module, filename, active, hot_functions, target, False, full_text, text, analyses
            )
    except RecursionError:
        # CPython vouched for the nesting above, so this is xlalint's own reasoning going
        # round (as a kind once followed `x = x.float()` back to itself): say so.
        return FileResult(filename, error=FileError(filename, ANALYSIS_RECURSED))
    try:
        return _results(ctx, instances, module, source, filename, screened, tree)
    finally:
        _release(ctx, instances)


def _release(ctx: FileContext, instances: Sequence[Rule]) -> None:
    """Let the lint's context, analyses and rules go as soon as it ends, by reference
    counts: they refer to one another (a rule to the context, the context to the analyses
    it feeds, the analyses back to it), and through the context to the whole tree and its
    tables, so that otherwise only the cyclic collector, run at the end of the lint
    (`lint_memo.lint_scope`), would free them, having gone over all of them (~70 ms of a
    one-file check of a 1,100-line pipeline)."""
    for holder in (ctx, *instances):
        vars(holder).clear()


def _results(
    ctx: FileContext,
    instances: Sequence[Rule],
    module: cst.Module,
    source: str,
    filename: str,
    screened: screen.Screened | None,
    tree: ast.Module | None,
) -> FileResult:
    """The findings of the rules that walked `module` (`source`, the screened text where
    the screen blanked bodies), hot-code filtered, with their positions."""
    pending = [
        report
        for rule in instances
        for report in rule.reports
        if not rule.hot_only
        or report.every_call
        or ctx.hot.is_hot(report.site, per_call=rule.per_call or report.per_call)
    ]
    if not pending:
        return FileResult(filename)
    positions = positions_of(module, source, _focus(ctx, pending, source, tree))
    if screened is not None:
        # Functions kept only as context may report what the whole file would not.
        pending = [r for r in pending if screened.counts(positions[r.node].start.line)]
        if not pending:
            return FileResult(filename)
    # Where the file does not import torch_xla, a ladder's fix makes it optional behind a
    # guard: the moves wait for it (see `group_device_fixes`).
    optional_after_fix = not ctx.imports.binds("torch_xla")
    return FileResult(
        filename,
        _to_diagnostics(module, source, filename, pending, optional_after_fix, positions),
    )


# The share of a text's rows below which a check that forecasts fixes lints it whole.
LITTLE_BLANKED = 0.02


def _blanks_little(screened: screen.Screened, text: str) -> bool:
    """Whether the screen blanked fewer than `LITTLE_BLANKED` of the text's rows."""
    blanked = sum(last - first + 1 for first, last in screened.blanked)
    return blanked < LITTLE_BLANKED * (text.count("\n") + 1)


def _focus(
    ctx: FileContext, pending: Iterable[PendingReport], source: str, tree: ast.Module | None
) -> Focus | None:
    """What positions must give: the nodes the findings and their fixes name, and the
    rows that may hold their noqa comments (CPython's tree of `source`'s rows lines libcst's
    statements up with the text; None without it)."""
    if tree is None or any(id(report.node) not in ctx.parent_of for report in pending):
        # (Noqa needs the strings around the node where a finding starts: its statement.)
        return None
    nodes: list[cst.CSTNode] = []
    for report in pending:
        nodes += (report.node, report.end_node)
        if report.fix is not None:
            nodes += (old for old, _ in report.fix.replacements)
    parent_of: Mapping[int, cst.CSTNode | None] = ctx.parent_of
    unknown = [node for node in nodes if id(node) not in parent_of]
    if unknown:
        # A fix may replace what the walk passed over (the whitespace ending a statement,
        # to write a line after it): its owner places it, or the whole codegen would run.
        parent_of = {**parent_of, **listed_owners(unknown)}
    return Focus.of(nodes, parent_of, directive_rows(source), tree)


def _analyse(
    module: cst.Module,
    filename: str,
    rules: Sequence[type[Rule]],
    hot_functions: Sequence[str],
    target: Release,
    fast: bool,
    full_text: tuple[str, Sequence[tuple[int, int]]] | None = None,
    source: str | None = None,
    analyses: Collection[str] | None = None,
) -> tuple[FileContext, list[Rule]]:
    """Walk `module` once, running every rule with a shared context. `full_text`: the
    file's text and the rows of the bodies the screen blanked, where `module` is the
    screened text's. `source`: the file's text, whose imports name the project modules
    it may consult (`project_modules.py`)."""
    text, blanked = full_text if full_text is not None else (None, ())
    ctx = FileContext(
        module,
        filename,
        hot_functions,
        target,
        full_text=text,
        text=source,
        blanked=blanked,
        uses=analyses_used(rules) if analyses is None else analyses,
    )
    instances = [rule(ctx) for rule in rules]
    visits, leaves = _dispatch_tables(instances)
    if fast:
        # Trivia matter to no rule here unless one visits them (then the walk is complete).
        skip = frozenset() if any(t in TRIVIA for t in (*visits, *leaves)) else TRIVIA
        walk(module, ctx.enter, ctx.leave, skip, visits, leaves)
    else:
        module.visit(_Walker(ctx, visits, leaves))
    return ctx, instances


TOO_DEEP = "too deep"
# CPython's default recursion limit: at it, CPython rejects expressions nested deeper than
# libcst's native parser can survive (it overflows the C stack, killing the process, from
# about 1,500 nested brackets or a chain of ~10,000 `+`). Checking at a raised limit would
# let such files through to libcst.
_CPYTHON_CHECK_LIMIT = 1000
_TOO_DEEP_MESSAGES = ("too many nested parentheses", "too many levels of indentation")


@dataclass(frozen=True)
class SyntaxProblem:
    """Why a text does not parse, and where (None when the parser does not say)."""

    message: str
    location: Location | None = None

    def file_error(self, filename: str) -> FileError:
        where = f" at {self.location.row}:{self.location.column}" if self.location else ""
        return FileError(filename, f"syntax error{where}: {self.message}", self.location)


def cpython_verdict(text: str, filename: str) -> str | SyntaxProblem | None:
    """None if CPython parses `text`; TOO_DEEP if it is nested beyond what is safe to hand
    to libcst; otherwise CPython's syntax error (libcst's grammar may be newer than this
    interpreter's, so libcst has the last word on whether the file parses)."""
    return cpython_parse(text, filename)[0]


def cpython_parse(text: str, filename: str) -> tuple[str | SyntaxProblem | None, ast.Module | None]:
    """`cpython_verdict`, and CPython's tree where it parses (for the screen)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(min(limit, _CPYTHON_CHECK_LIMIT))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. SyntaxWarning for invalid escapes
            tree = compile(text, filename, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (RecursionError, MemoryError):
        return TOO_DEEP, None
    except SyntaxError as error:
        message = str(error.msg)
        if message.startswith(_TOO_DEEP_MESSAGES):
            return TOO_DEEP, None
        # `offset` counts characters from 1 (0 or None when CPython does not know).
        where = Location(error.lineno, max(error.offset or 1, 1)) if error.lineno else None
        return SyntaxProblem(message, where), None
    except ValueError as error:
        return SyntaxProblem(str(error)), None
    finally:
        sys.setrecursionlimit(limit)
    return None, tree


def _to_diagnostics(
    module: cst.Module,
    text: str,
    filename: str,
    pending: Iterable[PendingReport],
    optional_after_fix: bool = False,
    positions: Positions | None = None,
) -> list[Diagnostic]:
    positions = positions or Positions(module, text)
    suppressions = parse_suppressions(text, positions)
    pending = group_device_fixes(list(pending), positions, optional_after_fix)
    spanned = [
        (report, _start(positions[report.node]), _end(positions[report.end_node]))
        for report in pending
    ]
    superseded = _superseded(spanned)
    enclosing = _enclosing(spanned, positions)
    copied = {
        (code, id(report.node)) for report in pending for code in report.rule.supersedes_copies
    }
    seen: set[tuple[str, Location, Location]] = set()
    diagnostics = []
    for report, start, end in spanned:
        code = report.rule.code
        if (
            (code, start, end) in seen
            or (code, start, end) in superseded
            or _inside(code, start, end, enclosing)
            or (copied and (code, id(copied_value(report.end_node))) in copied)
            or suppressions.suppresses(code, start.row)
        ):
            continue
        if report.repeat_of is not None and not suppressions.suppresses(
            code, _start(positions[report.repeat_of]).row
        ):
            continue  # the read it repeats is reported: one cause
        seen.add((code, start, end))
        diagnostics.append(
            Diagnostic(
                code=code,
                name=report.rule.name,
                message=report.message,
                filename=filename,
                start=start,
                end=end,
                fix=_to_fix(module, positions, report.fix) if report.fix else None,
                hint=report.hint,
                noqa_row=suppressions.noqa_row(start.row),
            )
        )
    diagnostics.sort(key=Diagnostic.sort_key)
    return diagnostics


def _superseded(
    spanned: Iterable[tuple[PendingReport, Location, Location]],
) -> set[tuple[str, Location, Location]]:
    """(code, start, end) of findings that a more specific rule's finding on the same span
    replaces (`Rule.supersedes`): one finding per cause. Decided before `# noqa`, so a
    suppressed specific finding does not bring back the general one."""
    return {(code, start, end) for report, start, end in spanned for code in report.rule.supersedes}


def _enclosing(
    spanned: Iterable[tuple[PendingReport, Location, Location]],
    positions: Positions,
) -> list[tuple[frozenset[str], Location, Location]]:
    """The spans of findings whose rule replaces the findings of other codes inside them
    (`Rule.supersedes_inside`), with those codes; and, for the codes a move's finding
    replaces in the value it moves (`Rule.supersedes_moved`), the whole expression it ends
    at (`end_node`): XLA301's `.cuda(...)`, reported from the attribute on, encloses the
    receiver it moves (`torch.zeros(n).cuda()`)."""
    spans = [
        (frozenset(report.rule.supersedes_inside), start, end)
        for report, start, end in spanned
        if report.rule.supersedes_inside
    ]
    spans += [
        (frozenset(report.rule.supersedes_moved), _start(positions[report.end_node]), end)
        for report, _, end in spanned
        if report.rule.supersedes_moved
    ]
    return spans


def _inside(
    code: str,
    start: Location,
    end: Location,
    enclosing: list[tuple[frozenset[str], Location, Location]],
) -> bool:
    """Whether a finding of `code` lies within a span that replaces that code's findings."""
    first, last = (start.row, start.column), (end.row, end.column)
    return any(
        code in codes
        and (outer_start.row, outer_start.column) <= first
        and last <= (outer_end.row, outer_end.column)
        for codes, outer_start, outer_end in enclosing
    )


DEVICE_GROUP = "xla-device"


def group_device_fixes(
    pending: list[PendingReport], positions: Positions, optional_after_fix: bool = False
) -> list[PendingReport]:
    """Fixes that move values to the XLA device, judged for the file as a whole.

    Moving a loader's batches or a tensor to the XLA device is safe only where the model
    and every tensor they meet end up there too. A device choice that can keep the model
    elsewhere (XLA305's ladder: the CPU on an XLA host) makes each such fix unsafe on its
    own: with the ladder's fix they form one group that the fixer applies all or nothing;
    where a ladder has no fix, they stay unsafe, with the reason in their description.
    `optional_after_fix`: the ladder's fix will import torch_xla behind a guard (the file
    does not import it yet). The moves then wait, without a fix, for the round after it,
    where they are made in the guard's terms (`... if XLA_AVAILABLE else loader`) and the
    script keeps running without torch_xla."""
    choices = [r for r in pending if r.rule.decides_device]
    if not choices:
        return pending
    unfixed = [r for r in choices if r.fix is None]
    first = unfixed[0] if unfixed else choices[0]
    where = f"{first.rule.code} at line {positions[first.node].start.line}"
    if not unfixed and optional_after_fix:
        # Barriers wait too: written now, they would import torch_xla unconditionally
        # beside the ladder's guarded import; the round after writes them behind the guard.
        hint = (
            f"fixed once the device choice ({where}) has its XLA branch, "
            "which decides the model's device"
        )
        return [
            replace(r, fix=None, hint=hint)
            if r.fix is not None
            and not r.rule.decides_device
            and (r.fix.moves_to_xla or _needs_torch_xla(r.fix))
            else r
            for r in pending
        ]
    if not any(r.fix and r.fix.moves_to_xla for r in pending):
        return pending
    if unfixed:
        reason = (
            f"the device choice without XLA ({where}) has no fix and decides the model's device"
        )
        group = None
    else:
        reason = (
            f"goes together with the fix of the device choice ({where}), "
            "which decides the model's device"
        )
        group = DEVICE_GROUP
    grouped = []
    for report in pending:
        fix = report.fix
        if fix is not None and fix.moves_to_xla:
            fix = replace(
                fix,
                applicability=Applicability.UNSAFE,
                description=f"{fix.description} ({reason})",
                group=group,
            )
        elif fix is not None and report.rule.decides_device:
            fix = replace(fix, group=group)
        grouped.append(replace(report, fix=fix))
    return grouped


def _needs_torch_xla(fix: NodeFix) -> bool:
    """Whether the fix imports torch_xla (or one of its modules)."""
    return any(re.search(r"\btorch_xla\b", line) for line in fix.required_imports)


def _start(code_range: CodeRange) -> Location:
    return Location(code_range.start.line, code_range.start.column + 1)


def _end(code_range: CodeRange) -> Location:
    return Location(code_range.end.line, code_range.end.column + 1)


def _to_fix(module: cst.Module, positions: Positions, fix: NodeFix) -> Fix:
    edits = []
    for old, new in fix.replacements:
        code_range = positions[old]
        content = new if isinstance(new, str) else module.code_for_node(new)
        edits.append(Edit(_start(code_range), _end(code_range), content))
    return Fix(fix.applicability, fix.description, tuple(edits), fix.required_imports, fix.group)
