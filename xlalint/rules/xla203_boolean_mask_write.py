from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from xlalint.analysis.hotness import FunctionKey, Site
from xlalint.analysis.masks import atom, dotted, is_scalar, takes_tensors
from xlalint.analysis.stacked_values import stacked_names
from xlalint.context import Kind
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix
from xlalint.rules._helper_calls import HelperCallRule
from xlalint.walk import descendants, target_names

if TYPE_CHECKING:
    from xlalint.context import FileContext

_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo,
               cst.Power)  # fmt: skip


class BooleanMaskWrite(HelperCallRule):
    """
    ## What it does
    Flags assignments through a boolean mask, `x[mask] = v` and `x[mask] += v`, to device
    tensors in code that runs every step. Masks are recognized as in XLA202 (comparisons of
    tensors, `isnan`, `&`/`|`/`~`, `.bool()`, rows unpacked from a mask and masks joined by
    `torch.stack`/`torch.cat`, names bound to those, dict entries under a literal key bound to
    those, `mask`-like names and batches of episode-end flags: `next_q[dones] = 0.0`), and a
    value of unknown kind written under a comparison or test method called on itself
    (`sign[sign.gt(0)] = etaplus` with `sign` computed from a gradient walked out of the
    optimizer's groups: only tensors have `.gt`, unless the file imports pandas); the
    gradients a custom autograd function's `backward` is handed are device tensors, and
    autograd runs it every step (`grad_output[torch.abs(target) > 1] = 0` in `backward` of
    a `torch.autograd.Function`; not a `backward` of a class of the file's own or of
    another library, however named, nor of a function whose `apply` the module binds to a
    name for other modules, `_norm = _Norm.apply`: their calls say whether it is
    differentiated); integer-index writes (`x[idx] = v`),
    slices, and lists, dicts or numpy arrays are not flagged: also a value an opaque call makes
    of a tensor (`mask = norm_img(mask)`) where the function hands that binding next to
    `torch.from_numpy` (only an array is taken there), what OpenCV hands back
    (`cv2.resize(...)`), and a slice with a negative step (`image[:, :, ::-1]`, which torch
    refuses). A helper's parameter of unknown kind written through a mask computed from tensors
    (`lprobs[prefix_mask] = -inf` with `prefix_mask = prefix_toks.ne(pad)`) is a tensor where a
    call of the same module hands it one or where the helper uses it as one
    (`lprobs.gather(...)`); one the callers give numpy arrays or host tensors is not. So is a
    value the helper computes from such parameters by arithmetic alone (`result = a / b`), and
    there a mask compared from the written value itself (`result[result != result] = 0.0`,
    `result[result == np.inf] = 0.0`) is computed from a tensor. A parameter annotated as a
    Python number that the helper indexes, or a value it computes from such parameters (`div = a
    / b` with `a: float`, then `div[div != div] = 0.0`), has elements, so its annotation is
    wrong: it counts as a parameter of unknown kind. A value of unknown kind whose masked
    elements a torch operation that takes only tensors computes from and writes back (`x[:,
    ~done] = torch.zeros_like(x[:, ~done])`, `x[m] = torch.clamp(x[m], 0, 1)`) is a tensor, so
    is a name the function uses as a tensor and rebinds only from itself (`mask = mask.clone()`,
    then `mask[mask == 0] = inf`), or written under a comparison with itself (`cbarrier[
    cbarrier != cbarrier] = 0.0`, a NaN repaired in place, then `torch.clamp(cbarrier,
    ...)`, however it is bound, or then collected into a list the function hands to a torch
    join: `a[a < 0] = 0`, `codebooks.append(a)`, `torch.stack(codebooks)`), and so is one
    the written value is cast to (`lprobs[lprobs !=
    lprobs] = torch.tensor(-math.inf).to(lprobs)`, `.type_as(x)`: a subscripted value is no
    device or dtype); `torch.tensor(...)`, numpy (`a[m] = np.clip(a[m], 0, 1)`) and other values
    written are not evidence. A name that says model (`heads`, `neg_heads`) is no model where
    its function uses it as a tensor no module is (`neg_heads = heads.repeat(n)`,
    `heads.shape[0]`, `neg_heads.long()`): a negative sampler's entity indexes, written through
    a mask every batch. A value of unknown kind given a math method only tensors have (`.log()`,
    `.exp()`, `.sqrt()`, `.sigmoid()` without arguments; `.clamp(...)`, `.softmax(dim)`) is a
    tensor, since numbers, numpy arrays and pandas objects lack those methods: `f0_mel =
    1127 * (1 + f0 / 700).log()`, then `f0_mel[f0_mel <= 1] = 1`, in a helper a `forward`
    reaches, writes a device tensor through a mask every call.

    An attribute every value of which the class binds (or registers as a buffer) makes
    booleans element for element (`self.pos_idx = weights >= 0` in `__init__`,
    `self.register_buffer("keep", torch.isfinite(w))`, `~`/`&` of those; not a comparison
    with a string or `None`, nor positions from `nonzero`) is a mask in the class's other
    methods: `output[self.pos_idx] = ...` in `forward`, and the complement's write. A value
    of unknown kind written with what a device tensor's elements read through the same mask
    (`cur_labels[mask] = output_label[mask]`, `a[m] = f(b[m]) * 2`, `a[m] += b[m]`) is a
    device tensor: `index_put_` takes values on the written tensor's device, and lists and
    numpy arrays take no device tensor. In a helper, a mask that compares its parameters,
    alone or combined (`mask = (dist < best) & self.ok(out)`), or a row of one (`valid =
    cls[i] > -1`), is computed on the device where a call of the same module hands one of
    the compared parameters a device tensor (or, where no call of the module runs the
    helper, another module of the project calls it every step with its data),
    and a write through it into any of the helper's parameters (`final_advs[mask] =
    adv_img[mask]`) writes a device tensor (no other value takes a device mask); one the
    callers give numpy arrays is not flagged.

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
    PyTorch turns `x[mask] = v` into an `index_put_` at the positions where the mask is
    `True`, and finding those positions is `nonzero`, whose output size only the data
    knows. PyTorch/XLA executes the pending graph, copies the mask to the host, runs
    `nonzero` on the CPU and sends the indices back: the step's graph is cut in two and
    every new count compiles again. `masked_fill` and `torch.where` compute the same result
    with static shapes, entirely on the device.

    ## Example
    ```python
    def forward(self, scores, padding_mask):
        scores[scores.isnan()] = 0.0
        scores[padding_mask] = float("-inf")
        return scores.softmax(-1)
    ```

    ## Use instead
    ```python
    def forward(self, scores, padding_mask):
        scores.masked_fill_(scores.isnan(), 0.0)
        scores = scores.masked_fill(padding_mask, float("-inf"))
        return scores.softmax(-1)
    ```

    ## Fix safety
    Safe, and only for a statement `x[m] = v` with one plain target (`x` or `self.buf`)
    whose mask has exactly `x`'s shape because it is computed from `x` element for element
    (`x[x < 0] = 0`, `x[torch.isnan(x)] = 0`, or `mask = x > 0` earlier in the same function
    and loop iteration with `x` not rebound since). For such a mask both forms change the
    same elements of `x` in place, with `v` cast to `x`'s dtype:
    - a number `v` (`0`, `-1e4`, `float("-inf")`, `torch.finfo(x.dtype).min`) gives
      `x.masked_fill_(m, v)`;
    - an elementwise expression of numbers and reads through the same mask
      (`x[m] = y[m] * 2`, `y` a tensor) gives `x.copy_(torch.where(m, v', x))`, with each
      `y[m]` read as `y`: the original only runs if `y[m]` has as many elements as `x[m]`
      and `v` has `x`'s dtype (`index_put_` refuses others), so `y` has `x`'s shape and
      `torch.where` promotes nothing;
    - a 0-d tensor `v` (`y.mean()`, `2 * y.max()`) gives
      `x.copy_(torch.where(m, v.to(x.dtype), x))`: `index_put_` casts a 0-d value to
      `x`'s dtype, and casting first keeps `torch.where` from promoting the rest of `x`.
    Other values (a tensor of selected values from elsewhere, a variable whose kind is not
    known), masks of another shape, several targets and `+=` are reported without a fix.

    ## Runtime evidence
    5 steps on the XLA CPU device (case `mask_nan_scores`): a boolean-mask write each step costs
    {mask_nan_scores.before.uncached_compiles} uncached and
    {mask_nan_scores.before.cached_compiles} cached compiles,
    {mask_nan_scores.before.executions} executions and {mask_nan_scores.before.cpu_fallbacks}
    `aten::nonzero` CPU fallbacks; the `masked_fill_` (or `torch.where`) form costs
    {mask_nan_scores.after.uncached_compiles} uncached and
    {mask_nan_scores.after.cached_compiles} cached compiles and
    {mask_nan_scores.after.executions} executions, and the results are
    {mask_nan_scores.outputs}.
    """

    code = "XLA203"
    uses = ("masks",)
    name = "boolean-mask-write"
    message = (
        "`{write}` writes a data-dependent number of elements: XLA runs `nonzero` on "
        "the CPU (a device-to-host copy) and recompiles for every new count"
    )
    hint = "Write in place with `x.masked_fill_(mask, v)` or `x.copy_(torch.where(mask, v, x))`"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    hot_only = True
    per_call = True
    needs_torch = True
    # A write through a subscript ends its target with `]`.
    triggers = ("]",)

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        # Masked writes to a helper's parameters, judged by its callers once walked.
        # (target, operator, helper, written parameters, compared parameters, site)
        self._pending: list[
            tuple[cst.Subscript, str, FunctionKey, frozenset[str], frozenset[str], Site]
        ] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            subscript = target.target
            if type(subscript) is not cst.Subscript:
                continue
            mask = (
                self.ctx.masks.mask_index(subscript)
                or self._mask_of_rewrite(subscript, node.value)
                or self._mask_of_matched_write(subscript, node.value)
                or self._mask_of_copied_tensor(subscript)
                or self._mask_of_device_values(subscript, node.value)
                or self._mask_of_tensor_in_use(subscript)
            )
            if mask is None:
                self._defer(subscript, "=")
                continue
            fix = self._fix(node, subscript, mask) if len(node.targets) == 1 else None
            self.report(subscript, self._message(subscript, "="), fix=fix)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not isinstance(node.target, cst.Subscript):
            return
        operator = cst.Module([]).code_for_node(node.operator).strip()
        if self.ctx.masks.mask_index(node.target) or self._mask_of_device_values(
            node.target, node.value
        ):
            self.report(node.target, self._message(node.target, operator))
        else:
            self._defer(node.target, operator)

    def _mask_of_rewrite(
        self, target: cst.Subscript, value: cst.BaseExpression
    ) -> cst.BaseExpression | None:
        """`x[:, m] = torch.zeros_like(x[:, m])`, `x[m] = torch.clamp(x[m], 0, 1)`: the
        elements a torch operation that takes only tensors computes from, written back in
        place. `x` is then a tensor whatever else its kind, and any mask evidence counts."""
        if self.ctx.kind(target.value) is not Kind.UNKNOWN or self.ctx.kinds.is_dict(target.value):
            return None
        if not isinstance(value, cst.Call) or not value.args:
            return None
        first = value.args[0]
        code = self.ctx.module.code_for_node
        if (
            first.keyword is not None
            or first.star
            or not isinstance(first.value, cst.Subscript)
            or code(first.value) != code(target)
            or not takes_tensors(self.ctx.qualified(value.func) or "")
        ):
            return None
        return self.ctx.masks.any_mask(target)

    def _mask_of_matched_write(
        self, target: cst.Subscript, value: cst.BaseExpression
    ) -> cst.BaseExpression | None:
        """`lprobs[lprobs != lprobs] = torch.tensor(-inf).to(lprobs)`: the value is cast
        to the written value itself (`.to(x)`, `.type_as(x)`), which only a tensor can be
        there (a subscripted value is no device or dtype). `x` is then a tensor whatever
        else its kind, and any mask evidence counts."""
        if self.ctx.kind(target.value) is not Kind.UNKNOWN or self.ctx.kinds.is_dict(target.value):
            return None
        if not (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in ("to", "type_as")
            and len(value.args) == 1
            and value.args[0].keyword is None
            and not value.args[0].star
        ):
            return None
        code = self.ctx.module.code_for_node
        if code(value.args[0].value) != code(target.value):
            return None
        return self.ctx.masks.any_mask(target)

    def _mask_of_device_values(
        self, target: cst.Subscript, value: cst.BaseExpression
    ) -> cst.BaseExpression | None:
        """`cur_labels[m] = output_label[m]`, `a[m] = f(b[m]) * 2`: the written value reads a
        device tensor through the same mask. `index_put_` takes values on the written
        tensor's device, and a list or numpy array takes no device tensor, so `x` is a
        device tensor whatever else its kind, and the mask evidence the read has counts."""
        if self.ctx.kind(target.value) is not Kind.UNKNOWN or self.ctx.kinds.is_dict(target.value):
            return None
        mask = self.ctx.masks.any_mask(target)
        if mask is None:
            return None
        code = self.ctx.module.code_for_node
        written = code(mask)
        masks = self.ctx.masks
        for node in descendants(value):
            if type(node) is not cst.Subscript:
                continue
            read = masks.mask_index(node)
            if read is not None and code(read) == written:
                return mask
        return None

    def _mask_of_tensor_in_use(self, target: cst.Subscript) -> cst.BaseExpression | None:
        """`cbarrier[cbarrier != cbarrier] = 0.0`, then `torch.clamp(cbarrier, ...)`: a name
        of unknown kind written under a comparison with itself (NaN or `inf` repaired in
        place) that the function hands to a torch operation taking only tensors or gives a
        tensor-only method (`tensor_uses`), or collects into a list it hands to a torch join
        (`a[a < 0] = 0`, then `codebooks.append(a)` and `torch.stack(codebooks)`:
        `stacked_values`, as `torch.stack` takes only tensors): numbers and lists take no
        such mask, numpy arrays no such operation, so it is a tensor, and the mask is
        computed from it."""
        value = target.value
        if type(value) is not cst.Name or self.ctx.kind(value) is not Kind.UNKNOWN:
            return None
        if self.ctx.kinds.is_dict(value) or self.calls.sources(value):
            return None  # a helper's parameter: its callers say (`_defer`)
        function = self.ctx.function_node
        if function is None:
            return None
        mask = self.ctx.masks.mask_of_itself(target)
        if mask is None:
            return None
        if value.value in self.ctx.data_parameters.uses(function) or value.value in stacked_names(
            function, self.ctx.imports
        ):
            return mask
        return None

    def _mask_of_copied_tensor(self, target: cst.Subscript) -> cst.BaseExpression | None:
        """`mask = mask.clone()`, then `mask[mask == 0] = inf`: a name of unknown kind that
        the function uses as a tensor (`.clone()` is a tensor's method) and rebinds only
        from itself, by a method of its own. It is a tensor, and any mask evidence counts."""
        base = target.value
        if not isinstance(base, cst.Name) or self.ctx.kind(base) is not Kind.UNKNOWN:
            return None
        function = next((a for a in self.ctx.ancestors() if isinstance(a, cst.FunctionDef)), None)
        if function is None:
            return None
        if base.value not in self.ctx.data_parameters.uses(function) or not _rebound_from_itself(
            function, base.value
        ):
            return None
        return self.ctx.masks.any_mask(target)

    def _defer(self, target: cst.Subscript, operator: str) -> None:
        """`x[mask] = v` with a mask computed from tensors and `x` a parameter of unknown
        kind: a masked write if some caller hands `x` a tensor (or the helper uses it as
        one)."""
        params = self.calls.sources(target.value)
        function = self.ctx.function
        if not params or function is None or self.ctx.kind(target.value) is not Kind.UNKNOWN:
            return
        masks = self.ctx.masks
        if masks.computed_mask(target) is not None or masks.mask_of_itself(target) is not None:
            self._pending.append((target, operator, function, params, frozenset(), self.ctx.site()))
            return
        # `mask = (dist < best) & self.ok(out)`, then `best[mask] = dist[mask]`: a mask
        # compared from parameters, computed from tensors where a caller hands one a tensor,
        # and then written through into a device tensor (no other value takes that index).
        _, compared = masks.compared_mask(target)
        compared = frozenset(name for name in compared if self.calls.is_param(name))
        if compared:
            self._pending.append((target, operator, function, params, compared, self.ctx.site()))

    def leave_Module(self, node: cst.Module) -> None:
        holds = self.calls.holds_tensor
        for target, operator, function, params, compared, site in self._pending:
            # A mask compared from a device tensor indexes only device tensors (a list or
            # numpy array takes no device mask), whatever the callers hand the written one.
            if (
                self.compared_on_device(function, compared)
                if compared
                else any(holds(function, name) for name in params)
            ):
                self.report(target, self._message(target, operator), site=site)

    def _message(self, target: cst.Subscript, operator: str) -> str:
        code = self.ctx.module.code_for_node(target)
        if len(code) > 40 or "\n" in code:
            code = "x[mask]"
        return self.message.format(write=f"{code} {operator} ...")

    def _fix(
        self, node: cst.Assign, target: cst.Subscript, mask: cst.BaseExpression
    ) -> NodeFix | None:
        if len(target.slice) != 1:
            return None
        base = dotted(target.value)
        if base is None or self.ctx.kind(target.value) is not Kind.TENSOR:
            return None
        masks = self.ctx.masks
        if masks.elementwise_base(mask) != base:
            return None
        code = self.ctx.module.code_for_node
        if "#" in code(node):
            return None  # a comment inside the statement would be lost
        mask_code = code(mask)
        value = node.value
        if is_scalar(value, self.ctx.imports):
            fill = f"{code(target.value)}.masked_fill_({mask_code}, {code(value)})"
            return self.fix("Fill with `.masked_fill_()`", (node, fill))
        unselected = self._unselect(value, mask_code)
        if unselected is None:
            return None
        selected, reads = unselected
        where, imports = self.ctx.imports.spell(
            "torch.where", "import torch", self.ctx.names_in_use
        )
        x = code(target.value)
        new_value = code(selected)
        if not reads:
            # A 0-d value is cast to `x`'s dtype by `index_put_`; `torch.where` would instead
            # promote the kept elements of `x` to its dtype (int64 through float32 loses
            # digits). Reads through the mask already have `x`'s dtype, or the write fails.
            new_value = f"{atom(selected, new_value)}.to({x}.dtype)"
        copy = f"{x}.copy_({where}({mask_code}, {new_value}, {x}))"
        return self.fix(f"Select with `{where}` and copy in place", (node, copy), imports=imports)

    def _unselect(
        self, value: cst.BaseExpression, mask_code: str
    ) -> tuple[cst.BaseExpression, bool] | None:
        """`value` with each `y[mask]` read as `y`, if it is an elementwise expression of
        numbers, 0-d reductions and reads through the same mask, and whether it had any
        such read; else None."""
        code = self.ctx.module.code_for_node
        masks = self.ctx.masks
        reads = False

        def walk(node: cst.BaseExpression) -> cst.BaseExpression | None:
            nonlocal reads
            if is_scalar(node, self.ctx.imports) or masks.is_zero_dim(node):
                return node
            if isinstance(node, cst.Subscript):
                if (
                    len(node.slice) == 1
                    and isinstance(node.slice[0].slice, cst.Index)
                    and code(node.slice[0].slice.value) == mask_code
                    and dotted(node.value) is not None
                    and self.ctx.kind(node.value) is Kind.TENSOR
                ):
                    reads = True
                    return node.value.with_changes(lpar=node.lpar, rpar=node.rpar)
                return None
            if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _ARITHMETIC):
                left, right = walk(node.left), walk(node.right)
                if left is None or right is None:
                    return None
                return node.with_changes(left=left, right=right)
            if isinstance(node, cst.UnaryOperation) and isinstance(
                node.operator, cst.Minus | cst.Plus
            ):
                operand = walk(node.expression)
                return None if operand is None else node.with_changes(expression=operand)
            return None

        selected = walk(value)
        return None if selected is None else (selected, reads)


def _rebound_from_itself(function: cst.FunctionDef, name: str) -> bool:
    """`name` is bound in `function` only as `name = name.method(...)` (at least once)."""
    found = False
    for node in descendants(function.body):
        # (Bindings in nested functions count too: silence is the safe side.)
        if isinstance(
            node, cst.AugAssign | cst.For | cst.With | cst.NamedExpr
        ) and name in _bound_by(node):
            return False
        if isinstance(node, cst.AnnAssign) and name in target_names(node.target):
            return False
        if not isinstance(node, cst.Assign):
            continue
        if not any(name in target_names(t.target) for t in node.targets):
            continue
        value = node.value
        if not (
            len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and isinstance(value.func.value, cst.Name)
            and value.func.value.value == name
        ):
            return False
        found = True
    return found


def _bound_by(node: cst.CSTNode) -> set[str]:
    """Names an augmented assignment, `for`, `with ... as` or `:=` binds."""
    if isinstance(node, cst.AugAssign | cst.For | cst.NamedExpr):
        return target_names(node.target)
    if isinstance(node, cst.With):
        names: set[str] = set()
        for item in node.items:
            if item.asname is not None:
                names |= target_names(item.asname.name)
        return names
    return set()
