from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING

import libcst as cst

from xlalint.analysis import tensor_methods
from xlalint.analysis.hotness import FunctionKey, Site
from xlalint.analysis.masks import Evidence, atom, dotted, takes_tensors
from xlalint.analysis.tensor_uses import TENSOR_METHODS
from xlalint.context import Kind
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix
from xlalint.rules._helper_calls import HelperCallRule
from xlalint.walk import node_types

if TYPE_CHECKING:
    from xlalint.context import FileContext

# Parents in which `a / b` needs no parentheses: it is the whole value there.
_LOOSE_PARENTS = (
    cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Arg, cst.Element, cst.Expr,
    cst.Index, cst.DictElement,
)  # fmt: skip
# Nodes between a store target and its statement (`a[m], b = ...`).
_TARGET_WRAPPERS = node_types(cst.Element, cst.StarredElement, cst.Tuple, cst.List)


# torch functions that build a tensor from sizes or data: what they are handed may be host data.
_FACTORIES = frozenset(
    {"zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange",
     "linspace", "logspace", "eye"}
)  # fmt: skip

# Methods that tensors have and numpy arrays, pandas objects and sequences lack.
_TENSOR_ONLY_METHODS = (
    TENSOR_METHODS
    | tensor_methods.ONLY_TENSOR_MATH
    | tensor_methods.ONLY_TENSOR_MATH_WITH_ARGUMENTS
)
# Arithmetic that works element for element (a masked write's value computed from reads
# under its mask: `_elementwise_statement`).
_ARITHMETIC = (
    cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power,
)  # fmt: skip
# Tensor methods and torch functions whose result is element for element the operand's.
_ELEMENTWISE = (
    tensor_methods.UNARY_MATH
    | tensor_methods.BOUNDS
    | tensor_methods.FLOAT_CASTS
    | tensor_methods.INTEGER_CASTS
    | tensor_methods.BINARY_MATH
    | tensor_methods.SAME_VALUES
)
# What a finding per statement counts by: a simple statement line or a compound one's header.
_STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


