from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.arguments import bind, keyword_argument, parameter, signature_of
from xlalint.analysis.hotness import Site
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.statements import retries_until_success
from xlalint.rule import Rule
from xlalint.walk import (
    TRIVIA,
    children,
    descendants,
    self_attribute,
    top_level_definitions,
)

if TYPE_CHECKING:
    from xlalint.context import FileContext

PAD_SEQUENCE = "torch.nn.utils.rnn.pad_sequence"
# transformers collators that pad each batch to its longest example unless told otherwise.
_PADDING_COLLATORS = frozenset(
    {"DataCollatorWithPadding", "DataCollatorForSeq2Seq", "DataCollatorForTokenClassification"}
)
# Callees that tokenize or pad text, audio or images: `tokenizer(...)`, `self.tokenizer_2`,
# `processor(...)`, `tokenizer.batch_encode_plus(...)`, `feature_extractor(...)`.
_TOKENIZER_PART = re.compile(
    r"(tokeni[sz]er|processor|feature_extractor|^tok$|^encode_plus$|^batch_encode_plus$)",
    re.IGNORECASE,
)
_COLLATE_FUNCTION = re.compile(r"collate", re.IGNORECASE)
# A class named for collating or for making batches (`DataCollator`, fair-esm's
# `BatchConverter`, `Batcher`, `BatchBuilder`; not a `BatchNorm` or a `BatchSampler`): its
# `__call__` turns examples into a batch.
_COLLATOR_CLASS = re.compile(r"collat|batch_?(?:convert|er\b|ify|maker|builder)", re.IGNORECASE)
# What a collator class collates in: `__call__`, or transformers' `DataCollatorMixin` hooks.
_COLLATOR_METHODS = frozenset({"__call__", "torch_call", "numpy_call", "tf_call"})
# What an iterator of batches makes each batch in (pix2tex's dataset, iterated directly).
_NEXT_BATCH = "__next__"


# What `_read_names` does not look into: trivia, and f-strings (their values become text).
_TEXT_SKIP = TRIVIA | frozenset({cst.FormattedString})


@dataclass(frozen=True)
class _Candidate:
    node: cst.Call
    message: str
    site: Site
    collating: bool  # in a lambda passed as `collate_fn=`
    loops: tuple[cst.For | cst.While, ...]  # enclosing loops of the same function
    function: cst.FunctionDef | None
    may_check_truncation: bool  # a tokenizer call, which may sit next to a fixed-length one
    # A tokenizer's call that takes the padding setting (`padding=`, `max_length=`): where a
    # fixed length is given, so the one finding of its function goes there.
    settable: bool = False


