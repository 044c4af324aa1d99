from __future__ import annotations

import itertools

import libcst as cst

from xlalint.analysis.devices import (
    DeviceChoice,
    creates_xla_device,
    mentions_xla,
    passes_through,
    xla_ruled_out,
)
from xlalint.rule import Rule


class DeviceLadderWithoutXla(Rule):
    """
    ## What it does
    Flags device selection that knows CUDA, MPS or the CPU but not XLA:
    `device = "cuda" if torch.cuda.is_available() else "cpu"`,
    `torch.device("cuda" if use_cuda else "cpu")`, and `if`/`elif`/`else` chains (or a
    helper function's sequence of `if ...: return device`) that set or return a CUDA or MPS
    device. It reports once per ladder, at its `if` or ternary.

    Left alone: a ladder where any condition or branch mentions XLA or TPUs (`torch_xla`,
    `xm.xla_device()`, `xr.`, `"xla"`, `use_tpu`); for a helper function that returns the
    device, anywhere in that function. A method that returns the device, in a class that
    creates the XLA device in another method (`xm.xla_device()`, `torch_xla.device()`): the
    class decides when that fallback runs. A ladder reached only where a test for XLA
    failed: in the `else` of one (`if device == "xla": ... else: <ladder>`), or after one
    that returns or raises (`if isinstance(strategy, XLAStrategy): return XLAPrecision()`).
    Also left alone: a choice between CUDA devices only (`"cuda:0" if rank == 0 else
    "cuda:1"`) and guards that set no device; a ternary or an `if` without `else` that
    remaps the value its test examines and passes every other one through
    (`"cpu" if device == "mps" else device`,
    `if device_map == "cuda": device_map = f"cuda:{rank}"`): an XLA device is kept as given.
    A test after the last branch that sets a device chooses nothing:
    `if gen == "cpu": rand_device = "cpu"` / `elif gen == "cuda": raise ...` follows the
    generator's device. An `if` that returns a device only for some values of what it
    tests and the value itself after it (`if device.index is None: return
    torch.device("cuda", torch.cuda.current_device())` / `return device`) passes XLA
    devices through. A ternary that fills part of a longer f-string
    (`f"{'cuda' if is_cuda else 'cpu'}_time_total"`) builds a name, not a device.

    ## Why is this bad?
    On a TPU host every GPU probe is false, so the ladder quietly picks the CPU. The script
    runs, slowly and without an error, on the host CPU instead of the TPU.

    ## Example
    ```python
    if torch.cuda.is_available():
        device = torch.device("cuda")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")
    ```

    ## Use instead
    Ask for XLA first:
    ```python
    if importlib.util.find_spec("torch_xla") is not None:
        import torch_xla

        device = torch_xla.device()
    elif torch.cuda.is_available():
        device = torch.device("cuda")
    else:
        device = torch.device("cpu")
    ```

    ## Fix safety
    No fix: where XLA belongs in the order, and how its availability is detected, is the
    author's choice.

    ## Runtime evidence
    Not measured by the harness yet. With `PJRT_DEVICE=CPU` and no GPU, the ladder picks
    `cpu` and the XLA metrics stay at zero executions (`ExecuteComputation`): nothing runs on
    the XLA device. The harness will record the chosen device and the execution count.
    """

    code = "XLA305"
    name = "device-ladder-without-xla"
    message = "Device selection knows {types} but not XLA: on a TPU host it picks the CPU"
    hint = "add a `torch_xla.device()` branch first"
    triggers = ("cuda", "mps")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        parent = self.ctx.parent
        if isinstance(parent, cst.IfExp) and node is not parent.test:
            return  # a nested ternary is part of its parent's ladder
        if isinstance(parent, cst.FormattedStringExpression) and _builds_a_name(
            next(a for a in self.ctx.ancestors() if isinstance(a, cst.FormattedString))
        ):
            return  # `f"{'cuda' if is_cuda else 'cpu'}_time_total"`: a key, not a device
        choice = self.ctx.device_choices.of(node)
        if choice is None or not choice.is_ladder:
            return
        if self.ctx.device_choices.in_ladder(self.ctx.ancestors(), ternaries=True):
            return  # reported (or excused) with the enclosing ladder
        if "xla" in choice.types or mentions_xla(node, self.ctx.imports):
            return
        if self._xla_ruled_out(node):
            return
        self.report(node, self._message(choice))

    def visit_If(self, node: cst.If) -> None:
        parent = self.ctx.parent
        if isinstance(parent, cst.If) and parent.orelse is node:
            return  # an `elif`: part of the chain that starts above
        choice = self.ctx.device_choices.of(node)
        if choice is None or not choice.is_ladder:
            return
        if self.ctx.device_choices.in_ladder(self.ctx.ancestors()):
            return  # nested in a ladder's branch: reported with it
        # Sibling `if` statements that choose devices form one ladder
        # (`if cuda: return ...` / `if mps: return ...` / `return cpu`).
        siblings = parent.body if isinstance(parent, cst.IndentedBlock | cst.Module) else (node,)
        group = [
            c for s in siblings if isinstance(s, cst.If) and (c := self.ctx.device_choices.of(s))
        ]
        first_ladder = next(c for c in group if c.is_ladder)
        if first_ladder.node is not node:
            return
        following = next((b for a, b in itertools.pairwise(siblings) if a is node), None)
        if len(group) == 1 and passes_through(node, following, self.ctx.imports):
            return
        scope: list[cst.CSTNode] = [c.node for c in group]
        imports = self.ctx.imports
        if any(c.returns for c in group):
            ancestors = list(self.ctx.ancestors())
            at = next((i for i, a in enumerate(ancestors) if isinstance(a, cst.FunctionDef)), None)
            if at is not None:
                scope = [ancestors[at]]
                # A method returning the device, in a class that creates the XLA device
                # in another method (`PartialState.default_device`): the class decides when.
                owner = ancestors[at + 2] if at + 2 < len(ancestors) else None
                if isinstance(owner, cst.ClassDef) and creates_xla_device(owner, imports):
                    return
        if any("xla" in c.types for c in group) or any(mentions_xla(n, imports) for n in scope):
            return
        if self._xla_ruled_out(node):
            return
        types = frozenset().union(*(c.types for c in group))
        self.report(node, self._message(choice, types), end_node=node.test)

    def _xla_ruled_out(self, node: cst.CSTNode) -> bool:
        return xla_ruled_out([node, *self.ctx.ancestors()], self.ctx.imports)

    def _message(self, choice: DeviceChoice, types: frozenset[str] | None = None) -> str:
        selected = (types or choice.types) - {"?"}
        order = ["cuda", "mps", "xpu", "cpu"]
        known = sorted(selected, key=lambda t: (order.index(t) if t in order else len(order), t))
        names = {"cuda": "CUDA", "mps": "MPS", "xpu": "XPU", "cpu": "the CPU"}
        labels = [names.get(t, t) for t in known]
        if choice.probes_gpu and not selected & {"cuda", "mps"}:
            labels.insert(0, "a GPU")
        return self.message.format(types="/".join(labels))


def _builds_a_name(fstring: cst.FormattedString) -> bool:
    """An f-string with text other than a `:index` suffix (`f"{kind}_time_total"`,
    `f"device={kind}"`) builds a name or a message, not a device string."""
    return any(
        isinstance(part, cst.FormattedStringText) and not part.value.startswith(":")
        for part in fstring.parts
    )
