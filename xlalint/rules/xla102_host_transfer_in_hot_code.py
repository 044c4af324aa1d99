from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from xlalint.analysis.arguments import bind, parameter
from xlalint.analysis.helper_calls import HelperCall
from xlalint.analysis.helper_reads import computed_root, converts_handed
from xlalint.analysis.host_arguments import moved_here, moved_in_place
from xlalint.analysis.host_reads import RETURNED_LITERALS, ReadRuns, consuming_call
from xlalint.analysis.hotness import FunctionKey, Site
from xlalint.analysis.loop_facts import runs_a_named_model
from xlalint.analysis.tensor_members import TENSOR_MEMBERS
from xlalint.context import Kind
from xlalint.positions import positions_of
from xlalint.rule import PendingReport
from xlalint.rules._helper_calls import HelperCallRule, spelled_argument
from xlalint.walk import binding_counts, descendants, names_under, target_names

if TYPE_CHECKING:
    from collections.abc import Iterable

    from xlalint.context import FileContext

# Methods that copy a tensor to the host, with whether a receiver of unknown kind may be
# taken for a device tensor on evidence of where it was computed. `.tolist()` may not:
# numpy arrays have it too, and are common.
_TRANSFERS = {"cpu": True, "numpy": True, "tolist": False, "to": True}
# Methods that hand back the value they are called on (a view, a copy, another dtype).
_SAME_VALUE = frozenset({"detach", "clone", "contiguous", "float", "long", "int", "double"})


def _returned_by(ancestors: Iterable[cst.CSTNode]) -> cst.Return | None:
    """The `return` statement whose value holds the copy (`ancestors` innermost first):
    `return dist.sample().cpu().numpy(), {k: v.cpu().numpy() for k, v in info.items()}`
    hands its copies back together, to one caller, and keeping the values on the device
    there is one fix. None for a copy in a lambda or a nested definition."""
    for ancestor in ancestors:
        kind = type(ancestor)
        if kind is cst.Return:
            return ancestor  # type: ignore[return-value]
        if kind in (cst.Lambda, cst.FunctionDef, cst.ClassDef) or isinstance(
            ancestor, cst.BaseSmallStatement | cst.BaseCompoundStatement
        ):
            return None
    return None


def _assigned_together(ancestors: Iterable[cst.CSTNode]) -> cst.Assign | None:
    """The assignment whose tuple or list holds the copy as one of its elements
    (`power, scale = self.power.cpu(), self.scale.cpu()`): the copies are bound together,
    in one statement, for one computation after it, and keeping them on the device is one
    fix. None for a copy in a lambda, a comprehension or a nested definition."""
    previous: cst.CSTNode | None = None
    for ancestor in ancestors:
        kind = type(ancestor)
        if kind is cst.Assign:
            value = ancestor.value  # type: ignore[attr-defined]
            if previous is value and type(value) in (cst.Tuple, cst.List):
                return ancestor  # type: ignore[return-value]
            return None
        if kind in (cst.Lambda, cst.FunctionDef, cst.ClassDef) or isinstance(
            ancestor, cst.BaseSmallStatement | cst.BaseCompoundStatement | cst.BaseComp
        ):
            return None
        previous = ancestor
    return None


@dataclass(frozen=True)
class _ParameterCopy:
    """A copy of a helper's parameter (or of a value of it), judged once the callers are
    known: reported when a call hands the parameter a device tensor."""

    attr: cst.CSTNode
    call: cst.Call
    message: str
    site: Site
    function: FunctionKey
    params: frozenset[str]  # the parameters the copied value is computed from
    # The copied value is a parameter itself, through its own methods (`out.detach()`):
    # a conversion of what the helper is handed, the call's cause (`converts_handed`).
    direct: bool = False