class DynamicPadding(Rule):
    """
    ## What it does
    Flags padding to the longest example of each batch, where it runs per batch: in collate
    functions (named `*collate*`, passed as `collate_fn=`, directly or through a name the
    caller binds to it, `collate_fn = pad_to_longest_fn if pad_to_longest else
    curtail_to_shortest`, `__call__` or `torch_call` of a `*Collat*` class or of a class
    named for making batches (`BatchConverter`), or a lambda passed as `collate_fn=`), in
    the `__next__` of a class that is its own iterator of batches and the methods it calls
    on `self` (pix2tex's `Im2LatexDataset`: `return self.prepare_data(...)`, which pads with
    `pad_sequence`), as a collator's `__call__` does (`self._collate_simple(inputs,
    ...)`), in functions that run every step (`forward`, `*_step`, functions called from a
    loop), and in loops whose passes run a model or sync (training, sampling,
    evaluation); not in a loop over prompts or tokenizers. A "longest" tokenizer call in a
    function that also tokenizes with `padding="max_length"` is taken for a truncation check
    (diffusers' `untruncated_ids = tokenizer(prompt, padding="longest")`), whose result
    stays on the host, and is not flagged either. The forms: tokenizer, processor and
    feature-extractor calls with `padding=True`, `padding="longest"` or
    `PaddingStrategy.LONGEST`; `tokenizer.pad(...)`, which pads to the longest by default;
    `torch.nn.utils.rnn.pad_sequence(...)`; a `pad(tensors, padding_value=...)` helper
    without a fixed length, or any helper named for padding called so with one positional
    argument (`pad_sequences(seqs, padding_side=..., padding_value=...)`); a helper of the
    project named for padding (`pad_1d_tokens`, `pad_2d`, `pad_coords`, imported from
    another module) handed a list it gathers from the batch (`[item[0]["src_tokens"] for item in
    batch]`) and at most a pad value, with no length keyword (`pad_to_length=`), further positional
    argument or literal bucket size; and a call handed the tokenizer with `padding=True` or
    `"longest"` (`pad_with_compat(self.tokenizer, batch, padding=True)`: a helper that pads with
    it). Not a batch-size probe, a `while` loop that stops after its first pass that does not
    fail (`while flag is False: try: ...; flag = True`, or `break`): it pads once per run.
    The transformers collators that pad this way by default (`DataCollatorWithPadding`,
    `DataCollatorForSeq2Seq`, `DataCollatorForTokenClassification`) are flagged where they
    are built. Calls with a literal `pad_to_multiple_of=` (a few buckets of lengths) are
    not; a variable there (`pad_to_multiple_of=self.pad_to_multiple_of`, None by default) is
    no bucketing. `padding=self.padding` pads as the class's default says (a dataclass field
    `padding: bool | str = True`, a class attribute, or an `__init__` parameter
    `padding="longest"` stored as it is): a collator built with its defaults pads each batch
    to its longest example; a setting without a default here (`self.padding =
    config.padding`) is the builder's choice and is not flagged. A collate function that
    pads to its batch's longest example by hand (`max_len = max(len(x) for x in batch)`,
    `len(max(seqs, key=len))`, `lengths.amax()`, `int(torch.max(lens))`, the longest tensor
    itself, `longest = max(tensors, key=lambda t: t.shape[0])`, or a running maximum over
    the batch, `if len(x) > max_len: max_len = len(x)`, then `torch.full((n, max_len),
    pad)`, `max_len - len(x)`, `longest.new_ones(len(tensors), *longest.shape)` or a padding
    helper handed `max_len=max_len`; or the longest handed straight to what pads,
    `cuts.pad(num_frames=max(lens).item())`) is flagged where it pads: the first call or
    arithmetic that sizes with the longest length, the statement a fixed length would change
    (round 16's labels put it there, not at the `max`); not where the longest length is only
    checked (`assert longest <= max_length`), kept (the running maximum's own `max(longest,
    len(item))`), formatted into text (an f-string) or handed to a function of the module
    that does only that with it (`self._update_max_lengths_and_log(max_input_ids_length=
    longest)`, `self._collate(inputs, batch_max_length=longest)` naming it in an error
    message), nor where it is computed only under a setting of the class off by default
    (`if self._pad_to_longest:` with `pad_to_longest=False` in `__init__`, a fixed
    `max_seq_len` otherwise: built with its defaults the collator pads to a fixed length),
    nor for `max(0, n - len(x))`, an amount of
    padding to a fixed length. The same padding by hand in a loop whose passes run a model
    is a collate written inline, and is flagged the same way (a forecaster's `for i in
    range(num_batches):` rounding `max(q.context_length for q in query_batch)` up to a patch
    length and padding every query to it before the model runs; the length an item of the
    batch carries, `q.context_length`, `cut.num_frames`, counts as its length). A function
    that pads several tensors this way is reported once: it is one cause. The finding goes
    where a fixed length would: a tokenizer call that takes the padding setting, else the
    padding by hand, else the first padding call (`pad_sequence` takes no length).

    ## Why is this bad?
    Each batch comes out as long as its longest example, so the sequence length changes
    from batch to batch. On XLA every new shape is a new graph: the training or inference
    step compiles again for each length it meets, and compiling takes far longer than the
    step itself.

    ## Example
    ```python
    def collate(examples):
        return tokenizer(
            [e["text"] for e in examples], padding=True, truncation=True, return_tensors="pt"
        )
    ```

    ## Use instead
    Pad to one fixed length (or to a few bucket lengths):
    ```python
    def collate(examples):
        return tokenizer(
            [e["text"] for e in examples],
            padding="max_length",
            max_length=128,
            truncation=True,
            return_tensors="pt",
        )
    ```
    For `pad_sequence`, pad its result on to a fixed length with `torch.nn.functional.pad`.

    ## Fix safety
    No fix: the fixed length (or the buckets) depends on the data and the model's limit,
    so this rule reports with a hint only.

    ## Runtime evidence
    Not measured by the harness yet. The harness will run 5 training steps on batches padded
    to their longest example (different lengths) against the same batches padded to one
    fixed length, and compare uncached compiles: one per distinct length against one in all,
    as for the ragged last batch measured in XLA_FACTS.md (batches of 16, 16, 16, 16 and 8:
    2 uncached compiles; padded to 16: 1).
    """

    code = "XLA206"
    uses = ("loops",)
    name = "dynamic-padding"
    message = (
        "{what} pads each batch to its longest example: every new length is a new shape, "
        "and the step compiles again"
    )
    hint = 'Pad to a fixed length (padding="max_length", max_length=N) or to a few buckets'
    triggers = ("pad", "DataCollator", "collat")
    screen = ("max", "amax", "~pad", "~Pad", "~collat", "~Collat")

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._candidates: list[_Candidate] = []
        self._collate_fns: set[str] = set()
        self._functions: list[cst.FunctionDef | None] = [None]
        # Functions that also tokenize with `padding="max_length"`: their model input has a
        # fixed length, and a "longest" call next to it checks for truncation (diffusers'
        # `untruncated_ids = tokenizer(prompt, padding="longest").input_ids`).
        self._fixed_length: set[cst.FunctionDef | None] = set()
        # `max_len = max(len(x) for x in batch)` used to pad, judged at the end (whether
        # the function collates is known once the file is read): the node that pads with
        # it (where the finding goes), the site of the `max`, its function.
        self._longest: list[tuple[cst.CSTNode, Site, cst.FunctionDef]] = []
        # (class, method): an iterator's `__next__` and the methods it calls on `self`,
        # which make one batch a call (pix2tex's `Im2LatexDataset.prepare_data`).
        self._batch_makers: set[tuple[str, str]] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append(node)
        class_name = self.ctx.class_name
        if class_name is not None and (
            node.name.value == _NEXT_BATCH
            or (node.name.value in _COLLATOR_METHODS and _COLLATOR_CLASS.search(class_name))
        ):
            # `def __next__(self): ... return self.prepare_data(self.pairs[self.i - 1])`:
            # an iterator of batches makes one a call, in itself and its own helpers; so
            # does a collator's `__call__` (`self._collate_simple(inputs, ...)`).
            self._batch_makers.add((class_name, node.name.value))
            for call in descendants(node.body):
                if (
                    type(call) is cst.Call
                    and type(call.func) is cst.Attribute
                    and type(call.func.value) is cst.Name
                    and call.func.value.value == "self"
                ):
                    self._batch_makers.add((class_name, call.func.attr.value))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.pop()

    def visit_If(self, node: cst.If) -> None:
        """`if len(sample["ctx"]) > max_ctx_len: max_ctx_len = len(sample["ctx"])` in a
        loop over the batch: the longest length kept by hand, as `max(...)` gives it."""
        function = self._functions[-1]
        if function is None or node.orelse is not None or not self.ctx.in_loop:
            return
        test = node.test
        if not (
            isinstance(test, cst.Comparison)
            and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.GreaterThan | cst.GreaterThanEqual)
            and isinstance(test.comparisons[0].comparator, cst.Name)
            and any(map(_measures_a_length, (test.left, *descendants(test.left))))
        ):
            return
        name = test.comparisons[0].comparator.value
        body = node.body.body
        if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine):
            return
        assign = body[0].body[0] if len(body[0].body) == 1 else None
        if (
            isinstance(assign, cst.Assign)
            and isinstance(assign.value, cst.Call)
            and _measures_lengths(assign.value)
            and any(
                isinstance(t.target, cst.Name) and t.target.value == name for t in assign.targets
            )
        ):
            sizing = _sizes_something(function, assign, {name}, self.ctx.module)
            if sizing is not None:
                self._note_longest(sizing, function)

    def visit_Call(self, node: cst.Call) -> None:
        if _takes_the_longest(node, self.ctx.imports):
            self._longest_length(node)
            return
        collate_fn = keyword_argument(node, "collate_fn")
        if collate_fn is not None and isinstance(collate_fn.value, cst.Name):
            self._collate_fns.add(collate_fn.value.value)
            self._collate_fns |= _functions_bound(self._functions[-1], collate_fn.value.value)
        func = node.func
        if (
            type(func) is cst.Name
            and _PAD_HELPER.match(func.value)
            and _pads_sequences(node)
            and (func.value == "pad" or sum(a.keyword is None for a in node.args) == 1)
            and not _library_function(self.ctx.qualified(func))
        ):
            # A helper that pads a list of tensors to the longest, like `pad_sequence`
            # (trl's `pad(tensors, padding_value=..., pad_to_multiple_of=...)`, oumi's
            # `pad_sequences(sequences, padding_side=..., padding_value=...)`).
            self._candidate(node, f"`{func.value}(...)`")
            return
        if _pads_a_gathered_list(node, self.ctx.qualified(func)):
            # `pad_1d_tokens([item[0]["src_tokens"] for item in batch], self.padding_idx)`:
            # a project's padding helper handed the batch's tensors and no length.
            self._candidate(node, f"`{func.value}(...)`")  # type: ignore[attr-defined]
            return
        qualified = self.ctx.qualified(func)
        if qualified is not None:
            leaf = qualified.rsplit(".", 1)[-1]
            if qualified.startswith("transformers") and leaf in _PADDING_COLLATORS:
                if _pads_to_longest(node, default=True):
                    self.report(node, self.message.format(what=f"`{leaf}`"))
                return
            if qualified == PAD_SEQUENCE:
                self._candidate(node, "`pad_sequence`")
            if not qualified.startswith("transformers") and not _hands_a_tokenizer(node):
                return
        callee = get_full_name_for_node(func) or ""
        parts = callee.split(".")
        setting = self._class_setting(node)
        if isinstance(func, cst.Attribute) and func.attr.value == "pad":
            tokenizer = any(_TOKENIZER_PART.search(p) for p in parts[:-1])
            if tokenizer and _pads_to_longest(node, default=True, setting=setting):
                self._candidate(node, f"`{callee}(...)`", settable=True)
            return
        padding = keyword_argument(node, "padding")
        if padding is None:
            return
        # `pad_with_compat(self.tokenizer, batch, padding=True)`: a helper handed the
        # tokenizer pads with it as the call says.
        tokenizer = any(_TOKENIZER_PART.search(p) for p in parts) or _hands_a_tokenizer(node)
        if not _pads_to_longest(node, default=False, setting=setting):
            value = padding.value
            if isinstance(value, cst.SimpleString) and value.evaluated_value == "max_length":
                self._fixed_length.add(self._functions[-1])
            return
        longest = isinstance(padding.value, cst.SimpleString | cst.Attribute)
        if longest or tokenizer:
            self._candidate(
                node, f"`{callee}(..., padding=...)`", checks_truncation=True, settable=True
            )

    def _class_setting(self, call: cst.Call) -> cst.BaseExpression | None:
        """`padding=self.padding` in a method: the default the class gives `padding` (a
        dataclass field `padding: bool | str = True`, a class attribute, or an `__init__`
        parameter stored as it is), which is what a collator built with defaults pads by."""
        padding = keyword_argument(call, "padding")
        if padding is None:
            return None
        attribute = self_attribute(padding.value)
        if attribute is None:
            return None
        class_def = next((a for a in self.ctx.ancestors() if isinstance(a, cst.ClassDef)), None)
        return None if class_def is None else _class_default(class_def, attribute)

    def leave_Module(self, node: cst.Module) -> None:
        # One finding per function, where its fixed length would go: a tokenizer call that
        # takes the padding setting, else the hand-computed longest length, else the
        # padding call (`pad_sequence` takes no length).
        reported: set[int] = set()  # functions already reported
        self._report_candidates([c for c in self._candidates if c.settable], reported)
        for padding, site, function in self._longest:
            per_batch = self._in_collate_function(site) or self._in_batch_loop(site)
            if per_batch and id(function) not in reported:
                assert site.function is not None
                self.report(padding, self.message.format(what=f"`{site.function.name}`"), site=site)
                reported.add(id(function))
        self._report_candidates([c for c in self._candidates if not c.settable], reported)

    def _report_candidates(self, candidates: list[_Candidate], reported: set[int]) -> None:
        for candidate in candidates:
            site = candidate.site
            if candidate.may_check_truncation and candidate.function in self._fixed_length:
                continue
            if candidate.function is not None and id(candidate.function) in reported:
                continue  # one cause: the function pads each batch to its longest
            if (
                candidate.collating
                or self._in_collate_function(site)
                or self._in_step_function(site)
                or any(self._feeds_a_model(loop) for loop in candidate.loops)
            ):
                self.report(candidate.node, candidate.message, site=site)
                if candidate.function is not None and not candidate.collating:
                    reported.add(id(candidate.function))

    # -- helpers ------------------------------------------------------------------------------
    def _longest_length(self, node: cst.Call) -> None:
        """`max_len = max(lengths)`, `max(s.size(-1) for s in samples)`, `lengths.amax()`,
        also read as a number (`len(max(seqs, key=len))`, `max(lens).item()`): the
        longest example of the batch, where the result sizes or pads something later in
        the same function (not where it is only checked, `assert longest <= max_length`),
        or is handed straight to a padding call (`cuts.pad(num_frames=max(lens).item())`).
        The finding goes to what pads with it, the statement a fixed length would change."""
        function = self._functions[-1]
        if function is None:
            return
        value: cst.CSTNode = node
        for ancestor in self.ctx.ancestors():
            if _converts(ancestor, value):
                value = ancestor
                continue
            if isinstance(ancestor, cst.Assign) and ancestor.value is value:
                if not _measures_lengths(node):
                    return
                targets = {
                    t.target.value for t in ancestor.targets if isinstance(t.target, cst.Name)
                }
                sizing = (
                    _sizes_something(function, ancestor, targets, self.ctx.module)
                    if targets
                    else None
                )
                if sizing is not None:
                    self._note_longest(sizing, function)
                return
            if isinstance(ancestor, cst.Arg) and ancestor.value is value:
                continue  # the call it is handed to comes next
            # `cuts.pad(duration=max(c.duration for c in cuts))`: the longest of a
            # collection, handed to what pads (one argument: `max(0, n - len(x))` is an
            # amount of padding, not the longest example).
            if (
                isinstance(ancestor, cst.Call)
                and any(a.value is value for a in ancestor.args)
                and all(a.keyword is not None for a in node.args[1:])
                and _PAD_CALLEE.search(get_full_name_for_node(ancestor.func) or "")
            ):
                self._note_longest(ancestor, function)
            return

    def _note_longest(self, sizing: cst.CSTNode, function: cst.FunctionDef) -> None:
        """The longest length, computed here, pads at `sizing`: judged at the end of the
        file, unless it is computed only under a setting of the class that is off by
        default (`if self._pad_to_longest:` with `pad_to_longest: bool = False` in
        `__init__`): a collator built with its defaults pads to its fixed length, and
        padding to the longest is the builder's choice, as `padding=self.padding` with no
        default here is."""
        if self._under_setting_off_by_default():
            return
        self._longest.append((sizing, self.ctx.site(), function))

    def _under_setting_off_by_default(self) -> bool:
        child: cst.CSTNode | None = None
        class_def = next((a for a in self.ctx.ancestors() if isinstance(a, cst.ClassDef)), None)
        if class_def is None:
            return False
        for ancestor in self.ctx.ancestors():
            if isinstance(ancestor, cst.FunctionDef | cst.ClassDef):
                return False
            if type(ancestor) is cst.If and child is ancestor.body:
                attribute = self_attribute(ancestor.test)
                default = (
                    _class_default(class_def, attribute) or _stored_default(class_def, attribute)
                    if attribute
                    else None
                )
                if type(default) is cst.Name and default.value == "False":
                    return True
            child = ancestor
        return False

    def _candidate(
        self, node: cst.Call, what: str, checks_truncation: bool = False, settable: bool = False
    ) -> None:
        """A padding call: judged once the file's loops and call graph are known."""
        collating = False
        loops: list[cst.For | cst.While] = []
        child: cst.CSTNode | None = None
        for ancestor in self.ctx.ancestors():
            if isinstance(ancestor, cst.Arg) and isinstance(child, cst.Lambda):
                keyword = ancestor.keyword
                collating = collating or (keyword is not None and keyword.value == "collate_fn")
            elif (
                isinstance(ancestor, cst.For | cst.While)
                and child is ancestor.body
                and not retries_until_success(ancestor)
            ):
                # (A batch-size probe, `while flag is False: try: ...; flag = True`, pads
                # once per run of the loop, not per batch.)
                loops.append(ancestor)
            elif isinstance(ancestor, cst.FunctionDef | cst.ClassDef):
                break
            child = ancestor
        message = self.message.format(what=what)
        self._candidates.append(
            _Candidate(
                node,
                message,
                self.ctx.site(),
                collating,
                tuple(loops),
                self._functions[-1],
                checks_truncation,
                settable,
            )
        )

    def _in_step_function(self, site: Site) -> bool:
        """The function runs every step (`forward`, `*_step`, or called from a loop)."""
        return site.function is not None and self.ctx.hot.is_hot(
            replace(site, in_loop=False, scopes=())
        )

    def _feeds_a_model(self, loop: cst.For | cst.While) -> bool:
        """A loop whose passes run a model (train, sample, evaluate) or sync: what it pads
        per pass goes to the device. A loop over prompts or tokenizers does not count."""
        loops = self.ctx.loops
        site = loops.site(loop)
        return (
            loops.runs_model(loop)
            or loops.reaches_barrier(loop)
            or (site is not None and loops.syncs_per_pass(site))
        )

    def _in_batch_loop(self, site: Site) -> bool:
        """The site is in a loop whose passes run a model (or sync): each pass pads one
        batch, as a collate function would (timesfm's `for i in range(num_batches):` that
        pads every query to its batch's longest context, then decodes it)."""
        return any(
            isinstance(scope, cst.For | cst.While) and self._feeds_a_model(scope)
            for scope in site.scopes
        )

    def _in_collate_function(self, site: Site) -> bool:
        function = site.function
        if function is None:
            return False
        if (function.class_name, function.name) in self._batch_makers:
            return True
        if function.name in _COLLATOR_METHODS and function.class_name is not None:
            return _COLLATOR_CLASS.search(function.class_name) is not None
        return (
            _COLLATE_FUNCTION.search(function.name) is not None
            or function.name in self._collate_fns
        )


