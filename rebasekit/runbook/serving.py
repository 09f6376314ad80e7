"""The serving phase's commands when the suite has no serving test of its own.

The GPU machines are offline, so the model cannot be a hub id that ``vllm serve`` would try
to download: it is a local path given with ``--model``, or, by default, the shell variable
``$MODEL`` that the runbook tells the reader to set (the commands stop at once, with a
message, while it is unset).
"""

from __future__ import annotations

import json
import re
import shlex

MODEL_PLACEHOLDER = "$MODEL"
PORT = 8000
READY_TIMEOUT_S = 600
_VARIABLE = re.compile(r"\$([A-Za-z_]\w*)")


def _request(model: str) -> str:
    return json.dumps({"model": model, "prompt": "Hello", "max_tokens": 16})


def _double_quoted(text: str) -> str:
    """``text`` as a double-quoted shell word: ``$NAME`` in it still expands."""
    return '"' + re.sub(r'(["\\`])', r"\\\1", text) + '"'


def serving_commands(model: str, env_prefix: str) -> tuple[list[str], str | None]:
    """(commands, note): start the server, wait until healthy, one completion, stop it.

    ``model`` is a path or name used as given, or ``$NAME``: a variable the reader sets on
    the GPU machine, guarded so an unset one fails before the server starts.
    """
    var = _VARIABLE.fullmatch(model)
    guard: list[str] = []
    note = None
    if var:
        name = var.group(1)
        served = f'"${name}"'
        body = _double_quoted(_request(f"${name}"))
        guard = [f': "${{{name}:?set {name} to a local model directory on the GPU machine}}"']
        note = (
            f"`${name}` is a placeholder: set `{name}` to a model directory on the GPU "
            "machine first (the GPU machines are offline, so a hub id will not download), "
            "or generate the runbook with `--model PATH`"
        )
    else:
        served = shlex.quote(model)
        body = shlex.quote(_request(model))
    prefix = f"{env_prefix} " if env_prefix else ""
    url = f"localhost:{PORT}"
    commands = guard + [
        f"{prefix}vllm serve {served} --port {PORT} > serve.log 2>&1 & SERVER=$!",
        f"timeout {READY_TIMEOUT_S} bash -c 'until curl -sf {url}/health > /dev/null; do sleep 2; done'",
        f"curl -sf {url}/v1/completions -H 'Content-Type: application/json' -d {body}",
        'kill "$SERVER"',
    ]
    return commands, note
