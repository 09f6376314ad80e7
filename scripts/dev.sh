#!/usr/bin/env bash
# The project's two front doors (see README "Quick start"):
#   bash scripts/dev.sh analyze   rebasekit on the bundled plugin: vLLM 0.26.0 -> 0.27.0
#   bash scripts/dev.sh test      the whole test suite against the real vLLM 0.26.0
#   bash scripts/dev.sh py310     rebasekit's offline tests on the oldest supported Python
#   bash scripts/dev.sh lint      ruff (lint and format check), rebasekit's import layering
#   bash scripts/dev.sh room      whether the disk has room for the test install (exit 2 if not)
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

# torch 2.11.0 (a CUDA build on PyPI) with its NVIDIA libraries and vLLM 0.26.0 take about
# 8 GB in the venv; pip needs room to unpack on top of that.
MIN_FREE_GB="${ARCTIC_INSTALL_MIN_FREE_GB:-10}"

check_room_for_full_install() {
  # Only a fresh install needs the room; an installed venv is reused as is.
  if [ -x "$PY" ] && "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)" 2>/dev/null; then
    return 0
  fi
  local target="$VENV"
  while [ ! -e "$target" ]; do target="$(dirname "$target")"; done
  local free_gb
  free_gb="$(python3 -c "import shutil, sys; print(shutil.disk_usage(sys.argv[1]).free // 2**30)" "$target")"
  if [ "$free_gb" -lt "$MIN_FREE_GB" ]; then
    echo "scripts/dev.sh: installing torch 2.11.0 and vLLM 0.26.0 into $VENV needs about ${MIN_FREE_GB} GB free there; ${free_gb} GB is free." >&2
    echo "Free some space, or set ARCTIC_VENV to a folder on a larger disk (ARCTIC_INSTALL_MIN_FREE_GB=0 skips this check)." >&2
    exit 2
  fi
}

install_full() {
  check_room_for_full_install
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
  room)
    check_room_for_full_install
    echo "room for the full install (or it is already installed in $VENV)"
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
    echo "usage: bash scripts/dev.sh {analyze|test|lint|room|py310} [args...]" >&2
    exit 2
    ;;
esac