def _hands_a_tokenizer(call: cst.Call) -> bool:
    """The call is handed a tokenizer or processor (`pad_with_compat(self.tokenizer,
    batch, padding=True)`, `encode(tok, texts, padding="longest")`): a helper that pads
    with it, as the `padding=` it is handed says."""
    for arg in call.args:
        spelled = get_full_name_for_node(arg.value) if not arg.star else None
        if spelled is not None and _TOKENIZER_PART.search(spelled.rsplit(".", 1)[-1]):
            return True
    return False


def _functions_bound(function: cst.FunctionDef | None, name: str) -> set[str]:
    """The functions a local name is bound to in `function`: `collate_fn =
    pad_to_longest_fn if pad_to_longest else curtail_to_shortest_collate`, then
    `DataLoader(ds, collate_fn=collate_fn)` collates with either."""
    found: set[str] = set()
    if function is None:
        return found
    for node in descendants(function.body):
        if type(node) is not cst.Assign or not any(
            isinstance(t.target, cst.Name) and t.target.value == name
            for t in node.targets  # type: ignore[attr-defined]
        ):
            continue
        values = [node.value]  # type: ignore[attr-defined]
        while values:
            value = values.pop()
            if isinstance(value, cst.IfExp):
                values += (value.body, value.orelse)
            elif isinstance(value, cst.Name):
                found.add(value.value)
    return found


