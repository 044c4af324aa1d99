"""Notebooks: code cells linted as one module, positions per cell, fixes written back
without touching outputs, metadata, ids or the file's JSON style."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from conftest import ROOT, run_cli, write
from fix_rules import BrokenFix
from hypothesis import given, settings
from hypothesis import strategies as st

from xlalint import engine, notebooks
from xlalint.cli import main
from xlalint.notebooks import Notebook, fix_notebook, lint_notebook
from xlalint.registry import select_rules

NOTEBOOKS = ROOT / "fixtures" / "notebooks"
TRAIN = "train_tpu_colab.ipynb"
SAMPLE = "sample_text_colab.ipynb"
CONCISE = ("--output-format", "concise")


def notebook(*sources: str, markdown_first: bool = True, **style: object) -> str:
    """A minimal nbformat 4 notebook with these code cells (after a markdown cell)."""
    cells: list[dict[str, object]] = []
    if markdown_first:
        cells.append({"cell_type": "markdown", "id": "md", "metadata": {}, "source": "# T"})
    for index, source in enumerate(sources):
        cells.append(
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"c{index}",
                "metadata": {},
                "outputs": [],
                "source": source.splitlines(keepends=True),
            }
        )
    data = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(data, **style) + "\n"  # type: ignore[arg-type]


@pytest.fixture
def colab(project: Path) -> Path:
    for name in (TRAIN, SAMPLE):
        shutil.copy(NOTEBOOKS / name, project / name)
    return project


def test_findings_are_placed_by_cell_row_and_column(colab: Path) -> None:
    run = run_cli("check", *CONCISE, TRAIN)
    assert run.exit_code == 1
    heads = [
        [line.split(": ", 1)[0], line.split(": ")[1].split()[0]]
        for line in run.stdout.splitlines()[:-2]
    ]
    assert heads == [
        [f"{TRAIN}:cell 3:5:10", "XLA603"],  # device = xm.xla_device()
        [f"{TRAIN}:cell 6:4:17", "XLA403"],  # for x, y in loader:  (loader from cell 5)
        [f"{TRAIN}:cell 6:10:9", "XLA604"],  # xm.mark_step()  (xm imported in cell 3)
        [f"{TRAIN}:cell 6:12:28", "XLA101"],  # print(f"... {loss.item()}")
    ]
    # The noqa comment for XLA101 on cell 6's line 11 holds; the `%%writefile` cell is not Python of
    # this notebook, so its `.cuda()` and `.item()` are not findings.


def test_analysis_spans_cells(colab: Path) -> None:
    # The training cell alone: `xm` and `loader` come from other cells, so nothing there is
    # known to be torch_xla or a DataLoader.
    nb = Notebook((colab / TRAIN).read_bytes())
    train_cell = dict(nb.code_cells())[6].replace("%%time\n", "")
    write(colab, {"cell6.py": train_cell})
    alone = run_cli("check", "--output-format", "json", "cell6.py").json()
    assert {d["code"] for d in alone} <= {"XLA101"}
    together = run_cli("check", "--output-format", "json", TRAIN).json()
    assert {"XLA403", "XLA604"} <= {d["code"] for d in together}


def test_full_output_quotes_the_cell_line(colab: Path) -> None:
    run = run_cli("check", "--select", "XLA604", TRAIN)
    assert f"{TRAIN}:cell 6:10:9: XLA604" in run.stdout
    assert "10 |         xm.mark_step()" in run.stdout


def test_json_has_cell_and_row_in_cell(colab: Path) -> None:
    items = run_cli("check", "--output-format", "json", "--select", "XLA604", TRAIN).json()
    assert [(d["cell"], d["location"], d["end_location"]) for d in items] == [
        (6, {"row": 10, "column": 9}, {"row": 10, "column": 23})
    ]
    edit = items[0]["fix"]["edits"][0]
    assert edit["location"]["row"] == 10
    python = run_cli("check", "--output-format", "json", "--select", "XLA604", ".").json()
    assert all(d["cell"] is None for d in python if d["filename"].endswith(".py"))


def test_fix_apply_changes_only_the_fixed_cells_sources(colab: Path) -> None:
    before = (colab / TRAIN).read_bytes()
    run = run_cli("fix", "--apply", TRAIN)
    assert run.exit_code == 1  # an XLA101 without a safe fix remains
    after = (colab / TRAIN).read_bytes()
    old, new = json.loads(before), json.loads(after)
    # Valid nbformat 4; outputs, metadata, ids, execution counts and cell order untouched.
    nbformat.validate(nbformat.reads(after.decode(), as_version=nbformat.NO_CONVERT))
    assert new["metadata"] == old["metadata"]
    assert [{k: v for k, v in c.items() if k != "source"} for c in new["cells"]] == [
        {k: v for k, v in c.items() if k != "source"} for c in old["cells"]
    ]
    changed = [i for i, (a, b) in enumerate(zip(old["cells"], new["cells"], strict=True)) if a != b]
    assert changed == [2, 5]  # cells 3 and 6
    assert "".join(new["cells"][2]["source"]).startswith(
        "import torch\nimport torch.nn as nn\nimport torch_xla\n"
        "import torch_xla.distributed.parallel_loader as pl\n"
    )
    train = "".join(new["cells"][5]["source"])
    assert train.startswith("%%time\nfor epoch in range(2):\n")  # the magic is kept
    assert "        torch_xla.sync()\n" in train
    # IPython lines are restored exactly, and the file keeps its own JSON style: every
    # line outside the changed sources is byte-identical.
    assert new["cells"][1]["source"] == old["cells"][1]["source"]
    assert after.decode() == json.dumps(new, indent=2, ensure_ascii=False) + "\n"
    assert fixed_twice_is_fixed_once(colab, after)


def fixed_twice_is_fixed_once(folder: Path, fixed: bytes) -> bool:
    run_cli("fix", "--apply", TRAIN)
    return (folder / TRAIN).read_bytes() == fixed


def test_fix_keeps_nbformats_own_style(project: Path) -> None:
    # nbformat writes sorted keys, one-space indent, non-ASCII as is, a final newline.
    source = "import torch_xla.core.xla_model as xm\n\nfor b in data:\n    xm.mark_step()  # é\n"
    node = nbformat.v4.new_notebook()
    node.cells = [nbformat.v4.new_markdown_cell("# Ü"), nbformat.v4.new_code_cell(source)]
    node.cells[1].outputs = [nbformat.v4.new_output("stream", text="ok\n")]
    write(project, {"nb.ipynb": nbformat.writes(node)})
    assert run_cli("fix", "--apply", "--select", "XLA604", "nb.ipynb").exit_code == 0
    text = (project / "nb.ipynb").read_text(encoding="utf-8")
    expected = nbformat.reads(text, as_version=4)
    assert text == nbformat.writes(expected)
    assert (
        expected.cells[1].source
        == "import torch_xla\n\nfor b in data:\n    torch_xla.sync()  # é\n"
    )
    assert expected.cells[1].outputs[0]["text"] == "ok\n"


def test_source_as_a_string_and_no_final_newline(project: Path) -> None:
    cells = [
        {
            "cell_type": "code",
            "execution_count": 3,
            "metadata": {"tags": ["x"]},
            "outputs": [],
            "source": "import torch_xla.core.xla_model as xm\nxm.mark_step()",
        }
    ]
    data = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    write(project, {"nb.ipynb": json.dumps(data)})  # compact, no final newline
    run_cli("fix", "--apply", "--select", "XLA604", "nb.ipynb")
    text = (project / "nb.ipynb").read_text()
    cells[0]["source"] = "import torch_xla\ntorch_xla.sync()"
    assert text == json.dumps(data)


def test_magics_are_masked_line_for_line(project: Path) -> None:
    write(
        project,
        {
            "nb.ipynb": notebook(
                "%matplotlib inline\n!pip install a \\\n   b\nfiles = !ls\ntorch?\n"
                "import torch_xla.core.xla_model as xm",
                "for b in data:\n    !echo step\n    %time step(b)\n    xm.mark_step()",
                "%%bash\nfor x in 1 2; do xm.mark_step(); done",
            )
        },
    )
    run = run_cli("check", *CONCISE, "--select", "XLA604", "nb.ipynb")
    assert run.stderr == ""
    assert run.stdout.splitlines()[0].startswith("nb.ipynb:cell 3:4:5: XLA604")
    assert len(run.stdout.splitlines()) == 3  # one finding: the %%bash cell is not Python
    run_cli("fix", "--apply", "--select", "XLA604", "nb.ipynb")
    cells = nbformat.read(project / "nb.ipynb", as_version=4).cells
    assert cells[1].source.startswith("%matplotlib inline\n!pip install a \\\n   b\n")
    assert (
        cells[2].source == "for b in data:\n    !echo step\n    %time step(b)\n    torch_xla.sync()"
    )
    assert cells[3].source == "%%bash\nfor x in 1 2; do xm.mark_step(); done"


def test_syntax_error_is_placed_in_its_cell(project: Path) -> None:
    write(project, {"nb.ipynb": notebook("import torch\n", "x = 1\ndef f(:\n")})
    run = run_cli("check", "nb.ipynb")
    assert run.exit_code == 1
    assert run.error_lines == ["error: nb.ipynb: syntax error at cell 3:2:7: invalid syntax"]
    entry = run_cli("check", "--output-format", "json", "nb.ipynb").json()[0]
    assert entry["location"] == {"row": 2, "column": 7}  # in the cell, as the message says


def test_unreadable_notebooks_are_file_errors(project: Path) -> None:
    write(project, {"bad.ipynb": "{not json", "old.ipynb": '{"nbformat": 3, "cells": []}'})
    run = run_cli("check", ".")
    assert run.exit_code == 1
    assert run.error_lines == [
        "error: bad.ipynb: not a notebook: invalid JSON at line 1, column 2",
        "error: old.ipynb: nbformat 3 notebooks are not supported; convert it with "
        "`jupyter nbconvert --to notebook --nbformat 4`",
    ]


def test_notebooks_are_linted_by_default_and_can_be_turned_off(colab: Path) -> None:
    assert {d["filename"] for d in run_cli("check", "--output-format", "json").json()} == {
        TRAIN,
        SAMPLE,
    }
    write(colab, {"xlalint.toml": 'extend-exclude = ["*.ipynb"]\n'})
    assert run_cli("check").stdout == "All checks passed!\n"


def test_non_python_kernels_are_skipped(project: Path) -> None:
    data = json.loads(notebook("x <- c(1, 2)\nprint(x.item())"))
    data["metadata"] = {"kernelspec": {"language": "R", "name": "ir", "display_name": "R"}}
    write(project, {"r.ipynb": json.dumps(data)})
    assert run_cli("check", "r.ipynb").exit_code == 0


def test_notebook_on_stdin(colab: Path) -> None:
    data = (colab / TRAIN).read_bytes()
    run = CliRunner().invoke(
        main, ["check", *CONCISE, "--select", "XLA604", "--stdin-filename", "nb.ipynb", "-"],
        input=data,
    )  # fmt: skip
    assert run.stdout.startswith("nb.ipynb:cell 6:10:9: XLA604")
    fixed = CliRunner().invoke(
        main, ["fix", "--select", "XLA604", "--stdin-filename", "nb.ipynb", "-"], input=data
    )
    assert "torch_xla.sync()" in json.loads(fixed.stdout_bytes)["cells"][5]["source"][9]


def test_lint_notebook_api_without_code_cells() -> None:
    raw = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    result = lint_notebook(raw.encode(), "empty.ipynb", select_rules(["ALL"], (), ()))
    assert (result.diagnostics, result.error) == ([], None)


def test_github_annotations_of_notebooks_name_the_cell_not_a_json_line(colab: Path) -> None:
    run = run_cli("check", "--output-format", "github", "--select", "XLA604", TRAIN)
    assert run.stdout == (
        f"::notice title=xlalint (XLA604),file={TRAIN}::{TRAIN}:cell 6:10:9: XLA604 "
        "`xm.mark_step()` is deprecated: torch_xla 2.9 warns on every call; use "
        "`torch_xla.sync()`\n"
    )


def test_fix_without_apply_diffs_cell_by_cell(colab: Path) -> None:
    before = (colab / TRAIN).read_bytes()
    run = run_cli("fix", "--select", "XLA604", TRAIN)
    assert run.exit_code == 1  # it would change
    assert (colab / TRAIN).read_bytes() == before
    assert (
        run.stdout
        == (
            f"--- a/{TRAIN}:cell 3\n+++ b/{TRAIN}:cell 3\n"
            "@@ -1,5 +1,6 @@\n"
            " import torch\n import torch.nn as nn\n+import torch_xla\n"
            " import torch_xla.core.xla_model as xm\n \n device = xm.xla_device()\n"
            f"--- a/{TRAIN}:cell 6\n+++ b/{TRAIN}:cell 6\n"
        )
        + run.stdout.split(f"+++ b/{TRAIN}:cell 6\n", 1)[1]
    )
    assert "-        xm.mark_step()\n+        torch_xla.sync()\n" in run.stdout
    assert '"source"' not in run.stdout  # code, not JSON


_PYTHON = {
    "import torch",
    "x = 1",
    "for b in data:",
    "    step(b)",
    "# xlalint-masked-0-1",
    "# %% xlalint: next cell",
    "",
}
_LINES = st.sampled_from(
    [
        "import torch",
        "x = 1",
        "for b in data:",
        "    step(b)",
        "    !echo hi",
        "    %time f()",
        "%matplotlib inline",
        "!pip install a \\",
        "  b",
        "files = !ls",
        "torch.nn?",
        "%%time",
        "%%bash",
        "# xlalint-masked-0-1",
        "# %% xlalint: next cell",
        "",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_LINES, max_size=6).map("\n".join), min_size=1, max_size=4))
def test_masking_keeps_every_row_and_round_trips(sources: list[str]) -> None:
    """Whatever the cells hold, the virtual module has each cell's rows where the map says,
    and splitting it back (as a fix with no edits would) gives the sources unchanged."""
    nb = Notebook(notebook(*sources).encode())
    module = nb.virtual()
    lines = module.text.splitlines()
    for span, (number, source) in zip(module.spans, nb.code_cells(), strict=True):
        originals = source.splitlines()
        assert span.rows == max(1, len(originals))
        whole_cell_masked = source.startswith("%%bash")
        for row_in_cell, original in enumerate(originals, start=1):
            virtual = lines[span.first_row + row_in_cell - 2]
            assert module.locate(span.first_row + row_in_cell - 1) == (number, row_in_cell)
            continued = row_in_cell > 1 and originals[row_in_cell - 2].endswith("\\")
            if original in _PYTHON and not (whole_cell_masked or continued):
                assert virtual == original  # Python lines are untouched
    assert module.split(module.text) == [source for _, source in nb.code_cells()]


def test_notebook_results_are_cached_with_their_cells(
    colab: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XLALINT_NO_CACHE", raising=False)
    calls: list[str] = []
    real = engine.lint_source

    def counting(text: str, filename: str, *args: object, **kwargs: object) -> object:
        calls.append(filename)
        return real(text, filename, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "lint_source", counting)  # notebooks imports it to lint
    first = run_cli("check", *CONCISE, TRAIN)
    assert calls == [TRAIN]
    second = run_cli("check", *CONCISE, TRAIN)
    assert calls == [TRAIN]  # answered from the cache...
    assert second.stdout == first.stdout  # ...with the same cells, rows and columns
    assert f"{TRAIN}:cell 6:10:9: XLA604" in second.stdout


@pytest.mark.parametrize(
    "style",
    [
        {"indent": 3},
        {"indent": "\t"},
        {"separators": (",", ":")},
        {"indent": 2, "ensure_ascii": True},
    ],
)
def test_fix_keeps_any_json_style(project: Path, style: dict[str, object]) -> None:
    source = "import torch_xla.core.xla_model as xm\nxm.mark_step()  # é\n"
    text = notebook(source, "print('ü')\n", **style)
    write(project, {"nb.ipynb": text})
    run_cli("fix", "--apply", "--select", "XLA604", "nb.ipynb")
    data = json.loads(text)
    data["cells"][1]["source"] = ["import torch_xla\n", "torch_xla.sync()  # é\n"]
    assert (project / "nb.ipynb").read_text(encoding="utf-8") == json.dumps(data, **style) + "\n"


def test_dropped_fixes_are_placed_by_cell() -> None:
    raw = notebook("import torch\n", "x = 1\nx.broken()\n").encode()
    outcome = fix_notebook(raw, "nb.ipynb", [BrokenFix])
    assert outcome.dropped == ["XLA904 at cell 3:2:1"]
    assert not outcome.changed
    assert [(d.code, d.cell, d.start.row) for d in outcome.remaining] == [("XLA904", 3, 2)]


def test_a_crash_while_fixing_a_notebook_is_that_file_s_error(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug met while fixing one notebook is reported against it; other files are fixed."""

    def crash(self: notebooks.VirtualModule, text: str) -> notebooks.VirtualModule:
        raise RuntimeError("boundary lost")

    monkeypatch.setattr(notebooks.VirtualModule, "rebased", crash)
    source = "import torch_xla.core.xla_model as xm\nxm.mark_step()\n"
    write(project, {"nb.ipynb": notebook(source), "train.py": source})
    run = run_cli("fix", "--apply", "--select", "XLA604", "nb.ipynb", "train.py")
    assert run.exit_code == 1
    assert "nb.ipynb: internal error (RuntimeError: boundary lost)" in run.stderr
    assert "torch_xla.sync()" in (project / "train.py").read_text()
    assert json.loads((project / "nb.ipynb").read_text()) == json.loads(notebook(source))
