"""A model checkpoint on disk: one .safetensors file or shards listed by an index.json."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .safetensors import SafeTensorsError, SafeTensorsFile, TensorInfo

__all__ = ["Checkpoint", "open_checkpoint"]

INDEX_NAME = "model.safetensors.index.json"
SINGLE_NAME = "model.safetensors"


class Checkpoint:
    """Every tensor of a model, across its shards, by name (memory-mapped, read-only)."""

    def __init__(self, files: list[SafeTensorsFile], directory: Path) -> None:
        self.files = files
        self.directory = directory
        self._where: dict[str, SafeTensorsFile] = {}
        for st in files:
            for name in st.tensor_names:
                if name in self._where:
                    raise SafeTensorsError(
                        f"tensor {name!r} is in both {self._where[name].path} and {st.path}"
                    )
                self._where[name] = st

    @property
    def tensor_names(self) -> list[str]:
        return list(self._where)

    def __contains__(self, name: object) -> bool:
        return name in self._where

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def file_of(self, name: str) -> SafeTensorsFile:
        try:
            return self._where[name]
        except KeyError:
            raise KeyError(f"{self.directory}: the checkpoint has no tensor {name!r}") from None

    def info(self, name: str) -> TensorInfo:
        return self.file_of(name).info(name)

    def get(self, name: str) -> np.ndarray:
        return self.file_of(name).get(name)

    @property
    def nbytes(self) -> int:
        return sum(st.file_size for st in self.files)


def _open_index(index: Path) -> Checkpoint:
    try:
        data = json.loads(index.read_text("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SafeTensorsError(f"{index}: not a valid JSON shard index: {exc}") from None
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise SafeTensorsError(f"{index}: the index has no weight_map of tensor name -> shard")
    shards: dict[str, list[str]] = {}
    for name, shard in weight_map.items():
        if not isinstance(shard, str) or os.sep in shard or shard.startswith(".."):
            raise SafeTensorsError(f"{index}: tensor {name!r} maps to a bad shard name {shard!r}")
        shards.setdefault(shard, []).append(name)
    files = []
    for shard, names in shards.items():
        path = index.parent / shard
        if not path.is_file():
            raise FileNotFoundError(
                f"{index}: shard {shard} is missing from {index.parent} (it holds "
                f"{len(names)} tensors, e.g. {names[0]!r})"
            )
        st = SafeTensorsFile(path)
        missing = [n for n in names if n not in st]
        if missing:
            raise SafeTensorsError(
                f"{index}: the index puts {len(missing)} tensors in {path} that it does not "
                f"hold, e.g. {missing[0]!r}"
            )
        files.append(st)
    return Checkpoint(files, index.parent)


def open_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    """Open a model directory, a .safetensors file, or a *.safetensors.index.json."""
    p = Path(path)
    if p.is_dir():
        if (p / INDEX_NAME).is_file():
            return _open_index(p / INDEX_NAME)
        if (p / SINGLE_NAME).is_file():
            return Checkpoint([SafeTensorsFile(p / SINGLE_NAME)], p)
        indexes = sorted(p.glob("*.safetensors.index.json"))
        if indexes:
            return _open_index(indexes[0])
        singles = sorted(p.glob("*.safetensors"))
        if len(singles) == 1:
            return Checkpoint([SafeTensorsFile(singles[0])], p)
        raise FileNotFoundError(
            f"{p}: no {SINGLE_NAME}, {INDEX_NAME} or single *.safetensors file in this directory"
        )
    if p.name.endswith(".index.json"):
        if not p.is_file():
            raise FileNotFoundError(f"{p}: no such shard index")
        return _open_index(p)
    return Checkpoint([SafeTensorsFile(p)], p.parent)