_LENGTHS_NAME = re.compile(r"(^|_)(lengths|lens|sizes|seq_lens)$", re.IGNORECASE)
# What an item of a batch calls its own length: `q.context_length`, `cut.num_frames`.
_ITEM_LENGTH = re.compile(r"(^|_)(length|len|num_frames|num_tokens|num_samples)$", re.IGNORECASE)


def _measures_lengths(call: cst.Call) -> bool:
    """`max(len(x) ...)`, `max(x.size(0) ...)`, `max(x.shape[1] ...)`, `max(lengths)`,
    `max(seqs, key=len)`."""
    key = keyword_argument(call, "key")
    if key is not None and type(key.value) is cst.Name and key.value.value == "len":
        return True
    if _items_lengths(call):
        return True
    return any(_measures_a_length(sub) for sub in descendants(call))


def _items_lengths(call: cst.Call) -> bool:
    """`max(q.context_length for q in query_batch)`: the length each item of a batch
    carries (an attribute of the comprehension's item named for a length), the longest of
    them. Not an attribute of anything else (`max(self.min_length, n)`: a setting)."""
    if len(call.args) != 1 or not isinstance(call.args[0].value, cst.GeneratorExp | cst.ListComp):
        return False
    comprehension = call.args[0].value
    element = comprehension.elt
    target = comprehension.for_in.target
    return (
        isinstance(element, cst.Attribute)
        and isinstance(element.value, cst.Name)
        and isinstance(target, cst.Name)
        and element.value.value == target.value
        and _ITEM_LENGTH.search(element.attr.value) is not None
    )


