from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node

from xlalint.analysis.arguments import (
    Signature,
    append_keyword,
    bind,
    parameter,
    parameters,
    signature_of,
    star_arguments,
)
from xlalint.analysis.guards import local_values, module_values
from xlalint.analysis.handed_functions import call_sites
from xlalint.analysis.intervals import attribute_values
from xlalint.analysis.tensors import binding_key
from xlalint.diagnostics import Applicability, FixAvailability
from xlalint.rule import NodeFix, Rule
from xlalint.walk import NOT_OWN, children, descendants, self_attribute

if TYPE_CHECKING:
    from xlalint.context import FileContext

_DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
# `DataLoader(dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
# num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, ...)`
# DataLoader's leading parameters, by position (those this rule reads); any keyword binds.
_SIGNATURE = Signature(
    ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", None, None, None,
     "drop_last"),
    keywords=None,
    open_positional=True,
)  # fmt: skip
# Samplers that draw batches in random order: training samplers. A DistributedSampler
# shuffles unless told `shuffle=False`.
_RANDOM_SAMPLERS = frozenset(
    {"RandomSampler", "WeightedRandomSampler", "SubsetRandomSampler", "DistributedSampler"}
)
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_TRAINING_WORDS = frozenset({"train", "training", "trainset", "trainloader", "traindata"})
_EVAL_WORDS = frozenset(
    {
        "val", "valid", "validation", "eval", "evaluation", "evaluate", "test", "testing",
        "testset", "testloader", "valset", "valloader", "dev", "predict", "prediction",
        "inference", "infer", "calib", "calibration", "holdout", "score", "scoring",
    }
)  # fmt: skip
_SPLIT_KEYWORDS = frozenset({"split", "subset", "mode", "phase", "stage"})
# A module-level constant: a name written in capitals (`META_BATCH_SIZE`).
_CONSTANT = re.compile(r"^_*[A-Z][A-Z0-9_]*$")


