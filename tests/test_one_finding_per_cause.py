"""One finding per cause: where a more specific rule reports the same span as a general one
(`Rule.supersedes`), only the specific finding is shown, and only while it is enabled."""

from __future__ import annotations

import textwrap

import pytest

from xlalint.engine import lint_source
from xlalint.registry import all_rules

LOOP = """\
    import torch
    import torch_xla.core.xla_model as xm

    def train(loader, step):
        for batch in loader:
            step(batch)
            torch.cuda.synchronize(){noqa}
            xm.wait_device_ops()
    """


def findings(codes: list[str], noqa: str = "") -> list[tuple[int, str]]:
    text = textwrap.dedent(LOOP.format(noqa=noqa))
    result = lint_source(text, "train.py", [all_rules()[code] for code in codes])
    assert result.error is None
    return [(d.start.row, d.code) for d in result.diagnostics]


def test_the_specific_rule_replaces_the_general_one_on_the_same_span() -> None:
    # `torch.cuda.synchronize()` raises on XLA (XLA303), which says more than that it
    # blocks every step (XLA106); `xm.wait_device_ops()` is XLA106's alone.
    assert findings(["XLA106", "XLA303"]) == [(7, "XLA303"), (8, "XLA106")]


def test_the_general_finding_stays_when_the_specific_rule_is_off() -> None:
    assert findings(["XLA106"]) == [(7, "XLA106"), (8, "XLA106")]


def test_silencing_the_specific_finding_does_not_bring_back_the_general_one() -> None:
    assert findings(["XLA106", "XLA303"], noqa="  # noqa: XLA303") == [(8, "XLA106")]


@pytest.mark.parametrize("code", [c for c, r in all_rules().items() if r.supersedes])
def test_superseded_codes_are_real_rules(code: str) -> None:
    for other in all_rules()[code].supersedes:
        assert other in all_rules() and other != code


MASKED_COPY = """\
    import torch

    def training_step(completion_ids, eos_id):
        is_eos = completion_ids == eos_id
        eos_idx = torch.full((is_eos.size(0),), 7, dtype=torch.long, device=completion_ids.device)
        eos_idx[is_eos.any(dim=1)] = is_eos.int().argmax(dim=1)[is_eos.any(dim=1)]
        picked = completion_ids[is_eos]
        eos_idx[is_eos.any(dim=1)] = completion_ids[:, 0][is_eos.all(dim=1)]
        return eos_idx, picked
    """


def test_a_masked_copy_is_one_finding_at_its_write() -> None:
    # `a[m] = b[m]` is one cause (XLA203's write, `torch.where(m, b, a)` removes both);
    # a read under another mask, or outside such a copy, stays XLA202's.
    text = textwrap.dedent(MASKED_COPY)
    rules = [all_rules()[code] for code in ("XLA202", "XLA203")]
    result = lint_source(text, "train.py", rules)
    assert result.error is None
    assert [(d.start.row, d.code) for d in result.diagnostics] == [
        (6, "XLA203"),
        (7, "XLA202"),
        (8, "XLA203"),
        (8, "XLA202"),
    ]


HOST_COPY_VIEWS = """\
    import torch

    def fit(model, loader, optimizer, metric):
        for x, y in loader:
            y_pred = model(x).squeeze()
            loss = torch.nn.functional.mse_loss(y_pred, y)
            loss.backward()
            optimizer.step()
            metric(y_pred.cpu().data.numpy().astype("float64"))
            metric(y_pred.detach().numpy().T)
    """


def test_a_view_of_a_host_copy_is_no_second_copy() -> None:
    # `y_pred.cpu().data.numpy()` copies once, at `.cpu()`: `.data` views the host copy, so
    # its `.numpy()` moves nothing; a view of a device tensor (`.detach()`) is still one.
    text = textwrap.dedent(HOST_COPY_VIEWS)
    result = lint_source(text, "train.py", [all_rules()["XLA102"]])
    assert result.error is None
    assert [(d.start.row, d.start.column, d.code) for d in result.diagnostics] == [
        (9, 23, "XLA102"),
        (10, 32, "XLA102"),
    ]


MOVE_WITH_QUERY = """\
    import torch

    class Scaler:
        def load_state_dict(self, state_dict):
            self._scale = state_dict["scale"].cuda(torch.cuda.current_device()){noqa}
            self._device = torch.cuda.current_device()
    """


def move_findings(codes: list[str], noqa: str = "") -> list[tuple[int, str]]:
    text = textwrap.dedent(MOVE_WITH_QUERY.format(noqa=noqa))
    result = lint_source(text, "scaler.py", [all_rules()[code] for code in codes])
    assert result.error is None
    return sorted((d.start.row, d.code) for d in result.diagnostics)


