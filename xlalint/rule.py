"""The base class every xlalint rule derives from.

A rule states what it is (code, name, message, docs), which source text can contain it
(`triggers`, a cheap prefilter), and which libcst nodes it visits. It reports findings
through `self.report`; it never prints, reads files or resolves config: the engine does.
Shared reasoning (hot code, tensor-ness, import aliases, CUDA guards) is asked of
`self.ctx`, never re-derived inside a rule.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from xlalint.analysis.xla_api import respell
from xlalint.diagnostics import Applicability, FixAvailability

if TYPE_CHECKING:  # libcst only in annotations: a warm run never imports it
    import libcst as cst

    from xlalint.context import FileContext, Site

DOCS_URL = "https://github.com/xlalint/xlalint/blob/main/docs/rules/{code}.md"

# What `Rule.report` leaves out for every host-sync rule (family 1, hot code only); their
# docs end "What it does" with it, so it is written once, beside the code that decides it.
HOST_SYNC_REACH = """\
Not reported: code an XLA host never reaches (a branch for CUDA or another accelerator,
or under a flag CUDA decides: not one this file only ever clears, `self._use_cached = False`,
which the class's users turn on,
or for another framework in a library written for several (`elif backend_name ==
"paddle":`),
code after `assert device.type == "cuda"`, one where a test for XLA failed such as `if
not self.tpu:` or a predicate of this file that returns False on XLA before anything
else (`if self._use_closures():` with `if backend == "xla": return False` first), and a
function or private method this file calls only from such branches; one also handed on
as a callback, or exported in `__all__`, may run anywhere), and code under a log
interval known to be long (`if step % 100 == 0:`, also `or` one value of the step it
divides, `is_divisible(step, every) or step == last_step`, or of a name that moves with
it, `batch_count = i + 1` then `i % 100 == 0 or batch_count == num_batches`, or a
local flag that ends the loop where it holds, `stop or step % 100 == 0` before `if stop:
break`, or past
`if step % every != 0 or ...: return` with such an interval, a demo hook's early exit;
an interval this file sets to 20 or more, by default too, also a setting read with such a default as
`kwargs.get("log_interval", 50)` or a command-line option the project's parser declares
with one, `args.logging_steps` beside `add_argument("--logging_steps", default=100)`,
or a field of a settings object whose annotated class declares such a default,
`self.params.logging_steps` with `args: TrainingParams` and `logging_steps: int = 50`,
or that every call of its function here hands in so, as `fit(..., log_interval=100)`
calling `_train_epoch(loader, log_interval)`, a fraction of a
loader's length such as `len(loader) // 10`, or an interval named for checkpoints or
evaluations such as `steps_per_checkpoint` or `cfg.eval_every`, whatever its value: no
run saves or evaluates a model every step), or gated by wall-clock time (`if
time.time() - self.last_log_time > interval:`, directly or through a local flag: once
per so many seconds, over many steps; `time.time() - start < warmup` is taken on every
step until then), or in a branch that clears its own flag
(`if first: ...; first = False`) or that fills state of the instance it finds empty
(`if self.initial_task_loss is None: self.initial_task_loss = [l.item() for l in
losses]`: the first step only; not where the function sets it again beside the branch,
`self.x = None`) or that tests one value of a counter the loop raises on every pass (`if
state["n_iter"] == 1:` beside `state["n_iter"] += 1`: taken on one pass; a local count
started again on every call of a per-step function, or raised only on some passes, is
not), or that tests one value of a counter kept across calls that its function raises on
every call, outside its loops (`if group["step"] == 0:` in an optimizer's `step` doing
`group["step"] += 1`, `if self.calls == 0:` in a `forward` doing `self.calls += 1`:
taken on one call; a local count, or an entry of a dict the function builds, starts over
on every call and is not), or that flips a switch kept across calls to a constant,
itself or through a local it sets (`next_lr = v.item()`, then `if next_lr is not None:
group["phase"] = "sgd"`), behind an exit that leaves once the switch holds it (`if
group["phase"] == "sgd": ...; continue`: taken on one step), or that sets its counter
back to zero when it reaches a bound known to be long (`if self._growth_step ==
self._growth_interval: self._growth_step = 0` with `growth_interval=1000`: once per so
many steps), or past an early `return` of every batch but the first (`if ... or
batch_idx > 0: return`, `batch_idx` handed to the function: a plot of the first batch,
once per epoch; `if batch_idx == 0: return` leaves the others per step), and functions
of this file called only from there (or from `__init__`), also one per step by its name
alone (`valid_step` called as `if not (step % self.validate_every_step):
self.valid_step(dl)`; not `forward` or `step`, which `__call__` or a framework runs),
with the passes of their loops where every call is under the interval (a validation pass
over a few batches every 100 steps; not a loop `main` runs once): one sync every so many
steps is amortised over them; a loop of theirs whose passes step an optimizer (PPO's
`learn(memories)` called every `update_timesteps` rollout steps) trains on every pass,
and its passes are steps of their own, as are the other passes of the loop that calls it
there. A loop over a loader inside the interval's own body (`for
valid_batch in self.valid_dataloader:` under `if divisible_by(self.steps,
self.valid_every):`) walks a whole validation set: its passes are steps of their own.
An interval that may be 1
(`args.log_interval`, a default of 1, one caller passing 1) is per step. A block inside
a loop that ends by leaving it (`if step + 1 >= max_steps: ...; break`, or `return`) runs
once per run of that loop, not on every pass;
a read in the test that decides to leave, or before the `break` of a loop nested in the
step, still runs every step, as does a loop whose own body ends in `return` (a retry
loop). A loop over a dict's entries (also of a dict an attribute holds, `for key in
self.metrics`, or some of them picked by a comprehension, `for key in [k for k in
self.metrics if k.startswith(mode)]`) runs once per entry where the code around it runs,
and is per step only where that code is. A loop that draws a figure and trains nothing
(`for ax, img in zip(axes, imgs): ax.imshow(...)`) runs once per item of the figure, and
a loop over trials or folds (`range(number_of_trials)`) runs a whole training per pass,
and a loop over a count of independent runs (`for trunk_idx in range(num_trunk_samples):
cands.append(fold(...))`, no item picked by the index) whose passes only call a function
of the file that runs a step loop of its own (a sampler's denoising steps) runs a whole
run per pass: none makes code per step by itself. Nor does a loop of a method that runs
when its object is built (`__init__`, or one only such methods call as `self.m(...)`: a
flow's `self.passes = self._dag_diameter(adjacency)` walking the graph's generations in a
`while`) that walks no loader and trains, samples or steps nothing: whatever it counts,
it runs once per object. The exception a `raise` statement builds (`raise
ValueError(f"found {x.max().item()}")`) and an `assert`'s message (`assert ok,
dt.item()`) are built only on the error path; the assertion's test runs every time. So
does a handler that recovers from a failed computation (`except RuntimeError:` around a
solve retried on the CPU with `C.to("cpu")`, `except torch.linalg.LinAlgError:`, an
out-of-memory error): one that catches anything, or a `StopIteration`, `KeyError`,
`TypeError` or `NotImplementedError` that code raises to steer, may run every step and is
reported. Code past an exit that an earlier `assert` settles never runs and is not
reported: after `assert not exists(eos)`, a loop's `if not exists(eos): continue` is
taken on every pass, so what follows it in the loop
body is dropped."""
# How every host-sync rule tells a tensor from a Python value where it is read (kept by the
# walk in `context.py`, `analysis/tensors.py` and `analysis/type_tests.py`): written once.
HOST_SYNC_VALUES = """\
What is a tensor where it is read: a name has the kind of its latest binding, except that
after an `if` whose every branch that goes on rebinds it, some to tensors and the others
to Python values (`if step == 0: sigma2 = 0`, `elif ...: sigma2 = 1 - alpha`), it is a
tensor. A type test makes a name a Python value where the test is known to hold: the body
of `if isinstance(step, int):` or `if type(step) is int:`, an `else` or `elif` after
`type(step) is not int`, the code after `if not isinstance(step, int): return` (or
`continue`, `raise`) and after `assert isinstance(step, int)`, the right side of
`isinstance(step, int) and ...`, and a collection after `assert all(isinstance(s, str)
for s in keys)`. A test against a container type (`isinstance(losses, tuple)`) or a
failed tensor test says nothing: a tuple may hold tensors. A per-step function's
unannotated parameter named as a count or an index (`batch_idx`, `epoch_num`,
`batch_no`, `unet_number`, `step_counter`) is a Python int, one its function's docstring
declares a Python scalar (`target_is_real (bool): ...`, NumPy's `reverse : bool`,
Sphinx's `:type swap: bool`; not `bool | Tensor`) is that value, and so is an attribute so
named that no tensor has, of a value taken for one (`batch_graphs.batch_size`,
`data.num_graphs`), and one named as a model (`compute_loss(self, model, inputs)`) is
the model: `model.training` is its flag; one taken for a tensor only because of
where it is, is a Python number from a range check of it (`assert 1 <= stage <=
self.num_stages`, `if stage >= len(self.stages):`) to the end of its block, and is no
tensor at all where the function calls on it, or on an element a loop takes from it, a
method that neither a tensor nor a dict or list has (a DGL graph's `g.num_nodes()`, an
RDKit molecule's `mol.GetAtoms()` in `for mol, nodes, _ in cand_batch:`): its counts,
indexes and the arithmetic on them are Python values; one the function slices with a
negative step (`image[:, :, ::-1]`, which torch refuses) is a numpy array, on the host. A method
the class defines (`self.restore_model(path)`) is a method, not a submodule, whatever its
name; what a method of the class returns when every `return` gives tensors (a noise
schedule's `self.alpha_bar(step)`) is a tensor in its other methods, and so is what a
method or a function of the file annotated to return a tensor (`def _compute_loss(self,
batch) -> torch.Tensor`) hands back, wherever it is defined. Calling a sub-module of a
class of this file whose `forward`, defined above, returns only Python values
(`self.add_node_agent(a)` with `return bool(action == self.stop)`) gives a Python value.
A model wrapped for data parallelism (`DistributedDataParallel(model)`, `DataParallel`,
`FullyShardedDataParallel`) is a module like the model: calling it gives tensors, and a
flag read off it (`model.module.aux_loss`) is no tensor.
After `if isinstance(v,
torch.Tensor): v = v.to("cpu")` the value is on the host whichever way the test went."""
# How a compile cost (a data-dependent shape) reaches library code: written once for the
# rules that declare `per_call`.
PER_CALL_REACH = """\
A function that computes on tensors handed to it (a parameter annotated as a tensor:
`preds: Tensor`, or as one record of this file whose fields are declared tensors: a beam
search's `running_hyps: BatchHypothesis`; one it uses as a tensor and does not rebind,
handing it to a torch operation that takes only tensors or calling a method only tensors
have on it: `x.masked_fill(mask < 1, nan)`, `torch.nan_to_num(x)`; a field of one used so:
`torch.nonzero(assign_result.gt_inds > 0)`, `priors = pred_instances.priors` then
`priors.new_full(...)`; or one it hands to a function of this file that does, as a
scaler's statistics function picked from a table by name hands `x` to `masked_mean(x=x,
...)`) and that this file never calls counts as run on every call with new data, and so
do the functions of this file it calls: library code whose per-step caller is in
another module (a metric's input formatting, called from the metric's `update`; a
detector's label assignment, per image). A new shape compiles anew on every such call,
whoever makes it. Where this file calls the function, its calls here decide (a
`finalize(tokens: Tensor)` called once after a decoding loop is not per call, nor is a
detector's `fit_features(z, y)` called from `fit(self, data_loader)`, which hands it the
features of every batch at once: one call per pass over the data), and
`__init__`, `setup`, functions that write a checkpoint or draw a figure are not per call
(nor the loops of a method only they call that train, sample or step nothing), nor is an
initialiser this file never calls (a mixture's `initialize(x, strategy)` seeding its
components by k-means, `reset_parameters(data)`: its callers elsewhere run it once; one
this file calls from `forward` is as per call as its caller) or what only it calls,
and neither is the exception a `raise` statement builds (`torch.unique(t)` in the message)
nor an `assert`'s message.
A host read there (XLA101-XLA104) costs one sync per call, and is reported only where the
function runs every step."""
_WHY = "\n\n## Why is this bad?\n"

DOC_SECTIONS = (
    "What it does",
    "Why is this bad?",
    "Example",
    "Use instead",
    "Fix safety",
)


@dataclass(frozen=True)
class NodeFix:
    """A fix stated on libcst nodes: each `old` node's source is replaced by `new`'s.

    `new` may be a node or literal source text. The engine turns these into text edits once
    positions are known, so everything outside the replaced nodes stays byte for byte.
    """

    applicability: Applicability
    description: str
    replacements: tuple[tuple[cst.CSTNode, cst.CSTNode | str], ...]
    required_imports: tuple[str, ...] = ()
    group: str | None = None  # set by the engine: fixes that must go together
    # Moves a value (data, a model, a loader's batches) to the XLA device: safe only where
    # every value it meets ends up there too (see `engine.group_device_fixes`).
    moves_to_xla: bool = False


@dataclass(frozen=True)
class PendingReport:
    """A finding as a rule states it, before positions, hot-code and noqa are resolved."""

    rule: Rule
    node: cst.CSTNode
    end_node: cst.CSTNode
    message: str
    fix: NodeFix | None
    hint: str | None
    site: Site
    # Judged as `per_call` rules are (`HotCode.is_hot(per_call=True)`), whatever the rule.
    per_call: bool = False
    # A cost paid on every call of its function, whoever calls it (a device round trip of
    # host values in a function that runs a model): kept whatever hot code says.
    every_call: bool = False
    # A read that repeats this earlier one (`analysis/host_reads.ReadRuns`): one cause,
    # shown only where a `# noqa` suppresses the earlier read.
    repeat_of: cst.CSTNode | None = None


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    fix_availability: ClassVar[FixAvailability] = FixAvailability.NONE
    fix_applicability: ClassVar[Applicability | None] = None
    default_enabled: ClassVar[bool] = True
    # Report only where the code runs every step (families 1 and 2 of the catalogue).
    hot_only: ClassVar[bool] = False
    # With `hot_only`: the cost is paid on every call with new data (a compile for a
    # data-dependent shape), so a function that computes on tensors it is handed counts
    # as hot whoever calls it (`HotCode.is_hot(per_call=True)`). A host read there costs
    # one sync per call, which matters only per step.
    per_call: ClassVar[bool] = False
    # With `hot_only`, outside family 1: the cost is paid each time the code runs (a
    # host-to-device copy), so, as a host sync, it is amortised under a long interval
    # (`if step % 2000 == 0:`); a recompile is not.
    amortised: ClassVar[bool] = False
    # A file runs this rule only if its text contains one of these strings.
    triggers: ClassVar[Sequence[str]] = ()
    # The findings rest on values being tensors, which only code that uses torch has: the
    # rule runs only on files whose text mentions `torch` (not on the standard library's
    # `if m:` over module objects, or `float(a)` in number code).
    needs_torch: ClassVar[bool] = False
    hint: ClassVar[str | None] = None
    # Codes of less specific rules that this rule's finding replaces where both report the
    # same span: one finding per cause (`torch.cuda.synchronize()` raises on an XLA host,
    # which says more than that it blocks every step). Only enabled rules take part, so
    # ignoring the specific rule brings the general finding back.
    supersedes: ClassVar[tuple[str, ...]] = ()
    # Codes whose findings inside this rule's finding's span are the same cause: the
    # CUDA device query in the arguments of the `.cuda(...)` move it steers
    # (`t.cuda(torch.cuda.current_device())`: XLA301's fix drops the query with the
    # move). Only enabled rules take part, as for `supersedes`.
    supersedes_inside: ClassVar[tuple[str, ...]] = ()
    # Codes whose findings in the value this rule's move moves (the whole expression its
    # finding ends at, `end_node`) are the same cause: the host tensor a `.cuda()` moves
    # (`torch.zeros(n).cuda()`, XLA208's upload), one edit of the move fixing both. Not a
    # device query in the value (`torch.zeros(n, device=torch.cuda.current_device())`),
    # which the move's fix leaves. Only enabled rules take part, as for `supersedes`.
    supersedes_moved: ClassVar[tuple[str, ...]] = ()
    # Codes whose findings copy or read this rule's flagged expression itself to the host,
    # under its rows and views (`torch.where(m)[0].tolist()` of the one-argument
    # `torch.where`: `host_reads.copied_value`): the same cause, one edit of the expression
    # fixing both. Not a read of a value computed from it (`.nonzero().max().item()`).
    # Only enabled rules take part, as for `supersedes`.
    supersedes_copies: ClassVar[tuple[str, ...]] = ()
    # What a function must contain for this rule to find anything in it (`screen.py`):
    # identifiers (`"item"`), ast node types (`"<For>"`) or substrings of string constants
    # (`"'cuda"`); one match is enough. None: every function may hold a finding. A screen
    # that might miss a finding is a bug: when in doubt, match more.
    screen: ClassVar[Sequence[str] | None] = None
    # The rule's findings are device choices that can keep a model off the XLA device
    # (XLA305's ladders): fixes that move other values there go together with theirs.
    decides_device: ClassVar[bool] = False
    # The analyses whose walk-time bookkeeping this rule needs (`context.ANALYSES`):
    # "loops" for `ctx.loops`, "masks" for `ctx.masks`. A `hot_only` rule uses "loops" by
    # that alone (hot code asks what loops do). The context keeps only the analyses some
    # running rule declared, and refuses to answer for the others.
    uses: ClassVar[tuple[str, ...]] = ()

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.reports: list[PendingReport] = []

    def report(
        self,
        node: cst.CSTNode,
        message: str | None = None,
        *,
        end_node: cst.CSTNode | None = None,
        fix: NodeFix | None = None,
        hint: str | None = None,
        site: Site | None = None,
        per_call: bool = False,
        every_call: bool = False,
        repeat_of: cst.CSTNode | None = None,
    ) -> None:
        """Report a finding at `node` (through `end_node`). `site` is where the walk was
        when the rule met the node; rules that decide after the walk pass the one they
        recorded, the others leave it to be taken now. A per-step cost (`hot_only`) in code
        that never runs on an XLA host (an MPS-only branch) is no cost there, nor is a host
        sync under a long log interval (`if step % 100 == 0:`), nor any finding in code an
        always-taken exit skips or in a branch a filled-in default settles against
        (`analysis/settled_exits.py`). With `per_call`, the
        finding is judged as a `per_call` rule's would be (a cost paid on every call with
        new data); with `every_call`, a cost paid on every call of its function, kept
        whoever calls it. With `repeat_of`, the finding repeats the read at that node and shows
        only where a `# noqa` suppresses that read. The message
        and hint name torch_xla 2.9's APIs; at an older target they are respelled as that
        release has them."""
        if self.hot_only and site is None and self.ctx.runs_without_xla:
            return
        # Code an always-taken `continue`/`return` skips never runs, on any machine; nor
        # does a branch a filled-in default settles against (`analysis/settled_exits.py`).
        if site is None and (self.ctx.past_settled_exit or self.ctx.in_settled_branch):
            return
        # A `raise` statement's exception (its message), and a block that ends in `raise`,
        # run only on the error path.
        if self.hot_only and site is None and self.ctx.in_raise:
            return
        # So does a handler that recovers from a failed computation (`except RuntimeError:`
        # with a fallback on the CPU).
        if self.hot_only and site is None and self.ctx.in_failure_handler:
            return
        # A host sync (or a copy to the device) once every many steps (`if step % 100 ==
        # 0:`) is amortised; a recompile (family 2) is not, whatever its interval. A
        # finding judged after the walk carries its site, which says whether it stood
        # under such an interval (`self.log(loss)` under `if (i + 1) % self.log_every
        # == 0:` hands `log` a read once per interval).
        amortised = self.is_host_sync() or (self.hot_only and self.amortised)
        sparse = site.sparse if site is not None else self.ctx.under_sparse_interval
        if amortised and sparse:
            return
        # A warning about a checked value (`if kl.max() > 100: log.warning(...)`) runs when
        # the value has gone wrong: its reads are no per-step cost.
        if self.is_host_sync() and site is None and self.ctx.in_warning_branch:
            return
        # A repair beside such a warning (`grad[grad.isnan()] = 0.0` under `if
        # torch.any(grad.isnan()): logger.warning(...)`) runs then too: its recompile or
        # data-dependent shape is no per-step cost.
        if self.hot_only and not self.is_host_sync() and site is None and self.ctx.in_warned_repair:
            return
        hint = hint or self.hint
        self.reports.append(
            PendingReport(
                rule=self,
                node=node,
                end_node=end_node or node,
                message=respell(message or self.message, self.ctx.target),
                fix=fix,
                hint=None if hint is None else respell(hint, self.ctx.target),
                site=site or self.ctx.site(),
                per_call=per_call,
                every_call=every_call,
                repeat_of=repeat_of,
            )
        )

    def fix(
        self,
        description: str,
        *replacements: tuple[cst.CSTNode, cst.CSTNode | str],
        imports: Sequence[str] = (),
        moves_to_xla: bool = False,
    ) -> NodeFix:
        """Build a fix with this rule's applicability."""
        assert self.fix_applicability is not None, f"{self.code} declares no fix applicability"
        return NodeFix(
            self.fix_applicability,
            respell(description, self.ctx.target),
            tuple(replacements),
            tuple(imports),
            moves_to_xla=moves_to_xla,
        )

    @classmethod
    def docs(cls) -> str:
        docs = inspect.cleandoc(cls.__doc__ or "")
        if cls.per_call and cls.hot_only and _WHY in docs:
            head, _, rest = docs.partition(_WHY)
            docs = f"{head}\n\n{PER_CALL_REACH}{_WHY}{rest}"
        if cls.is_host_sync() and _WHY in docs:
            head, _, rest = docs.partition(_WHY)
            return f"{head}\n\n{HOST_SYNC_REACH}\n\n{HOST_SYNC_VALUES}{_WHY}{rest}"
        return docs

    @classmethod
    def is_host_sync(cls) -> bool:
        """A family-1 rule reported in hot code only: `report` leaves out its findings in
        code an XLA host never reaches and under long log intervals."""
        return cls.hot_only and cls.code.startswith("XLA1")

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        """The rule's docs split by `## Heading`, for `xlalint rule` and the docs site."""
        return doc_sections(cls.docs())

    @classmethod
    def url(cls) -> str:
        return DOCS_URL.format(code=cls.code)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if inspect.isabstract(cls) or not getattr(cls, "code", None):
            return
        # Every section of DOC_SECTIONS is checked by tests/test_docs.py, not here: splitting
        # each rule's docs (five times) as its module was imported was a third of the cost
        # of importing the rules, paid by every run that lints.
        if (cls.fix_availability is FixAvailability.NONE) != (cls.fix_applicability is None):
            raise TypeError(f"rule {cls.code}: fix_availability and fix_applicability disagree")


def doc_sections(docs: str) -> dict[str, str]:
    """Rule docs split by `## Heading`: heading -> body."""
    parts = re.split(r"^## (.+)$", docs, flags=re.MULTILINE)
    return {
        heading.strip(): body.strip()
        for heading, body in zip(parts[1::2], parts[2::2], strict=True)
    }


def analyses_used(rules: Iterable[type[Rule]]) -> frozenset[str]:
    """The analyses a set of rules needs the context to keep during the walk."""
    used: set[str] = set()
    for rule in rules:
        used.update(rule.uses)
        if rule.hot_only:
            used.add("loops")
    return frozenset(used)
