"""Which code runs every step ("hot code").

A host sync costs once per execution, so it matters where code runs every training or
sampling step: the bodies of step loops (`step_passes.py`: a loop of fixed passes, over
the module's layers or a table of names, runs where its function does), per-step functions
(`forward`, `training_step`, a scheduler's `step`...), functions that train in their own
body and the methods that run the model beside them (an agent's `act`), configured
`hot-functions`, and functions reached from those in the same module. For costs paid on
every call with new data (compiles for data-dependent shapes, `is_hot(per_call=True)`),
functions that compute on tensors handed to them count too. A per-step function that
is a whole run is not one step: a trainer module's `forward(self)` holding the batch
loop, or a `forward` that puts its module in evaluation mode and generates in a loop of
its own; only the passes of that loop are. Whether a function is reached
from a step loop is only known once the whole file has been read, so findings carry a
`Site` and are judged by `HotCode.is_hot` after the pass.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import libcst as cst

from xlalint.analysis.arguments import keyword_argument, parameters
from xlalint.analysis.checkpoint_writers import feeds_the_call
from xlalint.walk import code_children, descendants, last_name, only_return

# `*_step` names a step; `*_per_step` (`fit_n_batches_per_step`) names what a loop of
# many steps does on each of them, so it is no step itself.
PER_STEP_FUNCTIONS = re.compile(
    r"^(forward|step|(?!\w*_per_step$)\w+_step|scale_model_input|training_step|"
    r"validation_step|test_step|predict_step)$"
)
# A function named for one optimisation step of its models (guided diffusion's
# `MixedPrecisionTrainer.optimize(opt)`, pix2pix's `optimize_parameters()`, a DQN's
# `optimize_model()`): a training step where it steps an optimizer in its own body
# (`FileContext._trains_in_body`), the loop calling it once a batch often another
# package's or a user's.
OPTIMISATION_STEP = re.compile(r"^_*optimi[sz]e(_(parameters|params|models?|networks?))?$")
# The action method of a reinforcement-learning policy or agent (`draw_action(state)`,
# `get_actions(observations)`, `select_action`): the environment loop that calls it once
# per environment step lives in another module (mushroom's `Core`, garage's sampler
# workers, a trainer's rollout), typed by no annotation the linted file could follow. Not
# the bare verb `act`/`batch_act`, also a dialogue agent's whole turn (ParlAI's world
# protocol: batching, tokenizing, then the step): an agent whose class trains acts beside
# its training step by `FileContext._acts_beside_training`.
ACTION_METHOD = re.compile(r"^_*(get|draw|select|choose|sample|compute|predict|take)_actions?$")
# Methods Python or a framework calls to show an object (`print(model)`, `repr(x)`,
# `nn.Module.__repr__` asking each layer's `extra_repr`, a notebook's rich display): they
# run when a person looks at the object, not in a step, so neither they nor their loops
# (over a model's terms, its layers) run per step; a format spec of a device value there
# (`f"{coef:.3f}"` in `SINDy.__str__`) is read once per printing.
DISPLAY_METHODS = frozenset(
    {"__str__", "__repr__", "extra_repr", "_repr_html_", "_repr_pretty_", "__rich_repr__"}
)
RUN_ONCE_FUNCTIONS = (
    frozenset(
        {"__init__", "setup", "set_timesteps", "configure_optimizers", "__post_init__", "main"}
    )
    | DISPLAY_METHODS
)
# A module-level function pytest collects (`test`, `test_equivariance`): the runner calls
# it once; one backward in its body (checking a gradient) is no training step. Not a
# method (Lightning's `test_step` runs per batch), nor one the file itself calls.
_TEST_FUNCTION = re.compile(r"test(_\w+)?$")
# Names that say a function initialises its object's state (a mixture's `initialize(x,
# strategy)` seeding its components from samples by k-means, `reset_parameters`): where
# the file never calls one, its callers elsewhere run it once, not with every batch (where
# the file calls it, as chemprop's `forward` calls `initialize(bmg)`, those calls decide).
INITIALISER = re.compile(r"_*(initiali[sz]e|init_weights|init_parameters|reset_parameters)")
# Decorators that cache a function's results by its arguments (`functools.lru_cache`,
# `functools.cache`, `cached_property`, a project's wrapper named for one such as
# diffusers' `lru_cache_unless_export`): the body runs once per distinct arguments, not on
# every call, so what it builds is built once (a rotary table per sequence length).
_CACHING = re.compile(r"cache", re.IGNORECASE)


# A docstring telling callers to run the function once and keep what it returns
# (torchcde's `natural_cubic_coeffs`: "Make sure to cache the result, and don't
# reinstantiate it on every forward pass"; "Preprocess it with this function", "compute
# once and reuse"): a preprocessing step over the data set, whose result the per-step code
# is handed. Per-call costs are presumed for library functions no caller of the file
# runs (`_computes_on_data`); such a function documents that its callers do not run it
# per step, nor, through it, the helpers it calls.
_RUN_ONCE_DOCUMENTED = re.compile(
    r"\b(?:cache|save|store)\s+(?:the|its|this)\s+(?:results?|outputs?|return(?:ed)?\s+values?)"
    r"|\b(?:don't|do\s+not|never|avoid)\s+(?:\w+\s+){1,2}(?:it|this)\s+(?:on\s+|in\s+)?every\s+"
    r"(?:forward(?:\s+pass)?|step|batch|iteration|call)"
    r"|\bpreprocess\s+(?:it|them|your\s+data|the\s+data(?:set)?)\s+with\s+this\s+function"
    r"|\b(?:compute|call|run)\s+(?:it|this)\s+once\b",
    re.IGNORECASE,
)


def documented_run_once(function: cst.CSTNode) -> bool:
    """`function`'s docstring tells its callers to run it once and keep (cache, save) its
    result rather than call it on every step or forward pass (`_RUN_ONCE_DOCUMENTED`)."""
    if type(function) is not cst.FunctionDef:
        return False
    docstring = function.get_docstring(clean=False)
    return (
        docstring is not None
        and _RUN_ONCE_DOCUMENTED.search(" ".join(docstring.split())) is not None
    )


def memoised(function: cst.CSTNode) -> bool:
    """`function` is decorated with a cache of its results (`_CACHING`)."""
    if type(function) is not cst.FunctionDef:
        return False
    for decorator in function.decorators:  # type: ignore[attr-defined]
        named = decorator.decorator
        if type(named) is cst.Call:
            named = named.func  # type: ignore[attr-defined]
        if _CACHING.search(last_name(named) or "") is not None:
            return True
    return False


# Methods that run when their class is called to build an instance: once per construction,
# so as often as the code that builds it runs (`HotCode._constructed_hot`).
_CONSTRUCTORS = frozenset({"__init__", "__post_init__"})
# Methods a training framework calls once per step on a subclass, by the name its base class
# ends with (so a subclass in another module of a project's `CustomDPOTrainer` gets them
# too): the Hugging Face `Trainer` (and trl's trainers) calls `compute_loss` from
# `training_step` and `prediction_step` on every batch, trl's trainers the methods of
# `_TRL_TRAINER_STEPS` from those; an ignite or torchmetrics `Metric`
# gets `update` with every batch's output; an mmengine optimizer wrapper's `update_params`
# runs backward and the optimizer step of every iteration. A fastai `Callback` (and its
# `ParamScheduler`) gets the batch events of every iteration; a Lightning `Callback` its
# `on_*_batch_*` and backward/optimizer hooks. An ASE `Calculator` gets `calculate` for every
# new set of positions: each step of the molecular dynamics or geometry optimization ASE
# drives (`get_potential_energy`, `get_forces` call it whenever the atoms moved).
_FASTAI_BATCH_EVENTS = frozenset(
    {"before_batch", "after_pred", "after_loss", "before_backward", "after_backward",
     "before_step", "after_step", "after_batch", "after_cancel_batch"}
)  # fmt: skip
_LIGHTNING_BATCH_HOOKS = frozenset(
    {"on_train_batch_start", "on_train_batch_end", "on_validation_batch_start",
     "on_validation_batch_end", "on_test_batch_start", "on_test_batch_end",
     "on_predict_batch_start", "on_predict_batch_end", "on_before_backward",
     "on_after_backward", "on_before_optimizer_step", "on_before_zero_grad"}
)  # fmt: skip
# What a fastai `Callback` reads of the batch being run, through the `Learner` it forwards
# unknown attributes to (`self.pred` is `self.learn.pred`): the batch's inputs and targets,
# the model's output and the loss, all on the device in its batch events.
_FASTAI_BATCH_STATE = frozenset({"xb", "yb", "x", "y", "pred", "loss"})
# The Hugging Face `Trainer`'s per-batch methods: `training_step` on every training batch,
# `prediction_step` on every evaluation batch, both through `compute_loss`. Not `log`
# (every `logging_steps`), `evaluate` (once per evaluation), `get_batch_samples` (it pulls
# the batches of an accumulation window) nor the callbacks' hooks (`CALLBACK_STEP_HOOK`).
_HF_TRAINER_STEPS = frozenset({"compute_loss", "training_step", "prediction_step"})
# What TRL's trainers (subclasses of that `Trainer`) call from those on every batch, the
# methods their subclasses override: the preference trainers' (`DPOTrainer`, `KTOTrainer`,
# `ORPOTrainer`, `CPOTrainer`, `BCOTrainer`) `compute_loss` and `prediction_step` call
# `get_batch_loss_metrics`, which calls `concatenated_forward`; `PPOTrainer.step` (a per-step
# name already) calls `batched_forward_pass` for the policy and the reference model. A
# subclass that calls `super().compute_loss(...)` runs its own overrides of these per
# step, though no call in its file says so.
_TRL_TRAINER_STEPS = frozenset(
    {"get_batch_loss_metrics", "concatenated_forward", "batched_forward_pass"}
)
PER_STEP_HOOKS: dict[str, frozenset[str]] = {
    "Trainer": _HF_TRAINER_STEPS | _TRL_TRAINER_STEPS,
    # trl's `PPOTrainer.step` (the classic one, `ppo_trainer.step(queries, responses,
    # scores)`) also runs, on every PPO step, the rewards and advantages from its forward
    # passes (`batched_forward_pass`, a `Trainer` hook above) and the optimisation of each
    # mini-batch (`train_minibatch`, its `loss`): a subclass that overrides them writes
    # slices of one step.
    "PPOTrainer": frozenset({"compute_rewards", "compute_advantages", "train_minibatch"}),
    "Metric": frozenset({"update"}),
    "OptimWrapper": frozenset({"update_params"}),
    "Callback": _FASTAI_BATCH_EVENTS | _LIGHTNING_BATCH_HOOKS,
    "ParamScheduler": _FASTAI_BATCH_EVENTS,
    # Generation calls its logits processors and warpers, and its stopping criteria, on
    # every new token.
    "LogitsProcessor": frozenset({"__call__"}),
    "LogitsWarper": frozenset({"__call__"}),
    "StoppingCriteria": frozenset({"__call__"}),
    "Calculator": frozenset({"calculate"}),
    # A `torch.distributions` distribution's `log_prob` is the likelihood loss of every
    # training step that fits one (a forecaster's negative log-likelihood).
    "Distribution": frozenset({"log_prob"}),
    # A detection head (mmdet's protocol, which mmrotate, mmyolo and mmocr follow: a
    # `*Head` class, `BaseDenseHead`, `RotatedBBoxHead`) is handed every training batch's
    # features by its detector: `forward_train` (mmdet 2.x) and `loss` on each step,
    # `loss_by_feat` from the base's `loss` (mmdet 3.x); what they reach in the file
    # (`get_targets`, each image's `_get_targets_single`) runs per step with them.
    "Head": frozenset({"forward_train", "loss", "loss_by_feat"}),
    # A radiance field's sample estimator (nerfacc's `AbstractEstimator`: the occupancy
    # grid, the proposal networks) is asked for each ray batch's samples by the training
    # and rendering loops of another module: `sampling` runs every step.
    "Estimator": frozenset({"sampling"}),
    # A loss scaler runs with every optimizer step: `scaler.step(opt)`, then
    # `scaler.update()` (torch's `GradScaler`, and subclasses that wrap its bookkeeping).
    "GradScaler": frozenset({"update", "unscale_"}),
    # A moving average of a model's weights (ema-pytorch's `EMA`, `KarrasEMA`, `PostHocEMA`;
    # ultralytics' `ModelEMA`, timm's `ModelEma`, torch-ema's `ExponentialMovingAverage`)
    # moves its copy toward the trained weights once per optimizer step: the training loop
    # that calls `ema.update()` after each `optimizer.step()` is the user's or another
    # package's, so `update` is per step by the class's role.
    "EMA": frozenset({"update"}),
    "Ema": frozenset({"update"}),
    "MovingAverage": frozenset({"update"}),
}


# Methods that list a model's parts or a dict's entries: a loop over them does one thing
# per item, each time the code around it runs; its passes are not steps.
_COLLECTION_METHODS = frozenset(
    {"items", "keys", "values", "parameters", "named_parameters", "buffers", "named_buffers",
     "modules", "named_modules", "children", "named_children", "state_dict"}
)  # fmt: skip
_COLLECTION_ATTRIBUTES = frozenset({"param_groups"})
_COLLECTION_KEYS = frozenset({"params"})  # `group["params"]` of an optimizer's param group
# Wrappers whose passes are those of their argument(s), in another order or with a count.
PASS_WRAPPERS = frozenset({"enumerate", "sorted", "reversed", "list", "tuple", "zip"})
# Calls that write a checkpoint: the host copies around them are what saving needs.
SAVE_CALLS = frozenset(
    {"torch.save", "torch_xla.core.xla_model.save", "safetensors.torch.save_file",
     "torch_xla.utils.serialization.save"}
)  # fmt: skip


def rows_walked(iterable: cst.BaseExpression) -> cst.BaseExpression:
    """What a loop over `iterable` walks the rows of: the argument of `reversed`, `list`
    or `tuple` (`reversed(nan_indices[:-1])`: a tensor's rows, last first), else
    `iterable` itself. Not `enumerate`'s: a loop that numbers the rows it walks
    (`for position, score in enumerate(scores)`) uses their positions, as a loop over a
    count of them does, and keeps its passes."""
    while (
        type(iterable) is cst.Call
        and type(iterable.func) is cst.Name
        and iterable.func.value in ("reversed", "list", "tuple")
        and len(iterable.args) == 1
        and not iterable.args[0].star
    ):
        iterable = iterable.args[0].value
    return iterable


def unbinds_a_tensor(iterable: cst.BaseExpression) -> bool:
    """`for p in x.unbind(dim=0)` (also under `reversed`, `list`, `tuple`):
    the slices of one tensor, which only tensors unbind (numpy arrays have no `unbind`),
    as many passes as that tensor has rows on every call, as `for row in x` is."""
    iterable = rows_walked(iterable)
    return (
        type(iterable) is cst.Call
        and type(iterable.func) is cst.Attribute
        and iterable.func.attr.value == "unbind"
    )


def walks_a_collection(
    iterable: cst.BaseExpression, is_dict: Callable[[cst.BaseExpression], bool]
) -> bool:
    """`for name, p in model.named_parameters()`, `for k in metrics` (a dict), `for group
    in opt.param_groups`, `for p in group["params"]`: a loop over a model's parts or a
    dict's entries. Its body runs once per item each time the code around it runs, so it
    is per step only where that code is (a batch loop around it, a per-step function).
    So is a loop over some of those entries, picked by a comprehension (`for key in [k
    for k in self.metrics if k.startswith(mode)]`), or over what a function handed only
    a model's or an optimizer's parts gives back (`for elem in
    nested_flatten(opt.state_dict())`)."""
    while True:
        if (
            isinstance(iterable, cst.Call)
            and isinstance(iterable.func, cst.Name)
            and iterable.func.value in PASS_WRAPPERS
            and iterable.args
        ):
            iterable = iterable.args[0].value
        elif (
            isinstance(iterable, cst.ListComp | cst.GeneratorExp | cst.SetComp)
            and iterable.for_in.inner_for_in is None
            and type(iterable.elt) is cst.Name
            and type(iterable.for_in.target) is cst.Name
            and iterable.elt.value == iterable.for_in.target.value
        ):
            iterable = iterable.for_in.iter
        else:
            break
    if _lists_parts(iterable):
        return True
    if (
        type(iterable) is cst.Call
        and len(iterable.args) == 1
        and iterable.args[0].keyword is None
        and not iterable.args[0].star
        and _lists_parts(iterable.args[0].value)
    ):
        # `nested_flatten(opt.state_dict())`, `flatten_dict(model.state_dict())`: a
        # function handed a model's or an optimizer's parts alone gives back their items.
        return True
    return is_dict(iterable)


def _lists_parts(iterable: cst.BaseExpression) -> bool:
    """`model.named_parameters()`, `d.items()`, `opt.state_dict()`, `opt.param_groups`,
    `group["params"]`: a model's or an optimizer's parts, or a dict's entries."""
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute):
        return iterable.func.attr.value in _COLLECTION_METHODS
    if isinstance(iterable, cst.Attribute) and iterable.attr.value in _COLLECTION_ATTRIBUTES:
        return True
    if isinstance(iterable, cst.Subscript) and len(iterable.slice) == 1:
        index = iterable.slice[0].slice
        return (
            isinstance(index, cst.Index)
            and isinstance(index.value, cst.SimpleString)
            and index.value.evaluated_value in _COLLECTION_KEYS
        )
    return False