def _measures_a_length(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Call):
        func = node.func
        return (isinstance(func, cst.Name) and func.value == "len") or (
            isinstance(func, cst.Attribute) and func.attr.value == "size"
        )
    if isinstance(node, cst.Attribute):
        return node.attr.value == "shape"
    return isinstance(node, cst.Name) and _LENGTHS_NAME.search(node.value) is not None


# Reductions that give the longest of a batch's lengths: `max(lengths)`, `lengths.amax()`,
# `torch.max(lengths)` (without a dimension: one number).
_TENSOR_MAXIMA = frozenset({"max", "amax"})
# What pads: `cuts.pad(...)`, `F.pad`, `pad_to(...)`, `self._pad_batch(...)`.
_PAD_CALLEE = re.compile(r"(^|[._])pad", re.IGNORECASE)


def _takes_the_longest(call: cst.Call, imports: ImportTable) -> bool:
    """`max(xs)`, `max(a, b)` (the builtin), `lengths.max()`/`lengths.amax()` with no
    dimension, `torch.max(lengths)`/`torch.amax(lengths)` with one argument."""
    func = call.func
    if type(func) is cst.Name:
        if func.value != "max":
            return False
    elif type(func) is not cst.Attribute or func.attr.value not in _TENSOR_MAXIMA:
        return False
    qualified = imports.resolve(func)
    if qualified in ("torch.max", "torch.amax"):
        return len(call.args) == 1 and call.args[0].keyword is None
    if qualified is not None:
        return False
    # The builtin takes what it compares; a tensor's `.max()` with no dimension, nothing.
    return bool(call.args) if type(func) is cst.Name else not call.args


