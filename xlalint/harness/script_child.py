"""Run a user's script as `__main__`, then save torch_xla's metrics for `xlalint profile`.

    python -m xlalint.harness.script_child OUT.json SCRIPT [ARGS...]
    python -m xlalint.harness.script_child OUT.json -m MODULE [ARGS...]

The script sees the same `sys.argv` as under plain `python`. The metrics are written when
the interpreter exits, however the script ends (return, `sys.exit`, an exception). With
`XLALINT_PROFILE_ROOTS` set (the user's folders, os.pathsep-separated), the script runs
under line_trace's tracer, and its per-line costs and loop graph sizes are written too.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import runpy
import sys
from pathlib import Path

from xlalint.harness.child import metrics
from xlalint.harness.debug_log import user_file_filter
from xlalint.harness.line_trace import LineTracer

_HARNESS = Path(__file__).resolve().parent


def _tracer() -> LineTracer | None:
    roots = os.environ.get("XLALINT_PROFILE_ROOTS")
    if not roots:
        return None
    in_roots = user_file_filter([Path(r) for r in roots.split(os.pathsep)], Path.cwd())
    return LineTracer(lambda name: in_roots(name) and not Path(name).is_relative_to(_HARNESS))


def _save(out: Path, tracer: LineTracer | None = None) -> None:
    if tracer is not None:
        tracer.stop()
    if "torch_xla" not in sys.modules:
        out.write_text(json.dumps({"imported_torch_xla": False}), encoding="utf-8")
        return
    import torch_xla

    # Work the script left pending counts too; a broken runtime must not hide its own error.
    with contextlib.suppress(Exception):
        torch_xla.sync(wait=True)
    traced = tracer.to_json() if tracer is not None else {}
    out.write_text(
        json.dumps({"imported_torch_xla": True, **metrics(), **traced}), encoding="utf-8"
    )


def main() -> None:
    out = Path(sys.argv[1])
    tracer = _tracer()
    atexit.register(_save, out, tracer)
    if tracer is not None:
        tracer.start()
    if sys.argv[2] == "-m":
        sys.argv = sys.argv[3:]
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
    else:
        sys.argv = sys.argv[2:]
        script = Path(sys.argv[0]).resolve()  # absolute, so frames name it unambiguously
        sys.path.insert(0, str(script.parent))
        runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main()