def test_a_device_query_inside_the_move_it_steers_is_the_moves_finding() -> None:
    # `.cuda(torch.cuda.current_device())`: XLA301's fix drops the query with the move, so
    # the query is no XLA303 of its own; a query elsewhere still is.
    assert move_findings(["XLA301", "XLA303"]) == [(5, "XLA301"), (6, "XLA303")]


def test_the_query_inside_the_move_comes_back_without_the_move_rule() -> None:
    assert move_findings(["XLA303"]) == [(5, "XLA303"), (6, "XLA303")]


def test_silencing_the_move_does_not_bring_back_the_query_inside_it() -> None:
    assert move_findings(["XLA301", "XLA303"], noqa="  # noqa: XLA301") == [(6, "XLA303")]


@pytest.mark.parametrize("code", [c for c, r in all_rules().items() if r.supersedes_inside])
def test_codes_superseded_inside_are_real_rules(code: str) -> None:
    for other in all_rules()[code].supersedes_inside:
        assert other in all_rules() and other != code


MASKED_WRITE_FROM_READS = """\
    import torch

    def training_step(y, gain, noise, steps: int):
        case = gain > noise
        other = gain < noise
        for t in range(steps):
            y[case] = y[case] / (gain[case] + 1e-6)
            y[case] = (noise ** 2 - gain[case].pow(2)).clamp(min=0).sqrt()
            y[case] = y[other] * 2.0
            scaled = gain[case] * 2.0
            y = y + scaled.sum()
        return y
    """


def test_reads_a_masked_write_is_computed_from_are_the_writes_cause() -> None:
    # `y[m] = f(y[m], g[m])` element for element: `torch.where(m, f(y, g), y)` drops the
    # write and the reads, one cause at the write; a read under another mask, or in the
    # next statement, stays XLA202's.
    text = textwrap.dedent(MASKED_WRITE_FROM_READS)
    both = lint_source(text, "train.py", [all_rules()[c] for c in ("XLA202", "XLA203")])
    assert both.error is None
    assert [(d.start.row, d.code) for d in both.diagnostics] == [
        (7, "XLA203"),
        (8, "XLA203"),
        (9, "XLA203"),
        (9, "XLA202"),
        (10, "XLA202"),
    ]


MASK_AND_COMPLEMENT = """\
    import torch

    def training_step(d, w, t: float, steps: int):
        close = d < t
        large = d > 2 * t
        for _ in range(steps):
            near, far = d[close], d[~close]
            both = torch.cat([w[close], w[torch.logical_not(close)], d[close.logical_not()]])
            lt = w[close]
            gt = w[~close]
            mixed = d[close].sum() + d[~large].sum()
        return near, far, both, lt, gt, mixed
    """


def test_a_mask_and_its_complement_in_one_statement_are_one_finding() -> None:
    # The two counts add up to the whole and one `torch.where(m, ...)` keeps both shapes:
    # one cause in one statement; in the next statement, or under another mask, a finding
    # of its own.
    text = textwrap.dedent(MASK_AND_COMPLEMENT)
    result = lint_source(text, "train.py", [all_rules()["XLA202"]])
    assert result.error is None
    assert [(d.start.row, d.code) for d in result.diagnostics] == [
        (7, "XLA202"),
        (8, "XLA202"),
        (9, "XLA202"),
        (10, "XLA202"),
        (11, "XLA202"),
        (11, "XLA202"),
    ]


NONZERO_COPIES = """\
    import torch

    def train(model, loader, optimizer):
        for input_ids, mask in loader:
            loss = model(input_ids).mean()
            loss.backward()
            optimizer.step()
            idx = [-1] + torch.where(input_ids == 5)[0].tolist() + [input_ids.shape[0]]
            kept = torch.nonzero(mask == 0, as_tuple=False).view(-1).cpu()
            rows = mask.argwhere().flatten().numpy()
            last = int((input_ids > 3).nonzero().max().item())
            total = torch.where(input_ids > 0)[0].sum().tolist()
            print(idx, kept, rows, last, total)
    """


def nonzero_copies(codes: list[str]) -> list[tuple[int, str]]:
    text = textwrap.dedent(NONZERO_COPIES)
    result = lint_source(text, "train.py", [all_rules()[code] for code in codes])
    assert result.error is None
    return [(d.start.row, d.code) for d in result.diagnostics]


def test_a_copy_of_a_nonzero_result_itself_is_the_nonzeros_finding() -> None:
    # `torch.where(m)[0].tolist()`, `torch.nonzero(m).view(-1).cpu()`,
    # `m.argwhere().flatten().numpy()`: the indices copied as they are, under rows and
    # views, one edit of the expression fixing both. A reduction of them read on the host
    # (`.max().item()`, `.sum().tolist()`) is a value of its own, reported beside it.
    assert nonzero_copies(["XLA101", "XLA102", "XLA201"]) == [
        (8, "XLA201"),
        (9, "XLA201"),
        (10, "XLA201"),
        (11, "XLA101"),
        (11, "XLA201"),
        (12, "XLA201"),
        (12, "XLA102"),
    ]


