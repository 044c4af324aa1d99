"""Shared reasoning the rules rely on: what runs per step, what is a tensor, which loaders
sync. Fixtures pin flagged lines; these tests pin the analyses and the words of messages."""

from __future__ import annotations

from textwrap import dedent

import libcst as cst

from xlalint.analysis.cuda_flags import places_on_cuda, probes_availability
from xlalint.analysis.devices import device_string_type
from xlalint.analysis.imports import ImportTable
from xlalint.analysis.reachability import OffXla
from xlalint.analysis.returns import NumberReturns
from xlalint.analysis.tensors import used_as_data
from xlalint.diagnostics import Diagnostic
from xlalint.engine import lint_source
from xlalint.registry import all_rules
from xlalint.walk import descendants


def lint(source: str, *codes: str) -> list[Diagnostic]:
    rules = [all_rules()[code] for code in codes]
    result = lint_source(dedent(source), "t.py", rules)
    assert result.error is None
    return result.diagnostics


def test_number_returns_by_every_return_of_every_definition() -> None:
    module = cst.parse_module(
        dedent(
            """\
            def accuracy(logits, y):
                return float((logits.argmax(-1) == y).float().mean())

            def mean_loss(total, n):
                value = total.item()
                return value / n

            def both(a, b):
                return a.item(), len(b)

            def maybe(x, flag):
                if flag:
                    return x.item()
                return x

            def rows(loader):
                for batch in loader:
                    yield batch.sum().item()

            class Meter:
                def average(self):
                    return round(self.total / self.count, 3)

                def value(self):
                    return self.total

            def average(x):
                return x.mean()
            """
        )
    )
    returns = NumberReturns(module)
    assert returns.function("accuracy")
    assert returns.function("mean_loss")
    assert returns.function("both")
    assert not returns.function("maybe")  # one return hands back the tensor
    assert not returns.function("rows")  # a generator
    assert returns.method("average")
    assert not returns.method("value")
    assert not returns.function("average")  # the module-level one returns a tensor
    assert not returns.function("undefined")


def test_blocking_wait_message_says_how_often_the_call_runs() -> None:
    source = """\
        import torch_xla.core.xla_model as xm

        def run_stage(model, stage):
            model(stage)
            xm.wait_device_ops()

        def train(model, loader, optimizer, stages):
            for stage in stages:
                run_stage(model, stage)
            for x in loader:
                optimizer.step()
                xm.wait_device_ops()
            for stage in stages:
                model(stage)
                xm.wait_device_ops()

        class Net:
            def training_step(self, batch):
                xm.wait_device_ops()
        """
    messages = {d.start.row: d.message for d in lint(source, "XLA106")}
    assert messages == {
        5: "`xm.wait_device_ops()` blocks the host until the device is idle, "
        "each time `run_stage()` runs",
        12: "`xm.wait_device_ops()` blocks the host until the device is idle, every step",
        15: "`xm.wait_device_ops()` blocks the host until the device is idle, "
        "on every pass of its loop",
        19: "`xm.wait_device_ops()` blocks the host until the device is idle, every step",
    }


def test_epoch_function_reads_after_its_batch_loop_are_per_epoch() -> None:
    source = """\
        import torch
        import torch_xla.core.xla_model as xm

        def train_epoch(model, loader, optimizer):
            total = torch.zeros(())
            for x, y in loader:
                loss = model(x, y)
                loss.backward()
                optimizer.step()
                total += loss.detach()
                print(loss.item())
            xm.wait_device_ops()
            print(total.item())
            log_epoch(total)

        def log_epoch(total):
            print(total.item())

        def main(model, loader, optimizer, epochs):
            for epoch in range(epochs):
                train_epoch(model, loader, optimizer)
        """
    found = sorted((d.start.row, d.code) for d in lint(source, "XLA101", "XLA104", "XLA106"))
    # Only the batch loop's body runs per step; a helper called after it runs per epoch.
    assert found == [(11, "XLA101")]