class HostTransferInHotCode(HelperCallRule):
    """
    ## What it does
    Flags `.cpu()`, `.numpy()`, `.tolist()` and `.to("cpu")` (also `.to(device="cpu")` and
    `.to(torch.device("cpu"))`) on device tensors in code that runs every step: the bodies
    of step loops (a loop of fixed passes, over layers or a table of names, or over what a
    function handed only a model's or an optimizer's parts gives back, `for elem in
    nested_flatten(opt.state_dict())`, runs where its function does), `forward`, `*_step`
    methods and the functions they call, or that another module of the project calls every
    step (not a function that only returns what
    it is handed, converted: `to_numpy(t)` costs where its callers call it). A policy's
    action method (`draw_action(state)`, `get_actions(observations)`, `select_action`,
    `_sample_action`: `hotness.ACTION_METHOD`) in a class runs once per environment step,
    whatever its class trains: the environment loop that calls it (mushroom's `Core`,
    garage's sampler workers) is another module's; its copies still need evidence of a
    device tensor (a `RandomPolicy` sampling with numpy copies nothing). A chain such as
    `x.detach().cpu().numpy()` is reported once, at the first copy to the host. A
    namespace's functions of these names count by what they are handed: `d2l.numpy(x)`
    copies `x` (reported unless `x` is already on the host, `d2l.numpy(x.cpu())` being one
    copy), and `d2l.cpu()` handed to `to(value, ...)` names a device. Fields a record
    class of the module declares as tensors (`yseq: torch.Tensor` in a beam hypothesis)
    count as device tensors, as for XLA101: `self.yseq.tolist()` in a method the decoding
    loop calls on every hypothesis is flagged.

    A fastai callback reads the current batch through the learner it forwards to: in its
    batch events (`after_pred`, `after_batch`...), `self.pred`, `self.loss`, `self.y`,
    `self.xb` and `self.yb` (or `self.learn.pred`) are device tensors, so `self.pred.cpu()`
    there copies every batch; the same attributes in `after_epoch`, or bound by the
    callback itself, are not judged so. A module's registered buffers are device tensors
    too. So is the output a forward hook is handed (`def save_activation(self, module,
    input, output)`, registered with `layer.register_forward_hook(self.save_activation)`,
    or a nested function so registered): the hook runs in the middle of every forward of
    that layer, and `output.cpu()` there executes the graph up to it.

    A read in a loop or comprehension over the rows of a device tensor (`[target(o).cpu()
    .item() for target, o in zip(targets, outputs)]` of a model's outputs, or
    `input_tensor[i].cpu()` for `i in range(batch_size)`) in a function that runs a model
    itself pays one sync per row on every call with new data, where one copy of the whole
    would do: it is judged as a per-call cost, hot in a function that computes on tensors
    it is handed (`input_tensor: torch.Tensor`) as well as in per-step code. A summary
    that runs no model (`finalize(sum_logprobs, tokens)` after decoding) is not.

    A tensor the function builds on the device from Python values the host holds (`lengths =
    torch.tensor([a.shape[-1] for a in audios], device=model.device)`: numbers, a list of
    them, a comprehension of them), bound once, then copied back through its own methods and
    rows (`lengths.cpu()`, `sizes.tolist()`), is a device round trip for what the host had.
    In a function that runs a model on what it is handed (`model.encode(padded)`,
    `self.net(x)`, in its own body, not in a loop there) it is paid on every call, whoever
    calls it: a server's `batch_encode` per request. Not in a function that runs backward,
    takes a data loader (its code outside the pass runs once per pass), runs once by its
    name (`__init__`), or runs no model (a collate helper, judged by its callers); nor where
    the data holds a tensor (`torch.cat([offsets, torch.tensor([n], device=d)])`) or the
    name is bound again.

    A copy costs only when the value is on the device, so a copy is reported only with
    evidence that it is: a model's or module's output (`self(state)` in a method of the
    module itself runs its forward; a model parameter the function rebinds to its move,
    `model = model.to(self.device)`, then calls, is still the model, as no tensor is
    callable or has `.eval()`: `item.cpu().numpy() for item in outputs` copies each row;
    also of a method of an `nn.Module` class of the module whose every `return` gives
    tensors, walked before the call: `action, _ = pg.get_action(obs)` with `pg =
    Policy(env)`), a tensor op on a device value, a value moved with `.to(device)`/`.cuda()`
    (a parameter first rebound to its move, also in a tuple of moves: ColBERT's `input_ids,
    attention_mask = input_ids.to(self.device), attention_mask.to(self.device)`, then
    `self.mask(input_ids, ...)` copying it back with `.cpu().tolist()`; also a value of
    unknown kind the function itself moves, its name last bound to the move before the copy:
    `seqlens = seqlens.to(self.device_name)`, then `return seqlens.tolist()` in a helper
    handed the loader's host batch copies back what it just sent, whatever its callers hand
    it, `.tolist()` included, as numpy arrays have no `.to`; a move in a loop or a branch,
    which the copy may not read, is not enough by itself), a loader's batch (also through a
    progress bar bound to a name: `with tqdm(enumerate(loader)) as t:`, then `for _, (x, y)
    in t`; not a row whose loop only copies it to the device, `labels.to(device)` in an
    expression with `labels` never rebound in the function: the loader hands host tensors),
    a result of a helper handed device tensors (`outputs = self._calculate_loss(model,
    inputs)`), a training step's loss (a value `.backward()` is called on, also through a
    grad scaler, `scaler.scale(loss).backward()`, and the values it was computed from,
    wherever in the step they are copied: a meter's `target.detach().cpu()` before the
    backward, `target` bound once in the step and not moved onto the device there, which
    would show it handed over on the host), or a helper's parameter that a call in the
    module hands a device tensor (or a value the helper computes from such a parameter:
    `correct = pred.eq(target)`; not past a value it rebuilds on the host, `cam =
    torch.from_numpy(cam)` then `cam = transform.deaugment_mask(cam)`: that copy owes its
    callers nothing). Values with no such origin are not reported: a tokenizer's
    `return_tensors="pt"` output or a collate function's batch is built on the host, and
    `.cpu()` of it copies nothing (once moved, `encoding.to(device)`, also handed back by a
    helper of the module, its entries are device tensors: `inputs["input_ids"].tolist()`
    copies back what was just sent), nor does `.to("cpu")` of a torch op whose inputs are
    all host tensors (`torch.stack([torch. from_numpy(t.audio) for t in tracks])`: a
    comprehension's elements are what it makes); an object's attributes and a dict's
    collected values do not show their device. Nor is `.cpu()` (or `.to("cpu")`) of a name
    of unknown kind that the function moves with a statement alone
    (`prev_op.to(best_device)`, `layer.cuda()`, the result dropped): a tensor's move hands
    back a new tensor and leaves the old one where it was, so nobody writes it alone, while
    a module moves its parameters in place; its `.cpu()` after the work moves the module
    back (a quantiser's `layer.cpu()` per linear) and copies no value the step computed. A
    parameter annotated as a tensor (`tokens: torch.Tensor`) says what it holds, not where:
    in a nested or private helper, whose callers are all in the module, it is on the host
    when every call hands it a host value (`tokens=torch.tensor(result.tokens)`, a slice of
    one). An attribute built by a factory given no device stays a host tensor in every
    method when the only move of it runs off XLA (`if self.gpu_beam_blocking:
    self.partial_hyps = self.partial_hyps.cuda()`, a flag assigned `... and
    torch.cuda.is_available()`): `self.partial_hyps.tolist()` copies nothing there. A move
    under the function's own device choice (`use_cuda =
    next(self.model.parameters()).is_cuda`, then `if use_cuda: self.ranks =
    self.ranks.cuda()`, XLA305's finding) is the device path a port gives XLA, and counts. A
    helper of the module annotated to return a tensor (`-> Tensor`) whose every `return`
    builds it on the host (`torch.linspace(lo, hi, 2 * n + 1)[1::2]`, a view of a factory's
    tensor, its arithmetic with numbers, `edges[1:] / n`, or its methods given numbers,
    `.repeat_interleave(4)`) hands back a host tensor: `_bin_centers(0, 1,
    n).to(logits.device)` of a host `logits` copies nothing. Measured on the XLA CPU device:
    `.cpu().numpy()` of a tensor made on the host, 5 times, runs no graph and transfers
    nothing; a bare `.numpy()` of an XLA tensor copies nothing either, it raises
    (`TypeError: can't convert xla:0 device type tensor to numpy`), so where one is reported
    on a device tensor the port needs the `.cpu()` anyway.

    Writing a device tensor into an element of a tensor made on the host (`probs =
    torch.empty(n)` without a device, then `probs[i] = self.probability(rews1, rews2)`
    per fragment pair in a `forward`) copies the value to the host, as `.cpu()` would:
    reported at the write, where the written value is what a call makes of device
    tensors the function computed (a model's or a helper's output), or what a tensor
    method makes of one (`self.thresholds[i] = neg_scores[mask].max()` with `neg_scores =
    self.get_scores(...)`, once per relation). Not when that call is
    handed host values only (`self.probability(torch.from_numpy(a),
    torch.from_numpy(b))`) or the function's own parameters (a transform's `frames`,
    whose device its callers decide), nor a write into a tensor made on the device. A
    method annotated to return a tensor (`-> torch.Tensor`) returns one, however numeric
    its arithmetic looks (`noise * 0.5 + (1 - noise) * p`). So is an in-place copy into
    such a tensor, `self.buffer.copy_(x.bmm(x.mT))` in a forward hook with `self.buffer =
    torch.zeros(n, n)` made without a device, on the same evidence (not `copy_` into a
    tensor made on the device, nor of host values).

    A copy inside a warning about a checked value (the body of an `if` that only warns,
    `if err.max() > tol: log.warning(f"{err.cpu()}")`) runs when the value has gone wrong,
    and is not flagged; the test's own read is.

    A tensordict maps keys to tensors as `dict[str, Tensor]` does: a parameter annotated
    `TensorDictBase` (or `TensorDict`), and a `TensorDict(source=td, ...)` or `td.clone()`
    made from one, holds device tensors, so `reward = td.get(("next", "reward"))` then
    `reward.to("cpu")` in a loss module's `forward` copies every step. A plain mapping
    handed in (`batch: dict`) and a `TensorDict` built here from host values are not known
    to.

    Copies of the outputs of one operation in statements that follow each other
    (`values.cpu()` then `indices.cpu()` of one `torch.topk`) are one cause with one fix,
    reported once, at the first. Measured on the XLA CPU device, 5 steps: the two copies
    cost 15 executions and 10 device-to-host transfers, against 5 and none without them.
    The outputs of a network's forward (`paf, heatmap = self.model(data)`, `mean, logvar =
    net.encode(x)`: a value named a network, in camelCase too, `self.netNetwork`, or its
    method) are not one operation's: they are heads of one graph, and each copy executes it
    anew (measured on the XLA CPU device, two heads copied one by one: 2 executions a call,
    1 with a sync first), so each copy is a cause of its own.
    So are copies handed to one call as its arguments (`tree.update(ids.cpu(),
    probs.cpu())`, `top_k_accuracy(scores.detach().cpu().numpy(), labels.cpu().numpy(),
    k)`: `.numpy()` hands back the copy as it is; also through host arithmetic: `f(a=x.cpu()
    / n, b=y.cpu() / n)`), or formatted into one of its arguments by a tuple, `%` operand or
    f-string, through the methods applied to them (`pbar.set_description("%.2e %.2e" %
    (a.cpu().numpy(), b.cpu().numpy()))`): the call needs its inputs on the host, and
    moving it (or them) after the loop is one fix. So are copies handed back by one
    `return` (`return dist.sample().cpu().numpy(), {k: v.cpu().numpy() for k, v in
    info.items()}`): one caller receives them together; where that return's literal also
    reads a device tensor as a number (`return {"loss": loss.item(), "priority":
    td.abs().tolist()}`), XLA101 reports the return once, at the read, and the copy is
    not reported. So are copies bound together by one assignment (`power, scale =
    self.power.cpu(), self.scale.cpu()`): one statement, one fix. A branch taken where a
    device's text does not name CUDA (`if 'cuda' not in str(orig_device): logits =
    logits.cpu()`) is the branch an XLA host runs (its device's text is `xla:0`): its
    copies count there. Copies processed further on the host,
    each handed on as an argument of its own (`metric(y.cpu().numpy(),
    pred.cpu().numpy().astype("float64"))`), are reported each.

    A device tensor handed, in code that runs every step, to a function of another module
    of the project that copies that parameter to the host (`to_numpy(loss)` with `def
    to_numpy(t): return t.detach().cpu().numpy()` in `tools/torch_tools.py`, a static
    `ModelUtils.to_numpy(entropy)`, `from .data import to_numpy` re-exported by a package,
    or a method the class inherits from a class of another module, `self._convert_to_numpy(
    embeddings)` in `class BaseEmbedder(AbsEmbedder)`, or a method of an unannotated
    parameter named as the one project class of that name the imported modules define or
    re-export, `meter.update(preds)` with the project's `Meter`; the value a device tensor, or one
    computed from a device tensor by a call of unknown kind, `scores =
    self.model.compute_score(q, p)`, not what a copying helper hands back)
    costs the copy every step: the call is reported, naming the function and the file and
    line of its copy (not a copy of Python values only, one in a loop of that function,
    one in its branch for another device, `if mps: prediction = prediction.cpu()`, or one
    that function makes only without a parameter the call passes). Such calls handed to
    one call, directly or through an expression (`pck_accuracy(to_numpy(pred),
    to_numpy(gt), to_numpy(w) > 0)`), are one cause, reported at the first. Reads that
    are Python values (`.item()`, `float()`) are XLA101's.

    A copy of what a helper of the module is handed (`def update_meters(self, output,
    sample): output.detach().cpu()` kept for host meters, `actions.cpu().numpy()` handed
    back), or of a comparison or arithmetic of what it is handed (lpips'
    `compute_accuracy(d0, d1, judge)` copying `(d1 < d0).cpu().data.numpy()`), made where
    the helper is not per step by its own name or by what it is (a hook a framework
    calls every step: a detection head's `loss_by_feat`), is reported at each
    per-step call of the module that hands it a device tensor, naming the helper and the
    line of its copy, and not at the copy (README "Labelling": a conversion is the call's
    cause, where the caller can stop handing a device tensor); where no such call feeds it,
    at the copy. One finding per call; where the helper also reads the parameter as a
    number (`value.item()` for a scalar, `.cpu()` otherwise), the call is XLA101's. A copy
    of a value the helper computes itself (`self.model(x).cpu()`), or made in a loop
    statement of the helper (a slice per row), stays where it is.

    A lambda a function binds to a name and calls (`detach_to_cpu_ = lambda t:
    rearrange(t.detach().cpu(), "1 ... -> ...")`, then `map(detach_to_cpu_, (sequence,
    mask, reward))` or `detach_to_cpu_(x)`) is a helper written inline: its parameter
    holds what those calls hand it (device tensors, where one is and none is a host
    value), and it runs where they are, as a function of that name would. Its copy is
    reported once, at the lambda: one call, one cause. A loop that runs a training phase
    only under a long interval (`if time % update_timesteps == 0: self.learn(memories)`
    after each rollout step) is no epoch loop: each of its passes is a step, and a copy of
    the rollout's tensors there runs on every pass.

    ## Why is this bad?
    XLA records operations lazily and runs them as one compiled graph. Copying a tensor to
    the host needs its value, so the pending graph is compiled and executed right there and
    the result is transferred back: one extra execution and one device-to-host transfer per
    step, and the step's graph is cut in two. Unlike `.item()`, these copies show up in no
    `aten::` counter, only in the `TransferFromDeviceTime` metric, so they are easy to miss.

    ## Example
    ```python
    for x, y in loader:
        logits = model(x)
        loss = criterion(logits, y)
        loss.backward()
        optimizer.step()
        all_preds.extend(logits.argmax(-1).cpu().tolist())
    ```

    ## Use instead
    Keep results on the device while the loop runs and copy them once, after it:
    ```python
    for x, y in loader:
        logits = model(x)
        loss = criterion(logits, y)
        loss.backward()
        optimizer.step()
        all_preds.append(logits.argmax(-1).detach())
    preds = torch.cat(all_preds).cpu().tolist()
    ```
    If the host really needs the value every step (logging), read it in
    `xm.add_step_closure(...)`, which runs after the step's graph has executed.

    ## Fix safety
    No fix: where the value goes next decides the right rewrite, so this rule reports with a
    hint only.

    ## Runtime evidence
    5 steps of a small model on the XLA CPU device: a `.tolist()` mid-step costs 10
    executions and 5 device-to-host transfers; keeping the value as a tensor costs 5
    executions and no transfer, with identical results.
    """

    code = "XLA102"
    name = "host-transfer-in-hot-code"
    message = "`{call}` copies a device tensor to the host every step, forcing a graph execution"
    hint = "Keep the value on the device and copy it once after the loop, or in xm.add_step_closure"
    hot_only = True
    per_row_reads = True
    needs_torch = True
    # "import": a call of another project module's function that copies what it is handed.
    triggers = ("cpu", "numpy", "tolist", "import")

    elsewhere_message = (
        "`{argument}` is handed to `{helper}()`, which copies it to the host with `{read}` "
        "({file}:{line}) every step, forcing a graph execution"
    )
    helper_message = (
        "`{argument}` is handed to `{helper}()`, which copies it to the host with `{read}` "
        "(line {line}) every step, forcing a graph execution"
    )
    helper_hint = (
        "Hand the helper what it needs on the host once, after the loop, or keep its work on "
        "the device"
    )
    write_message = (
        "Writing a device tensor into `{host}`, a tensor on the host, copies it to the host "
        "every step, forcing a graph execution"
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._parameter_copies: list[_ParameterCopy] = []
        self._runs = ReadRuns()
        # Names unpacked together from one call (`values, indices = torch.topk(...)`), in
        # the function being walked: the outputs of one operation, by the call's id.
        self._outputs: dict[str, int] = {}
        # Names computed from parameters of the function being walked (`pred =
        # output.topk(k)[1]`), with those parameters: its callers show their device.
        self._from_params: dict[str, frozenset[str]] = {}
        # Names of the function being walked by the names their values were computed from,
        # and the names a `.backward()`ed value was computed from: a training step's loss
        # (`scaled = scaler.scale(loss / n); scaled.backward()` makes `loss` one).
        self._inputs: dict[str, frozenset[str]] = {}
        self._trained: set[str] = set()
        # Copies of a parameter annotated as a tensor, in a helper whose callers are all
        # here: judged by what those callers hand it (`_ParameterCopy.params`: that one).
        self._annotated_copies: list[_ParameterCopy] = []
        self._function_nodes: list[cst.FunctionDef] = []
        # Calls one of whose arguments was reported a copy (`update(a.cpu(), b.cpu())`).
        self._handed: set[int] = set()
        # Copies of a helper's parameters, reported at the per-step calls that hand them a
        # device tensor (`_helper_copy`), with the finding at the copy held back meanwhile.
        self._helper_copies: list[tuple[_ParameterCopy, PendingReport]] = []
        # Parameters a helper also reads as numbers (`value.item()`): XLA101's calls.
        self._number_reads: set[tuple[FunctionKey, str]] = set()
        # Copies of values of unknown kind met before the step's `.backward()`, held until
        # their function ends (`_hold_until_backward`): the function, the names copied,
        # the finding, and the call or `return` the copy is handed to (by id).
        self._held: list[tuple[cst.FunctionDef, frozenset[str], PendingReport, int | None]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self._function_nodes.append(node)
        self._outputs = {}
        self._from_params = {}
        self._inputs = {}
        self._trained = set()

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._held:
            self._release_held(node)
        super().leave_FunctionDef(node)
        if self._function_nodes:
            self._function_nodes.pop()

    def note_call(self, node: cst.Call) -> None:
        super().note_call(node)
        if isinstance(node.func, cst.Name) and self.ctx.qualified(node.func):
            return
        helper = self.calls.callee(node, self.ctx.function)
        if helper is None:
            return  # runs no helper of this module
        hosts = frozenset(
            id(arg.value)
            for arg in node.args
            if not arg.star and self.ctx.kind(arg.value) is Kind.HOST
        )
        self.calls.note_host_call(node, helper, hosts)

    def visit_Assign(self, node: cst.Assign) -> None:
        """`probs[i] = self.probability(r1, r2)` with `probs = torch.empty(n)`: an element
        write of a device tensor into a tensor on the host copies the value there."""
        target = node.targets[0].target if len(node.targets) == 1 else None
        if (
            type(target) is cst.Subscript
            and self.ctx.kinds.is_host_tensor(target.value)  # type: ignore[union-attr]
            and self.ctx.is_tensor(node.value)
            and self._handed_device_tensors(node.value)
        ):
            host = self.ctx.module.code_for_node(target.value)  # type: ignore[union-attr]
            message = self.write_message.format(host=spelled_argument(host))
            self.report(target, message, end_node=node.value)

    def _copy_into_host_tensor(self, node: cst.Call, func: cst.Attribute) -> None:
        """`self.buffer.copy_(out.bmm(out.mT))` with `self.buffer = torch.zeros(n)`: an
        in-place copy of a device tensor into a tensor on the host is a device-to-host
        copy, as an element write is (`visit_Assign`), on the same evidence."""
        source = node.args[0].value if node.args and not node.args[0].star else None
        if (
            source is not None
            and node.args[0].keyword is None
            and self.ctx.kind(func.value) is Kind.HOST
            and self.ctx.kinds.is_host_tensor(func.value)
            and self.ctx.is_tensor(source)
            and self._handed_device_tensors(source)
        ):
            host = self.ctx.module.code_for_node(func.value)
            message = self.write_message.format(host=spelled_argument(host))
            self.report(func.attr, message, end_node=node)

    def _handed_device_tensors(self, value: cst.BaseExpression) -> bool:
        """The written value is what a call makes of device tensors the function computed
        (a model's or helper's output, `self.probability(rews1, rews2)` with `rews1 =
        self.rewards(trans1)`): the evidence that it is on the device. A call handed only
        host values (`self.probability(torch.from_numpy(a), b_host)`) computes where they
        are; a name or arithmetic says less of where its value lives. So is what a tensor
        method makes of such a tensor (`neg_scores[mask].max()` with `neg_scores =
        self.get_scores(...)`), computed where that tensor is."""
        if type(value) is not cst.Call:
            return False
        func = value.func  # type: ignore[attr-defined]
        if (
            type(func) is cst.Attribute
            and func.attr.value in TENSOR_MEMBERS
            and self.ctx.is_tensor(func.value)
            and not self._of_a_parameter(func.value)
        ):
            return True
        return any(
            not arg.star and self.ctx.is_tensor(arg.value) and not self._of_a_parameter(arg.value)
            for arg in value.args  # type: ignore[attr-defined]
        )

    def _of_a_parameter(self, value: cst.BaseExpression) -> bool:
        """A parameter of the function, or a part of one (`frames[:, :, i]` in a
        transform, `frames: torch.Tensor`): its callers decide its device, and a tensor
        they fill on the host beside it is likely where they work."""
        root = _roots(value)
        return (
            len(root) == 1 and type(root[0]) is cst.Name and self.calls.is_param(root[0].value)  # type: ignore[attr-defined]
        )

    def leave_Assign(self, node: cst.Assign) -> None:
        if self.ctx.function is None:
            super().leave_Assign(node)
            return  # module level: no parameters, no step
        every, inputs = _names_in(node.value)
        # Before the targets are rebound. A value made on the host (`cam =
        # torch.from_numpy(cam)`, `x.cpu()`) lives there whatever device the parameters it
        # came from were on: what is computed from it next owes its callers nothing.
        sources = (
            frozenset()
            if self.ctx.kind(node.value) is Kind.HOST
            else self._parameters_in(node.value, every)
        )
        super().leave_Assign(node)
        for target in node.targets:
            for name in target_names(target.target):
                self._inputs[name] = inputs
                self._trained.discard(name)
                if sources:
                    self._from_params[name] = sources
                else:
                    self._from_params.pop(name, None)
                self._outputs.pop(name, None)
        if (
            len(node.targets) == 1
            and isinstance(node.value, cst.Call)
            and not self._runs_a_network(node.value)
        ):
            target = node.targets[0].target
            if isinstance(target, cst.Tuple | cst.List):
                names = [e.value.value for e in target.elements if isinstance(e.value, cst.Name)]
                if len(names) > 1:
                    self._outputs.update(dict.fromkeys(names, id(node.value)))

    def _returns_a_read(self, returned: cst.Return) -> bool:
        """Whether an entry of the literal a `return` holding a copy hands back (nested or
        not) reads a device tensor as a Python number (`.item()`, `float(t)`, `int(t)`):
        XLA101 reports the reads one `return` hands back once, and the copy beside them
        is the same cause."""
        pending: list[cst.BaseExpression] = [returned.value] if returned.value else []
        while pending:
            value = pending.pop()
            if type(value) in RETURNED_LITERALS:
                pending.extend(element.value for element in value.elements)  # type: ignore[attr-defined]
                continue
            if type(value) is not cst.Call:
                continue
            func = value.func
            if type(func) is cst.Attribute and func.attr.value == "item" and not value.args:
                if self.ctx.is_tensor(func.value):
                    return True
            elif (
                type(func) is cst.Name
                and func.value in ("float", "int")
                and len(value.args) == 1
                and value.args[0].keyword is None
                and self.ctx.is_tensor(value.args[0].value)
            ):
                return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        self.note_call(node)
        self.report_read_elsewhere(node)
        func = node.func
        self._note_number_read(node)
        if isinstance(func, cst.Attribute) and func.attr.value == "backward":
            self._note_backward(func.value)
        if isinstance(func, cst.Attribute) and func.attr.value == "copy_":
            self._copy_into_host_tensor(node, func)
            return
        if not isinstance(func, cst.Attribute) or func.attr.value not in _TRANSFERS:
            return
        method = func.attr.value
        parent = self.ctx.parent
        if isinstance(parent, cst.Attribute) and parent.attr.value == "item":
            return  # `t.cpu().item()` is one read of `t`: XLA101 reports it
        if method == "to":
            if not self.ctx.kinds.moves_to_cpu(node):
                return
            spelled = f".to({self._arguments(node)})"  # as written: `.to(torch.device("cpu"))`
        else:
            spelled = f".{method}()"
        receiver = func.value
        positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        if method != "to" and positional:
            # `d2l.numpy(x)`: a namespace's function (the tensor methods take no positional
            # argument), which copies what it is handed.
            receiver = positional[0]
        elif method == "cpu" and self._names_a_device():
            return  # `to(x, d2l.cpu())`: the device to move to, not a copy
        kind = self.ctx.kind(receiver)
        if (
            kind is Kind.UNKNOWN
            and method in ("cpu", "to")
            and type(receiver) is cst.Name
            and self._function_nodes
            and moved_in_place(self._function_nodes[-1], receiver.value)
        ):
            return  # `prev_op.to(dev)` alone, then `prev_op.cpu()`: a module moved back
        message = self.message.format(call=spelled)
        # The receiver of `.numpy()` in `x.cpu().numpy()` is HOST: the chain reports once.
        if (
            kind is Kind.TENSOR
            or (
                kind is Kind.UNKNOWN
                and _TRANSFERS[method]
                and self.ctx.imports.binds("torch")
                and (
                    self.ctx.kinds.computed_from_tensors(receiver)
                    or any(
                        isinstance(r, cst.Name) and r.value in self._trained
                        for r in _roots(receiver)
                    )
                )
            )
            or (kind is Kind.UNKNOWN and self._moved_here(receiver, node))
        ):
            # `values.cpu()` then `indices.cpu()` of one `topk`: one cause.
            repeat_of = self._runs.previous(
                self._outputs_root(receiver), self.ctx.ancestors(), func.attr
            )
            if kind is Kind.TENSOR and self.ctx.kinds.tensor_by_use(computed_root(receiver)):
                # A parameter known as a tensor only by its use: its callers say where
                # it lives, as for one of unknown kind.
                self._defer_parameter_copy(func.attr, node, receiver, message)
                return
            if kind is Kind.TENSOR and self._defer_annotated_copy(
                func.attr, node, receiver, message
            ):
                return
            handed_to = consuming_call(node, self.ctx.ancestors())
            if handed_to is not None:
                if id(handed_to) in self._handed:
                    return  # `update(ids.cpu(), probs.cpu())`: one call's inputs, one cause
                self._handed.add(id(handed_to))
            returned = _returned_by(self.ctx.ancestors())
            if returned is not None:
                if id(returned) in self._handed:
                    return  # `return a.cpu().numpy(), b.cpu().numpy()`: one cause
                if self._returns_a_read(returned):
                    # `return {"loss": loss.item(), "priority": td.abs().tolist()}`: the
                    # return's host values are one cause, XLA101's finding at its read.
                    self._handed.add(id(returned))
                    return
                self._handed.add(id(returned))
            together = _assigned_together(self.ctx.ancestors())
            if together is not None:
                if id(together) in self._handed:
                    return  # `a, b = x.cpu(), y.cpu()`: bound together, one cause
                self._handed.add(id(together))
            # From the method name: in a chain split over lines, that is the line to blame.
            self.report(func.attr, message, end_node=node, repeat_of=repeat_of)
            self._helper_copy(func.attr, node, receiver, message)
        elif kind is Kind.UNKNOWN and _TRANSFERS[method] and self.ctx.imports.binds("torch"):
            self._defer_parameter_copy(func.attr, node, receiver, message)
            self._hold_until_backward(func.attr, node, receiver, message)

    def _moved_here(self, receiver: cst.BaseExpression, node: cst.Call) -> bool:
        """`seqlens = seqlens.to(self.device_name)`, then `seqlens.tolist()`: a value the
        function itself moved onto the device (`host_arguments.moved_here`) is a device
        tensor when copied back, whatever it was handed (a loader's host batch, a value of
        unknown kind); only tensors (and modules, known as such) have `.to(device)` and
        `.cpu()`, and numpy arrays have no `.to`, so `.tolist()` counts too."""
        if not self._function_nodes or not self.ctx.imports.binds("torch"):
            return False
        return moved_here(self._function_nodes[-1], node, receiver)

    def _hold_until_backward(
        self, attr: cst.CSTNode, node: cst.Call, receiver: cst.BaseExpression, message: str
    ) -> None:
        """`meter.update(out, target.detach().cpu())` before the step's
        `loss.backward()`, `loss` computed from `target`: a value the training step's loss
        is computed from is on the device wherever in the step it is copied, not only
        after the `.backward()` the walk meets later. Held until the function ends, and
        reported if its name (bound once in the function, not a parameter: the same value
        at the copy and in the loss) is then among the loss's inputs (`_trained`). A name
        the function moves onto the device itself (`crit(out, labels.to(device))`) is
        handed in on the host, and its earlier copy copies nothing."""
        function = self._function_nodes[-1] if self._function_nodes else None
        if function is None or self.ctx.function is None:
            return
        counts = binding_counts(function)
        names = frozenset(
            root.value
            for root in _roots(receiver)
            if type(root) is cst.Name
            and root.value not in _OBJECT_NAMES
            and root.value not in self._trained
            and counts.get(root.value) == 1
            and not self.calls.is_param(root.value)
        )
        if not names or _moved_in(function, names):
            return
        before = len(self.reports)
        self.report(attr, message, end_node=node)
        if len(self.reports) == before:
            return
        ancestors = list(self.ctx.ancestors())
        handed_to = consuming_call(node, iter(ancestors))
        returned = _returned_by(ancestors)
        together = handed_to if handed_to is not None else returned
        self._held.append(
            (function, names, self.reports.pop(), None if together is None else id(together))
        )

    def _release_held(self, function: cst.FunctionDef) -> None:
        """Report the copies `_hold_until_backward` held in `function` whose values the
        step's loss turned out to be computed from; one finding a call or `return`."""
        kept = []
        for held in self._held:
            node, names, pending, together = held
            if node is not function:
                kept.append(held)
                continue
            if not names & self._trained:
                continue
            if together is not None:
                if together in self._handed:
                    continue
                self._handed.add(together)
            self.reports.append(pending)
        self._held = kept

    def _note_backward(self, value: cst.BaseExpression) -> None:
        """`scaled.backward()`: `scaled` and every name it was computed from here hold the
        step's loss, computed on the device with the model; so does the loss a grad scaler
        scales for its backward (`scaler.scale(loss).backward()`)."""
        if (
            type(value) is cst.Call
            and type(value.func) is cst.Attribute
            and value.func.attr.value == "scale"
            and value.args
            and not value.args[0].star
        ):
            value = value.args[0].value
        stack = [r.value for r in _roots(value) if isinstance(r, cst.Name)]
        stack = [name for name in stack if name not in _OBJECT_NAMES]
        while stack:
            name = stack.pop()
            if name not in self._trained:
                self._trained.add(name)
                stack.extend(self._inputs.get(name, ()))

    def _runs_a_network(self, call: cst.Call) -> bool:
        """`self.model(data)`, `net.encode(x)`: a network's forward (a value named a
        model, or its method, handed something), whose outputs (`paf, heatmap =
        self.model(data)`) are heads of one graph, not one operation's outputs: each copy
        executes that graph anew (measured on the XLA CPU device, two heads copied one by
        one: 2 executions a call, 1 with a sync first), and is a cause of its own."""
        return runs_a_named_model(call)

    def _outputs_root(self, receiver: cst.BaseExpression) -> str | None:
        """The operation whose outputs `receiver` is one of (a name unpacked from its call,
        through methods that keep the value: `indices.detach()`), by its call's id."""
        while (
            isinstance(receiver, cst.Call)
            and isinstance(receiver.func, cst.Attribute)
            and receiver.func.attr.value in _SAME_VALUE
        ):
            receiver = receiver.func.value
        if isinstance(receiver, cst.Name) and receiver.value in self._outputs:
            return f"outputs of {self._outputs[receiver.value]}"
        return None

    def on_device(self, value: cst.BaseExpression) -> bool:
        """A device tensor, or a value computed from one by a helper (`model(x).mean()`
        with `model` of unknown kind): what a caller hands a helper's parameter."""
        kind = self.ctx.kind(value)
        return kind is Kind.TENSOR or (
            kind is Kind.UNKNOWN and self.ctx.kinds.computed_from_tensors(value)
        )

    def _defer_parameter_copy(
        self, attr: cst.CSTNode, node: cst.Call, receiver: cst.BaseExpression, message: str
    ) -> None:
        """`def collect(scores): store.append(scores.cpu())`: whether `scores` is on the
        device is its callers' to show, known once the whole module has been walked."""
        params: set[str] = set()
        for root in _roots(receiver):
            params |= self._parameters_in(root)
        function = self.ctx.function
        if not params or function is None:
            return
        if self.ctx.runs_without_xla or self.ctx.under_sparse_interval:
            return  # what `report` would drop, checked now: the site is judged later
        direct = bool(self._handed_parameters(computed_root(receiver)))
        direct = direct and converts_handed(
            function, node, self.ctx.ancestors(), self.ctx.enclosing_loops, self.ctx.site().hook
        )
        self._parameter_copies.append(
            _ParameterCopy(
                attr, node, message, self.ctx.site(), function, frozenset(params), direct
            )
        )

    def _parameters_in(
        self, value: cst.BaseExpression, names: set[str] | None = None
    ) -> frozenset[str]:
        """The parameters of the function being walked that `value` is computed from,
        itself or through the names it uses (`names`: every name under it, if known)."""
        found: set[str] = set()
        if type(value) is cst.Name:
            names = {value.value}
        elif names is None:
            names = names_under(value)
        for name in names:
            if self.calls.is_param(name):
                found.add(name)
            else:
                found |= self._from_params.get(name, frozenset())
        return frozenset(found)

    def _defer_annotated_copy(
        self, attr: cst.CSTNode, node: cst.Call, receiver: cst.BaseExpression, message: str
    ) -> bool:
        """`def new_segment(*, tokens: torch.Tensor): tokens.tolist()` in a nested or
        private helper: the annotation says a tensor, not where it lives. Every call of the
        helper is in this module, so what they hand it decides (`tokens=torch.tensor(ids)`
        everywhere: a host tensor, no copy from the device). Deferred to the module's end;
        False where the receiver is no such parameter."""
        roots = _roots(receiver)
        function = self.ctx.function
        if len(roots) != 1 or not isinstance(roots[0], cst.Name) or function is None:
            return False
        name = roots[0].value
        if not self._function_nodes or not self.calls.is_param(name):
            return False
        node_def = self._function_nodes[-1]
        if not (len(self._function_nodes) > 1 or _private(node_def.name.value)):
            return False  # a public function's callers may be anywhere
        param = parameter(node_def, name)
        if param is None or param.annotation is None:
            return False
        if self.ctx.runs_without_xla or self.ctx.under_sparse_interval:
            return True  # what `report` would drop, checked now: the site is judged later
        self._annotated_copies.append(
            _ParameterCopy(attr, node, message, self.ctx.site(), function, frozenset({name}))
        )
        return True

    def _note_number_read(self, node: cst.Call) -> None:
        """`value.item()`, `float(value)` of a parameter in a helper: a call handing it a
        device tensor is XLA101's to report, once, where the helper also copies it."""
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "item" and not node.args:
            value = func.value
        elif type(func) is cst.Name and func.value in ("float", "int") and len(node.args) == 1:
            value = node.args[0].value
        else:
            return
        function = self.ctx.function
        if function is not None:
            for root in _roots(value):
                for param in self._parameters_in(root):
                    self._number_reads.add((function, param))

    def _helper_copy(
        self, attr: cst.CSTNode, node: cst.Call, receiver: cst.BaseExpression, message: str
    ) -> None:
        """A copy of what a helper is handed (`def update_meters(self, output, sample):
        output.detach().cpu()`), not a check of it and not in a function per step by its
        own name: the finding just reported waits for the calls, and goes to each per-step
        call that hands it a device tensor (README "Labelling": a conversion is the call's
        cause), staying at the copy only where no such call does."""
        function = self.ctx.function
        if function is None:
            return
        params = self._handed_parameters(computed_root(receiver))
        if not params:
            return
        if not converts_handed(
            function, node, self.ctx.ancestors(), self.ctx.enclosing_loops, self.ctx.site().hook
        ):
            return
        if not self.reports or self.reports[-1].node is not attr:
            return
        pending = self.reports.pop()
        copy = _ParameterCopy(attr, node, message, pending.site, function, params, True)
        self._helper_copies.append((copy, pending))

    def _handed_parameters(self, root: cst.BaseExpression) -> frozenset[str]:
        """The parameters a copied value is of: the parameter itself (through its own
        methods), or a comparison or arithmetic of parameters and literals (lpips'
        `compute_accuracy(d0, d1, judge)` copying `(d1 < d0).cpu()`), the value the helper
        is handed, compared; empty for anything else."""
        if type(root) is cst.Name:
            return frozenset({root.value}) if self.calls.is_param(root.value) else frozenset()
        if isinstance(root, cst.Comparison):
            operands = [root.left, *(c.comparator for c in root.comparisons)]
        elif isinstance(root, cst.BinaryOperation):
            operands = [root.left, root.right]
        else:
            return frozenset()
        found: set[str] = set()
        for operand in operands:
            if isinstance(operand, cst.Integer | cst.Float):
                continue
            params = self._handed_parameters(computed_root(operand))
            if not params:
                return frozenset()
            found |= params
        return frozenset(found)

    def _calls_handing(self, copy: _ParameterCopy) -> list[tuple[HelperCall, cst.BaseExpression]]:
        """The per-step calls that hand one of the copied parameters a device tensor."""
        signature = self.calls.signature(copy.function)
        if signature is None:
            return []
        found = []
        for call in self.calls.calls:
            if call.helper != copy.function or not self.ctx.hot.is_hot(call.site):
                continue
            bound = bind(call.node, signature) or {}
            for param in sorted(copy.params):
                value = bound.get(param)
                if value is not None and id(value) in call.tensors:
                    found.append((call, value))
                    break
        return found

    def _report_at_calls(self, copy: _ParameterCopy, reported: set[int]) -> bool:
        """Report the copy at the per-step calls that feed it (one finding a call); False
        where there are none."""
        calls = self._calls_handing(copy)
        if not calls:
            return False
        numbers = any((copy.function, p) in self._number_reads for p in copy.params)
        positions = positions_of(self.ctx.module)
        for call, value in calls:
            if id(call.node) in reported or numbers:
                continue
            reported.add(id(call.node))
            code = self.ctx.module.code_for_node(value)
            spelled = copy.message.split("`")[1]
            message = self.helper_message.format(
                argument=spelled_argument(code),
                helper=copy.function.name,
                read=spelled,
                line=positions[copy.attr].start.line,
            )
            self.report(call.node, message, hint=self.helper_hint, site=call.site)
        return True

    def leave_Module(self, node: cst.Module) -> None:
        reported: set[int] = set()  # calls reported for a helper's copies, by id
        for copy, pending in self._helper_copies:
            if not self._report_at_calls(copy, reported):
                self.reports.append(pending)
        for copy in self._parameter_copies:
            if not any(self.calls.tensor_sites(copy.function, p) for p in sorted(copy.params)):
                continue
            if not copy.direct or not self._report_at_calls(copy, reported):
                self.report(copy.attr, copy.message, end_node=copy.call, site=copy.site)
        for copy in self._annotated_copies:
            (param,) = copy.params
            if not self.calls.host_only(copy.function, param):
                self.report(copy.attr, copy.message, end_node=copy.call, site=copy.site)

    def _names_a_device(self) -> bool:
        """The call is a later argument of a `to(...)` call: `d2l.to(value, d2l.cpu())`."""
        ancestors = self.ctx.ancestors()
        arg = next(ancestors, None)
        call = next(ancestors, None)
        if not isinstance(arg, cst.Arg) or not isinstance(call, cst.Call):
            return False
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        return name == "to" and (arg.keyword is not None or call.args[0] is not arg)

    def _arguments(self, node: cst.Call) -> str:
        code = self.ctx.module.code_for_node
        return ", ".join(
            f"{arg.keyword.value}={code(arg.value)}" if arg.keyword else code(arg.value)
            for arg in node.args
        )


def _roots(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The values a chain of methods, elements and attributes starts from: `scores` of
    `scores[:, 0].detach().cpu()`; for a namespace's copy function (`d2l.to(value, d)`),
    what it is handed too."""
    while True:
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            positional = [a.value for a in expr.args if a.keyword is None and not a.star]
            if expr.func.attr.value in _TRANSFERS and positional:
                return [*_roots(expr.func.value), *_roots(positional[0])]
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute):
            expr = expr.value
        else:
            return [expr]


def _moved_in(function: cst.FunctionDef, names: frozenset[str]) -> bool:
    """Whether `function` moves one of `names` onto the device (`labels.to(device)`,
    `labels.cuda()`): a value handed in on the host."""
    for call in descendants(function.body):
        if (
            type(call) is cst.Call
            and type(call.func) is cst.Attribute  # type: ignore[attr-defined]
            and call.func.attr.value in ("to", "cuda")  # type: ignore[attr-defined]
            and type(call.func.value) is cst.Name  # type: ignore[attr-defined]
            and call.func.value.value in names  # type: ignore[attr-defined]
            and moved_here(function, call, call)
        ):
            return True
    return False


def _private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


# What a method's attributes hang off: not values of the step.
_OBJECT_NAMES = frozenset({"self", "cls"})


def _names_in(value: cst.BaseExpression) -> tuple[set[str], frozenset[str]]:
    """Every name under a value (`names_under`), and the variables it is computed from:
    those names less the attributes' names (`scale` of `self.scaler.scale(loss)`) and the
    object a method's attributes hang off (`self`). One walk for both: every assignment
    of a function asks."""
    every: set[str] = set()
    names: set[str] = set()
    attributes: set[int] = set()
    for node in descendants(value):  # a parent comes before its children
        if type(node) is cst.Attribute:
            attributes.add(id(node.attr))  # type: ignore[attr-defined]
        elif type(node) is cst.Name:
            every.add(node.value)  # type: ignore[attr-defined]
            if id(node) not in attributes:
                names.add(node.value)  # type: ignore[attr-defined]
    return every, frozenset(names) - _OBJECT_NAMES
