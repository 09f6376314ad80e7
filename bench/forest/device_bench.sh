#!/usr/bin/env bash
# The forest benchmark on the lent H200, resumable across calls while the machine is warm.
# From the project root, after `source .gpu2/device-env.sh` and
# `bash tests/gpu/device_run.sh install` (see ../shared/gpu/README.md):
#   bash bench/forest/device_bench.sh [BUDGET_S] [WORKLOADS] [--forest-full-graphs ...]
# (arguments after WORKLOADS go to forest_speed.py; runs of each setting are kept apart:
# engine cores in their own processes, vLLM's default, in runs-mp[-full-graphs][-fork]; with
# --in-process in runs[-full-graphs][-fork], under /tmp/forest-... and bench/forest/)
# Builds the model once (/opt/models/small-llama-8k), starts the engines (three, four with
# --with-fork) and measures workloads while they fit in BUDGET_S (default 480), keeps each
# finished workload in /tmp/forest-runs (a later call continues with the missing ones) and
# copies runs, the engine logs (one archive), results.json and RESULTS.md to $OUT. Exit 1 while workloads are missing. On a fresh machine, put returned forest-runs/*.json into bench/forest/runs/.
set -uo pipefail
OUT="${OUT:-/tmp/gpu-out}"
budget="${1:-480}"
workloads="${2:-rollouts,sysprompt,noshare}"
shift 2 2>/dev/null || shift $#
model=/opt/models/small-llama-8k
suffix=""
in_process=0
fork=""
for arg in "$@"; do
  [ "$arg" = "--forest-full-graphs" ] && suffix="-full-graphs"
  [ "$arg" = "--in-process" ] && in_process=1
  [ "$arg" = "--with-fork" ] && fork="-fork"
done
[ "$in_process" -eq 1 ] || suffix="-mp$suffix"
suffix="$suffix$fork"
runs="/tmp/forest-runs$suffix"
mkdir -p "$OUT" "$runs"
# Runs returned by an earlier machine, put back into the tree: continue from them.
cp -n bench/forest/runs$suffix/*.json "$runs"/ 2>/dev/null || true
export VLLM_NO_USAGE_STATS=1 PYTHONUNBUFFERED=1
python3 bench/forest/build_model.py --out "$model" > "$OUT/forest-model.log" 2>&1 || { tail -20 "$OUT/forest-model.log"; exit 2; }
python3 bench/forest/forest_speed.py --model "$model" --runs "$runs" --budget-s "$budget" \
    --workloads "$workloads" --out "$OUT/forest-results.json" --md "$OUT/forest-RESULTS.md" \
    "$@" 2>&1 | tee "$OUT/forest-bench.log"
rc="${PIPESTATUS[0]}"
# A call returns at most 8 files from $OUT, in name order: the per-workload runs (the
# per-phase numbers) go as files, the engine logs as one archive, so neither crowds out
# the other.
mkdir -p "$OUT/forest-runs$suffix" && cp "$runs"/*.json "$OUT/forest-runs$suffix/" 2>/dev/null
python3 -c '
import pathlib, sys, tarfile
logs = sorted(pathlib.Path(sys.argv[1]).glob("*.log"))
if logs:
    with tarfile.open(sys.argv[2], "w:xz") as archive:
        for log in logs:
            archive.add(log, arcname=log.name)
' "$runs" "$OUT/forest-engine-logs$suffix.tar.xz"
exit "$rc"