class DataLoaderDropLast(Rule):
    """
    ## What it does
    Flags a training `torch.utils.data.DataLoader` built without `drop_last=True` (also a
    bare `DataLoader` that a star import of the project's own module brings, trankit's `from
    .utils.tokenizer_utils import *`, where no other import binds the name). A loader is a
    training loader when it shuffles (`shuffle=True`; or `shuffle=(sampler is None)` with
    `sampler=sampler`, shuffling wherever no sampler is given, the sampler shuffling where
    one is), draws from a random sampler (`RandomSampler`, `WeightedRandomSampler`,
    `SubsetRandomSampler`, a `DistributedSampler` without `shuffle=False`), or is named for
    training: its variable, the function that returns it (`train_dataloader`), its dataset
    (`train_ds`, `dataset["train"]`, `MNIST(root, train=True)`), its sampler
    (`train_sampler`), or the dict key or keyword it is passed as. A helper that shuffles by
    a training flag it takes (`def load_array(arrays, batch_size, is_train=True)` returning
    `DataLoader(dataset, batch_size, shuffle=is_train)`, also as one side of an `and`:
    `shuffle=sampler is None and is_training`) builds the training loader where the flag
    is true, and so does one whose `shuffle` parameter defaults to True (`def
    get_images_dataloader( folder, *, batch_size, shuffle=True)` returning `DataLoader(ds,
    batch_size=batch_size, shuffle=shuffle)`): by default it shuffles, as training loaders
    do. So does a helper that reads `drop_last` from a configuration it takes, defaulting to
    False (`drop_last=config.get("drop_last", False)`), where this module calls it with a
    configuration named for training (`self._setup_dataloader_from_config(
    config=train_data_config)`): reported without a fix, since the default is the
    configuration's to change and the helper builds the evaluation loaders too. A loader
    named for evaluation (`val`, `eval`, `test`, `dev`, `predict`, `inference`, `calib` in
    any of those names, `train=False`), or built by a function named for it and not for
    training (`def with_val_data(self, x, y, batch_size=1, shuffle=True)` making `dataloader
    = DataLoader(dataset, batch_size, shuffle=shuffle)`), is never flagged: dropping samples
    there would change the metrics. Nor are loaders with a `batch_sampler=` (other than
    `None`, its default), with a random sampler that draws a multiple of the batch size
    (`sampler=RandomSampler(ds, replacement=True, num_samples=batch_size * iters)` beside
    `batch_size=batch_size`: the batch size, spelled alike, a factor of the count, or
    literals that divide), whose batches are all full, with `batch_size=1`/`None` (or no
    batch size: the default is 1; also through an attribute or a local every assignment of
    which sets it so: `self.batch_size: int = 1`, then `batch_size=self.batch_size`, or a
    module-level constant named in capitals that is only ever bound to 1: `META_BATCH_SIZE =
    1`, then `self.meta_batch_size = META_BATCH_SIZE`; not one set from a parameter,
    whatever its default: callers pass their batch size), with `**kwargs`, or with a
    `drop_last=` that is neither the literal `False`, such a configuration default, nor a
    parameter of the function whose default is False (`def make_train_dataloader(self,
    shuffle=True, drop_last=False)`: reported without a fix, the default is the
    parameter's). Options spread from a mapping that the function makes once with a call
    spelling them (`options = self._common_options(batch_size=bs, shuffle=shuffle,
    drop_last=drop_last)`, then `DataLoader(ds, **options)`) are judged as if passed
    directly, also without a fix; so are options a parameter's default spells
    (`dataloader_kwargs: dict = dict(shuffle=True)`, then `DataLoader(ds, batch_size=bs,
    **dataloader_kwargs)`: what the loader does unless a caller says otherwise), and a
    function's own `**kwargs` that every call of it in this module leaves empty (`def
    create_dataloader(data, batch_size, shuffle=True, **kwargs)`, only ever called as
    `create_dataloader(memories, bs, device=device)`: its own options decide). A caller's
    `**kwargs` that no call of the module shows, or that a call fills, stays unknown in the
    helper; a call that fills it is judged instead, as the loader it builds (`def
    FinetuneDataloader(ds, *args, **kwargs): return DataLoader(ds, *args, **kwargs)`, called
    as `FinetuneDataloader(dataset, batch_size=8, shuffle=True)`: the caller's training
    loader, flagged at the call, whose fix adds `drop_last=True` there).

    ## Why is this bad?
    Unless the dataset size is a multiple of the batch size, the last batch of every epoch
    is smaller. On XLA a new shape is a new graph: the last step compiles the whole training
    step again, and every graph that step feeds (optimizer, metrics) with it.

    ## Example
    ```python
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=4)
    ```

    ## Use instead
    ```python
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=4, drop_last=True)
    ```
    Where every sample must count, pad the last batch to the full size and mask the padded
    rows out of the loss instead.

    ## Fix safety
    Unsafe: the fix adds `drop_last=True` (or turns `drop_last=False` into `True`), so each
    epoch skips the last `len(dataset) % batch_size` samples and runs one step fewer; with
    shuffling, different samples are skipped each epoch. In a helper that shuffles by its
    training flag (or a `shuffle` parameter defaulting to True) the fix passes that flag
    (`drop_last=is_train`, `drop_last=shuffle`): its evaluation loaders keep every sample.

    ## Runtime evidence
    5 batches of a small model on the XLA CPU device (case `last_batch_recompiles`): a smaller
    last batch costs {last_batch_recompiles.before.uncached_compiles} uncached compiles;
    `drop_last=True` costs {last_batch_recompiles.after.uncached_compiles} and runs one step
    fewer (the results are {last_batch_recompiles.outputs}). Padding the last batch and masking
    the loss (XLA_FACTS.md) also compiles once, with identical results.
    """

    code = "XLA205"
    uses = ("loops",)
    name = "dataloader-drop-last"
    message = (
        "Training DataLoader without `drop_last=True`: a smaller last batch is a new shape, "
        "and the step compiles again"
    )
    hint = "Pass drop_last=True, or pad the last batch and mask it out of the loss"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.UNSAFE
    triggers = ("DataLoader",)
    # `~oader`: a call of a helper of the module that builds the loader (`FinetuneDataloader(
    # ds, shuffle=True)`, `make_loader(...)`), judged at the caller.
    screen = ("DataLoader", "~oader")

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        # Per function: names bound to a sampler call, and whether it draws at random.
        self._samplers: list[dict[str, bool]] = [{}]
        # Per function: names bound to a sampler call, and that call.
        self._sampler_calls: list[dict[str, cst.Call]] = [{}]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._samplers.append({})
        self._sampler_calls.append({})

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._samplers.pop()
        self._sampler_calls.pop()

    def leave_Assign(self, node: cst.Assign) -> None:
        random = self._random_sampler(node.value)
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                if random is None:
                    self._samplers[-1].pop(target.target.value, None)
                    self._sampler_calls[-1].pop(target.target.value, None)
                else:
                    self._samplers[-1][target.target.value] = random
                    self._sampler_calls[-1][target.target.value] = node.value  # type: ignore[assignment]

    def visit_Call(self, node: cst.Call) -> None:
        wrapped = None
        if self.ctx.qualified(node.func) not in _DATALOADERS:
            # `FinetuneDataloader(ds, batch_size=8, shuffle=True)`: a helper of this
            # module that hands what it is given on to its `DataLoader(..., **kwargs)`.
            wrapped = self._wrapped_loader(node)
            if wrapped is None:
                return
        spread = self._spread_options(node) if wrapped is None else None
        args = bind(spread or wrapped or node, _SIGNATURE)
        if args is None or not _batches(
            args.get("batch_size"), self._function(), self._class_def(), self.ctx.module
        ):
            return
        if "batch_sampler" in args and not _is_name(args["batch_sampler"], "None"):
            return  # the batch sampler makes the batches (`batch_sampler=None`: the default)
        if _whole_batches(self._sampler_call(args.get("sampler")), args.get("batch_size")):
            return  # `RandomSampler(ds, replacement=True, num_samples=bs * iters)`: all full
        drop_last = args.get("drop_last")
        flag = self._training_flag(args.get("shuffle"))
        if flag is not None and _is_name(drop_last, flag.value):
            return  # `drop_last=is_training` beside `shuffle=... and is_training`
        config = self._config_default_false(drop_last)
        default = self._parameter_default_false(drop_last)
        if (
            drop_last is not None
            and not _is_name(drop_last, "False")
            and config is None
            and not default
        ):
            return
        words = set(self._context_words(args))
        if words & _EVAL_WORDS or _split_is(args.get("dataset"), evaluation=True):
            return
        if not words & _TRAINING_WORDS and self._built_for_evaluation():
            return  # `def with_val_data(self, x, y, shuffle=True)`: the validation loader
        if not (
            words & _TRAINING_WORDS
            or _split_is(args.get("dataset"), evaluation=False)
            or _is_name(args.get("shuffle"), "True")
            or _shuffles_without_sampler(args.get("shuffle"), args.get("sampler"))
            or self._draws_at_random(args.get("sampler"))
            or flag is not None
            or (config is not None and self._called_with_training(config))
        ):
            return
        if self.ctx.loops.handed_to_accelerator(node, self._bound_to(node)):
            return  # accelerate evens the batches out (`even_batches`)
        # A configuration's or a parameter's default is changed there, not here; options
        # spread from a mapping are set where the mapping is made.
        decided_elsewhere = config is not None or default or spread is not None
        fix = None if decided_elsewhere else self._drop_last_fix(node, drop_last, flag)
        self.report(node, fix=fix)

    def _function(self) -> cst.FunctionDef | None:
        return next((n for n in self.ctx.ancestors() if type(n) is cst.FunctionDef), None)

    def _class_def(self) -> cst.ClassDef | None:
        return next((n for n in self.ctx.ancestors() if type(n) is cst.ClassDef), None)

    def _built_for_evaluation(self) -> bool:
        """The function building the loader is named for evaluation and not for training
        (`with_val_data`, `make_eval_loader`; not `train_and_eval`): whatever its loader is
        called, it is the evaluation loader."""
        function = self.ctx.function
        if function is None:
            return False
        words = set(_words(function.name))
        return bool(words & _EVAL_WORDS) and not words & _TRAINING_WORDS

    def _spread_options(self, node: cst.Call) -> cst.Call | None:
        """`DataLoader(ds, **options)` with options known here: the loader as if built with
        them. `options` is a local this function assigns once, from a call that spells its
        keywords (`options = self._loader_options(batch_size=bs, shuffle=shuffle,
        drop_last=drop_last)`, `dict(...)`); a parameter whose default spells them
        (`dataloader_kwargs: dict = dict(shuffle=True)`: what the loader does unless the
        caller says otherwise); or the function's own `**kwargs` where every call of the
        function in this module puts nothing in it (`create_dataloader(data, bs,
        device=device)`: the helper decides). None for any other call (a `**kwargs` some
        caller fills, or one no call of this module shows: unknown)."""
        stars = [arg for arg in node.args if arg.star]
        if len(stars) != 1 or stars[0].star != "**" or type(stars[0].value) is not cst.Name:
            return None
        function = self.ctx.function_node
        if function is None:
            return None
        name = stars[0].value.value
        own = [arg for arg in node.args if not arg.star]
        star_kwarg = function.params.star_kwarg
        if isinstance(star_kwarg, cst.Param) and star_kwarg.name.value == name:
            return node.with_changes(args=own) if self._kwargs_left_empty(function) else None
        param = parameter(function, name)
        if param is not None:
            made = param.default
        else:
            values = local_values(function, name)
            made = values[0] if len(values) == 1 else None
        keywords = _spelled_keywords(made)
        if not keywords:
            return None
        return node.with_changes(args=[*own, *keywords])

    def _kwargs_left_empty(self, function: cst.FunctionDef) -> bool:
        """Every call of `function` in this module (at least one) binds all it passes to
        named parameters, so its `**kwargs` is empty."""
        ancestors = list(self.ctx.ancestors())
        at = next((i for i, a in enumerate(ancestors) if a is function), None)
        if at is None:
            return False
        is_method = at + 2 < len(ancestors) and isinstance(ancestors[at + 2], cst.ClassDef)
        sites = call_sites(self.ctx.module).calls(function, is_method)
        if not sites:
            return False
        for site in sites:
            bound = _bind_to_helper(function, site.call, is_method)
            if bound is None or bound[1] or bound[2]:
                return False
        return True

    def _wrapped_loader(self, node: cst.Call) -> cst.Call | None:
        """A call of a module-level function of this module that builds a `DataLoader`
        handing on its own `**kwargs` (and `*args`), where this call fills them
        (`FinetuneDataloader(dataset, batch_size=8, shuffle=True)` of `def
        FinetuneDataloader(ds, *args, padding_value=0, **kwargs): return DataLoader(ds,
        *args, collate_fn=..., **kwargs)`): the loader that call builds, its arguments put
        in place of the helper's parameters. The caller chooses the loader's options, so
        the finding is the caller's. None otherwise."""
        if type(node.func) is not cst.Name:
            return None
        helpers = [
            s
            for s in self.ctx.module.body
            if type(s) is cst.FunctionDef and s.name.value == node.func.value
        ]
        if len(helpers) != 1:
            return None
        helper = helpers[0]
        kwargs = helper.params.star_kwarg
        if not isinstance(kwargs, cst.Param):
            return None
        inner = [
            call
            for call in _calls_in(helper)
            if any(a.star == "**" and _is_name(a.value, kwargs.name.value) for a in call.args)
            and self.ctx.qualified(call.func) in _DATALOADERS
        ]
        if len(inner) != 1:
            return None
        bound = _bind_to_helper(helper, node, method=False)
        if bound is None:
            return None
        values, extra_positional, extra_keywords = bound
        if not extra_positional and not extra_keywords:
            return None  # the helper's own options decide: judged there
        star_arg = helper.params.star_arg
        positional: list[cst.Arg] = []
        keywords: list[cst.Arg] = []
        for arg in inner[0].args:
            if arg.star == "*":
                forwarded = isinstance(star_arg, cst.Param) and _is_name(
                    arg.value, star_arg.name.value
                )
                if not forwarded:
                    return None
                positional.extend(cst.Arg(value=v) for v in extra_positional)
            elif arg.star == "**":
                keywords.extend(extra_keywords)
            else:
                value = arg.value
                if type(value) is cst.Name and (param := parameter(helper, value.value)):
                    value = values.get(value.value, param.default)
                    if value is None:
                        return None
                target = keywords if arg.keyword is not None else positional
                target.append(arg.with_changes(value=value))
        return node.with_changes(args=[*positional, *keywords])

    def _parameter_default_false(self, drop_last: cst.BaseExpression | None) -> bool:
        """`drop_last=drop_last` with `drop_last=False` the default of the function's
        parameter: the loader keeps its last batch unless the caller says otherwise."""
        function = self.ctx.function_node
        if type(drop_last) is not cst.Name or function is None:
            return False
        param = parameter(function, drop_last.value)  # type: ignore[attr-defined]
        if param is None or param.default is None:
            return False
        return _is_name(param.default, "False")

    def _config_default_false(self, drop_last: cst.BaseExpression | None) -> str | None:
        """`drop_last=config.get("drop_last", False)` with `config` a parameter of the
        function that builds the loader: False unless the caller's configuration says
        otherwise. The parameter's name, else None."""
        if not (
            isinstance(drop_last, cst.Call)
            and isinstance(drop_last.func, cst.Attribute)
            and drop_last.func.attr.value == "get"
            and isinstance(drop_last.func.value, cst.Name)
            and len(drop_last.args) == 2
            and _is_name(drop_last.args[1].value, "False")
        ):
            return None
        function = self.ctx.function_node
        name = drop_last.func.value.value
        if function is None or parameter(function, name) is None:
            return None
        return name

    def _called_with_training(self, config: str) -> bool:
        """The function building the loader from `config` is called in this module with a
        configuration named for training (`self._setup_dataloader_from_config(
        config=train_data_config)`): there it builds the training loader."""
        function = self.ctx.function_node
        if function is None:
            return False
        ancestors = list(self.ctx.ancestors())
        at = next(i for i, a in enumerate(ancestors) if a is function)
        is_method = at + 2 < len(ancestors) and isinstance(ancestors[at + 2], cst.ClassDef)
        handed = call_sites(self.ctx.module).handed(function, config, is_method)
        return any(set(_words_of(value)) & _TRAINING_WORDS for value in handed)

    def _training_flag(
        self, shuffle: cst.BaseExpression | None, in_and: bool = False
    ) -> cst.Name | None:
        """`shuffle=train` with `train` (`is_train`, `training`) a parameter of the function
        that builds the loader: a helper that builds the training loader where the flag is
        true (`def load_array(data, batch_size, is_train=True)`). Also one side of an
        `and` (`shuffle=sampler is None and is_training`, beside a `DistributedSampler`
        made where `is_training`: it shuffles only where the flag is true, so the flag
        still says which loader is the training one; there a side defaulting to True says
        so only where it is named for shuffling, `shuffle and sampler is None`, not
        `verbose and ...`)."""
        if type(shuffle) is cst.BooleanOperation and type(shuffle.operator) is cst.And:
            return self._training_flag(shuffle.left, True) or self._training_flag(
                shuffle.right, True
            )
        if not isinstance(shuffle, cst.Name):
            return None
        function = next((a for a in self.ctx.ancestors() if isinstance(a, cst.FunctionDef)), None)
        param = parameter(function, shuffle.value) if function is not None else None
        if param is None:
            return None
        if set(_words(shuffle.value)) & _TRAINING_WORDS:
            return shuffle
        # `def get_loader(folder, *, batch_size, shuffle=True)`: it shuffles, as training
        # loaders do, unless its caller says otherwise.
        if in_and and "shuffle" not in _words(shuffle.value):
            return None
        return shuffle if param.default is not None and _is_name(param.default, "True") else None

    # -- helpers ------------------------------------------------------------------------------
    def _bound_to(self, node: cst.Call) -> set[str]:
        """The names (`loader`, `self.loader`) an assignment binds the loader call to."""
        parent = self.ctx.parent
        if isinstance(parent, cst.Assign) and parent.value is node:
            targets = [t.target for t in parent.targets]
        elif isinstance(parent, cst.AnnAssign) and parent.value is node:
            targets = [parent.target]
        else:
            return set()
        return {key for target in targets if (key := binding_key(target)) is not None}

    def _context_words(self, args: dict[str, cst.BaseExpression]) -> Iterator[str]:
        """Words of the names that say what the loader is for."""
        for part in ("dataset", "sampler"):
            if (value := args.get(part)) is not None:
                yield from _words_of(value)
        for ancestor in self.ctx.ancestors():
            if isinstance(ancestor, cst.Arg):
                if ancestor.keyword is not None:  # `Trainer(train_dataloader=DataLoader(...))`
                    yield from _words(ancestor.keyword.value)
                    return
            elif isinstance(ancestor, cst.DictElement):
                yield from _words_of(ancestor.key)
                return
            elif isinstance(ancestor, cst.Assign):
                for target in ancestor.targets:
                    yield from _words_of(target.target)
                return
            elif isinstance(ancestor, cst.AnnAssign):
                yield from _words_of(ancestor.target)
                return
            elif isinstance(ancestor, cst.Return):
                if self.ctx.function is not None:
                    yield from _words(self.ctx.function.name)
                return
            elif not isinstance(ancestor, cst.Call | cst.Element | cst.Tuple | cst.List | cst.Dict):
                return

    def _random_sampler(self, value: cst.BaseExpression) -> bool | None:
        """True for a sampler that draws at random, False for another sampler, None if the
        value is no sampler call."""
        if not isinstance(value, cst.Call):
            return None
        name = (get_full_name_for_node(value.func) or "").rsplit(".", 1)[-1]
        if not name.endswith("Sampler"):
            return None
        if name not in _RANDOM_SAMPLERS:
            return False
        shuffle = next(
            (a.value for a in value.args if a.keyword and a.keyword.value == "shuffle"), None
        )
        return not _is_name(shuffle, "False")

    def _sampler_call(self, sampler: cst.BaseExpression | None) -> cst.Call | None:
        """The sampler call `sampler` is, or the one the function bound its name to."""
        if isinstance(sampler, cst.Call):
            return sampler
        if isinstance(sampler, cst.Name):
            return self._sampler_calls[-1].get(sampler.value)
        return None

    def _draws_at_random(self, sampler: cst.BaseExpression | None) -> bool:
        if sampler is None:
            return False
        if isinstance(sampler, cst.Name) and sampler.value in self._samplers[-1]:
            return self._samplers[-1][sampler.value]
        return bool(self._random_sampler(sampler))

    def _drop_last_fix(
        self, node: cst.Call, drop_last: cst.BaseExpression | None, flag: cst.Name | None
    ) -> NodeFix | None:
        # A helper's training flag: drop the last batch where it builds the training loader.
        value = flag.value if flag is not None else "True"
        if drop_last is not None:
            return self.fix(f"Set `drop_last={value}`", (drop_last, value))
        edit = append_keyword(node, self.ctx.module, "drop_last", value)
        return self.fix(f"Add `drop_last={value}`", edit) if edit else None