def _converts(node: cst.CSTNode, value: cst.CSTNode) -> bool:
    """`node` reads `value` as a number: `len(value)` (of the longest sequence),
    `int(value)`, `value.item()`, or the `.item` of that call."""
    if type(node) is cst.Attribute:
        return node.value is value and node.attr.value in ("item", "tolist")
    if type(node) is cst.Call:
        if type(node.func) is cst.Attribute and node.func is value:
            return not node.args
        return (
            type(node.func) is cst.Name
            and node.func.value in ("len", "int")
            and len(node.args) == 1
            and node.args[0].value is value
        )
    return False


def _sizes_something(
    function: cst.FunctionDef,
    assign: cst.CSTNode | None,
    names: set[str],
    module: cst.Module | None = None,
    depth: int = 0,
) -> cst.CSTNode | None:
    """The first read of a name, after `assign` (from the start where None), in a call or
    arithmetic (`torch.full((n, max_len), ...)`, `max_len - len(x)`), outside `assert`s,
    `if` tests and the text of f-strings (`logger.error(f"longest: {max_len}")` sizes
    nothing): what sizes or pads with it. Not the assignment's own value: a running
    maximum, `longest = max(longest, len(item))`, reads the name to keep it. A call of a
    function or method of the module (`self._collate(inputs, batch_max_length=longest)`,
    `self._update_max_lengths_and_log(max_input_ids_length=longest)`) sizes with it only
    where that function sizes with the parameter it binds (two calls deep). None where
    nothing does."""
    seen = assign is None
    stack: list[cst.CSTNode] = [function.body]
    order: list[cst.CSTNode] = []
    while stack:
        node = stack.pop()
        if type(node) in (cst.Assert, cst.FunctionDef, cst.ClassDef, cst.FormattedString):
            continue
        if node is assign:
            order.append(node)
            continue  # its value: the running maximum's own `max(longest, ...)`
        order.append(node)
        if type(node) in (cst.If, cst.While):
            stack.extend(reversed([c for c in children(node) if c is not node.test]))
        else:
            stack.extend(reversed(children(node)))
    for node in order:
        if node is assign:
            seen = True
            continue
        if (
            seen
            and _sizes_with(node, names)
            and not _only_handed_to_own_function(node, names, function, module, depth)
        ):
            # The innermost such node: `self.pad(tokens, max_len=n)`, not the
            # `ctxs.append(torch.LongTensor(...))` around it.
            inner: cst.CSTNode | None = node
            while inner is not None:
                node = inner
                inner = next(
                    (n for n in descendants(node) if n is not node and _sizes_with(n, names)), None
                )
            return node
    return None


