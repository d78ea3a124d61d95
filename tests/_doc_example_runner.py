"""Run one documentation example as a script, on a chosen anyio backend (used by
``tests/test_docs_examples.py``; not a test module).

Usage: ``python tests/_doc_example_runner.py BACKEND EXAMPLE.py RECORD.jsonl``

The example runs unmodified, as ``__main__``, from its own file (so tracebacks name its lines).
Two things are arranged around it, and nothing else:

* ``anyio.run`` is wrapped so that ``anyio.run(main)`` runs on BACKEND. The docs never pass a
  backend (the convention in the test's docstring), so the same text runs on asyncio and trio.
  An example that passes ``backend=`` itself is refused: it would not run on both.
* ``print`` is wrapped to record, for every call made from the example's own lines, the line
  and the text it wrote. The test compares that with the ``print(...)  # output`` comments.

RECORD gets one JSON object per line: ``{"print": [lineno, text]}`` for each print and
``{"anyio_run": true}`` for each ``anyio.run`` the example made.
"""

from __future__ import annotations

import builtins
import json
import runpy
import sys
from pathlib import Path
from typing import Any

import anyio


def main() -> None:
    backend, example, record_path = sys.argv[1], str(Path(sys.argv[2]).resolve()), sys.argv[3]
    record = open(record_path, "a", encoding="utf-8")  # noqa: SIM115 (kept open to the end)

    def note(entry: dict[str, Any]) -> None:
        record.write(json.dumps(entry) + "\n")
        record.flush()  # written as it happens: a crash later still shows what was printed

    real_run = anyio.run
    real_print = builtins.print

    def run_on_backend(func: Any, *args: Any, **kwargs: Any) -> Any:
        caller = sys._getframe(1).f_code.co_filename
        if caller == example:
            if "backend" in kwargs:
                raise SystemExit(
                    "doc examples call anyio.run(main) without a backend: the test runs each "
                    "one on asyncio and on trio"
                )
            note({"anyio_run": True})
        kwargs.setdefault("backend", backend)
        return real_run(func, *args, **kwargs)

    def recording_print(*args: Any, **kwargs: Any) -> None:
        frame = sys._getframe(1)
        if frame.f_code.co_filename == example:
            sep = kwargs.get("sep")
            text = (" " if sep is None else sep).join(str(arg) for arg in args)
            note({"print": [frame.f_lineno, text]})
        real_print(*args, **kwargs)

    anyio.run = run_on_backend  # type: ignore[assignment]
    builtins.print = recording_print
    sys.argv = [example]
    sys.path[0] = str(Path(example).parent)  # as `python EXAMPLE.py` would have it
    runpy.run_path(example, run_name="__main__")


if __name__ == "__main__":
    main()