class BooleanMaskRead(HelperCallRule):
    """
    ## What it does
    Flags reads through a boolean mask, `x[mask]` (also `x[:, mask]`), and
    `torch.masked_select`/`.masked_select()`, on device tensors in code that runs every
    step (also in a function that another module of the project calls every step, such as
    a metric a model's `forward` computes). A mask is a comparison of tensors (`labels !=
    -100`), `isnan`/`isinf`/`isfinite`/`logical_*`, `&`/`|`/`~` of masks, `.bool()`, a
    `dtype=torch.bool` tensor (or Python's `dtype=bool`, also built on the host and moved:
    `torch.zeros(n, dtype=bool).to(device)`), a
    mask reshaped or padded (`F.pad(m, (1, -1), value=False)` shifts it and keeps its
    dtype), the rows of a mask unpacked into names (`left, up = ((xy % 1 < t) & (xy >
    1)).T`, `ok_x, ok_y = torch.isfinite(p).unbind(-1)`) or walked by a loop (`for pred,
    keep in zip(preds, conf > t)`, `for i, keep in enumerate(mask)`, `for keep in mask`),
    masks joined (`torch.stack((
    torch.ones_like(left), left, up))`, `torch.cat`; a join with an index tensor is none),
    a name bound to one of those in the same function, a dict's entry under a literal key
    bound to one (`params = {"keep": x > 0}` or `params["keep"] = x > 0`, then
    `y[params["keep"]]`; an attribute's entry every binding of which in the class is one:
    `self.params["selector"] = peaks > 0.0` in another method), or a name such as `mask`/
    `padding_mask` (or a batch of episode-end flags: `dones`, `terminated`) indexing a
    tensor, and a row of one at a Python position or a move of it, whatever name it is
    bound to (`sample_keep = keep_mask[i]`, `keep = sample_keep.to(device=x.device)`; not
    a gather by a value of unknown kind, `ids = order_mask[perm]`). A comparison with a
    string is Python's `False` (or `True`), no mask: a literal, or a tokenizer's special
    token (`labels == tokenizer.eos_token`, the string `"</s>"`; its id is
    `eos_token_id`).
    A value of unknown kind indexed by a comparison or test METHOD called on itself
    (`sign[sign.gt(0)]`, `x[x.isnan()]`, or `keep = x.ne(pad)` with `x` not rebound since)
    is a tensor: numbers, lists and numpy arrays have no `.gt`/`.isnan` (numpy spells them
    `np.greater`, `np.isnan`); not in a file that imports pandas, whose objects have them
    too. Integer indices (`argmax`, `topk`, `arange`), slices,
    and lists, dicts or numpy arrays indexed by anything are not flagged (a slice with a
    negative step, `image[:, :, ::-1][keep]`, is one: torch refuses it). Assignments
    through a mask are XLA203's, and so is a masked copy or rewrite under the same mask
    (`a[m] = b[m]`, `x[m] = torch.clamp(x[m], 0, 1)`), and a read under the written mask
    that the written value is computed from element for element: an operand of arithmetic,
    of an elementwise method or torch function (`y[m] = y[m] / (g[m] + eps)`, `s[m] = (t **
    2 - n[m].pow(2)).clamp(min=0).sqrt()`): one mask, one statement, one fix
    (`torch.where(m, f(y, g), y)` drops the write and every such read), so one cause,
    reported once, at the write; also where the written value is of unknown kind
    (`cur_labels[m] = output_label[m]`: the device values make it a device tensor, XLA203's
    finding), and where both are a helper's values that its callers judge
    (`final_advs[m] = adv_img[m]` with `m` compared from its parameters). So is a read
    handed alone to the call whose result is written back under the same mask (`output[m]
    = self.penalty(d[m])`), also cast or computed element for element first (`x[m] =
    categorical(u[m].to(dtype=dt))`): a masked gather, compute and scatter in one
    statement. A read under another mask, one handed to a call with other arguments
    (`self.penalty(d[m], scale)`), one a non-elementwise operation takes whole
    (`y[m].cumsum(0)`, `.scatter(...)`, `torch.sort`), and a read in the next statement are
    causes of their own. A name bound to a value computed like booleans that has indexed
    a device tensor (`sel = (info["radii"] > 0).all(dim=-1)`, then `grads[sel]`) is a
    device mask, and a value of unknown kind it indexes after, under the same binding, is
    a tensor (`info["radii"][sel]` in the next statement: another `nonzero`, its own cause;
    a list takes no tensor index). An attribute the class binds to booleans in another method
    (`self.pos_idx = weights >= 0` in `__init__`) is a mask where it indexes a tensor.
    So is a value (a name, an attribute, a dict's entry under a literal key) whose
    complement indexes in the same function (`logits[batch["kto_tags"]]` beside
    `logits[~batch["kto_tags"]]`, `torch.logical_not(labels)`, `labels.logical_not()`):
    only booleans split rows in two by a value and its complement. Not a Python number's
    `~i` (`a[i]` and `a[~i]`: a row and its mirror from the end), nor a name the function
    binds to anything else (`order = torch.arange(n)`), but a numpy array it builds from
    data (`eq_flags = np.array(flags)`, then `c[:, eq_flags]` and `c[:, ~eq_flags]`): a
    host boolean mask indexing a device tensor still costs a `nonzero` fallback per read.
    Reads of several tensors with the same mask in one statement (`return dists[good],
    idxs[good]`, `a.masked_select(m) == b.masked_select(m)`) are one finding, at the first:
    they select the same count, and one change keeps both shapes. So are reads under a mask
    and its complement in one statement (`near, far = d[close], d[~close]`, also
    `torch.logical_not(close)`, `close.logical_not()`): their counts add up to the whole,
    and one `torch.where(close, ...)` keeps both shapes.

    A parameter with a shape-typed annotation declares its dtype: `Bool[Tensor, "b n"]`
    (jaxtyping), or the string-only form projects define over it (`face_mask: Bool['b
    nf']`), is a boolean tensor whatever it is named, and `Float[...]`/`Int[...]` ones are
    tensors that are no masks (`index_mask: Int[Tensor, "k"]` gathers positions).

    A helper's parameter of unknown kind indexed with a mask computed from tensors
    (`tokens[eos_mask]` with `eos_mask = chosen.eq(eos)`) is a tensor where a call of the
    same module hands it one (the decoding loop passes its buffers) or where the helper
    uses it as one (`p.gather(...)`, `p.view(...)`); a parameter the callers give numpy
    arrays or lists is not flagged. So is a value the helper computes from such parameters
    by arithmetic alone (`error = pred - target`), and there a mask compared from the read
    value itself (`error[error == error]`, or a name bound to such a comparison while the
    read value held what it holds: `mask = probs >= thresh`, then `probs[mask]`) is
    computed from a tensor. The mask may be a parameter too (or a name bound to one:
    `dist_masked_tokens = masked_tokens`) where every call of the module hands it a mask
    computed from tensors (`self.cal_dist_loss(d, t, tgt_tokens.ne(pad))`); one call
    handing it positions (`topk` indices) leaves it unknown. A mask compared from a
    parameter, or from a row of one, read from another parameter's row (`valid =
    gt_classes[i] > -1`, then `gt_boxes[i][valid]`, per image of a batch) is computed on
    the device where a call of the module hands the compared parameter a tensor, or,
    where no call of the module runs the helper, where another module of the project
    calls it every step with its data (effdet's bench handing its targets to
    `batch_label_anchors`); reads of several rows with one mask in one statement are one
    finding.

    A value of unknown kind read through a mask and handed, as the first argument, to a
    torch operation that takes only tensors (`th.mean(entropy[mask])`, `th.mean(-log_prob[
    mask])`, with `entropy` unpacked from a policy method's result), or read through a mask
    and then given a method only tensors have (`mask[hard_mask].sigmoid()`,
    `log_ps[mask].logsumexp(dim=0)`, `.log()`, `.clamp(...)`), is a tensor,
    so any mask evidence counts, as for a known tensor. Reads handed to constructors
    (`torch.tensor`, `torch.from_numpy`), to factories as sizes, to numpy, or as a later
    argument are not flagged: those may be host data.

    A value that indexes a tensor made on the host (`self.bern_probs[relations]`, a table
    built by `tensor(...)` and never moved in this class: `analysis/tensors.py`) is on the
    host from that statement on, since PyTorch takes indices on the CPU or on the indexed
    tensor's device only: `relations[mask == 1]` after it, with a mask drawn from that
    table, selects host elements and is not flagged. A function nested in another reads
    the host tensors its enclosing function binds once, before the `def`: after `[mask] =
    atom_mask.cpu()` and `[indices] = token_index.cpu()`, `indices[mask]` in a nested
    `per_token(x)` selects host elements (a name bound again after the `def` may hold
    anything when the nested function runs).

    A branch that warns about a checked value and repairs it (`if torch.any(grad.isnan()):
    logger.warning(...)`, then `grad[grad.isnan()] = 0.0`) runs when the value has gone
    wrong, not every step: what it selects or writes there is not flagged.

    A library function that no code of its file runs is judged per call with new data,
    unless its docstring tells callers to run it once and keep the result ("Make sure to
    cache the result, and don't reinstantiate it on every forward pass", "preprocess it
    with this function", "compute it once"): a preprocessing step over the data set
    (torchcde's spline coefficients), as are the private helpers only such functions
    call, and the loops of those helpers. A per-step caller in the file still makes it
    per step.

    ## Why is this bad?
    `x[mask]` has as many elements as the mask has `True`s, which only the data knows. XLA
    compiles graphs for static shapes, so PyTorch/XLA executes the pending graph, copies the
    mask to the host, runs `nonzero` on the CPU and gathers with the result: the step's
    graph is cut in two, and everything downstream of a new count compiles again.

    ## Example
    ```python
    for batch in loader:
        logits = model(batch["input_ids"])
        labels = batch["labels"]
        per_token = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none")
        valid = labels.flatten() != -100
        loss = per_token[valid].mean()
    ```

    ## Use instead
    Keep the shape and zero out what the mask drops:
    ```python
        loss = torch.where(valid, per_token, 0).sum() / valid.sum()
    ```
    (`F.cross_entropy(..., ignore_index=-100)` does this masking itself.)

    ## Fix safety
    Safe, and only where the selection is reduced to one number and the mask has exactly
    the tensor's shape because it is computed from that tensor element for element
    (`x[x > 0]`, `x[torch.isfinite(x)]`, or `mask = x > 0` earlier in the same function with
    `x` not rebound since): `x[m].sum()` becomes `torch.where(m, x, 0).sum()`, and
    `x[m].mean()` becomes `torch.where(m, x, 0).sum() / m.sum()` (NaN for an empty mask, as
    before). `torch.masked_select(x, m).sum()` becomes `torch.where(m, x, 0).sum()` for any
    broadcastable shapes. The selected elements and the dtype of the result are the same;
    floating-point sums add the same numbers with zeros in between, so only the rounding of
    the summation order can differ (XLA does not fix a reduction order anyway), and `mean`
    of a float16/bfloat16 tensor rounds the sum before dividing. Masks of another shape (a
    `(B, T)` mask selecting rows of a `(B, T, D)` tensor) and other uses are reported
    without a fix.

    ## Runtime evidence
    5 steps on the XLA CPU device (case `positive_scores`): `h[h > 0].sum()` with its backward
    pass costs {positive_scores.before.uncached_compiles} uncached and
    {positive_scores.before.cached_compiles} cached compiles,
    {positive_scores.before.executions} executions, {positive_scores.before.device_to_host}
    device-to-host transfers and {positive_scores.before.cpu_fallbacks} `aten::nonzero` CPU
    fallbacks; `torch.where(h > 0, h, 0).sum()` costs {positive_scores.after.uncached_compiles}
    uncached and {positive_scores.after.cached_compiles} cached compiles,
    {positive_scores.after.executions} executions and {positive_scores.after.device_to_host}
    transfers, and the results are {positive_scores.outputs}. `masked_select` was seen falling
    back to the CPU the same way.
    """

    code = "XLA202"
    uses = ("masks",)
    name = "boolean-mask-read"
    message = (
        "`{what}` selects a data-dependent number of elements: XLA runs `nonzero` on the "
        "CPU (a device-to-host copy) and recompiles for every new count"
    )
    hint = "Keep the shape: `torch.where(mask, x, 0)` and reduce, or multiply by the mask"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    hot_only = True
    per_call = True
    needs_torch = True
    # A subscript needs `[`; `masked_select` needs its name.
    triggers = ("[", "masked_select")

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        # Masked reads of a helper's parameters, judged by its callers once walked.
        self._pending: list[
            tuple[
                cst.Subscript,
                FunctionKey,
                frozenset[str],
                Site,
                tuple[int, str] | None,
                frozenset[str],
                frozenset[str],
            ]
        ] = []
        # Reads of unknown kind given a tensor-only method (`x[m].sigmoid()`), reported
        # once the walk is over.
        self._late: list[tuple[cst.Subscript, tuple[int, str], Site]] = []
        # (statement, mask) pairs already reported: one finding per mask per statement.
        self._read_masks: set[tuple[int, str]] = set()

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if self._is_store_target(node):
            return
        indexed = self.ctx.masks.mask_index(node)
        mask = indexed or self._mask_of_handed_read(node)
        if mask is None:
            self._defer(node)
            return
        if self._copied_under_same_mask(node, mask):
            return
        if indexed is None and self._given_tensor_method(node):
            # Judged once the walk is over, after the helper reads of the same statement
            # (`lprobs[m].scatter(-1, toks[m].unsqueeze(-1), ...)` with `lprobs` a
            # parameter): one finding per mask per statement.
            key = self._read_key(node, mask)
            if key is not None and key not in self._read_masks:
                self._late.append((node, key, self.ctx.site()))
            return
        if self._mask_read_again(node, mask):
            return
        fix = self._reduction_fix(node, mask)
        self.report(
            node, self.message.format(what=_spelled(self.ctx.module.code_for_node(node))), fix=fix
        )

    def _mask_of_handed_read(self, node: cst.Subscript) -> cst.BaseExpression | None:
        """`torch.mean(entropy[mask])`, `torch.mean(-log_prob[mask])`: a value of unknown
        kind read through a mask and handed, as the first argument, to a torch operation
        that takes only tensors, so the value is a tensor and any mask evidence counts (as
        for a known tensor). Not constructors (`torch.tensor(v[m])`, `torch.from_numpy`)
        nor factories, which take host data and sizes."""
        if self.ctx.kind(node.value) is not Kind.UNKNOWN or self.ctx.kinds.is_dict(node.value):
            return None
        parent = self.ctx.parent
        if (
            isinstance(parent, cst.Attribute)
            and parent.value is node
            and parent.attr.value in _TENSOR_ONLY_METHODS
        ):
            # `mask[hard_mask].sigmoid()`: a method only tensors have, called on the read
            ancestors = self.ctx.ancestors()
            next(ancestors, None)  # the attribute
            call = next(ancestors, None)
            if isinstance(call, cst.Call) and call.func is parent:
                return self.ctx.masks.any_mask(node)
            return None
        child: cst.CSTNode = node
        for ancestor in self.ctx.ancestors():
            if isinstance(ancestor, cst.UnaryOperation) and isinstance(
                ancestor.operator, cst.Minus
            ):
                child = ancestor
                continue
            if isinstance(ancestor, cst.Arg):
                child = ancestor
                continue
            if (
                not isinstance(ancestor, cst.Call)
                or not ancestor.args
                or ancestor.args[0] is not child
            ):
                return None
            first = ancestor.args[0]
            qualified = self.ctx.qualified(ancestor.func) or ""
            if (
                first.keyword is not None
                or first.star
                or not takes_tensors(qualified)
                or qualified.rpartition(".")[2] in _FACTORIES
            ):
                return None
            break
        else:
            return None
        return self.ctx.masks.any_mask(node)

    def _mask_read_again(self, node: cst.Subscript, mask: cst.BaseExpression) -> bool:
        """`return dists[good], idxs[good]`: the statement already read with this mask.
        One finding per mask per statement: the reads select the same count, and keeping
        the shape (`torch.where(mask, ...)`) is one change to both."""
        key = self._read_key(node, mask)
        if key is None:
            return False
        if key in self._read_masks:
            return True
        self._read_masks.add(key)
        return False

    def _read_key(self, node: cst.Subscript, mask: cst.BaseExpression) -> tuple[int, str] | None:
        """The statement a read is in and its mask as written (`good`: the mask found for
        it may be the value the name was bound to, or the name itself)."""
        index = node.slice[0].slice if len(node.slice) == 1 else None
        return self._statement_key(index.value if isinstance(index, cst.Index) else mask)

    def _statement_key(self, mask: cst.BaseExpression) -> tuple[int, str] | None:
        """The statement being walked and a mask as written in it, a complement by the mask
        it negates (`dists[close], dists[~close]`: the two counts add up to the whole, and
        one `torch.where(close, ...)` keeps both shapes: one cause)."""
        statement = next(
            (a for a in self.ctx.ancestors() if isinstance(a, _STATEMENTS)),
            None,
        )
        if statement is None:
            return None
        return (id(statement), self.ctx.module.code_for_node(_kept_side(mask, self.ctx)))

    def _given_tensor_method(self, node: cst.Subscript) -> bool:
        """`x[m].sigmoid()` with `x` of unknown kind (`_mask_of_handed_read`)."""
        parent = self.ctx.parent
        return (
            self.ctx.kind(node.value) is Kind.UNKNOWN
            and isinstance(parent, cst.Attribute)
            and parent.value is node
            and parent.attr.value in _TENSOR_ONLY_METHODS
        )

    def _defer(self, node: cst.Subscript) -> None:
        """`x[mask]` with a mask computed from tensors and `x` a parameter of unknown kind:
        a masked read if some caller hands `x` a tensor (or the helper uses it as one)."""
        params = self.calls.sources(node.value)
        function = self.ctx.function
        if not params or function is None or self.ctx.kind(node.value) is not Kind.UNKNOWN:
            return
        mask = self.ctx.masks.computed_mask(node) or self.ctx.masks.mask_of_itself(node)
        mask_params: frozenset[str] = frozenset()
        compared: frozenset[str] = frozenset()
        if mask is None:
            # `valid = gt_classes[i] > -1`, then `gt_boxes[i][valid]`: a mask compared from
            # parameters (or their rows), computed from tensors where a caller hands one a
            # tensor; a device mask indexes only tensors (a list takes no tensor index).
            found, names = self.ctx.masks.compared_mask(node)
            compared = frozenset(name for name in names if self.calls.is_param(name))
            if compared:
                mask = found
        if mask is None:
            # `encoder_distance[dist_masked_tokens, :]` with `dist_masked_tokens =
            # masked_tokens`, a parameter: a mask where every call hands it one.
            for element in node.slice:
                index = element.slice
                if isinstance(index, cst.Index) and index.star is None:
                    found = self.calls.sources(index.value) - params
                    if found:
                        mask, mask_params = index.value, found
                        break
        if mask is not None and not self._written_under_same_mask(node, mask):
            key = self._read_key(node, mask)
            self._pending.append(
                (node, function, params, self.ctx.site(), key, mask_params, compared)
            )

    def leave_Module(self, node: cst.Module) -> None:
        code = self.ctx.module.code_for_node
        for subscript, function, params, site, key, mask_params, compared in self._pending:
            if mask_params and not any(self.calls.handed_mask(function, p) for p in mask_params):
                continue
            if (
                self.compared_on_device(function, compared)
                if compared
                else any(self.calls.holds_tensor(function, param) for param in params)
            ):
                if key is not None:
                    if key in self._read_masks:
                        continue  # `return a[i][m], b[i][m]`: one finding per mask per statement
                    self._read_masks.add(key)
                self.report(
                    subscript, self.message.format(what=_spelled(code(subscript))), site=site
                )
        for subscript, key, site in self._late:
            if key in self._read_masks:
                continue
            self._read_masks.add(key)
            self.report(subscript, self.message.format(what=_spelled(code(subscript))), site=site)

    def visit_Call(self, node: cst.Call) -> None:
        self.note_call(node)
        self._note_mask_call(node)
        func = node.func
        qualified = self.ctx.qualified(func)
        if qualified == "torch.masked_select":
            source, mask = _argument(node, 0, "input"), _argument(node, 1, "mask")
        elif (
            qualified is None and type(func) is cst.Attribute and func.attr.value == "masked_select"
        ):
            source, mask = func.value, _argument(node, 0, "mask")
        else:
            return
        if source is None or self.ctx.kind(source) in (Kind.HOST, Kind.MODULE):
            return
        if mask is not None and (key := self._statement_key(mask)) is not None:
            # `a.masked_select(m) == b.masked_select(m)`: one finding per mask per statement.
            if key in self._read_masks:
                return
            self._read_masks.add(key)
        fix = self._masked_select_fix(node, source, mask) if mask is not None else None
        self.report(node, self.message.format(what="masked_select"), fix=fix)

    def _note_mask_call(self, node: cst.Call) -> None:
        """A call of a helper of this module, with its arguments that are masks computed
        from tensors (`HelperCalls.handed_mask`)."""
        if type(node.func) is cst.Name and self.ctx.qualified(node.func):
            return
        helper = self.calls.callee(node, self.ctx.function)
        if helper is None or not self.ctx.defines_name(helper.name):
            return
        masks = self.ctx.masks
        handed = frozenset(
            id(arg.value)
            for arg in node.args
            if not arg.star and masks.evidence(arg.value) is Evidence.VALUE
        )
        self.calls.note_mask_call(node, helper, handed)

    def _copied_under_same_mask(self, node: cst.Subscript, mask: cst.BaseExpression) -> bool:
        """`a[m] = b[m]`, `x[m] = torch.clamp(x[m], 0, 1)`: a masked copy, or a rewrite in
        place by a torch operation, one cause, which XLA203 reports at the write (its static
        form, `torch.where(m, ..., a)`, removes both)."""
        assign = self.ctx.parent
        if isinstance(assign, cst.Arg):
            # `x[m] = torch.f(x[m], ...)`: the rewritten elements, handed first.
            call = next(islice(self.ctx.ancestors(), 1, 2), None)
            assign = next(islice(self.ctx.ancestors(), 2, 3), None)
            if (
                isinstance(call, cst.Call)
                and isinstance(assign, cst.Assign)
                and assign.value is call
                and call.args[0].value is node
            ):
                code = self.ctx.module.code_for_node
                if any(code(t.target) == code(node) for t in assign.targets):
                    return True
        code = self.ctx.module.code_for_node
        for written in self._targets_written_from(node):
            if not isinstance(written, cst.Subscript):
                continue
            kind = self.ctx.kind(written.value)
            if kind is Kind.HOST:
                continue
            index = self.ctx.masks.mask_index(written)
            if (
                index is None
                and kind is Kind.UNKNOWN
                and not self.ctx.kinds.is_dict(written.value)
                and self.ctx.masks.mask_index(node) is not None
            ):
                # `cur_labels[m] = output_label[m]` with `cur_labels` of unknown kind: the
                # device values written make it a device tensor (XLA203's judgement).
                index = self.ctx.masks.any_mask(written)
            if index is not None and code(index) == code(mask):
                return True
        return False

    def _written_under_same_mask(self, node: cst.Subscript, mask: cst.BaseExpression) -> bool:
        """`final_advs[mask] = adv_img[mask]` in a helper, with both of unknown kind: a
        masked copy into a parameter, which XLA203 judges by the helper's callers and
        reports at the write (one cause, as `_copied_under_same_mask` for known tensors)."""
        code = self.ctx.module.code_for_node
        return any(
            isinstance(written, cst.Subscript)
            and any(
                isinstance(element.slice, cst.Index) and code(element.slice.value) == code(mask)
                for element in written.slice
            )
            for written in self._targets_written_from(node)
        )

    def _targets_written_from(self, node: cst.Subscript) -> list[cst.BaseAssignTargetExpression]:
        """The targets of the statement that writes `node`'s read back element for element
        (`_elementwise_statement`) or hands it to the call whose result it writes
        (`_handed_to_value_call`); none where no such statement holds the read."""
        assign = self._elementwise_statement(node) or self._handed_to_value_call(node)
        if assign is None:
            return []
        if isinstance(assign, cst.Assign):
            return [t.target for t in assign.targets]
        return [assign.target]

    def _handed_to_value_call(self, node: cst.Subscript) -> cst.Assign | None:
        """`out[m] = self.penalty(d[m])`: the read handed, alone, to the call whose result is
        the written value. The rows selected under the mask are computed and written back
        under it in one statement (as many as the write takes): one masked gather, compute
        and scatter, one cause, which XLA203 reports at the write (`torch.where(m,
        self.penalty(d), out)` keeps every shape where the call works row for row). So is
        the read cast or computed element for element before it is handed
        (`x[m] = categorical(u[m].to(dtype=dt))`, `.float()`): the same rows, one per
        selected element."""
        ancestors = self.ctx.ancestors()
        handed: cst.BaseExpression = node
        arg = next(ancestors, None)
        while (
            isinstance(arg, cst.Attribute)
            and arg.value is handed
            and arg.attr.value in _ELEMENTWISE
        ):
            method = next(ancestors, None)
            if not (isinstance(method, cst.Call) and method.func is arg):
                return None
            handed, arg = method, next(ancestors, None)
        call, assign = next(ancestors, None), next(ancestors, None)
        if not (
            isinstance(arg, cst.Arg)
            and arg.value is handed
            and arg.keyword is None
            and not arg.star
            and isinstance(call, cst.Call)
            and len(call.args) == 1
            and isinstance(assign, cst.Assign)
            and assign.value is call
        ):
            return None
        return assign

    def _elementwise_statement(self, node: cst.Subscript) -> cst.Assign | cst.AugAssign | None:
        """The assignment whose value computes from the read element for element: the read
        is the value (`a[m] = b[m]`), or an operand of arithmetic (`y[m] / (s[m] + eps)`,
        `1 - a[m]`), of an elementwise method (`n[m].pow(2)`, `.clamp(min=0).sqrt()`), or
        of such a torch function (`torch.exp(x[m])`), up to the value. Each selected element
        is then one element of the written value: `torch.where(m, f(b, s), a)` computes it
        with the unselected operands, one change for the write and every such read."""
        child: cst.CSTNode = node
        for ancestor in self.ctx.ancestors():
            kind = type(ancestor)
            if kind in (cst.Assign, cst.AugAssign):
                return ancestor if ancestor.value is child else None  # type: ignore[union-attr]
            if kind is cst.BinaryOperation:
                if not isinstance(ancestor.operator, _ARITHMETIC):  # type: ignore[union-attr]
                    return None
            elif kind is cst.UnaryOperation:
                if isinstance(ancestor.operator, cst.Not):  # type: ignore[union-attr]
                    return None
            elif kind is cst.Attribute:
                attribute: cst.Attribute = ancestor  # type: ignore[assignment]
                if attribute.value is not child or attribute.attr.value not in _ELEMENTWISE:
                    return None
            elif kind is cst.Call:
                call: cst.Call = ancestor  # type: ignore[assignment]
                if call.func is not child and not self._elementwise_function(call, child):
                    return None
            elif kind is cst.Arg:
                arg: cst.Arg = ancestor  # type: ignore[assignment]
                if arg.keyword is not None or arg.star:
                    return None
            else:
                return None
            child = ancestor
        return None

    def _elementwise_function(self, call: cst.Call, arg: cst.CSTNode) -> bool:
        """`torch.exp(x[m])`, `torch.clamp(x[m], 0, 1)`: the read handed, first, to a
        torch function that works element for element, or handed to such a tensor method
        (`a[m].add(b[m])`)."""
        if type(call.func) is cst.Attribute and self.ctx.qualified(call.func) is None:
            # `x_bar[m].add(y_bar[m])`: an operand of an elementwise method
            return call.func.attr.value in _ELEMENTWISE
        qualified = self.ctx.qualified(call.func) or ""
        module, _, name = qualified.rpartition(".")
        return (
            bool(call.args) and call.args[0] is arg and module == "torch" and name in _ELEMENTWISE
        )

    def _is_store_target(self, node: cst.Subscript) -> bool:
        child: cst.CSTNode = node
        for ancestor in self.ctx.ancestors():
            if type(ancestor) in _TARGET_WRAPPERS:
                child = ancestor
                continue
            if type(ancestor) in (cst.AssignTarget, cst.Del):
                return True
            if type(ancestor) in (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor):
                return ancestor.target is child
            if isinstance(ancestor, cst.WithItem) and ancestor.asname is not None:
                return ancestor.asname.name is child
            return False
        return False

    def _reduction_fix(self, node: cst.Subscript, mask: cst.BaseExpression) -> NodeFix | None:
        """`x[m].sum()` -> `torch.where(m, x, 0).sum()`; `.mean()` divides by `m.sum()`."""
        reduction = self._reduction(node)
        if reduction is None or len(node.slice) != 1:
            return None
        call, method, outer = reduction
        base = dotted(node.value)
        if base is None or self.ctx.kind(node.value) is not Kind.TENSOR:
            return None
        if self.ctx.masks.elementwise_base(mask) != base:
            return None
        code = self.ctx.module.code_for_node
        where, imports = self.ctx.imports.spell(
            "torch.where", "import torch", self.ctx.names_in_use
        )
        total = f"{where}({code(mask)}, {code(node.value)}, 0).sum()"
        if method == "sum":
            return self.fix(f"Sum with `{where}`", (call, total), imports=imports)
        mean = f"{total} / {atom(mask, code(mask))}.sum()"
        if not call.lpar and not (isinstance(outer, _LOOSE_PARENTS) and _holds(outer, call)):
            mean = f"({mean})"
        return self.fix(f"Average with `{where}` and the mask's count", (call, mean),
                        imports=imports)  # fmt: skip

    def _reduction(self, node: cst.BaseExpression) -> tuple[cst.Call, str, cst.CSTNode] | None:
        """`node.sum()`/`node.mean()` without arguments: the call, the method, its parent."""
        ancestors = list(islice(self.ctx.ancestors(), 3))
        if len(ancestors) < 3:
            return None
        attribute, call, outer = ancestors
        if (
            isinstance(attribute, cst.Attribute)
            and attribute.value is node
            and attribute.attr.value in ("sum", "mean")
            and isinstance(call, cst.Call)
            and call.func is attribute
            and not call.args
        ):
            return call, attribute.attr.value, outer
        return None

    def _masked_select_fix(
        self, node: cst.Call, source: cst.BaseExpression, mask: cst.BaseExpression
    ) -> NodeFix | None:
        reduction = self._reduction(node)
        if reduction is None or reduction[1] != "sum":
            return None
        code = self.ctx.module.code_for_node
        where, imports = self.ctx.imports.spell(
            "torch.where", "import torch", self.ctx.names_in_use
        )
        total = f"{where}({code(mask)}, {code(source)}, 0).sum()"
        return self.fix(f"Sum with `{where}`", (reduction[0], total), imports=imports)