# Drawing calls of matplotlib's axes and pyplot: a loop that makes them draws a figure.
_DRAWING_METHODS = frozenset(
    {"imshow", "matshow", "add_patch", "plot", "scatter", "bar", "barh", "hist",
     "fill_between", "errorbar", "contour", "contourf", "pcolormesh", "set_xlabel",
     "set_ylabel", "set_title", "annotate", "legend"}
)  # fmt: skip
_FIGURE_NAME = re.compile(r"^_*(ax|axs|axes|axis|fig|figure|plt|pyplot|subplot)(_\w+|\d+)?$", re.I)
_STEP_METHODS = frozenset({"backward", "step"})


def draws_a_figure(loop: cst.For) -> bool:
    """`for ax, img in zip(axes, imgs): ax.imshow(img.numpy())`: a loop that draws one item
    of a figure per pass (matplotlib's axes or pyplot), and trains nothing. Like a loop over
    a model's parts, it runs once per item each time the code around it runs: the passes
    of a plotting helper are not steps. A loop over a figure's axes (`for *o, ax in
    zip(*items, axs.flatten()): show(o, ax=ax)`) draws one panel per pass the same way,
    whatever the function it hands each axis to."""
    draws = _walks_axes(loop.iter)
    for node in descendants(loop.body):
        if type(node) is not cst.Call or type(node.func) is not cst.Attribute:
            continue
        method = node.func.attr.value
        if method in _STEP_METHODS:
            return False
        if method in _DRAWING_METHODS and not draws:
            receiver = node.func.value
            name = receiver.attr.value if isinstance(receiver, cst.Attribute) else None
            if isinstance(receiver, cst.Name):
                name = receiver.value
            draws = name is not None and _FIGURE_NAME.match(name) is not None
    return draws


