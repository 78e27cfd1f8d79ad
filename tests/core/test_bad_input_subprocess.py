"""Bad input that goes through C (DLPack capsules and their destructors): each case runs
in a fresh interpreter, so a crash fails one test instead of the run, and must end with
a clear exception of the right type, the interpreter alive and nothing leaked."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))
import testsite

PRELUDE = """
import json, gc, numpy as np, pygpukit as gp
from pygpukit import _dlpack
rng = np.random.default_rng(15)
x = gp.asarray(rng.standard_normal(6).astype(np.float32))
def report(fn):
    try:
        fn()
    except BaseException as exc:
        gc.collect()
        print(json.dumps({"type": type(exc).__name__, "message": str(exc),
                          "live": _dlpack.live_exports()}))
    else:
        print(json.dumps({"type": None, "message": "", "live": _dlpack.live_exports()}))
"""

# (id, code that calls report(...), exception type name(s), regex the message must match)
CASES: list[tuple[str, str, tuple[str, ...], str]] = [
    # NumPy has no bfloat16: it refuses the capsule, and the capsule's destructor must not
    # turn its exception into a SystemError (it did, with a ctypes destructor)
    ("numpy-bfloat16", "report(lambda: np.from_dlpack(x.astype(gp.bfloat16)))",
     ("RuntimeError", "BufferError", "TypeError"), r"dtype"),
    ("numpy-float8", "report(lambda: np.from_dlpack(x.astype(gp.float8_e4m3fn)))",
     ("BufferError",), r"float8_e4m3fn array needs DLPack 1\.1"),
    ("legacy-float8", "report(lambda: x.astype(gp.float8_e5m2).__dlpack__())",
     ("BufferError",), r"float8_e5m2 array needs DLPack 1\.1"),
    ("versioned-1.0-float8",
     "report(lambda: x.astype(gp.float8_e5m2).__dlpack__(max_version=(1, 0)))",
     ("BufferError",), r"float8_e5m2.*asked for \(1, 0\)"),
    ("legacy-read-only", "report(lambda: gp.broadcast_to(x[:1], (4,)).__dlpack__())",
     ("BufferError",), r"read-only \(broadcast\) view needs versioned DLPack"),
    ("wrong-device", "report(lambda: x.__dlpack__(dl_device=(2, 0)))", ("BufferError",),
     r"cannot export an array of device \(1, 0\) to \(2, 0\)"),
    ("used-capsule",
     "cap = x.__dlpack__()\n_dlpack.consume(cap)\nreport(lambda: _dlpack.consume(cap))",
     ("ValueError",), r"not an unconsumed DLPack capsule"),
    ("not-dlpack", "report(lambda: gp.from_dlpack(3.5))", ("TypeError", "AttributeError"),
     r"__dlpack__|float"),
    ("many-refusals",
     "b = x.astype(gp.bfloat16)\n"
     "for _ in range(200):\n"
     "    try: np.from_dlpack(b)\n"
     "    except RuntimeError: pass\n"
     "report(lambda: np.from_dlpack(b))",
     ("RuntimeError", "BufferError", "TypeError"), r"dtype"),
]  # fmt: skip


@pytest.mark.parametrize("code,types,match", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_dlpack_bad_input_in_a_subprocess(
    tmp_path: Path, code: str, types: tuple[str, ...], match: str
) -> None:
    import re

    result = testsite.run_json(PRELUDE + code, tmp_path, packages=())
    assert result["type"] in types, result
    assert re.search(match, result["message"]), result
    assert result["live"] == 0, f"a refused capsule kept its array alive: {result}"


def test_read_only_view_reaches_numpy_read_only(tmp_path: Path) -> None:
    code = PRELUDE + (
        "view = gp.broadcast_to(x[:2], (3, 2))\n"
        "host = np.from_dlpack(view)\n"
        "print(json.dumps({'writeable': bool(host.flags.writeable),\n"
        "                  'equal': bool((host == x[:2].to_numpy()).all())}))\n"
    )
    assert testsite.run_json(code, tmp_path, packages=()) == {"writeable": False, "equal": True}