def _argument(node: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    positional = [a for a in node.args if a.keyword is None]
    if any(a.star for a in node.args):
        return None
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    return positional[position].value if len(positional) > position else None


def _holds(parent: cst.CSTNode, child: cst.CSTNode) -> bool:
    """Whether `child` is the whole value slot of `parent` (not, say, its target)."""
    if isinstance(parent, cst.AugAssign | cst.AnnAssign | cst.Assign | cst.Return):
        return parent.value is child
    if isinstance(parent, cst.DictElement):
        return parent.value is child
    return True


def _spelled(code: str, fallback: str = "x[mask]") -> str:
    """The code itself in the message when it is short and on one line."""
    return code if len(code) <= 40 and "\n" not in code else fallback


def _kept_side(mask: cst.BaseExpression, ctx: FileContext) -> cst.BaseExpression:
    """The mask a complement negates: `m` of `~m`, `torch.logical_not(m)`,
    `m.logical_not()` (also `(~m)`); any other mask as it is."""
    while True:
        if type(mask) is cst.UnaryOperation and type(mask.operator) is cst.BitInvert:
            mask = mask.expression
        elif (
            type(mask) is cst.Call
            and type(mask.func) is cst.Attribute
            and mask.func.attr.value == "logical_not"
            and not mask.args
        ):
            mask = mask.func.value
        elif (
            type(mask) is cst.Call
            and len(mask.args) == 1
            and mask.args[0].keyword is None
            and not mask.args[0].star
            and ctx.qualified(mask.func) == "torch.logical_not"
        ):
            mask = mask.args[0].value
        else:
            return mask.with_changes(lpar=(), rpar=()) if hasattr(mask, "lpar") else mask