# Calls that make a figure or take the one an axis is drawn on: a function making them
# draws a figure.
_FIGURE_MAKERS = frozenset({"subplots", "figure", "add_subplot", "get_figure"})


def makes_a_figure(call: cst.Call, resolved: str | None) -> bool:
    """`plt.subplots()`, `plt.figure(...)`, `fig.add_subplot(...)`, `ax.get_figure()`, or
    any of these resolved to matplotlib: the call makes (or takes) a figure to draw on."""
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value not in _FIGURE_MAKERS:
        return False
    if resolved is not None and resolved.startswith("matplotlib."):
        return True
    receiver = func.value
    name = receiver.attr.value if isinstance(receiver, cst.Attribute) else None
    if isinstance(receiver, cst.Name):
        name = receiver.value
    return name is not None and _FIGURE_NAME.match(name) is not None


def _walks_axes(iterable: cst.BaseExpression) -> bool:
    """`axs.flatten()`, `zip(ims, titles, axes)`: an iterable of a figure's axes (the
    operands of a `zip`, or the receiver of a method such as `flatten`)."""
    if isinstance(iterable, cst.Call):
        func = iterable.func
        if isinstance(func, cst.Name) and func.value == "zip":
            return any(_walks_axes(arg.value) for arg in iterable.args if arg.keyword is None)
        if isinstance(func, cst.Attribute) and not iterable.args:
            return _walks_axes(func.value)  # `axs.flatten()`, `axes.ravel()`
        return False
    name = iterable.attr.value if isinstance(iterable, cst.Attribute) else None
    if isinstance(iterable, cst.Name):
        name = iterable.value
    return name is not None and _AXES_NAME.match(name) is not None


# Names of a figure's axes (not `fig`/`plt`: iterating those is no walk over panels).
_AXES_NAME = re.compile(r"^_*(ax|axs|axes)(_\w+|\d+)?$", re.I)


# The batch and step events of a callback protocol, named as Keras, Hugging Face's
# `TrainerCallback`, poutyne and most trainer libraries name them: `on_batch_end`,
# `on_train_batch_begin`, `on_step_end`, `on_train_step_end`, `on_eval_step_start`. A
# trainer fires them around every batch; `on_epoch_end`, `on_train_end`, `on_fit_start`
# name once-per-epoch or once-per-run events and do not match. Composer's callbacks name
# the events themselves, without `on_` (`batch_end`, `eval_batch_end`, `batch_start`).
CALLBACK_STEP_HOOK = re.compile(r"^(on_)?(\w+_)?(batch|step)_(begin|start|end)$")


# Packages whose every public class derives one of the bases above, whatever its own name:
# a class imported from torchmetrics (`MeanAveragePrecision`, `BinaryAUROC`) is a `Metric`.
_PACKAGE_BASES = {"torchmetrics": "Metric"}


def imported_base_names(qualified: Iterable[str | None]) -> list[str]:
    """More names for the bases of a class, from what the file's imports resolve them to
    (`qualified`): the name a class was imported as is not its own (`from
    torchmetrics.detection import MeanAveragePrecision as TmMAP` is still torchmetrics'
    class), and a class of a package of one kind of class is of that kind."""
    names: list[str] = []
    for name in qualified:
        if not name:
            continue
        names.append(name.rsplit(".", 1)[-1])
        kind = _PACKAGE_BASES.get(name.split(".", 1)[0])
        if kind is not None:
            names.append(kind)
    return names