def test_dict_keys_and_converting_helpers_are_not_tensors() -> None:
    source = """\
        import torch

        def log_scalars(writer, scalars, step):
            for name, value in scalars.items():
                if isinstance(value, (torch.Tensor, float)):
                    value = value.item()
                writer.add_scalar(name, value, step)
            return value.item()

        def train(model, loader, writer, schedule):
            for step, x in enumerate(loader):
                out = model(x)
                for boundary, lr in schedule.items():
                    limit = boundary.tolist()
                log_scalars(writer, {"out": 1.0}, step)
                if isinstance(out, torch.Tensor):
                    print(out.item())
        """
    found = sorted((d.start.row, d.code) for d in lint(source, "XLA101", "XLA102"))
    # A known tensor is still one inside the branch (17). A branch that converts the value
    # (`value = value.item()`) leaves a number after it whichever way the test went, so
    # the read after the loop (8) reads no tensor.
    assert found == [(17, "XLA101")]


def test_host_transfer_message_quotes_the_call_as_written() -> None:
    source = """\
        import torch

        def evaluate(model, loader):
            cpu_device = torch.device("cpu")
            for x in loader:
                out = model(x)
                a = out.to(torch.device("cpu"))
                b = out.to(device="cpu", non_blocking=True)
                c = out.to(cpu_device)
        """
    calls = [d.message.split("`")[1] for d in lint(source, "XLA102")]
    assert calls == [
        '.to(torch.device("cpu"))',
        '.to(device="cpu", non_blocking=True)',
        ".to(cpu_device)",
    ]


def test_hot_code_does_not_depend_on_the_rule_set() -> None:
    """Loops and functions are known to `LoopAnalysis` whichever rules run: a host-sync
    rule alone finds what it finds among all the rules."""
    source = """\
        import torch
        import torch_xla.core.xla_model as xm

        def train_epoch(model, loader, optimizer):
            total = torch.zeros(())
            it = iter(loader)
            while True:
                batch = next(it)
                loss = model(batch)
                loss.backward()
                xm.optimizer_step(optimizer)
                total += loss.detach()
                print(loss.item())
            print(total.item())
            return summarize(model)

        def summarize(model):
            for name, p in model.named_parameters():
                print(p.norm().item())
        """
    everything = [code for code, rule in all_rules().items() if rule.default_enabled]
    alone = [(d.start.row, d.code) for d in lint(source, "XLA101")]
    together = [(d.start.row, d.code) for d in lint(source, *everything) if d.code == "XLA101"]
    assert alone == together == [(13, "XLA101")]


def test_loops_over_collections_are_hot_only_where_their_code_is() -> None:
    source = """\
        import torch

        def save(model, path):
            state = {name: p.cpu() for name, p in model.state_dict().items()}
            for name, p in model.named_parameters():
                state[name] = p.cpu()
            torch.save(state, path)

        def log_norms(model, writer):
            for group in model.optimizer.param_groups:
                for p in group["params"]:
                    writer.add_scalar("norm", p.norm().cpu())

        def train(model, loader, optimizer, writer, path):
            for step, batch in enumerate(loader):
                model(batch).mean().backward()
                optimizer.step()
                log_norms(model, writer)
                save(model, path)
            for name, p in model.named_parameters():
                print(name, p.cpu())
        """
    found = sorted((d.start.row, d.code) for d in lint(source, "XLA102"))
    # Per step only where the batch loop calls it; a checkpoint writer's copies are the save.
    assert found == [(12, "XLA102")]


def test_functions_off_xla_are_judged_through_their_callers() -> None:
    source = dedent(
        """\
        import torch

        def _gpu_stats():
            return torch.cuda.memory_allocated()

        def _report():
            return _gpu_stats()

        def _ping():
            return _pong()

        def _pong():
            return _ping()

        class Trainer:
            def _check(self):
                return 2

            def _hook(self):
                return 3

            def step(self):
                if torch.cuda.is_available():
                    self._check()
                    _report()
                    _ping()
                    self._hook()
                run(self._hook)

        __all__ = ["_report"]
        """
    )
    module = cst.parse_module(source)
    imports = ImportTable()
    imports.add_top_level(module)
    off = OffXla(module, imports)
    defs = {
        node.name.value: node for node in descendants(module) if isinstance(node, cst.FunctionDef)
    }
    judged = {name: off.never_on_xla(function) for name, function in defs.items()}
    assert judged == {
        # called only from `_report`, called only under the guard (exported: its own API)
        "_gpu_stats": True,
        "_report": False,
        # a cycle entered under the guard: neither is reached only through guarded calls
        "_ping": False,
        "_pong": False,
        "_check": True,  # a private method called only under the guard
        "_hook": False,  # also handed on to `run`: it may run anywhere
        "step": False,  # public: other modules may call it
    }