def _spelled_keywords(made: cst.BaseExpression | None) -> list[cst.Arg]:
    """The options a mapping's expression spells: a call's keywords (`dict(shuffle=True)`,
    `self._options(batch_size=bs)`) or a dict literal's string keys; empty for anything
    else (a mapping that also spreads another, or one keyed by names)."""
    if type(made) is cst.Call:
        keywords = [arg for arg in made.args if arg.keyword is not None and not arg.star]
        return keywords if len(keywords) == len(made.args) else []
    if type(made) is cst.Dict:
        found = []
        for element in made.elements:
            if type(element) is not cst.DictElement or type(element.key) is not cst.SimpleString:
                return []
            key = element.key.evaluated_value
            if not isinstance(key, str) or not key.isidentifier():
                return []
            found.append(cst.Arg(keyword=cst.Name(key), value=element.value))
        return found
    return []


def _calls_in(function: cst.FunctionDef) -> Iterator[cst.Call]:
    """The calls in `function`'s body, not in the definitions nested in it."""
    for node in descendants(function.body, NOT_OWN):
        if type(node) is cst.Call:
            yield node


def _bind_to_helper(
    helper: cst.FunctionDef, call: cst.Call, method: bool
) -> tuple[dict[str, cst.BaseExpression], list[cst.BaseExpression], list[cst.Arg]] | None:
    """What `call` passes `helper`: the values of its named parameters, the positional
    arguments past them (its `*args`) and the keywords no parameter names (its
    `**kwargs`). None where the call spreads something (`*xs`, `**options`) or passes
    more positionally than the helper can take."""
    signature = signature_of(helper, method)
    bound = bind(call, signature)
    if bound is None:
        return None
    named = {p.name.value for p in parameters(helper)}
    values = {name: value for name, value in bound.items() if name in named}
    extra_keywords = [
        arg for arg in call.args if arg.keyword is not None and arg.keyword.value not in named
    ]
    return values, star_arguments(call, signature), extra_keywords


