#!/usr/bin/env bash
# Mutation score of the analysis core: mutmut 3 over rebasekit/checks, rebasekit/drift,
# arctic_inference/patching.py and arctic_inference/suffix_decoding/cache.py.
#
#   bash bench/mutation/run.sh              full run, then the per-module score
#   bash bench/mutation/run.sh score        score of the last run only
#   MUTATION_ONLY='rebasekit/drift/parallel.py' bash bench/mutation/run.sh   one file
#
# Runs in a throwaway copy of the tree (build/mutation/work) with a throwaway venv
# (build/mutation/venv) that sees the project's venv packages but not its editable
# install: the editable finder would import the unmutated sources and hide every mutant.
# Uses the fast CPU tests (no network, no real-vLLM import); see RESULTS.md.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PROJECT_PY="${ARCTIC_VENV:-$ROOT/.venv}/bin/python"
STATE="$ROOT/build/mutation"
WORK="$STATE/work"
VENV="$STATE/venv"
MUTMUT_PIN="mutmut==3.8.1"
WORKERS="${MUTATION_WORKERS:-2}"
ONLY="${MUTATION_ONLY:-rebasekit/checks/*.py rebasekit/drift/*.py arctic_inference/patching.py arctic_inference/suffix_decoding/cache.py}"

score() { "$VENV/bin/python" "$ROOT/bench/mutation/score.py" "$WORK/mutants"; }

if [ "${1:-}" = "score" ]; then score; exit 0; fi

[ -x "$PROJECT_PY" ] || { echo "no project venv at $PROJECT_PY: run 'bash scripts/dev.sh test' once first" >&2; exit 2; }

if [ ! -x "$VENV/bin/mutmut" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q "$MUTMUT_PIN"
fi
# The project's site-packages as plain path lines: their .pth files (the editable finder)
# are not run, so 'import arctic_inference' resolves to the mutated copy.
"$PROJECT_PY" - > "$VENV/lib/python3.11/site-packages/zz_project.pth" <<'PY'
import sys, site
seen = []
for p in sys.path:
    if p.endswith("site-packages") and p not in seen:
        seen.append(p)
print("\n".join(seen))
PY

rm -rf "$WORK"
mkdir -p "$WORK"
# The tracked tree plus untracked, non-ignored files: what the tests read.
git -C "$ROOT" ls-files -z --cached --others --exclude-standard | (cd "$ROOT" && xargs -0 cp --parents -t "$WORK" 2>/dev/null || true)
# The compiled suffix tree that the editable install builds under build/.
so="$("$PROJECT_PY" -c 'import arctic_inference.suffix_decoding._C as m; print(m.__file__)')"
cp "$so" "$WORK/arctic_inference/suffix_decoding/"
cp "$ROOT/bench/mutation/fresh_state.py" "$WORK/mutmut_fresh_state.py"

{
  echo "[mutmut]"
  echo "source_paths = "
  echo "    rebasekit"
  echo "    arctic_inference"
  echo "only_mutate = "
  for p in $ONLY; do echo "    $p"; done
  echo "also_copy = "
  for p in mutmut_fresh_state.py bench probes examples scripts EVOLUTION.md README.md rebasekit.lock.json CMakeLists.txt csrc; do echo "    $p"; done
  echo "pytest_add_cli_args_test_selection = "
  for t in tests/rebasekit tests/suffix tests/plugin/test_patching.py; do echo "    $t"; done
  echo "pytest_add_cli_args = "
  for a in -m "not network and not vllm and not gpu" -p no:cacheprovider -p mutmut_fresh_state -q -x \
    `# mutmut's trampolines import mutmut, which this test rightly calls undeclared` \
    --deselect tests/rebasekit/test_base_dependencies.py::test_rebasekit_imports_only_stdlib_and_base_dependencies; do
    echo "    $a"
  done
} > "$WORK/setup.cfg"

cd "$WORK"
nice -n 15 "$VENV/bin/mutmut" run --max-children "$WORKERS" || true
cd "$ROOT"
score
