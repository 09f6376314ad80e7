"""An engine kept alive in its own process, driven by one JSON line per command.

GPU benchmarks here compare several engine configurations side by side. Building a vLLM
engine costs tens of seconds, so each configuration gets one process for the whole run
and the timed phases are interleaved across them (A B C, B C A, ...). The child is the
benchmark's own script re-invoked with a ``--serve`` flag: it builds its engine, prints
one JSON line (``{"ready": ...}``), then answers each JSON command on stdin with one JSON
line on stdout. Anything else the child prints (vLLM's logs) goes to its log file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, TextIO


def core_sets(engines: int, per_engine: int, available: Sequence[int]) -> list[set[int]]:
    """Disjoint CPU sets, ``per_engine`` cores each, leaving at least one for the parent.

    Side-by-side engines on shared host cores run at speeds that depend on which cores
    the OS gave each (an engine-to-engine gap with no attention difference behind it);
    pinning each engine, and the processes it starts, to cores of its own removes that.
    """
    cores = sorted(available)
    if engines * per_engine >= len(cores):
        raise ValueError(
            f"{engines} engines x {per_engine} cores do not fit in the {len(cores)} cores "
            "this process may use (one is kept for the parent); pin fewer cores per engine"
        )
    return [set(cores[i * per_engine : (i + 1) * per_engine]) for i in range(engines)]


def engine_cpus(engines: int, per_engine: int) -> list[set[int] | None]:
    """What each engine is pinned to for ``--pin-cpus per_engine`` (0: nothing pinned),
    from the cores this process may use; ValueError when they do not fit."""
    if not per_engine:
        return [None] * engines
    return core_sets(engines, per_engine, sorted(os.sched_getaffinity(0)))


class EngineProcess:
    """The parent's handle on one serving child."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        log: Path,
        env: dict[str, str] | None = None,
        cpus: Collection[int] | None = None,
    ):
        self.name = name
        self.log = log
        self._log_file = open(log, "w")  # noqa: SIM115 (lives as long as the child)
        pin = set(cpus) if cpus else None
        self.proc = subprocess.Popen(
            [sys.executable, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            text=True,
            env=env if env is not None else dict(os.environ),
            # In the child before it runs anything: every thread and process it starts
            # inherits the set.
            preexec_fn=(lambda: os.sched_setaffinity(0, pin)) if pin else None,
        )
        self.info = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                code = self.proc.wait()
                raise RuntimeError(f"engine {self.name} exited with {code}; see {self.log}")
            if line.startswith("{"):
                return json.loads(line)

    def run(self, **command: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._log_file.close()


def serve_loop(handle, ready: dict[str, Any]) -> None:
    """Child side: announce ``ready``, then answer ``handle(command)`` per stdin line.

    Answers go to the real stdout even if a library redirected ``sys.stdout``.
    """
    out: TextIO = sys.__stdout__
    print(json.dumps({"ready": True, **ready}), file=out, flush=True)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(handle(json.loads(line))), file=out, flush=True)