def _batches(
    batch_size: cst.BaseExpression | None,
    function: cst.FunctionDef | None,
    class_def: cst.ClassDef | None,
    module: cst.Module,
) -> bool:
    """Whether the loader groups samples: not `batch_size=None`, `1` or absent (1), nor a
    name or `self.` attribute every assignment of `function` or `class_def` binds to one
    of those (`self.batch_size: int = 1`, then `batch_size=self.batch_size`), nor a
    module-level constant every assignment of which does (`META_BATCH_SIZE = 1`, also
    through an attribute set from it)."""
    values: list[cst.BaseExpression] = []
    attribute = self_attribute(batch_size) if batch_size is not None else None
    if attribute is not None and class_def is not None:
        # A constructor's parameter (`self.train_mb_size = train_mb_size`, default 1) is
        # what callers pass: a default batch size of 1 is seldom the one used.
        values = attribute_values(class_def, attribute, defaults=False)
    elif isinstance(batch_size, cst.Name) and batch_size.value != "None" and function:
        values = local_values(function, batch_size.value)
    if values:
        return not all(_one_sample(value, module) for value in values)
    return not _one_sample(batch_size, module)


def _one_sample(batch_size: cst.BaseExpression | None, module: cst.Module, depth: int = 0) -> bool:
    """`None` (no batching), `1`, no batch size (the default is 1), or a module-level
    constant, named in capitals, bound only to one of those (`META_BATCH_SIZE = 1`)."""
    if batch_size is None or _is_name(batch_size, "None"):
        return True
    if type(batch_size) is cst.Name and _CONSTANT.match(batch_size.value) and depth < 3:
        values = module_values(module, batch_size.value)
        return bool(values) and all(_one_sample(value, module, depth + 1) for value in values)
    return isinstance(batch_size, cst.Integer) and batch_size.evaluated_value == 1