# A custom autograd function (`class ClampRound(torch.autograd.Function)`): autograd runs
# its `backward` in every backward pass through a graph its `apply` built, as it runs its
# `forward` (per step by its name) in every forward; the gradients it is handed
# (`grad_output`) are device tensors. By the base's qualified name alone: a class named
# `*Function` of another library (a loss or activation "function") is no such thing.
AUTOGRAD_FUNCTIONS = frozenset(
    {"torch.autograd.Function", "torch.autograd.function.Function",
     "torch.autograd.function.InplaceFunction"}
)  # fmt: skip
AUTOGRAD_FUNCTION_HOOKS = frozenset({"backward"})


def autograd_function_hooks(qualified_bases: Iterable[str | None]) -> frozenset[str]:
    """`backward`, for a class deriving from `torch.autograd.Function` (`AUTOGRAD_FUNCTIONS`,
    as the file's imports resolve its bases); nothing otherwise."""
    if any(name in AUTOGRAD_FUNCTIONS for name in qualified_bases if name):
        return AUTOGRAD_FUNCTION_HOOKS
    return frozenset()


def per_step_hooks(base_names: Iterable[str], method_names: Iterable[str] = ()) -> frozenset[str]:
    """The per-step hooks a class overrides, from the last names of its bases, or its own
    name (`SFTTrainer` -> the Trainer's hooks; a `FusedLogitsWarper` is a logits warper
    whatever it derives from). A callback class (a name ending `Callback`) also runs, every
    batch, those of its own methods (`method_names`) named as a callback protocol's batch or
    step events (`CALLBACK_STEP_HOOK`), whichever library's protocol it follows."""
    hooks: frozenset[str] = frozenset()
    callback = False
    for base in base_names:
        callback = callback or base.endswith("Callback")
        for suffix, names in PER_STEP_HOOKS.items():
            if base.endswith(suffix):
                hooks |= names
    if callback:
        hooks |= {name for name in method_names if CALLBACK_STEP_HOOK.match(name)}
    return hooks


def batch_state(method: str, hooks: frozenset[str]) -> frozenset[str]:
    """The attributes of `self` that hold the current batch's device tensors in `method`, a
    hook of its class (`hooks`, from `per_step_hooks`): in a fastai batch event
    (`after_pred`, `after_batch`), the learner's `pred`, `loss`, `y`... (`self.pred` or
    `self.learn.pred`). None elsewhere: a Lightning hook is handed its outputs."""
    if method in hooks and method in _FASTAI_BATCH_EVENTS:
        return _FASTAI_BATCH_STATE
    return frozenset()


@dataclass(frozen=True)
class FunctionKey:
    """A function by its enclosing class (if any) and name."""

    class_name: str | None
    name: str

    @property
    def qualified(self) -> str:
        """`Class.method`, or the function's name: as `module_callers` names it."""
        return f"{self.class_name}.{self.name}" if self.class_name else self.name


@dataclass(frozen=True)
class Site:
    """Where a finding sits, as far as hot-code reasoning needs to know."""

    function: FunctionKey | None
    in_loop: bool
    in_step_closure: bool
    module_call: bool = False  # the function is `__call__` of an nn.Module subclass
    # The function, then the loops around the site in it (outermost first): what tells
    # per-epoch code (after the batch loop of an epoch function) from per-step code.
    scopes: tuple[cst.CSTNode, ...] = ()
    hook: bool = False  # a method a framework calls every step (`PER_STEP_HOOKS`)
    # Under a branch that runs once every many passes (`if step % 100 == 0:`) or once
    # (`if need_init: ...; need_init = False`): calls from it make no function per step.
    sparse: bool = False


# Methods that hand back the same values, moved, detached or retyped.
_CONVERSIONS = frozenset(
    {"cpu", "detach", "numpy", "tolist", "item", "to", "clone", "contiguous", "float",
     "double", "long", "int"}
)  # fmt: skip


def _own_nodes(function: cst.FunctionDef) -> Iterable[cst.CSTNode]:
    """The nodes of `function`'s body, not those of definitions nested in it."""
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        yield node
        if type(node) not in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            stack.extend(code_children(node))


def _evaluation_mode(call: cst.Call) -> bool:
    """`self.eval()`, `self.train(False)`: a module putting itself in evaluation mode."""
    func = call.func
    if type(func) is not cst.Attribute or type(func.value) is not cst.Name:
        return False
    if func.value.value != "self":
        return False
    if func.attr.value == "eval":
        return not call.args
    return (
        func.attr.value == "train"
        and len(call.args) == 1
        and type(call.args[0].value) is cst.Name
        and call.args[0].value.value == "False"
    )


def converts_a_parameter(function: cst.CSTNode) -> bool:
    """`def to_numpy(t): return t.cpu().detach().numpy()`: a function whose whole body
    returns what it was handed, converted (a chain of conversions on one of its
    parameters). Whether that costs a host read every step is its caller's choice, and the
    caller's file reports the call (`module_callers.py`: another module calling it per
    step does not make it hot)."""
    if type(function) is not cst.FunctionDef:
        return False
    returned = only_return(function)
    if returned is None or returned.value is None:
        return False
    node: cst.BaseExpression = returned.value
    while type(node) is cst.Call and type(node.func) is cst.Attribute:  # type: ignore[union-attr]
        if node.func.attr.value not in _CONVERSIONS:  # type: ignore[union-attr]
            return False  # `t.sum().cpu()`: it computes before it reads
        node = node.func.value  # type: ignore[union-attr]
    if type(node) is not cst.Name:
        return False
    names = {p.name.value for p in parameters(function)}
    return node.value in names and node is not returned.value


# Annotations and names of parameters that hold settings, not data.
_SETTING_TYPES = frozenset({"int", "float", "bool", "str"})
_SETTING_NAMES = frozenset({"device", "dtype"})


def handed_only_settings(function: cst.CSTNode) -> bool:
    """Every parameter of `function` but `self`/`cls` holds a setting, not data: annotated
    as a Python number, flag or string (`num_timesteps: int`), named `device` or `dtype`,
    or defaulting to a literal number, string or flag; or a plain function has none. What
    it computes on tensors it builds itself, from those settings. A method handed nothing
    but its instance (`def summarize(self)`) may hand on the instance's data: not one."""
    if type(function) is not cst.FunctionDef:
        return False
    params = parameters(function)
    if params and params[0].name.value in ("self", "cls") and len(params) == 1:
        return False
    for param in params:
        name = param.name.value
        if name in ("self", "cls") or name in _SETTING_NAMES:
            continue
        annotation = param.annotation.annotation if param.annotation is not None else None
        if type(annotation) is cst.Name and annotation.value in _SETTING_TYPES:
            continue
        default = param.default
        if type(default) in (cst.Integer, cst.Float, cst.SimpleString) or (
            type(default) is cst.Name and default.value in ("True", "False")
        ):
            continue
        return False
    return type(function.params.star_arg) is not cst.Param and function.params.star_kwarg is None