def _sizes_with(node: cst.CSTNode, names: set[str]) -> bool:
    """A call handed one of `names`, or arithmetic or a tuple of it (not only as text of
    an f-string)."""
    if type(node) not in (cst.Call, cst.BinaryOperation, cst.Tuple):
        return False
    parts = node.args if isinstance(node, cst.Call) else [node]
    return any(_read_names(part) & names for part in parts)


def _read_names(node: cst.CSTNode) -> set[str]:
    """The names under `node` outside f-strings, whose values become text."""
    return {
        n.value  # type: ignore[attr-defined]
        for n in descendants(node, skip=_TEXT_SKIP)
        if type(n) is cst.Name
    }


def _only_handed_to_own_function(
    node: cst.CSTNode,
    names: set[str],
    function: cst.FunctionDef,
    module: cst.Module | None,
    depth: int,
) -> bool:
    """`node` is a call of a function or method of the module that reads the names only
    through parameters it does not size with (logging, bookkeeping)."""
    if module is None or type(node) is not cst.Call or depth >= 2:
        return False
    callee = _own_callee(node, function, module)  # type: ignore[arg-type]
    if callee is None:
        return False
    callee_function, is_method = callee
    bound = bind(node, signature_of(callee_function, is_method))  # type: ignore[arg-type]
    if bound is None:
        return False
    params = {param for param, value in bound.items() if _read_names(value) & names}
    if not params:
        return False
    return _sizes_something(callee_function, None, params, module, depth + 1) is None


def _own_callee(
    call: cst.Call, function: cst.FunctionDef, module: cst.Module
) -> tuple[cst.FunctionDef, bool] | None:
    """The function of the module a call runs: `f(...)` of a top-level function, or
    `self.m(...)` of a method of the class that defines `function`."""
    func = call.func
    if type(func) is cst.Name:
        found = top_level_definitions(module).get(func.value)
        return None if found is None else (found, False)
    if not (
        type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self"
    ):
        return None
    for statement in module.body:
        if type(statement) is not cst.ClassDef or type(statement.body) is not cst.IndentedBlock:
            continue
        methods = {s.name.value: s for s in statement.body.body if type(s) is cst.FunctionDef}
        if any(m is function for m in methods.values()):
            found = methods.get(func.attr.value)
            return None if found is None else (found, True)
    return None


def _class_default(class_def: cst.ClassDef, attr: str) -> cst.BaseExpression | None:
    """The default a class gives `self.<attr>`: a class-level `attr: T = v` or `attr = v`
    (a dataclass field), or the default of an `__init__` parameter of that name that
    `__init__` stores as `self.<attr> = <attr>`. None where the class sets none of these."""
    body = class_def.body
    if not isinstance(body, cst.IndentedBlock):
        return None
    for statement in body.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if (
                    isinstance(small, cst.AnnAssign)
                    and isinstance(small.target, cst.Name)
                    and small.target.value == attr
                ):
                    return small.value
                if isinstance(small, cst.Assign) and any(
                    isinstance(t.target, cst.Name) and t.target.value == attr for t in small.targets
                ):
                    return small.value
        elif isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__":
            param = parameter(statement, attr)
            if param is not None and param.default is not None and _stores(statement, attr):
                return param.default
    return None