# Samplers that draw a set number of samples (`num_samples`), and its position.
_COUNTED_SAMPLERS = {"RandomSampler": 2, "WeightedRandomSampler": 1}


def _whole_batches(sampler: cst.Call | None, batch_size: cst.BaseExpression | None) -> bool:
    """Whether `sampler` draws a number of samples that is a multiple of the loader's
    batch size, so every batch of an epoch is full: `RandomSampler(ds, replacement=True,
    num_samples=batch_size * iters)` with `batch_size=batch_size` (a product with the
    batch size, spelled alike, as a factor), or literals that divide (`num_samples=512`,
    `batch_size=64`)."""
    if sampler is None or batch_size is None:
        return False
    name = (get_full_name_for_node(sampler.func) or "").rsplit(".", 1)[-1]
    position = _COUNTED_SAMPLERS.get(name)
    if position is None:
        return False
    signature = Signature((None,) * position + ("num_samples",), None, open_positional=True)
    bound = bind(sampler, signature)
    count = None if bound is None else bound.get("num_samples")
    if count is None:
        return False
    if type(count) is cst.Integer and type(batch_size) is cst.Integer:
        size = batch_size.evaluated_value
        return size > 0 and count.evaluated_value % size == 0
    factors: list[cst.BaseExpression] = [count]
    while factors:
        factor = factors.pop()
        if factor.deep_equals(batch_size):
            return True
        if type(factor) is cst.BinaryOperation and type(factor.operator) is cst.Multiply:
            factors += [factor.left, factor.right]
    return False


