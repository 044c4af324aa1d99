"""The scoring of the labelled quality corpus (benchmarks/quality/scoring.py).

Synthetic labels and findings; nothing is downloaded or linted here.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCORING = Path(__file__).resolve().parent.parent / "benchmarks" / "quality" / "scoring.py"
_spec = importlib.util.spec_from_file_location("xlalint_quality_scoring", SCORING)
assert _spec is not None and _spec.loader is not None
scoring = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = scoring  # dataclasses look their module up by name
_spec.loader.exec_module(scoring)

Finding = scoring.Finding
Label = scoring.Label


def label(line: int, code: str = "XLA101", *, end: int | None = None, **extra) -> Label:
    fields = {"project": "p", "file": "a.py", "expect": True, "kind": "", "note": ""}
    fields.update(extra)
    return Label(line=line, end_line=line if end is None else end, code=code, **fields)


def finding(line: int, code: str = "XLA101", file: str = "a.py", project: str = "p") -> Finding:
    return Finding(project, file, line, code, "msg")


def test_exact_match_is_a_true_positive() -> None:
    result = scoring.score([finding(10)], [label(10)])
    assert [(f.line, lab.line) for f, lab in result.tp] == [(10, 10)]
    assert result.fp == [] and result.fn == []
    assert result.precision == 1.0 and result.recall == 1.0


def test_unlabelled_finding_is_a_false_positive() -> None:
    result = scoring.score([finding(10), finding(11)], [label(10)])
    assert len(result.tp) == 1
    assert [(fp.finding.line, fp.reason) for fp in result.fp] == [(11, "unlabelled")]
    assert result.precision == 0.5


def test_wrong_code_wrong_file_or_project_do_not_match() -> None:
    findings = [finding(10, "XLA102"), finding(10, file="b.py"), finding(10, project="q")]
    result = scoring.score(findings, [label(10)])
    assert result.tp == []
    assert len(result.fp) == 3
    assert [lab.line for lab in result.fn] == [10]
    assert result.recall == 0.0


def test_label_without_finding_is_a_miss() -> None:
    result = scoring.score([], [label(5, note="loss.item() each step")])
    assert [lab.note for lab in result.fn] == ["loss.item() each step"]
    assert result.recall == 0.0
    assert result.precision is None


def test_a_label_absorbs_one_finding_the_rest_are_duplicates() -> None:
    result = scoring.score([finding(7, "XLA101"), finding(7, "XLA104")], [label(7, "XLA1")])
    assert len(result.tp) == 1
    assert [fp.reason for fp in result.fp] == ["duplicate"]
    assert result.fn == []


def test_identical_findings_each_count() -> None:
    # `a.cpu(), b.cpu()` on one line: two findings alike, one label absorbs one of them.
    result = scoring.score([finding(4, "XLA102"), finding(4, "XLA102")], [label(4, "XLA102")])
    assert len(result.tp) == 1
    assert [fp.reason for fp in result.fp] == ["duplicate"]


def test_family_prefix_matches_codes_of_that_family_only() -> None:
    labels = [label(3, "XLA1"), label(4, "XLA1")]
    result = scoring.score([finding(3, "XLA104"), finding(4, "XLA201")], labels)
    assert [(f.code, lab.code) for f, lab in result.tp] == [("XLA104", "XLA1")]
    assert [fp.finding.code for fp in result.fp] == ["XLA201"]
    assert [lab.line for lab in result.fn] == [4]


def test_end_line_range_is_inclusive() -> None:
    span = label(20, end=22)
    assert scoring.score([finding(22)], [span]).tp
    assert scoring.score([finding(20)], [span]).tp
    outside = scoring.score([finding(23)], [span])
    assert outside.tp == [] and len(outside.fp) == 1 and len(outside.fn) == 1
    before = scoring.score([finding(19)], [span])
    assert before.tp == [] and len(before.fp) == 1


def test_borderline_labels_count_neither_way() -> None:
    maybe = label(9, kind="borderline")
    matched = scoring.score([finding(9)], [maybe])
    assert matched.tp == [] and matched.fp == [] and matched.fn == []
    assert len(matched.ignored) == 1
    assert matched.precision is None and matched.recall is None
    unmatched = scoring.score([], [maybe])
    assert unmatched.fn == []


def test_borderline_negative_is_ignored_too() -> None:
    result = scoring.score([finding(9)], [label(9, expect=False, kind="borderline")])
    assert result.fp == [] and len(result.ignored) == 1


def test_finding_on_a_hard_negative_is_a_false_positive() -> None:
    trap = label(12, expect=False, kind="hard", note="dict.items()")
    result = scoring.score([finding(12)], [trap])
    assert [(fp.reason, fp.label.note) for fp in result.fp] == [("hard negative", "dict.items()")]
    assert result.fn == []  # a negative is never missed


def test_unmatched_hard_negative_counts_nothing() -> None:
    result = scoring.score([], [label(12, expect=False, kind="hard")])
    assert result.tp == [] and result.fp == [] and result.fn == []


def test_overlapping_labels_get_a_maximum_matching() -> None:
    # Finding 11 could take either label; a greedy choice of the wide one would leave the
    # finding on line 10 unmatched. Both must be true positives.
    wide, narrow = label(10, end=11), label(11)
    result = scoring.score([finding(11), finding(10)], [narrow, wide])
    assert sorted((f.line, lab.line, lab.end_line) for f, lab in result.tp) == [
        (10, 10, 11),
        (11, 11, 11),
    ]
    assert result.fp == [] and result.fn == []


def test_matching_reassigns_a_label_a_later_finding_needs() -> None:
    # The finding on line 10 prefers the exact-code label, which the finding on line 11
    # also needs and is its only choice: the family label must go to line 10.
    exact, family = label(10, end=11), label(10, "XLA1")
    result = scoring.score([finding(10), finding(11)], [exact, family])
    assert sorted((f.line, lab.code) for f, lab in result.tp) == [(10, "XLA1"), (11, "XLA101")]
    assert result.fp == [] and result.fn == []


def test_per_rule_counts_findings_by_code_and_labels_by_label_code() -> None:
    labels = [label(1, "XLA101"), label(2, "XLA1"), label(3, "XLA301"), label(4, "XLA101")]
    findings = [finding(1, "XLA101"), finding(2, "XLA104"), finding(3, "XLA301"), finding(9)]
    rules = scoring.score(findings, labels).per_rule()
    assert (rules["XLA101"].tp_findings, rules["XLA101"].fp) == (1, 1)
    assert (rules["XLA101"].tp_labels, rules["XLA101"].fn) == (1, 1)
    assert rules["XLA101"].precision == 0.5 and rules["XLA101"].recall == 0.5
    assert (rules["XLA104"].tp_findings, rules["XLA104"].tp_labels) == (1, 0)
    assert rules["XLA104"].precision == 1.0 and rules["XLA104"].recall is None
    assert (rules["XLA1"].tp_labels, rules["XLA1"].tp_findings) == (1, 0)
    assert rules["XLA1"].recall == 1.0 and rules["XLA1"].precision is None
    assert rules["XLA301"].precision == 1.0 and rules["XLA301"].recall == 1.0


def test_overall_numbers() -> None:
    labels = [label(1), label(2), label(3), label(4, kind="borderline"), label(5, expect=False)]
    findings = [finding(1), finding(2), finding(4), finding(5), finding(6)]
    result = scoring.score(findings, labels)
    assert (len(result.tp), len(result.fp), len(result.fn)) == (2, 2, 1)
    assert result.precision == 0.5
    assert result.recall == pytest.approx(2 / 3)


PROJECT = {
    "project": "demo",
    "requirement": "demo==1.0",
    "split": "tune",
    "files": ["train.py"],
    "label": [
        {"file": "train.py", "line": 3, "end_line": 4, "code": "XLA1", "expect": True},
        {"file": "train.py", "line": 8, "code": "XLA303", "expect": False, "kind": "hard"},
    ],
}


def test_parse_project_reads_labels() -> None:
    project = scoring.parse_project(PROJECT)
    assert project.name == "demo" and project.split == "tune"
    first, second = project.labels
    assert (first.line, first.end_line, first.code, first.kind) == (3, 4, "XLA1", "")
    assert (second.end_line, second.expect, second.kind) == (8, False, "hard")


GOOD_LABEL = {"file": "train.py", "line": 5, "code": "XLA1", "expect": True}


@pytest.mark.parametrize(
    ("change", "label_change", "message"),
    [
        ({"split": "dev"}, {}, "split"),
        ({"requirement": "demo>=1.0"}, {}, "pin one version"),
        ({}, {"file": "other.py"}, "not in"),
        ({}, {"end_line": 4}, "line"),
        ({}, {"code": "XLA"}, "code"),
        ({}, {"expect": "yes"}, "expect"),
        ({}, {"kind": "x"}, "kind"),
        ({}, {"lines": 1}, "unknown"),
    ],
)
def test_parse_project_rejects_typos(change: dict, label_change: dict, message: str) -> None:
    data = {**PROJECT, "label": [{**GOOD_LABEL, **label_change}], **change}
    with pytest.raises(scoring.LabelError, match=message):
        scoring.parse_project(data)


def test_parse_project_accepts_the_good_label() -> None:
    assert scoring.parse_project({**PROJECT, "label": [GOOD_LABEL]}).labels[0].line == 5


def test_project_files_in_the_repository_parse() -> None:
    projects = scoring.load_projects()
    assert all(project.split in ("tune", "test") for project in projects)
    for project in projects:
        assert all(lab.file in project.files for lab in project.labels)


# -- fetching and linting, offline ------------------------------------------------------------

BENCHMARKS = SCORING.parent.parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fetch = _load("xlalint_quality_fetch", BENCHMARKS / "quality" / "fetch.py")


def _no_download(requirement: str, downloads: Path) -> None:
    raise AssertionError(f"tried to download {requirement}")


def test_fetch_unpacks_the_wheel_of_the_pinned_version(tmp_path: Path, monkeypatch) -> None:
    import zipfile

    monkeypatch.setattr(fetch, "_download", _no_download)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    for version in ("1.0", "1.0.1"):
        with zipfile.ZipFile(downloads / f"demo_pkg-{version}-py3-none-any.whl", "w") as wheel:
            wheel.writestr("demo_pkg/train.py", f"VERSION = {version!r}\n")
    root = fetch.project_root("demo-pkg==1.0", tmp_path)
    assert (root / "demo_pkg" / "train.py").read_text() == "VERSION = '1.0'\n"
    assert fetch.project_root("demo-pkg==1.0", tmp_path) == root  # unpacked once


def test_fetch_strips_the_sdist_top_folder(tmp_path: Path, monkeypatch) -> None:
    import io
    import tarfile

    monkeypatch.setattr(fetch, "_download", _no_download)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with tarfile.open(downloads / "demo-2.0.tar.gz", "w:gz") as sdist:
        data = b"x = 1\n"
        info = tarfile.TarInfo("demo-2.0/pkg/a.py")
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    root = fetch.project_root("demo==2.0", tmp_path)
    assert (root / "pkg" / "a.py").read_text() == "x = 1\n"


TRAIN = """\
import torch


def train(model, loader, opt):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        print(loss.item())
"""


def test_lint_project_reports_listed_files_with_default_rules(tmp_path: Path, monkeypatch) -> None:
    quality = _load("xlalint_quality_cli", BENCHMARKS / "quality.py")
    root = tmp_path / "src" / "demo-1.0"
    root.mkdir(parents=True)
    (root / "train.py").write_text(TRAIN)
    (root / "unlisted.py").write_text(TRAIN)
    # The unpacked project's own config must not change what is scored.
    (root / "pyproject.toml").write_text('[tool.xlalint]\nignore = ["XLA101"]\n')
    monkeypatch.setenv("XLALINT_QUALITY_CACHE", str(tmp_path))
    project = scoring.Project("demo", "demo==1.0", "tune", ("train.py",), ())
    findings, errors = quality.lint_project(project, jobs=1)
    assert errors == []
    assert {f.file for f in findings} == {"train.py"}
    assert ("train.py", 9, "XLA101") in {(f.file, f.line, f.code) for f in findings}
    assert all(f.project == "demo" for f in findings)