def test_the_copies_of_a_nonzero_result_come_back_without_the_nonzero_rule() -> None:
    assert nonzero_copies(["XLA101", "XLA102"]) == [
        (8, "XLA102"),
        (9, "XLA102"),
        (10, "XLA102"),
        (11, "XLA101"),
        (12, "XLA102"),
    ]


@pytest.mark.parametrize("code", [c for c, r in all_rules().items() if r.supersedes_copies])
def test_codes_superseded_as_copies_are_real_rules(code: str) -> None:
    for other in all_rules()[code].supersedes_copies:
        assert other in all_rules() and other != code


ROW_READ = """\
    import torch
    import torch_xla

    def mine(loader, model, groupsize: int, n: int):
        for x in loader:
            weights = model(x.to("xla")).softmax(-1)
            picks = []
            for b in range(n):
                picks.append(int(torch.multinomial(weights[b], 1).item())){noqa}
                top = weights[b * groupsize : (b + 1) * groupsize].max().item()
                if weights[b + 1].sum() > top:
                    picks.append(b)
            model(x[picks]).sum().backward()
            torch_xla.sync()
    """


def row_read_findings(codes: list[str], noqa: str = "") -> list[tuple[int, str]]:
    text = textwrap.dedent(ROW_READ.format(noqa=noqa))
    result = lint_source(text, "mine.py", [all_rules()[code] for code in codes])
    assert result.error is None
    return sorted((d.start.row, d.code) for d in result.diagnostics)


def test_a_loop_int_subscript_inside_an_item_read_is_the_reads_finding() -> None:
    # `int(torch.multinomial(w[b], 1).item())`, `w[a:b].max().item()`: the per-index graph
    # is the read's own; one read before the loop fixes both. A subscript the read does not
    # hold (`if weights[b + 1].sum() > top:`) is still XLA207's.
    assert row_read_findings(["XLA101", "XLA207"]) == [
        (9, "XLA101"),
        (10, "XLA101"),
        (11, "XLA207"),
    ]


def test_the_subscripts_inside_the_reads_come_back_without_the_read_rule() -> None:
    assert row_read_findings(["XLA207"]) == [(9, "XLA207"), (10, "XLA207"), (11, "XLA207")]


def test_silencing_the_read_does_not_bring_back_the_subscript_inside_it() -> None:
    found = row_read_findings(["XLA101", "XLA207"], noqa="  # noqa: XLA101")
    assert (9, "XLA207") not in found and (10, "XLA101") in found


HOST_TENSORS_MOVED = """\
    import torch

    class Memory:
        def __init__(self, length, dim):
            self.bank = torch.zeros(length, dim)

        def update(self, model, loader, optimizer, idx, device):
            for batch in loader:
                loss = model(batch).mean()
                loss.backward()
                optimizer.step()
                rows = self.bank[idx, :].cuda().permute(1, 0){noqa}
                zeros = torch.zeros((idx.shape[0],), dtype=torch.int64).cuda()
                size = torch.LongTensor([0]).cuda(non_blocking=True)
                ones = torch.ones(idx.shape[0]).to(device)
                kept = self.bank[idx, :].to(device)
            return rows, zeros, size, ones, kept
    """


def host_move_findings(codes: list[str], noqa: str = "") -> list[tuple[int, str]]:
    text = textwrap.dedent(HOST_TENSORS_MOVED.format(noqa=noqa))
    result = lint_source(text, "memory.py", [all_rules()[code] for code in codes])
    assert result.error is None
    return sorted((d.start.row, d.code) for d in result.diagnostics)


def test_a_host_tensor_moved_by_cuda_is_the_moves_finding() -> None:
    # `torch.zeros(n).cuda()`, `self.bank[idx].cuda()`: the host tensor is built or kept
    # on the host and moved by the `.cuda()` XLA301 reports; its fix (a move to the XLA
    # device, then `device=`) is one edit of that move: one cause, XLA301's. Moved by
    # `.to(device)`, the upload is XLA208's alone.
    assert host_move_findings(["XLA208", "XLA301"]) == [
        (12, "XLA301"),
        (13, "XLA301"),
        (14, "XLA301"),
        (15, "XLA208"),
        (16, "XLA208"),
    ]


def test_host_tensors_moved_by_cuda_come_back_without_the_move_rule() -> None:
    assert host_move_findings(["XLA208"]) == [
        (12, "XLA208"),
        (13, "XLA208"),
        (14, "XLA208"),
        (15, "XLA208"),
        (16, "XLA208"),
    ]


def test_silencing_the_cuda_move_does_not_bring_back_the_host_tensor() -> None:
    found = host_move_findings(["XLA208", "XLA301"], noqa="  # noqa: XLA301")
    assert found == [(13, "XLA301"), (14, "XLA301"), (15, "XLA208"), (16, "XLA208")]