# `nn.Module` methods that register a function to run on every forward (or backward), and
# the tensor methods that register one to run when backward reaches the tensor
# (`disc_loss.register_hook(raise_if_nan)` on every step's loss, `p.register_hook(clip)`
# on a parameter: every backward); the autograd engine's `queue_callback(fn)`, which runs
# `fn` at the end of the backward that queued it (from a gradient hook: every backward);
# an optimizer's step hooks (`optimizer.register_step_post_hook(hook)`, torch's
# `Optimizer` API: run before or after every `step()`, an EMA's `hook(*_): self.update()`);
# and torch's global module and optimizer hooks (`GLOBAL_MODULE_HOOK_REGISTRATIONS`).
MODULE_HOOK_REGISTRATIONS = frozenset(
    {"register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
     "register_full_backward_pre_hook", "register_hook", "register_post_accumulate_grad_hook",
     "queue_callback", "register_step_post_hook", "register_step_pre_hook"}
)  # fmt: skip
# `torch.nn.modules.module.register_module_forward_pre_hook(fn)` and its kin: functions
# that register `fn` for the forward (or backward) of every module, so every step; and
# `torch.optim.optimizer.register_optimizer_step_post_hook(fn)`, for every optimizer's
# step; called by name, as they are imported (`from torch.nn.modules.module import ...`).
GLOBAL_MODULE_HOOK_REGISTRATIONS = frozenset(
    {"register_module_forward_hook", "register_module_forward_pre_hook",
     "register_module_full_backward_hook", "register_module_full_backward_pre_hook",
     "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook"}
)  # fmt: skip


# The arguments torch hands a module's backward hook (`register_full_backward_hook(hook)`
# calls `hook(module, grad_input, grad_output)`, a pre-hook `hook(module, grad_output)`),
# as hooks and the helpers they hand them on to name them: backpack's derivatives
# (`sqrt_hessian(self, module, g_inp, g_out)`, a check `_check_loss_has_not_been_modified(
# cls, module, g_out)` they all call), reached through an extension's `backpropagate` and
# a hook registered in another module. A module's output gradient exists only while a
# backward runs through it, so a function handed one runs in every backward.
_HOOKED_MODULE = frozenset({"module", "mod", "layer", "m"})
_OUTPUT_GRADIENT = re.compile(r"^(grad|g)_?out(put)?s?$")


def takes_backward_gradients(names: Sequence[str]) -> bool:
    """Positional parameters `names` (a method's `self` or `cls` included) hand a module
    and, after it, its output gradient (`module, grad_input, grad_output`; `module,
    g_out`): a backward hook's arguments, so the function runs in every backward."""
    module = None
    for position, name in enumerate(names):
        if module is None and name in _HOOKED_MODULE:
            module = position
        elif module is not None and _OUTPUT_GRADIENT.match(name):
            return True
    return False


# An optax-style gradient transformation (torchopt's and optax's `GradientTransformation(
# init_fn, update_fn)`, `GradientTransformationExtraArgs`): a pair of functions, the first
# building the optimizer's state once, the second run by the optimizer's `step` on every
# step's gradients. The update is per step by that role, whatever its name.
_GRADIENT_TRANSFORMATION = re.compile(r"^\w*GradientTransformation\w*$")


def names_a_transformation(identifiers: Iterable[str]) -> bool:
    """Whether code spelling `identifiers` may build a gradient transformation (the
    screen's superset of `transformation_update`)."""
    return any("GradientTransformation" in name for name in identifiers)


def transformation_update(call: cst.Call) -> str | None:
    """The function a gradient transformation's construction hands as its update
    (`GradientTransformation(init_fn, update_fn)`, or `update=update_fn`), by its name."""
    name = last_name(call.func)
    if name is None or _GRADIENT_TRANSFORMATION.match(name) is None:
        return None
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    by_keyword = keyword_argument(call, "update")
    if by_keyword is not None:
        update: cst.BaseExpression | None = by_keyword.value
    else:
        update = positional[1] if len(positional) == 2 else None
    return update.value if type(update) is cst.Name else None


# Calls that call the function handed as their first argument on each of the items the
# others hold, before they return: `map`, `filter`, `itertools.starmap`, and appliers by
# their name (mmcv/mmdet's `multi_apply(func, *args)`, `tree_apply`,
# `apply_to_collection`). Not registrations that keep it for later (hooks, step closures,
# `atexit.register`).
_APPLIERS = re.compile(r"^(map|filter|starmap|\w*_apply|apply_\w+)$")


def applied_function(call: cst.Call) -> str | None:
    """The module function (`f`) or method of the class (`self.f`) that `call` applies to
    items (`map(kernel, xs, ys)`, `multi_apply(self._get_targets_single, anchors, flags)`),
    by its name: a call of it from where the applier runs. None for any other call."""
    name = last_name(call.func)
    if name is None or _APPLIERS.match(name) is None or not call.args:
        return None
    first = call.args[0]
    if first.keyword is not None or first.star:
        return None
    value = first.value
    if type(value) is cst.Name:
        return value.value
    if (
        type(value) is cst.Attribute
        and type(value.value) is cst.Name
        and value.value.value == "self"
    ):
        return value.attr.value
    return None


def instance_call(class_name: str) -> str:
    """The call graph's name for calling an instance of the module's class `class_name`
    (`self.early_stopper()`): what runs its `__call__`, a module's `forward`."""
    return f"{class_name}.__call__"


