#!/usr/bin/env bash
# The project's two front doors (see README "Quick start"):
#   bash scripts/dev.sh analyze   rebasekit on the bundled plugin: vLLM 0.26.0 -> 0.27.0
#   bash scripts/dev.sh test      the whole test suite against the real vLLM 0.26.0
#   bash scripts/dev.sh py310     rebasekit's offline tests on the oldest supported Python
#   bash scripts/dev.sh lint      ruff (lint and format check), rebasekit's import layering
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
  lint)
    install_full
    "$VENV/bin/ruff" check .
    "$VENV/bin/ruff" format --check .
    # rebasekit's layering contracts ([tool.importlinter] in pyproject.toml).
    "$VENV/bin/lint-imports" --no-cache
    ;;
  py310)
    # rebasekit's base install on Python 3.10 (requires-python's floor): the declared base
    # dependencies only, the package from the source tree (no compiled plugin parts).
    PY310="${PYTHON310:-}"
    if [ -z "$PY310" ]; then
      for candidate in "$(command -v python3.10 || true)" "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.10*/bin/python; do
        if [ -x "$candidate" ] && "$candidate" --version >/dev/null 2>&1; then PY310="$candidate"; break; fi
      done
    fi
    [ -n "$PY310" ] || { echo "no Python 3.10 found: set PYTHON310=/path/to/python3.10" >&2; exit 2; }
    V310="$ROOT/.venv-py310"
    [ -x "$V310/bin/python" ] || "$PY310" -m venv "$V310"
    mapfile -t deps < <("$PY310" - <<'PYEOF'
import re
text = open("pyproject.toml", encoding="utf-8").read()
block = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M).group(1)
print("\n".join(re.findall(r'"([^"]+)"', block)))
PYEOF
)
    "$V310/bin/python" -m pip install -q "${deps[@]}" pytest hypothesis
    PYTHONPATH="$ROOT" exec "$V310/bin/python" -m pytest tests/rebasekit -m "not network" -p no:cacheprovider "$@"
    ;;
  *)
    echo "usage: bash scripts/dev.sh {analyze|test|lint|py310} [args...]" >&2
    exit 2
    ;;
esac