def _stored_default(class_def: cst.ClassDef, attr: str) -> cst.BaseExpression | None:
    """The default of the `__init__` parameter that `__init__` stores as it is under
    another name (`self._pad_to_longest = pad_to_longest`)."""
    body = class_def.body
    if not isinstance(body, cst.IndentedBlock):
        return None
    for statement in body.body:
        if not (isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__"):
            continue
        for node in descendants(statement.body):
            if (
                isinstance(node, cst.Assign)
                and isinstance(node.value, cst.Name)
                and any(self_attribute(t.target) == attr for t in node.targets)
            ):
                param = parameter(statement, node.value.value)
                if param is not None and param.default is not None:
                    return param.default
    return None


def _stores(function: cst.FunctionDef, attr: str) -> bool:
    """`self.<attr> = <attr>` in `function`."""
    return any(
        isinstance(node, cst.Assign)
        and isinstance(node.value, cst.Name)
        and node.value.value == attr
        and any(self_attribute(t.target) == attr for t in node.targets)
        for node in descendants(function.body)
    )


def _pads_sequences(call: cst.Call) -> bool:
    """`pad(tensors, padding_value=0)`: a sequence padder (a `padding_value=`), without a
    fixed length (`max_length=`/`length=`) or a literal bucket size."""
    keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    if "padding_value" not in keywords or keywords.keys() & {"max_length", "length", "size"}:
        return False
    bucket = keywords.get("pad_to_multiple_of")
    return not isinstance(bucket, cst.Integer)


# A helper named for padding (`pad_1d_tokens`, `pad_2d`, `pad_coords`, `_pad_batch`).
_PAD_HELPER = re.compile(r"^_*pad(_[a-z0-9_]+)?$")
_ARRAY_LIBRARIES = frozenset(
    {"torch", "numpy", "jax", "tensorflow", "paddle", "mlx", "cupy", "scipy", "keras"}
)
# Keywords that give a padding helper a length of its own.
_LENGTH_KEYWORDS = frozenset(
    {"max_length", "length", "size", "pad_to_length", "max_len", "target_length", "pad_len",
     "pad_length", "to_length"}
)  # fmt: skip


def _pads_a_gathered_list(call: cst.Call, qualified: str | None) -> bool:
    """A helper of the project named for padding (`pad_1d_tokens`, `pad_2d`; no
    library's function, which the imports name) handed a list it gathers from the batch
    (a list comprehension or display: `[item[0]["src_tokens"] for item in batch]`) and
    at most a pad value besides (`pad_idx=0.0`, `self.padding_idx`; not `max_seq_len`):
    nothing gives it a length, so it pads to the longest of the list, as `pad_sequence`
    does. A further positional argument may be a length, and a length keyword
    (`pad_to_length=`) or a literal `pad_to_multiple=` bucket size is one."""
    func = call.func
    if type(func) is not cst.Name or func.value == "pad" or not _PAD_HELPER.match(func.value):
        return False
    if _library_function(qualified):
        return False  # `from torch.nn.functional import pad`: a library's own function
    positional = [a for a in call.args if a.keyword is None]
    if not positional or len(positional) > 2 or any(a.star for a in call.args):
        return False
    if type(positional[0].value) not in (cst.ListComp, cst.List):
        return False
    if len(positional) == 2 and not _pad_value(positional[1].value):
        return False  # `pad_kv_caches(caches, max_seq_len)`: a length, not a pad value
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if keywords.keys() & _LENGTH_KEYWORDS:
        return False
    return not any(
        isinstance(value, cst.Integer) for key, value in keywords.items() if "multiple" in key
    )


def _library_function(qualified: str | None) -> bool:
    """A function of an array library (`torch.nn.functional.pad`), not a project's."""
    return qualified is not None and qualified.split(".", 1)[0] in _ARRAY_LIBRARIES


def _pad_value(value: cst.BaseExpression) -> bool:
    """A pad value by its spelling: a number (`0.0`, `-1`), or a name or attribute named
    for padding and not for a length (`self.padding_idx`, `pad_id`; not `max_pad_len`)."""
    if type(value) is cst.UnaryOperation:
        value = value.expression
    if type(value) in (cst.Integer, cst.Float):
        return True
    name = value.attr.value if type(value) is cst.Attribute else getattr(value, "value", None)
    if not isinstance(name, str):
        return False
    lowered = name.lower()
    return "pad" in lowered and not any(w in lowered for w in ("len", "size", "multiple"))


def _pads_to_longest(
    call: cst.Call, default: bool, setting: cst.BaseExpression | None = None
) -> bool:
    """`padding=True`/`"longest"`/`PaddingStrategy.LONGEST` (or no `padding=`, where that is
    the default), and no `pad_to_multiple_of=` bucketing. `setting`: the class's default for
    `padding=self.padding`."""
    bucket = keyword_argument(call, "pad_to_multiple_of")
    if bucket is not None and isinstance(bucket.value, cst.Integer):
        # Buckets of a literal size. A variable (`self.pad_to_multiple_of`) is most often
        # its default, None: the batch is padded to its longest example.
        return False
    padding = keyword_argument(call, "padding")
    if padding is None:
        return default and not any(a.star for a in call.args)
    value = padding.value if setting is None else setting
    if isinstance(value, cst.Name):
        return value.value == "True"
    if isinstance(value, cst.SimpleString):
        return value.evaluated_value == "longest"
    if isinstance(value, cst.Attribute):
        return value.attr.value == "LONGEST"
    return False
