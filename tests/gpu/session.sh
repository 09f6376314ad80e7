#!/usr/bin/env bash
# A device session as one ordered plan, resumable across calls while the machine is warm.
#
# The lent machine goes back 30 s after a call returns, so choosing the next command between
# calls risks losing it (and its installed vLLM, trained speculators and built models). This
# runner needs no choice: every call runs the same line,
#   source .gpu2/device-env.sh && bash tests/gpu/session.sh BUDGET_S PLAN_FILE
# and it runs the plan's steps in order, skipping those already done on this machine (state
# in /tmp/gpu-session), starting a step only when its estimate fits in what is left of
# BUDGET_S. Exit 0 when the plan is done, 1 while steps remain (send the same call again),
# 2 when a step failed (its log is under $OUT/session; later steps still run, the failed
# one is not retried, and every later call exits 2 too). A step that exits 75 made progress but is not finished (a resumable
# bench whose own budget ran out): it runs again in the next call.
#
# PLAN_FILE: one step per line, `NAME ESTIMATE_S COMMAND...`; `#` starts a comment. The
# estimate is the step's whole wall time on a warm machine; a step longer than one call
# is split by the caller into steps (e.g. the forest bench's own resumable budget).
set -uo pipefail
OUT="${OUT:-/tmp/gpu-out}"
budget="${1:?usage: session.sh BUDGET_S PLAN_FILE}"
plan="${2:?usage: session.sh BUDGET_S PLAN_FILE}"
state="${GPU_SESSION_STATE:-/tmp/gpu-session}"  # tests point it elsewhere
mkdir -p "$state" "$OUT/session"
start=$(date +%s)
failed=0
remaining=0
while read -r name estimate command; do
  [ -z "${name:-}" ] && continue
  case "$name" in \#*) continue ;; esac
  if [ -f "$state/$name.done" ] || [ -f "$state/$name.failed" ]; then
    continue
  fi
  left=$(( budget - ($(date +%s) - start) ))
  if [ "$estimate" -gt "$budget" ]; then
    echo "[session] $name: its estimate (${estimate} s) exceeds this call's budget (${budget} s); give a larger budget or split it"
    remaining=1
    continue
  fi
  if [ "$estimate" -gt "$left" ]; then
    echo "[session] $name: needs ~${estimate} s, ${left} s left in this call; next call"
    remaining=1
    continue
  fi
  echo "[session] $name: start (~${estimate} s, ${left} s left)"
  t0=$(date +%s)
  # The step gets what is left of the call, so an overrun cannot take the whole limit.
  # stdin from /dev/null: the loop reads the plan from stdin, a step must not eat it.
  timeout "$left" bash -c "$command" > "$OUT/session/$name.log" 2>&1 < /dev/null
  rc=$?
  took=$(( $(date +%s) - t0 ))
  tail -15 "$OUT/session/$name.log"
  if [ "$rc" -eq 0 ]; then
    touch "$state/$name.done"
    echo "[session] $name: done in ${took} s"
  elif [ "$rc" -eq 75 ]; then
    echo "[session] $name: not finished after ${took} s; continues next call"
    remaining=1
  else
    touch "$state/$name.failed"
    echo "[session] $name: FAILED (exit $rc) after ${took} s; log: session/$name.log"
    failed=1
  fi
done < "$plan"
ls "$state" > "$OUT/session/state.txt"
# A failure of an earlier call still counts: the plan cannot end as done.
if [ "$failed" -ne 0 ] || compgen -G "$state/*.failed" > /dev/null; then
  echo "[session] failed steps: $(cd "$state" && ls ./*.failed | sed 's|^\./||; s|\.failed$||' | tr '\n' ' ')"
  exit 2
fi
exit "$remaining"
