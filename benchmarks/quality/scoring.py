"""Precision and recall of xlalint's findings against labels written by reading the code.

Kept apart from downloading and linting so that the rules of scoring can be tested on
synthetic labels and findings (tests/test_quality_scoring.py). The rules are those of the
corpus's README:

- a finding matches a label when the file is the same, its line is within
  [line, end_line], and its code equals the label's code or starts with the label's family
  prefix (`XLA1` covers `XLA101`);
- a finding matched to an expect=true, non-borderline label is a true positive; a label
  absorbs one finding, further findings on it are false positives ("duplicate");
- a finding that matches a borderline label, and no free expect=true label, is ignored;
- every other finding is a false positive (unlabelled, or on a hard negative);
- an expect=true, non-borderline label no finding matched is a miss.

When labels overlap, findings are assigned to labels by a maximum matching, so the count
of true positives does not depend on the order findings come in.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PROJECTS = Path(__file__).resolve().parent / "projects"
KINDS = ("", "borderline", "hard")
CODE = re.compile(r"XLA\d{1,3}")
FULL_CODE = re.compile(r"XLA\d{3}")


class LabelError(ValueError):
    """A project file whose labels cannot be scored as written."""


@dataclass(frozen=True)
class Label:
    project: str
    file: str
    line: int
    end_line: int
    code: str
    expect: bool
    kind: str = ""
    note: str = ""

    @property
    def counted(self) -> bool:
        """Whether the label takes part in precision and recall (borderline ones do not)."""
        return self.kind != "borderline"

    def matches(self, finding: Finding) -> bool:
        return (
            finding.project == self.project
            and finding.file == self.file
            and self.line <= finding.line <= self.end_line
            and finding.code.startswith(self.code)
        )

    def tightness(self) -> tuple[int, int]:
        """Exact codes and narrow ranges first, when a finding could take several labels."""
        return (0 if FULL_CODE.fullmatch(self.code) else 1, self.end_line - self.line)


@dataclass(frozen=True)
class Finding:
    project: str
    file: str
    line: int
    code: str
    message: str = ""


@dataclass(frozen=True)
class FalsePositive:
    finding: Finding
    reason: str  # "unlabelled", "hard negative" or "duplicate"
    label: Label | None = None


@dataclass
class RuleScore:
    """Counts for one code (or family prefix).

    Precision counts findings by the code they were reported with; recall counts labels by
    the code they were written with, so a family label (`XLA1`) scores under the family.
    """

    tp_findings: int = 0
    fp: int = 0
    tp_labels: int = 0
    fn: int = 0

    @property
    def precision(self) -> float | None:
        reported = self.tp_findings + self.fp
        return self.tp_findings / reported if reported else None

    @property
    def recall(self) -> float | None:
        expected = self.tp_labels + self.fn
        return self.tp_labels / expected if expected else None


@dataclass
class Score:
    tp: list[tuple[Finding, Label]] = field(default_factory=list)
    fp: list[FalsePositive] = field(default_factory=list)
    fn: list[Label] = field(default_factory=list)
    ignored: list[tuple[Finding, Label]] = field(default_factory=list)

    @property
    def precision(self) -> float | None:
        reported = len(self.tp) + len(self.fp)
        return len(self.tp) / reported if reported else None

    @property
    def recall(self) -> float | None:
        expected = len(self.tp) + len(self.fn)
        return len(self.tp) / expected if expected else None

    def per_rule(self) -> dict[str, RuleScore]:
        rules: dict[str, RuleScore] = {}

        def row(code: str) -> RuleScore:
            return rules.setdefault(code, RuleScore())

        for finding, label in self.tp:
            row(finding.code).tp_findings += 1
            row(label.code).tp_labels += 1
        for false in self.fp:
            row(false.finding.code).fp += 1
        for label in self.fn:
            row(label.code).fn += 1
        return dict(sorted(rules.items()))


def score(findings: Iterable[Finding], labels: Iterable[Label]) -> Score:
    """Match findings to labels and sort each into TP, FP, FN or ignored."""
    # Two findings may look alike (two `.cpu()` calls on one line): each one counts.
    findings = sorted(findings, key=lambda f: (f.project, f.file, f.line, f.code, f.message))
    labels = list(labels)
    positives = [label for label in labels if label.expect and label.counted]
    candidates = [
        sorted(
            (i for i, label in enumerate(positives) if label.matches(finding)),
            key=lambda i: positives[i].tightness(),
        )
        for finding in findings
    ]
    owner = _maximum_matching(candidates, len(positives))
    taken = {f: label for label, f in enumerate(owner) if f is not None}

    result = Score()
    for index, finding in enumerate(findings):
        if index in taken:
            result.tp.append((finding, positives[taken[index]]))
            continue
        matching = [label for label in labels if label.matches(finding)]
        borderline = next((label for label in matching if not label.counted), None)
        if borderline is not None:
            result.ignored.append((finding, borderline))
        elif any(label.expect for label in matching):
            duplicate = next(label for label in matching if label.expect)
            result.fp.append(FalsePositive(finding, "duplicate", duplicate))
        elif matching:
            result.fp.append(FalsePositive(finding, "hard negative", matching[0]))
        else:
            result.fp.append(FalsePositive(finding, "unlabelled"))
    result.fn = [label for i, label in enumerate(positives) if owner[i] is None]
    return result


def _maximum_matching(candidates: Sequence[Sequence[int]], n_labels: int) -> list[int | None]:
    """Kuhn's augmenting paths: for each label, the index of the finding it absorbs."""
    owner: list[int | None] = [None] * n_labels

    def assign(finding: int, seen: set[int]) -> bool:
        for label in candidates[finding]:
            if label in seen:
                continue
            seen.add(label)
            current = owner[label]
            if current is None or assign(current, seen):
                owner[label] = finding
                return True
        return False

    for finding in range(len(candidates)):
        assign(finding, set())
    return owner


