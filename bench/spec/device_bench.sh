#!/usr/bin/env bash
# The Arctic speculator on the lent H200: train, test, measure. From the project root, after
# `source .gpu2/device-env.sh` and `bash tests/gpu/device_run.sh install`
# (see ../shared/gpu/README.md):
#   bash bench/spec/device_bench.sh train [MODEL...]   # MLP + LSTM (default: copy-llama small-llama)
#   bash bench/spec/device_bench.sh test               # tests/gpu/test_spec_gpu.py on the trained ones
#   bash bench/spec/device_bench.sh bench MODEL_NAME WORKLOADS [ARGS]  # gpu_speed.py (one, batch32 or one,batch32)
#     (with --budget S a run that does not fit one call exits 75 and resumes;
#      --configs NAMES runs only those rows, none among them, and names the run:
#      spec-MODEL-WORKLOADS[-ROWS].{json,log} in $OUT)
# Speculators live in /tmp/spec (kept while the machine is warm); logs and JSON go to $OUT.
set -uo pipefail
OUT="${OUT:-/tmp/gpu-out}"
SPEC=/tmp/spec
mkdir -p "$OUT" "$SPEC"
export VLLM_NO_USAGE_STATS=1 PYTHONUNBUFFERED=1
what="${1:-}"; shift || true
case "$what" in
  train)
    for model in ${*:-copy-llama small-llama}; do
      short="${model%-llama}"
      for kind in mlp lstm; do
        [ -f "$SPEC/$short-$kind/config.json" ] && continue
        python3 bench/spec/train_speculator.py --target "/opt/models/$model" \
          --out "$SPEC/$short-$kind" --kind "$kind" > "$OUT/train-$short-$kind.log" 2>&1 \
          || { tail -20 "$OUT/train-$short-$kind.log"; exit 2; }
        tail -2 "$OUT/train-$short-$kind.log"
        cp "$SPEC/$short-$kind/training.json" "$OUT/training-$short-$kind.json"
      done
    done ;;
  test)
    ARCTIC_SPEC_DIR="$SPEC" bash tests/gpu/device_run.sh pytest tests/gpu/test_spec_gpu.py "$@" ;;
  bench)
    # The run's JSON lives in /tmp/spec-runs (kept while the machine is warm), so a call
    # that its --budget stopped (exit 75) resumes there; each call copies it to $OUT.
    model="${1:-copy-llama}"; wl="${2:-one}"; short="${model%-llama}"; shift 2 || shift || true
    runs="${SPEC_RUNS:-/tmp/spec-runs}"; mkdir -p "$runs"
    run="spec-$short-${wl//,/-}"  # one,batch32 -> one-batch32: plain file names come back
    # Runs of other rows on the same model and workloads are other runs (a resumed run
    # refuses other arguments): --configs A,B names them apart.
    prev=""
    for arg in "$@"; do
      [ "$prev" = "--configs" ] && run="$run-${arg//,/-}"
      case "$arg" in --configs=*) v="${arg#--configs=}"; run="$run-${v//,/-}" ;; esac
      prev="$arg"
    done
    python3 bench/spec/gpu_speed.py --model "/opt/models/$model" --mlp "$SPEC/$short-mlp" \
      --lstm "$SPEC/$short-lstm" --workloads "$wl" --out "$runs/$run.json" "$@" \
      2>&1 | tee -a "$runs/$run.log"
    rc="${PIPESTATUS[0]}"
    cp -r "$runs/$run".* "$OUT/" 2>/dev/null
    exit "$rc" ;;
  *) echo "usage: device_bench.sh {train|test|bench MODEL_NAME WORKLOADS} ..." >&2; exit 2 ;;
esac
