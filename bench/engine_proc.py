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
from pathlib import Path
from typing import Any, TextIO


class EngineProcess:
    """The parent's handle on one serving child."""

    def __init__(self, name: str, argv: list[str], log: Path, env: dict[str, str] | None = None):
        self.name = name
        self.log = log
        self._log_file = open(log, "w")  # noqa: SIM115 (lives as long as the child)
        self.proc = subprocess.Popen(
            [sys.executable, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            text=True,
            env=env if env is not None else dict(os.environ),
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
