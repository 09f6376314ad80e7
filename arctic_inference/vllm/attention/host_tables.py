"""Host copies of the block tables, found from the device tensor the builder gets.

The metadata builder receives only the device block table, and reading it back would
make every step wait for queued GPU work. The model runner keeps the same table on the
host (``BlockTable.block_table.cpu``, copied to the device right before the builders
run), so a patch on ``BlockTable.__init__`` records each table by the address of its
device buffer, and the planner looks the host copy up by that address. A tensor that is
not the start of a known table gets None (the planner then copies from the device).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import torch
from vllm.v1.worker.block_table import BlockTable

from arctic_inference.patching import ArcticPatch

__all__ = ["BlockTableHostPatch", "host_block_table"]

_lock = threading.Lock()
_tables: dict[int, weakref.ref] = {}


def _register(table: Any) -> None:
    buffer = table.block_table
    with _lock:
        _tables[buffer.gpu.data_ptr()] = weakref.ref(table)


def host_block_table(device_table: torch.Tensor) -> torch.Tensor | None:
    """The host tensor holding the same rows as ``device_table``, or None."""
    with _lock:
        ref = _tables.get(device_table.data_ptr())
    table = ref() if ref is not None else None
    if table is None:
        return None
    buffer = table.block_table
    if buffer.gpu.shape[1] != device_table.shape[1] or buffer.gpu.stride() != device_table.stride():
        return None
    return buffer.cpu[: device_table.shape[0]]


class BlockTableHostPatch(ArcticPatch[BlockTable]):
    """Record every block table so the forest planner can read its host copy."""

    _orig___init__ = BlockTable.__init__

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        BlockTableHostPatch._orig___init__(self, *args, **kwargs)
        _register(self)
