"""Count libcst parses in one `xlalint check FILE` (with the closing summary, whose fix
forecast runs the fixer twice), and say where each comes from. Parses are the bulk of a
cold single-file check, and their count does not depend on the machine's load.

    python benchmarks/parse_count.py path/to/file.py --no-cache
    python benchmarks/parse_count.py path/to/file.py --cache-dir "$(mktemp -d)"

The first is a cold run without the cache; the second a cold run that fills one (the
forecast then starts from the check's stored result).
"""

from __future__ import annotations

import collections
import contextlib
import os
import sys
import traceback

import libcst


def main() -> None:
    real = libcst.parse_module
    where: collections.Counter[str] = collections.Counter()

    def counting(*args: object, **kwargs: object) -> libcst.Module:
        frames = [
            f"{os.path.basename(f.filename)}:{f.name}"
            for f in traceback.extract_stack()[:-1]
            if f"{os.sep}xlalint{os.sep}" in f.filename
        ]
        where[" <- ".join(reversed(frames[-3:]))] += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    libcst.parse_module = counting  # type: ignore[assignment]
    from xlalint.cli import main as xlalint

    with contextlib.suppress(SystemExit):
        xlalint(["check", *sys.argv[1:]], standalone_mode=False)
    print(f"libcst parses: {sum(where.values())}", file=sys.stderr)
    for caller, count in where.most_common():
        print(f"{count:4d}  {caller}", file=sys.stderr)


if __name__ == "__main__":
    main()