def test_instance_flags_of_a_class_defined_inside_a_function_are_not_the_modules() -> None:
    """A class inside a function is no module-level class: asking whether its flag is off
    on XLA hosts answers "not known" instead of failing to find it among the module's."""
    found = lint(
        """\
        def make_player():
            import torch

            class Player:
                def env_step(self, env, actions):
                    obs, rewards, dones = env.step(actions.cpu().numpy())
                    if self.is_tensor_obses:
                        # `env.step` is no tensor method: `env` is an environment, and what
                        # its step returns is not known; `actions` is the step's tensor.
                        return obs, rewards.to(self.device), actions.cpu()
                    return obs, torch.from_numpy(rewards), torch.from_numpy(dones)

                def run(self, steps):
                    total = 0.0
                    returns = torch.zeros(4)
                    for _ in range(steps):
                        obs, r, done = self.env_step(self.env, self.act())
                        returns += r
                        total += returns.sum().item()
                    return total

            return Player
        """,
        "XLA101",
        "XLA102",
    )
    assert [(d.code, d.start.row) for d in found] == [("XLA102", 6), ("XLA102", 10), ("XLA101", 19)]


def test_loop_counter_is_the_index_that_starts_at_zero() -> None:
    """Only the loop's own index, counted from 0, is 0 on the first pass alone: the items
    of the loop are data (`if not skip:` runs on any pass)."""
    from xlalint.analysis.loop_facts import loop_counter

    def counter(header: str) -> str | None:
        loop = cst.parse_statement(f"{header}:\n    pass\n")
        assert isinstance(loop, cst.For)
        return loop_counter(loop)

    assert counter("for i, batch in enumerate(loader)") == "i"
    assert counter("for i, batch in tqdm(enumerate(loader))") == "i"
    assert counter("for i in range(n)") == "i"
    assert counter("for i in range(0, n)") == "i"
    assert counter("for i, batch in enumerate(loader, start=0)") == "i"
    assert counter("for i, batch in enumerate(loader, 1)") is None
    assert counter("for i in range(1, n)") is None
    assert counter("for obs, skip in rollouts") is None
    assert counter("for (i, j), x in enumerate(pairs)") is None


def test_a_record_of_declared_fields_is_no_module_whatever_its_base_is_named() -> None:
    """pydantic's `BaseModel` ends in "Model" like `PreTrainedModel`; a class that declares
    its fields in its body and defines no `__init__` or `forward` is a record of values."""
    from xlalint.analysis.module_classes import is_module_class

    module = cst.parse_module(
        dedent(
            """\
            from pydantic import BaseModel
            from transformers import PreTrainedModel

            class TrainConfig(BaseModel):
                lr: float = 1e-3
                warmup: int = 100

                def scaled(self, factor):
                    return self.lr * factor

            class Encoder(PreTrainedModel):
                config_class: type = dict

                def __init__(self, config):
                    super().__init__(config)
            """
        )
    )
    imports = ImportTable()
    imports.add_top_level(module)
    classes = {c.name.value: c for c in descendants(module) if isinstance(c, cst.ClassDef)}
    assert not is_module_class(classes["TrainConfig"], imports)
    assert is_module_class(classes["Encoder"], imports)


def test_device_templates_name_their_type_only_with_one_index_placeholder() -> None:
    def kind(source: str) -> str | None:
        return device_string_type(cst.parse_expression(source))

    assert kind('"cuda:{}".format(gpu)') == "cuda"
    assert kind('"cuda:{0}".format(gpu)') == "cuda"
    assert kind('"cuda:%d" % gpu') == "cuda"
    assert kind('"cpu:{}".format(i)') == "cpu"
    assert kind('"{}:{}".format(kind, i)') is None  # the type comes from a value
    assert kind('"cuda:{} of {}".format(i, n)') is None  # a sentence, not a device
    assert kind('"using cuda:%d" % gpu') is None
    assert kind('"cuda:{}".join(parts)') is None