def _is_name(node: cst.BaseExpression | None, value: str) -> bool:
    return isinstance(node, cst.Name) and node.value == value


def _words(identifier: str) -> list[str]:
    """`train_ds` -> [train, ds]; `valLoader` -> [val, loader]; lower case."""
    return [w.lower() for part in identifier.split("_") for w in _WORDS.findall(part)]


def _words_of(node: cst.CSTNode) -> Iterator[str]:
    """Words of the names and string constants in an expression (`dataset["train"]`,
    `self.train_set`, `get_dataset("val")`), not of the values of keyword arguments."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            yield from _words(current.value)
        elif isinstance(current, cst.SimpleString):
            value = current.evaluated_value
            if isinstance(value, str) and len(value) < 40:
                yield from _words(value)
        elif isinstance(current, cst.Arg):
            if current.keyword is None:
                stack.append(current.value)
        elif not isinstance(current, cst.Lambda):
            stack.extend(children(current))


def _split_is(dataset: cst.BaseExpression | None, evaluation: bool) -> bool:
    """`MNIST(root, train=True)`, `load_dataset(name, split="validation")`: the split a
    dataset call asks for by keyword."""
    if not isinstance(dataset, cst.Call):
        return False
    for arg in dataset.args:
        if arg.keyword is None:
            continue
        keyword = arg.keyword.value
        value = arg.value
        if keyword == "train" and isinstance(value, cst.Name) and value.value in ("True", "False"):
            return (value.value == "False") == evaluation
        if keyword in _SPLIT_KEYWORDS:
            words = set(_words_of(arg.value))
            if words & (_EVAL_WORDS if evaluation else _TRAINING_WORDS):
                return True
    return False


def _shuffles_without_sampler(
    shuffle: cst.BaseExpression | None, sampler: cst.BaseExpression | None
) -> bool:
    """`shuffle=(self.sampler is None), sampler=self.sampler`: the loader shuffles wherever
    it is given no sampler (a single process), and hands the shuffling to the sampler
    where it is (a `DistributedSampler`): the training loader's idiom."""
    if not isinstance(shuffle, cst.Comparison) or sampler is None:
        return False
    if len(shuffle.comparisons) != 1:
        return False
    target = shuffle.comparisons[0]
    return (
        isinstance(target.operator, cst.Is)
        and _is_name(target.comparator, "None")
        and shuffle.left.deep_equals(sampler)
    )
