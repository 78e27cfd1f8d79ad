"""The on-disk cache of compiled kernels: one checksummed file per key, written atomically.

A file is ``MAGIC + sha256(payload) + payload``. Anything that does not check out (cut
short, bit-flipped, another format) is a miss, and the next compile overwrites it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

MAGIC = b"PGKCUBIN1\n"
_DIGEST = 32


def cache_dir() -> Path:
    """The `cache_dir` setting (PYGPUKIT_CACHE_DIR, default ~/.cache/pygpukit)/kernels."""
    try:
        from pygpukit import config

        root = config.current().get("cache_dir")
    except Exception:  # config unreadable: fall back to the documented default
        root = os.environ.get("PYGPUKIT_CACHE_DIR") or str(Path.home() / ".cache" / "pygpukit")
    return Path(root).expanduser() / "kernels"


def make_key(*parts: str | bytes | int) -> str:
    """A hex digest over every part (each length-prefixed, so parts can't run together)."""
    h = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def path_for(key: str, root: Path | None = None) -> Path:
    return (root or cache_dir()) / key[:2] / f"{key}.bin"


def load(key: str, root: Path | None = None) -> bytes | None:
    """The cached payload for `key`, or None (missing or corrupt)."""
    try:
        blob = path_for(key, root).read_bytes()
    except OSError:
        return None
    head = len(MAGIC) + _DIGEST
    if len(blob) < head or not blob.startswith(MAGIC):
        return None
    payload = blob[head:]
    if hashlib.sha256(payload).digest() != blob[len(MAGIC) : head]:
        return None
    return payload


def store(key: str, payload: bytes, root: Path | None = None) -> bool:
    """Write atomically (temp file in the same folder, then rename); False if not writable."""
    path = path_for(key, root)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return False  # a read-only cache only costs compile time
    return True