# -- project files ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Project:
    name: str
    requirement: str
    split: str
    files: tuple[str, ...]
    labels: tuple[Label, ...]


def parse_project(data: Mapping[str, Any], source: str = "<project>") -> Project:
    """A project file's contents, checked so that a typo cannot silently change a score."""

    def fail(message: str) -> LabelError:
        return LabelError(f"{source}: {message}")

    for key in ("project", "requirement", "split", "files"):
        if key not in data:
            raise fail(f"missing `{key}`")
    name, requirement, split = data["project"], data["requirement"], data["split"]
    if split not in ("tune", "test"):
        raise fail(f"`split` must be 'tune' or 'test', got {split!r}")
    if not re.fullmatch(r"[A-Za-z0-9._-]+==[A-Za-z0-9._+-]+", str(requirement)):
        raise fail(f"`requirement` must pin one version (name==version), got {requirement!r}")
    files = data["files"]
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise fail("`files` must be a list of paths")
    if len(set(files)) != len(files):
        raise fail("`files` lists a path twice")
    labels = []
    for number, raw in enumerate(data.get("label", []), start=1):
        where = f"label {number}"
        unknown = set(raw) - {"file", "line", "end_line", "code", "expect", "kind", "note"}
        if unknown:
            raise fail(f"{where}: unknown key(s) {sorted(unknown)}")
        for key in ("file", "line", "code", "expect"):
            if key not in raw:
                raise fail(f"{where}: missing `{key}`")
        if raw["file"] not in files:
            raise fail(f"{where}: file {raw['file']!r} is not in `files`")
        line, end_line = raw["line"], raw.get("end_line", raw["line"])
        if not (isinstance(line, int) and isinstance(end_line, int) and 1 <= line <= end_line):
            raise fail(f"{where}: need 1 <= line <= end_line, got {line}..{end_line}")
        if not CODE.fullmatch(raw["code"]):
            raise fail(f"{where}: `code` must be a code or family prefix, got {raw['code']!r}")
        if not isinstance(raw["expect"], bool):
            raise fail(f"{where}: `expect` must be true or false")
        kind = raw.get("kind", "")
        if kind not in KINDS:
            raise fail(f"{where}: `kind` must be one of {KINDS}, got {kind!r}")
        labels.append(
            Label(
                project=name,
                file=raw["file"],
                line=line,
                end_line=end_line,
                code=raw["code"],
                expect=raw["expect"],
                kind=kind,
                note=raw.get("note", ""),
            )
        )
    return Project(name, requirement, split, tuple(files), tuple(labels))


def load_projects(folder: Path = PROJECTS) -> list[Project]:
    """Every project file in `folder`, in name order; project names must be unique."""
    projects = []
    for path in sorted(folder.glob("*.toml")):
        with path.open("rb") as handle:
            projects.append(parse_project(tomllib.load(handle), str(path)))
    names = [project.name for project in projects]
    if len(set(names)) != len(names):
        raise LabelError(f"{folder}: a project name is used twice: {sorted(names)}")
    return projects
