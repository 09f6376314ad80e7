#!/usr/bin/env bash
# Mutation score of the analysis core: mutmut 3 over rebasekit/checks, rebasekit/analysis,
# arctic_inference/patching.py and arctic_inference/suffix_decoding/cache.py.
#
#   bash bench/mutation/run.sh                  every mutant (about 4,000; over an hour on 2 busy cores)
#   MUTATION_SAMPLE=4 bash bench/mutation/run.sh    a fixed quarter of them (same names every run)
#   MUTATION_REF=<commit> ...                   the tests and code of that commit (e.g. a "before" score)
#   MUTATION_ONLY='rebasekit/analysis/parallel.py' ...  one file
#   MUTATION_KILLED_IN=before ...               rerun only the mutants the run labelled "before"
#                                               ran and did not kill (its tests are all still
#                                               here, so what it killed stays killed), plus all
#                                               sampled mutants of functions changed since
#   MUTATION_KEEP=1 ...                          reuse $WORK as left by an interrupted run of the
#                                               same tree (its mutants and which tests reach them)
#   bash bench/mutation/run.sh score            per-module score of the last run
#   bash bench/mutation/run.sh survivors        each survivor of the last run as a diff
#
# Runs in a throwaway copy of the tree (build/mutation/work-<label>) with a throwaway venv
# (build/mutation/venv) that sees the project's venv packages but not its editable
# install: the editable finder would import the unmodified sources and hide every mutant.
# Uses the fast CPU tests (no network, no real-vLLM import); see RESULTS.md.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PROJECT_PY="${ARCTIC_VENV:-$ROOT/.venv}/bin/python"
STATE="$ROOT/build/mutation"
REF="${MUTATION_REF:-}"
WORK="$STATE/work-${MUTATION_LABEL:-${REF:-tree}}"
VENV="$STATE/venv"
MUTMUT_PIN="mutmut==3.8.1"
WORKERS="${MUTATION_WORKERS:-2}"
SAMPLE="${MUTATION_SAMPLE:-1}"
ONLY="${MUTATION_ONLY:-rebasekit/checks/*.py rebasekit/analysis/*.py arctic_inference/patching.py arctic_inference/suffix_decoding/cache.py}"
HERE="$ROOT/bench/mutation"

KILLED_IN="${MUTATION_KILLED_IN:+$STATE/work-$MUTATION_KILLED_IN/mutants}"
case "${1:-}" in
  score) exec "$VENV/bin/python" "$HERE/score.py" "$WORK/mutants" $KILLED_IN ;;
  survivors) exec "$VENV/bin/python" "$HERE/survivors.py" "$WORK/mutants" --no-tests ;;
esac

[ -x "$PROJECT_PY" ] || { echo "no project venv at $PROJECT_PY: run 'bash scripts/dev.sh test' once first" >&2; exit 2; }

if [ ! -x "$VENV/bin/mutmut" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q "$MUTMUT_PIN"
fi
# The project's site-packages as plain path lines: their .pth files (the editable finder)
# are not run, so 'import arctic_inference' resolves to the mutated copy.
"$PROJECT_PY" -c 'import sys; print("\n".join(dict.fromkeys(p for p in sys.path if p.endswith("site-packages"))))' \
  > "$VENV/lib/python3.11/site-packages/zz_project.pth"

if [ "${MUTATION_KEEP:-0}" = 1 ] && [ -d "$WORK/mutants" ]; then
  # Same tree as the interrupted run in $WORK: keep its mutants and test-coverage stats.
  cd "$WORK"
else
rm -rf "$WORK"
mkdir -p "$WORK"
if [ -n "$REF" ]; then
  git -C "$ROOT" archive "$REF" | tar -x -C "$WORK"
else
  # The tracked tree plus untracked, non-ignored files: what the tests read.
  git -C "$ROOT" ls-files -z --cached --others --exclude-standard | (cd "$ROOT" && xargs -0 cp --parents -t "$WORK")
fi
# The compiled suffix tree that the editable install builds under build/.
so="$("$PROJECT_PY" -c 'import arctic_inference.suffix_decoding._C as m; print(m.__file__)')"
cp "$so" "$WORK/arctic_inference/suffix_decoding/"
cp "$HERE/fresh_state.py" "$WORK/mutmut_fresh_state.py"

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
  for t in tests/rebasekit tests/suffix tests/plugin/test_patching.py tests/plugin/test_patch_errors.py; do
    [ -e "$WORK/$t" ] && echo "    $t"
  done
  echo "pytest_add_cli_args = "
  for a in -m "not network and not vllm and not gpu" -p no:cacheprovider -p mutmut_fresh_state -q -x \
    `# mutmut's trampolines import mutmut, which this test rightly calls undeclared` \
    --deselect tests/rebasekit/test_base_dependencies.py::test_rebasekit_imports_only_stdlib_and_base_dependencies; do
    echo "    $a"
  done
} > "$WORK/setup.cfg"

cd "$WORK"
fi
if [ "$SAMPLE" -gt 1 ]; then
  # Generate the mutants and collect which tests reach them (the pattern selects none),
  # then run the fixed sample: names whose CRC-32 is divisible by the sample factor.
  nice -n 15 "$VENV/bin/mutmut" run --max-children "$WORKERS" "no-mutant-has-this-name" > /dev/null || true
  mapfile -t names < <("$VENV/bin/python" - "$SAMPLE" $KILLED_IN <<'PY'
import ast, json, sys, zlib
from pathlib import Path


def originals(path: Path) -> dict[str, str]:
    """Source of each mutated function's original (``<key>__mutmut_orig``) in a mutants file."""
    if not path.exists():
        return {}
    text = path.read_text()
    return {
        node.name.removesuffix("__mutmut_orig"): ast.get_source_segment(text, node) or ""
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.endswith("__mutmut_orig")
    }


n = int(sys.argv[1])
earlier_dir = Path(sys.argv[2]) if len(sys.argv) > 2 else None
for meta in sorted(Path("mutants").rglob("*.py.meta")):
    names = json.loads(meta.read_text())["exit_code_by_key"]
    earlier, same = None, set()
    if earlier_dir is not None:
        # An earlier run of the same sample: rerun what it did not kill, and every mutant
        # of a function whose code changed since (its numbering may mean other mutants).
        old_meta = earlier_dir / meta.relative_to("mutants")
        earlier = json.loads(old_meta.read_text())["exit_code_by_key"] if old_meta.exists() else {}
        now, before = originals(meta.with_suffix("")), originals(old_meta.with_suffix(""))
        same = {k for k, src in now.items() if before.get(k) == src}
    for name in names:
        if zlib.crc32(name.encode()) % n:
            continue
        key = name.rsplit(".", 1)[-1].rsplit("__mutmut_", 1)[0]
        if earlier is None or key not in same or earlier.get(name) is None or earlier[name] not in (1, 3):
            print(name)
PY
)
  echo "sample: ${#names[@]} mutants to run (1 in $SAMPLE${KILLED_IN:+, less those killed in $KILLED_IN})"
  nice -n 15 "$VENV/bin/mutmut" run --max-children "$WORKERS" "${names[@]}" || true
else
  nice -n 15 "$VENV/bin/mutmut" run --max-children "$WORKERS" || true
fi
cd "$ROOT"
"$VENV/bin/python" "$HERE/score.py" "$WORK/mutants" $KILLED_IN
