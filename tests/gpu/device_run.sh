#!/usr/bin/env bash
# Run GPU checks on the lent H200 (see ../shared/gpu/README.md for the two-call protocol).
# Usage, from the project root on the device after `source .gpu2/device-env.sh`:
#   bash tests/gpu/device_run.sh install            # build + install the project (no deps)
#   bash tests/gpu/device_run.sh pytest ARGS...      # pytest with logs under $OUT
#   bash tests/gpu/device_run.sh script FILE ARGS... # a Python script with logs under $OUT
set -uo pipefail
OUT="${OUT:-/tmp/gpu-out}"
mkdir -p "$OUT"
export VLLM_NO_USAGE_STATS=1 PYTHONUNBUFFERED=1
what="${1:-}"; shift || true
case "$what" in
  install)
    python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/install.log" 2>&1
    rc=$?; tail -5 "$OUT/install.log"; exit $rc ;;
  pytest)
    python3 -m pytest -p no:cacheprovider -s -rA "$@" 2>&1 | tee -a "$OUT/pytest.log"
    exit "${PIPESTATUS[0]}" ;;
  script)
    f="$1"; shift
    python3 "$f" "$@" 2>&1 | tee -a "$OUT/$(basename "$f" .py).log"
    exit "${PIPESTATUS[0]}" ;;
  *) echo "usage: device_run.sh {install|pytest|script} ..." >&2; exit 2 ;;
esac
