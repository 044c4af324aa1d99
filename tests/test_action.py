"""The GitHub Action (action.yml): its shell steps run here as the runner would run them.

The `uses:` step (setup-python) is the runner's business; in its place a fresh virtual
environment stands first on PATH, seeing this interpreter's packages, so that the install
step really installs xlalint from a copy of the action's checkout (the action's ref) and
the run step runs that install.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import BAD, CLEAN, ROOT, write

EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def action() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "action.yml").read_text())


def substitute(text: str, context: dict[str, str]) -> str:
    """Expand `${{ name }}` as the runner does; an expression the test does not know fails."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        assert name in context, f"action.yml uses ${{{{ {name} }}}}, unknown to this test"
        return context[name]

    return EXPRESSION.sub(value, text)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The action's checkout (the tracked files), and an empty venv that sees this
    interpreter's packages (xlalint's dependencies) but not its xlalint."""
    base = tmp_path_factory.mktemp("action")
    checkout = base / "action"
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        source = ROOT / os.fsdecode(name)
        if source.is_file():
            target = checkout / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    venv = base / "venv"
    subprocess.run(
        [sys._base_executable, "-m", "venv", "--without-pip", str(venv)],  # type: ignore[attr-defined]
        check=True,
    )
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    (purelib / "parent.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return {"checkout": checkout, "bin": venv / "bin"}


def clean_environment() -> dict[str, str]:
    """The environment without this test run's Python or xlalint settings."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("XLALINT_", "PYTHON", "VIRTUAL_ENV"))
    }


def run_steps(
    workspace: Path, paths: dict[str, Path], inputs: dict[str, str]
) -> list[subprocess.CompletedProcess[str]]:
    spec = action()
    assert spec["runs"]["using"] == "composite"
    context = {f"inputs.{k}": str(v.get("default", "")) for k, v in spec["inputs"].items()}
    context.update({f"inputs.{k}": v for k, v in inputs.items()})
    context["github.action_path"] = str(paths["checkout"])
    results = []
    for step in spec["runs"]["steps"]:
        if "uses" in step:
            assert step["uses"].startswith("actions/setup-python@")
            continue
        assert step["shell"] == "bash"
        env = clean_environment()
        env["PATH"] = f"{paths['bin']}{os.pathsep}{env['PATH']}"
        env.update({k: substitute(str(v), context) for k, v in step.get("env", {}).items()})
        script = substitute(step["run"], context)
        result = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        results.append(result)
        if result.returncode != 0:
            break
    return results


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write(
        repo,
        {
            "src/train.py": BAD,
            "src/ok.py": CLEAN,
            "nb/train.ipynb": (ROOT / "fixtures/notebooks/train_tpu_colab.ipynb").read_text(),
            "vendor/old.py": BAD,
        },
    )
    return repo


def test_action_installs_xlalint_from_its_checkout_and_annotates(
    workspace: Path, installed: dict[str, Path]
) -> None:
    install, check = run_steps(workspace, installed, {"args": "src nb --select XLA101,XLA604"})
    assert install.returncode == 0, install.stderr
    site = subprocess.run(
        [installed["bin"] / "python", "-c", "import xlalint; print(xlalint.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=workspace,
        env=clean_environment(),
    ).stdout
    assert site.startswith(str(installed["bin"].parent))  # the action's copy, installed
    assert check.returncode == 1  # findings fail the job
    lines = check.stdout.splitlines()
    assert [line.split("::")[1] for line in lines] == [
        "notice title=xlalint (XLA604),file=nb/train.ipynb",
        "warning title=xlalint (XLA101),file=nb/train.ipynb",
        "warning title=xlalint (XLA101),file=src/train.py,line=8,col=18,endLine=8,endColumn=29",
    ]
    assert "vendor" not in check.stdout  # only the paths given in `args`
    assert not (workspace / "xlalint.sarif").exists()


def test_action_writes_sarif_when_asked(workspace: Path, installed: dict[str, Path]) -> None:
    inputs = {"args": "--select XLA101 'src'", "sarif-file": "out dir.sarif"}
    install, check = run_steps(workspace, installed, inputs)
    assert install.returncode == 0, install.stderr
    assert check.returncode == 1
    document = json.loads((workspace / "out dir.sarif").read_text())
    [result] = document["runs"][0]["results"]
    artifact = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"}
    assert document["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == (
        workspace.resolve().as_uri() + "/"
    )


def test_action_passes_a_clean_tree(workspace: Path, installed: dict[str, Path]) -> None:
    for folder in ("src", "vendor", "nb"):
        shutil.rmtree(workspace / folder)
    write(workspace, {"ok.py": CLEAN})
    results = run_steps(workspace, installed, {"args": "--select XLA101"})
    assert [r.returncode for r in results] == [0, 0]
    assert results[1].stdout == ""


def test_readme_documents_the_action() -> None:
    readme = (ROOT / "README.md").read_text()
    workflow = readme.split("## GitHub Action", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    steps = yaml.safe_load(workflow)["jobs"]["xlalint"]["steps"]
    uses = [step.get("uses", "") for step in steps]
    assert any(u.startswith("xlalint/xlalint@") for u in uses)
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)
    [ours] = [step for step in steps if step.get("uses", "").startswith("xlalint/xlalint@")]
    assert set(ours.get("with", {})) <= set(action()["inputs"])