def test_a_test_of_where_a_value_lives_is_a_cuda_choice_and_keywords_place() -> None:
    imports = ImportTable()

    def probe(source: str) -> bool:
        return probes_availability(cst.parse_expression(source), imports)

    def places(source: str) -> bool:
        return places_on_cuda(cst.parse_module(source), imports)

    assert probe("next(self.model.parameters()).is_cuda")
    assert probe("x.is_cuda and not args.cpu")
    assert not probe("x.is_cpu")
    assert places('loader = DataLoader(kg, batch_size=b, use_cuda="batch")\n')
    assert places("batches = Batcher(data, cuda=True)\n")
    assert not places("loader = DataLoader(kg, use_cuda=False)\n")
    assert not places("loader = DataLoader(kg, pin_memory=True)\n")


def test_names_that_say_model_used_as_data() -> None:
    function = cst.parse_module(
        dedent(
            """\
            def corrupt(heads, tails, model):
                n = heads.shape[0]
                neg_heads = heads.repeat(2)
                model.train()
                return neg_heads.long(), tails.to("cpu"), model.float()
            """
        )
    ).body[0]
    assert isinstance(function, cst.FunctionDef)
    # `.to()` and `.float()` are a module's methods too: they say nothing.
    assert used_as_data(function) == {"heads", "neg_heads"}


def test_tensor_metadata_lists_are_members_of_torch_tensor() -> None:
    """The attributes and methods taken for host metadata are `torch.Tensor`'s own (the
    generated member list), attributes and methods apart, and one list serves every
    analysis that asks (the kinds, helper reads, reads in other modules)."""
    from xlalint.analysis import helper_reads, param_reads, tensors
    from xlalint.analysis.tensor_members import HOST_ATTRIBUTES, HOST_METHODS, TENSOR_MEMBERS

    assert HOST_ATTRIBUTES <= TENSOR_MEMBERS
    assert HOST_METHODS <= TENSOR_MEMBERS
    assert not HOST_ATTRIBUTES & HOST_METHODS
    # Data reads are not metadata.
    assert not {"is_nonzero", "equal", "allclose", "item", "q_per_channel_scales"} & (
        HOST_ATTRIBUTES | HOST_METHODS
    )
    assert {"is_nested", "is_quantized", "is_meta", "is_sparse", "layout"} <= HOST_ATTRIBUTES
    assert {"is_inference", "is_complex", "is_signed", "dense_dim"} <= HOST_METHODS
    assert tensors.HOST_ATTRIBUTES == HOST_ATTRIBUTES
    assert HOST_METHODS <= tensors.HOST_METHODS
    assert HOST_METHODS <= param_reads._SHAPE_METHODS
    assert HOST_METHODS <= helper_reads._METADATA


def test_the_cheap_look_at_an_interval_test_keeps_every_test_the_full_one_takes() -> None:
    """The walk asks `sparse_test` only where `may_be_sparse` says it might: a test the
    full reasoning takes but the cheap look misses is an interval the rules never see."""
    from xlalint.analysis.intervals import may_be_sparse, sparse_test

    module = cst.parse_module(
        dedent(
            """\
            def divisible_by(num, den):
                return (num % den) == 0

            def fit(loader, step, last):
                should_log = step % 100 == 0
                should_learn = step % 50 == 0
                is_last = step == last
                if step % 100 == 0: pass
                if should_log: pass
                if should_learn and step > 0: pass
                if step > 0 and should_log: pass
                if should_log or is_last: pass
                if step % 100 == 0 or is_last: pass
                if divisible_by(step, 100): pass
                if step > 0: pass
                if should_log or step < 10: pass
            """
        )
    )
    function = next(
        s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == "fit"
    )
    tests = [node.test for node in descendants(function) if isinstance(node, cst.If)]
    taken = [sparse_test(test, function, None, module) for test in tests]
    assert taken == [True, True, True, True, True, True, True, False, False]
    assert all(may_be_sparse(test) for test, full in zip(tests, taken, strict=True) if full)
