#!/usr/bin/env bash
# The project's two front doors (see README "Quick start"):
#   bash scripts/dev.sh analyze   rebasekit on the bundled plugin: vLLM 0.26.0 -> 0.27.0
#   bash scripts/dev.sh test      the whole test suite against the real vLLM 0.26.0
# Both create ./.venv on first use and install what they need from the package registry.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${ARCTIC_VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"
TORCH_PIN="torch==2.11.0"
VLLM_PIN="vllm==0.26.0"

ensure_venv() {
  if [ ! -x "$PY" ]; then
    python3 -m venv "$VENV"
    "$PY" -m pip install -q --upgrade pip
  fi
}

install_base() {
  ensure_venv
  "$PY" -m pip install -q -e "$ROOT"
}

install_full() {
  ensure_venv
  # torch first, pinned, so vLLM's resolver never picks another build.
  "$PY" -m pip install -q "$TORCH_PIN" "$VLLM_PIN"
  "$PY" -m pip install -q -e "$ROOT[test]"
}

cmd="${1:-}"
shift || true
case "$cmd" in
  analyze)
    install_base
    set +e
    "$VENV/bin/rebasekit" scan --from 0.26.0 --to 0.27.0 "$@"
    rc=$?
    set -e
    # 0 = clean, 1 = drift found (the expected answer for a new release): success.
    # 2 = bad input or an incomplete analysis, 3 = internal error (a bug): fail with that code.
    case "$rc" in
      0|1) ;;
      *) echo "rebasekit scan failed (exit $rc); see the message above" >&2; exit "$rc" ;;
    esac
    ;;
  test)
    install_full
    exec "$PY" -m pytest "$@"
    ;;
  *)
    echo "usage: bash scripts/dev.sh {analyze|test} [args...]" >&2
    exit 2
    ;;
esac