class HotCode:
    """Collects call edges while the file is walked, then answers `is_hot(site)`."""

    def __init__(
        self,
        extra_hot_functions: Iterable[str] = (),
        per_epoch: Callable[[Sequence[cst.CSTNode]], bool] | None = None,
        step_function: Callable[[cst.CSTNode], bool] | None = None,
        per_call: Callable[[cst.CSTNode], bool] | None = None,
        has_loop: Callable[[cst.CSTNode], bool] | None = None,
        acts: Callable[[cst.CSTNode], bool] | None = None,
        step_loop: Callable[[cst.CSTNode], bool] | None = None,
        elsewhere: Callable[[frozenset[str]], frozenset[str]] | None = None,
        runs_training: Callable[..., bool] | None = None,
        trains_per_pass: Callable[[cst.CSTNode], bool] | None = None,
    ) -> None:
        self._extra = tuple(extra_hot_functions)
        self._per_epoch = per_epoch
        self._step_function = step_function
        self._per_call = per_call
        self._has_loop = has_loop
        self._acts = acts
        self._step_loop = step_loop
        # What other modules of the project call every step (`module_callers.py`): asked
        # only for a site the file's own reasoning leaves cold.
        self._elsewhere = elsewhere
        # `Epochs.runs_training`: a function that holds a training loop is a training run,
        # even when its name declares it per step (a trainer module's `forward`).
        self._runs_training = runs_training
        # `LoopFacts.steps_optimizer` of a loop: its passes are training steps, however
        # often its function is called.
        self._trains_per_pass = trains_per_pass
        self._elsewhere_known: dict[str, bool] = {}
        self._computing: dict[int, bool] = {}  # id(function): `per_call` said so
        self._generation_runs: dict[int, bool] = {}  # id(function): a generation run
        self._edges: list[tuple[Site, str]] = []
        self._closure_callbacks: set[str] = set()
        self._module_hooks: set[str] = set()
        self._saving: set[str] = set()
        self._plotting: set[str] = set()
        self._saving_names: set[str] | None = None
        self._hot_names: set[str] | None = None
        self._per_call_names: set[str] | None = None
        self._callee_names: set[str] | None = None
        self._callers_by_name: dict[str, list[Site]] | None = None
        # Names called, outside loops, from a function without a loop of its own.
        self._per_call_callers: set[str] | None = None

    def add_call(self, site: Site, callee_name: str) -> None:
        """A call to a same-module function or method named `callee_name` from `site`."""
        self._edges.append((site, callee_name))
        self._hot_names = self._saving_names = self._per_call_names = None
        self._callee_names = self._per_call_callers = self._callers_by_name = None
        self._elsewhere_known = {}

    def add_step_closure_callback(self, name: str) -> None:
        """A function handed to `xm.add_step_closure`: it runs after the step, off the trace."""
        self._closure_callbacks.add(name)
        self._hot_names = self._per_call_names = None

    def add_module_hook(self, name: str) -> None:
        """A function registered as a module hook (`layer.register_forward_hook(fn)`): it
        runs on every forward of that module, so every step."""
        self._module_hooks.add(name)
        self._hot_names = self._per_call_names = None

    def add_saving_function(self, name: str) -> None:
        """A function that writes a checkpoint (`torch.save`): it runs at save time, and the
        host copies it makes are what saving needs, however often it is called."""
        self._saving.add(name)
        self._hot_names = self._saving_names = self._per_call_names = None

    def add_plotting_function(self, name: str) -> None:
        """A function that makes a figure (`fig, ax = plt.subplots()`): it runs when a
        figure is wanted (a log interval, an evaluation), and the host copies it makes
        (`y.detach().cpu()`, `loss.item()` for a title) are what drawing needs, however
        often the code that calls it runs."""
        self._plotting.add(name)
        self._hot_names = self._per_call_names = None

    def _saving_functions(self) -> set[str]:
        """Functions that write a checkpoint (`torch.save`), and functions that call one
        of them with every host read they make (`checkpoint_writers.feeds_the_call`): the
        step count read for the file name, `int(self.steps.sum().item())`, is part of the
        save, which runs when a checkpoint is due, not every step."""
        if self._saving_names is None:
            saving = set(self._saving)
            changed = True
            while changed:
                changed = False
                for site, callee in self._edges:
                    caller = site.function
                    function = site.scopes[0] if site.scopes else None
                    if (
                        caller is not None
                        and callee in saving
                        and caller.name not in saving
                        and isinstance(function, cst.FunctionDef)
                        and feeds_the_call(function, callee)
                    ):
                        saving.add(caller.name)
                        changed = True
            self._saving_names = saving
        return self._saving_names

    def per_step_by_itself(self, site: Site) -> bool:
        """The site's function runs once per step by what it is, whoever calls it: `__call__`
        of a module, a hook a framework calls on every batch, or a per-step name (`forward`,
        `*_step`) or configured `hot-functions`. Such a function is one step: its loops are
        parts of the step, and it has no per-epoch code."""
        function = site.function
        return (
            site.module_call
            or site.hook
            or (function is not None and self._declared_hot(function.name))
        )

    def _declared_hot(self, name: str) -> bool:
        if name in RUN_ONCE_FUNCTIONS or name in self._closure_callbacks:
            return False
        if name in self._module_hooks:
            return True
        return PER_STEP_FUNCTIONS.match(name) is not None or any(
            fnmatch.fnmatchcase(name, pattern) for pattern in self._extra
        )

    def _named_per_step(self, site: Site) -> bool:
        """`per_step_by_itself`, unless the function is per step by its name alone
        (`valid_step`, `sample_step`: not `forward`, `step` or a scheduler's
        `scale_model_input`, which a framework, a sampler or `__call__` runs, nor a hook
        or a configured name) and every call this file makes
        of it is under a long interval, in a run-once branch or a step closure, or in a
        function that runs once (`if not (step % self.validate_every_step):
        self.valid_step(dl)` in `train`): the file that drives it says how often it runs."""
        if not self.per_step_by_itself(site):
            return False
        function = site.function
        if (
            function is not None
            and function.name == "forward"
            and function.class_name is not None
            and self._driven_sparsely(instance_call(function.class_name))
        ):
            # `self.early_stopper()` only under `if not (self.steps % self.check_every)`:
            # the module's own instance, called by this file once every so many steps.
            return False
        if (
            site.module_call
            or site.hook
            or function is None
            or function.name in ("forward", "step", "scale_model_input")
            or function.name in self._module_hooks
            or any(fnmatch.fnmatchcase(function.name, pattern) for pattern in self._extra)
        ):
            return True
        return not self._driven_sparsely(function.name)

    def _driven_sparsely(self, name: str, once: bool = True) -> bool:
        """This file calls `name`, and every call is under a long interval or a run-once
        branch (`Site.sparse`), in a step closure, or (with `once`) in a function that
        runs once by name (`__init__` running a sanity check; not for the passes of a
        loop: `main` calling `fit()` once runs its whole training loop) or outside the
        batch loop of an epoch function or of a training run (`self.save_image(epoch, i)`
        after `forward(self)`'s loops: one final save, `_once_per_epoch`)."""
        if self._callers_by_name is None:
            self._callers_by_name = {}
            for caller, callee in self._edges:
                self._callers_by_name.setdefault(callee, []).append(caller)
        calls = self._callers_by_name.get(name, [])
        return bool(calls) and all(
            caller.sparse
            or caller.in_step_closure
            or (
                once
                and caller.function is not None
                and (caller.function.name in RUN_ONCE_FUNCTIONS or self._once_per_epoch(caller))
            )
            for caller in calls
        )

    def _function_hot(self, site: Site, per_call: bool) -> bool:
        function = site.function
        if function is None:
            return False
        if self._constructor_of(function) is not None:
            return self._constructed_hot(function, per_call)
        if site.scopes and memoised(site.scopes[0]):
            return False  # `@lru_cache def _build(self, seq_len, device)`: once per arguments
        if function.name in RUN_ONCE_FUNCTIONS or function.name in self._closure_callbacks:
            return False
        return (
            self._named_per_step(site)
            or self._trains(site)
            or (per_call and self._computes_on_data(site))
            or (
                function.name in self._reached_names(per_call)
                and function.name not in self._saving_functions()
                and function.name not in self._plotting
            )
        )

    @staticmethod
    def _constructor_of(function: FunctionKey) -> str | None:
        """The class whose instances `function` builds: its `__init__` (or a dataclass's
        `__post_init__`), else None."""
        if function.name in _CONSTRUCTORS and function.class_name is not None:
            return function.class_name
        return None

    def _constructed_hot(self, function: FunctionKey, per_call: bool) -> bool:
        """A constructor runs every step where hot code builds its class every step: a
        `forward` that returns `CouplingTransform(self.meta, self.mask)` (a class of this
        module, called by its name), or another module's per-step code that does
        (`module_callers.hot_elsewhere`, asked with the class's name). Built once, in
        `__init__` or `setup`, it runs once, as before."""
        klass = self._constructor_of(function)
        if klass is None:
            return False
        if klass in self._reached_names(per_call):
            return True
        if self._elsewhere is None or klass in self._closure_callbacks:
            return False
        return self._called_elsewhere(klass, key=f"{klass}()")

    def called_from_elsewhere(self, function: FunctionKey) -> bool:
        """Another module of the project calls `function` itself every step, handing it
        values that may be tensors (`module_callers.hot_elsewhere`: effdet's
        `DetBenchTrain.forward` calling `self.anchor_labeler.batch_label_anchors(
        target["bbox"], target["cls"])`): its parameters are that module's per-step data.
        Not a function only this file's hot functions reach."""
        if self._elsewhere is None or function.name in RUN_ONCE_FUNCTIONS:
            return False
        return self._called_elsewhere(function.qualified, key=f"{function.qualified}!")

    def _called_elsewhere(self, name: str, key: str) -> bool:
        """Whether another module's per-step code calls `name` (a function, `Class.m`, or
        a class built: `module_callers.hot_elsewhere`), asked once per `key`."""
        known = self._elsewhere_known.get(key)
        if known is None:
            assert self._elsewhere is not None
            known = self._elsewhere_known[key] = name in self._elsewhere(frozenset({name}))
        return known

    def _trains(self, site: Site) -> bool:
        """The site's function trains in its own body (backward, an optimizer step): it is
        one training step, whoever calls it (unless it runs once, as `main` does). So is a
        method that acts beside its class's training step (`acts`): an agent's `act(obs)`
        that runs the model, in a class whose `update` runs backward, runs once per
        environment step; not where every call of it in this file is under a long
        interval or runs once (`_driven_sparsely`: a trainer's validation pass)."""
        function = site.function
        if not site.scopes or self._step_function is None or function is None:
            return False
        if function.name in RUN_ONCE_FUNCTIONS:
            return False
        if (
            _TEST_FUNCTION.match(function.name)
            and function.class_name is None
            and function.name not in self._callees()
        ):
            return False  # `def test(): ... loss.backward(); assert ...`: pytest runs it once
        if function.name in self._saving_functions() or function.name in self._plotting:
            return self._step_function(site.scopes[0])
        return self._step_function(site.scopes[0]) or (
            self._acts is not None
            and self._acts(site.scopes[0])
            and not self._driven_sparsely(function.name)
        )

    def _computes_on_data(self, site: Site) -> bool:
        """The site's function computes on tensors it is handed (`per_call`: a parameter
        annotated as a tensor, or used as one: `DataParameters`) and this file never calls
        it: library code whose callers
        are elsewhere (a metric's input check, called from the metric's `update`; a
        detector's assigner, per image), run once per call with new data. Where the file
        calls it, its callers decide: a call from a function without a loop of its own
        (an `assign(...)` entry point handing on to `assign_wrt_overlaps(overlaps)`) is
        per call too, while calls only from functions that run a loop, outside it
        (`finalize(tokens)` once after a decoding loop), are once per run of that loop.
        Functions that run once by name (`__init__`, `setup`) or that save or draw are not
        such calls."""
        function = site.function
        if not site.scopes or self._per_call is None or function is None:
            return False
        if function.name in RUN_ONCE_FUNCTIONS or function.name in self._plotting:
            return False
        if self._uncalled_initialiser(function.name):
            return False  # `initialize(self, x)` of a mixture: once, by its callers elsewhere
        if documented_run_once(site.scopes[0]):
            return False  # `natural_cubic_coeffs(x)`: "cache the result", run once per data set
        if function.name in self._callees() and not self._called_per_call(function.name):
            return False
        if function.name in self._saving_functions():
            return False
        node = site.scopes[0]
        known = self._computing.get(id(node))
        if known is None:
            known = self._computing[id(node)] = self._per_call(node)
        return known

    def _called_per_call(self, name: str) -> bool:
        """Some call of `name` in this file sits, outside any loop, in a function without a
        loop of its own (one call of it per call of that function) that does not run once
        by name (`__init__` checking the table it is built with). A function handed a whole
        data loader counts as running a loop (`has_loop`): `fit(self, data_loader)`
        extracts the features of every batch, then calls `self.fit_features(z, y)` once,
        one call per pass over the data. Nor is a method of the same name delegating to it
        (`self._base.fit_features(z, y)` in a wrapper) such a caller: its own callers
        decide. The caller must itself bring new data on every call: it is handed more
        than settings (`handed_only_settings`), and nothing here calls it, or such
        callers do; a schedule built from a count (`get_schedule(device, n: int)`) and
        checked by the helpers it hands it to is checked once per schedule made."""
        if self._has_loop is None:
            return False
        if self._per_call_callers is None:
            has_loop = self._has_loop
            candidates = [
                (site, callee)
                for site, callee in self._edges
                if not site.in_loop
                and site.function is not None
                and site.function.name not in RUN_ONCE_FUNCTIONS
                and not self._uncalled_initialiser(site.function.name)
                and site.function.name != callee
                and site.scopes
                and not has_loop(site.scopes[0])
                and not documented_run_once(site.scopes[0])
            ]
            callees = self._callees()
            found: set[str] = set()
            changed = True
            while changed:
                changed = False
                for site, callee in candidates:
                    caller = site.function.name  # type: ignore[union-attr]
                    if (
                        callee not in found
                        and self._handed_data(site.scopes[0])
                        and (caller not in callees or caller in found)
                    ):
                        found.add(callee)
                        changed = True
            self._per_call_callers = found
        return name in self._per_call_callers

    def _handed_data(self, function: cst.CSTNode) -> bool:
        """The caller may be handed new data on each call: not one handed only settings
        (`handed_only_settings`), which builds what it hands on itself
        (`get_schedule(device, num_timesteps: int)` making a noise schedule with
        `torch.linspace`, then `self.get_noise_for_times(times)` checking it, which hands
        the schedule on to `_power_interpolation(t)`): those checks run when the schedule
        is made, as often as its own callers make it."""
        return not handed_only_settings(function)

    def _uncalled_initialiser(self, name: str) -> bool:
        """`name` says it initialises its object (`INITIALISER`: `initialize`,
        `reset_parameters`) and this file never calls it: its callers elsewhere run it
        once, so neither it nor what it calls is run per call with new data."""
        return INITIALISER.fullmatch(name) is not None and name not in self._callees()

    def _callees(self) -> set[str]:
        """Names of the functions this file calls (by name, as the call graph is)."""
        if self._callee_names is None:
            self._callee_names = {callee for _, callee in self._edges}
        return self._callee_names

    def _once_per_epoch(self, site: Site) -> bool:
        """The site is outside the batch loop of an epoch function or loop (a declared
        per-step function, whose loops are part of one step, has no epoch code, unless
        it is a training run: `_training_run`)."""
        if self._per_epoch is None or not site.scopes:
            return False
        if self.per_step_by_itself(site) and not self._training_run(site.scopes[0]):
            return self._outside_a_generation_run(site)
        return self._per_epoch(site.scopes)

    def _outside_a_generation_run(self, site: Site) -> bool:
        """The site is outside every loop of a function per step by its name that puts its
        own module in evaluation mode (`self.eval()`: no training step does, it would turn
        dropout off) and holds a step loop: it is a generation run, not one step of one
        (MusicLM's `forward(text, num_samples)` drawing each sample with a whole generation
        in its loop, then `sims.topk(1).indices.item()` to pick the best). Its code outside
        that loop runs once per run."""
        function = site.scopes[0]
        if (
            len(site.scopes) != 1
            or self._step_loop is None
            or type(function) is not cst.FunctionDef
        ):
            return False
        known = self._generation_runs.get(id(function))
        if known is None:
            nodes = list(_own_nodes(function))
            loops = [n for n in nodes if type(n) in (cst.For, cst.While)]
            known = self._generation_runs[id(function)] = (
                bool(loops)
                and any(_evaluation_mode(n) for n in nodes if type(n) is cst.Call)
                and any(self._step_loop(loop) for loop in loops)
            )
        return known

    def _training_run(self, function: cst.CSTNode) -> bool:
        """A function per step by its name that is handed no data (`forward(self)` of a
        trainer module, `trainer()` running the whole training: every parameter has a
        default, and none is used as a tensor) and holds a batch loop that steps an
        optimizer on every pass: it runs the training, not one step of it. One handed
        the data it works on (an attack's `forward(images, labels)` optimizing the inputs
        in a loop of its own) runs once per batch of its caller, unless the training it
        holds walks a loader, itself or in a function of the module it calls (a
        pipeline's `forward(data)` generating, filtering, then `self.finetune(...)` over
        a `DataLoader` of what it kept): a step is one batch, never epochs over many."""
        if type(function) is not cst.FunctionDef or self._runs_training is None:
            return False
        if self._per_call is not None and self._per_call(function):
            return False
        if all(
            p.default is not None
            for p in parameters(function)
            if p.name.value not in ("self", "cls")
        ):
            return self._runs_training(function)
        return self._runs_training(function, over_a_loader=True)

    def _reached_names(self, per_call: bool = False) -> set[str]:
        """Function names called, directly or transitively, from hot code (with
        `per_call`, from functions that compute on data handed to them too)."""
        if per_call:
            if self._per_call_names is None:
                self._per_call_names = self._reach(per_call=True)
            return self._per_call_names
        if self._hot_names is None:
            self._hot_names = self._reach(per_call=False)
        return self._hot_names

    def _reach(self, per_call: bool, seeds: Iterable[str] = ()) -> set[str]:
        """The names `_reached_names` answers with, computed anew (from `seeds` too:
        functions hot by what other modules do)."""
        hot: set[str] = set(seeds)
        saving = self._saving_functions()
        changed = True
        while changed:
            changed = False
            for site, callee in self._edges:
                if callee in hot or callee in RUN_ONCE_FUNCTIONS or callee in saving:
                    continue
                if callee in self._plotting:
                    continue
                if callee in self._closure_callbacks or site.in_step_closure or site.sparse:
                    continue
                klass = None if site.function is None else self._constructor_of(site.function)
                if klass is not None:
                    # A constructor's calls, its loops' too (over the layers it builds), run
                    # as often as hot code builds its class.
                    caller_hot = klass in hot
                else:
                    caller_hot = (
                        self._in_step_loop(site)
                        or self._named_per_step(site)
                        or self._trains(site)
                        or (per_call and self._computes_on_data(site))
                        or (site.function is not None and site.function.name in hot)
                    ) and not self._once_per_epoch(site)
                if caller_hot:
                    hot.add(callee)
                    changed = True
        return hot

    def is_hot(self, site: Site, *, per_call: bool = False) -> bool:
        """Whether the site runs every step. With `per_call` (asked for a cost paid on
        every call with new data, such as a compile for a data-dependent shape), a
        function that computes on tensors it is handed (`_computes_on_data`) and what it
        calls count too, whoever calls them."""
        if site.in_step_closure or self._once_per_epoch(site):
            return False
        return (
            self._in_step_loop(site)
            or self._function_hot(site, per_call)
            or self._hot_elsewhere(site)
        )

    def is_hot_here(self, site: Site) -> bool:
        """`is_hot` by this file's own reasoning alone, without asking which of its
        functions other modules call every step (`_hot_elsewhere`, a reverse index of the
        package): for a question asked about many call sites, not about a finding."""
        if site.in_step_closure or self._once_per_epoch(site):
            return False
        return self._in_step_loop(site) or self._function_hot(site, False)

    def _in_step_loop(self, site: Site) -> bool:
        """Some loop around the site in its function is a step loop (`step_loop`): it
        iterates data or counts steps, or trains or samples in its passes. A loop of
        fixed passes (the module's layers, a table of candidate functions, one tensor's
        rows) runs them on each call of its function: its body is hot where the function
        is, as code outside loops is. Nor are the passes of a function whose every call in
        this file runs under a long interval or once (`_driven_sparsely`: a trainer's
        `valid_step` looping over a few validation batches every 100 steps), unless the
        loop steps an optimizer in its passes: a PPO `learn(memories)` called once every
        `update_timesteps` environment steps runs its own training loop, and each of its
        passes is a training step, however seldom the whole phase starts."""
        if not site.in_loop:
            return False
        if site.scopes and self._preprocessing(site.scopes[0]):
            return False  # `while True:` scanning times in a "cache the result" helper
        loops = [scope for scope in site.scopes if type(scope) in (cst.For, cst.While)]
        if site.function is not None and self._driven_sparsely(site.function.name, once=False):
            # `valid_step` called as `if not (step % self.validate_every_step):`: its
            # loop's passes run once every so many steps, not every step; a training
            # phase's batch loop steps the optimizer in each of them.
            return self._trains_per_pass is not None and any(
                self._trains_per_pass(loop) and (self._step_loop is None or self._step_loop(loop))
                for loop in loops
            )
        if self._step_loop is None:
            return True
        return any(self._step_loop(scope) for scope in loops)

    def _preprocessing(self, function: cst.CSTNode, depth: int = 0) -> bool:
        """`function` is documented to run once, its result kept (`documented_run_once`:
        "Make sure to cache the result"), or every call of it in this file is made by
        such a function (`_logsignature_windows`, the private body of two documented
        entry points): a preprocessing pass over the data set, whose loops walk the data
        once (a `while True:` scanning for the next time stamp), not a loop of steps."""
        if type(function) is not cst.FunctionDef or depth > 3:
            return False
        if documented_run_once(function):
            return True
        if self._callers_by_name is None:
            self._callers_by_name = {}
            for caller, callee in self._edges:
                self._callers_by_name.setdefault(callee, []).append(caller)
        calls = self._callers_by_name.get(function.name.value, [])
        return bool(calls) and all(
            caller.scopes
            and caller.scopes[0] is not function
            and self._preprocessing(caller.scopes[0], depth + 1)
            for caller in calls
        )

    def _hot_elsewhere(self, site: Site) -> bool:
        """Another module of the project calls the site's function every step
        (`module_callers.hot_elsewhere`: `"f"`, `"Class.m"`), or a function of this file
        such a function calls, as a hot caller of this file would make it. Asked with the
        function's name and its callers' here: only those decide."""
        function = site.function
        if function is None or self._elsewhere is None:
            return False
        name = function.name
        if name in RUN_ONCE_FUNCTIONS or name in self._closure_callbacks:
            return False
        if name in self._saving_functions() or name in self._plotting:
            return False
        if site.scopes and converts_a_parameter(site.scopes[0]):
            return False
        qualified = function.qualified
        known = self._elsewhere_known.get(qualified)
        if known is None:
            found = self._elsewhere(frozenset(self._callers_of(qualified, name)))
            if qualified in found:
                known = True
            else:
                seeds = {entry.rsplit(".", 1)[-1] for entry in found}
                # The names hot by this file's own reasoning are in the fixpoint from any
                # seeds (the rule only adds): starting from them too, it is the same set,
                # reached in the few passes the new seeds need.
                known = (
                    bool(seeds)
                    and name
                    in self._reach(per_call=False, seeds=seeds | self._reached_names()) - seeds
                )
            self._elsewhere_known[qualified] = known
        return known

    def _callers_of(self, qualified: str, name: str) -> set[str]:
        """The function (`qualified`, named `name`) and the functions of this file that
        call it, directly or not (by name), as `"f"` or `"Class.m"`."""
        names, found = {name}, {qualified}
        changed = True
        while changed:
            changed = False
            for site, callee in self._edges:
                caller = site.function
                if callee in names and caller is not None and caller.name not in names:
                    names.add(caller.name)
                    klass = caller.class_name
                    found.add(f"{klass}.{caller.name}" if klass else caller.name)
                    if klass is not None and self._constructor_of(caller) is not None:
                        found.add(klass)  # built elsewhere: `Coupling(...)` runs `__init__`
                    changed = True
        return found
