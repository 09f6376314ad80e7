"""Which test files run a real engine, and which features they drive, read from their code.

A test is end-to-end when it builds an engine: it calls ``LLM(...)``, ``AsyncLLM``/
``LLMEngine`` (or one of their ``from_*`` constructors), or starts ``vllm serve``. GPU tests
often do that out of process, so the code read is the test file plus the helpers it reaches
inside the test folder: modules it imports, scripts it names (``"plugin_gpu_run.py"``) and
Python source held in a string it runs with ``python -c``. Docstrings and comments are not
code and are ignored.

The features come from the vLLM API names that code uses (keyword arguments, attributes,
names and identifier-like string values): ``speculative_config`` or ``"draft_model"`` mean
speculative decoding, ``sleep``/``wake_up`` mean the memory features, and so on
(:data:`FEATURE_SIGNALS`). Names reached through the standard library (``time.sleep``,
``from time import sleep``) are not vLLM's and do not count; speculative methods
(``"suffix"``, ``"eagle"``) count only as string values, since ``path.suffix`` is not one.
Every match is kept as evidence, so a reader can judge it.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rebasekit.sourcefile import read_source_text

ENGINE_CLASSES = frozenset({"LLM", "AsyncLLM", "LLMEngine", "AsyncLLMEngine"})

# Feature -> vLLM API names (lower case) by which a test drives it. First the features the
# risk rules know (see risks.RULES), then "memory", which only tests name.
FEATURE_SIGNALS: dict[str, frozenset[str]] = {
    "spec-decode": frozenset(
        {
            "speculative_config",
            "num_speculative_tokens",
            "draft_model",
            "suffix",
            "eagle",
            "eagle3",
            "ngram",
            "medusa",
            "mtp",
            "drafter",
            "get_draft_model",
        }
    ),
    "sampling": frozenset(
        {
            "logprobs",
            "prompt_logprobs",
            "top_p",
            "top_k",
            "min_p",
            "repetition_penalty",
            "presence_penalty",
            "frequency_penalty",
        }
    ),
    "attention": frozenset(
        {"attention_backend", "vllm_attention_backend", "kv_cache_dtype", "block_size"}
    ),
    "model-runner": frozenset({"model_runner", "execute_model", "compilation_config"}),
    "parallelism": frozenset(
        {
            "tensor_parallel_size",
            "pipeline_parallel_size",
            "data_parallel_size",
            "distributed_executor_backend",
            "enable_expert_parallel",
        }
    ),
    "scheduling": frozenset(
        {"enable_chunked_prefill", "async_scheduling", "scheduler_cls", "scheduling_policy"}
    ),
    "serving": frozenset(
        {"openai", "asyncopenai", "api_server", "v1/completions", "v1/chat/completions"}
    ),
    "engine": frozenset({"samplingparams", "generate", "add_request"}),
    "memory": frozenset({"sleep", "wake_up", "enable_sleep_mode", "reload_weights"}),
}
# Speculative methods: common words as identifiers, so only their string values count.
VALUE_ONLY = frozenset({"suffix", "eagle", "eagle3", "ngram", "medusa", "mtp"})
DEFAULT_FEATURE = "engine"  # an engine that is built but driven by no signal above

_SERVE = re.compile(r"\bvllm\s+serve\b")
_TOKEN = re.compile(r"-{0,2}[A-Za-z_][\w\-./]*")
_MAX_DEPTH = 3


@dataclass(frozen=True)
class EngineUse:
    """How a test file builds an engine and which features it drives (with the evidence)."""

    builds: tuple[str, ...]  # e.g. "LLM( in tests/gpu/plugin_gpu_run.py"
    features: tuple[tuple[str, tuple[str, ...]], ...]  # (feature, matched signals), sorted

    @property
    def feature_names(self) -> list[str]:
        return [name for name, _ in self.features]

    def describe(self, feature: str) -> str:
        """Why the test belongs to ``feature``'s phase, and what else it drives."""
        hits = dict(self.features).get(feature, ())
        why = f"builds an engine ({', '.join(self.builds)})"
        why += f"; {feature} via {', '.join(hits)}" if hits else ""
        others = [name for name in self.feature_names if name != feature]
        return why + (f"; also drives {', '.join(others)}" if others else "")


@dataclass
class _Facts:
    """What the code reached from one test file says, gathered across its helpers."""

    builds: list[str] = field(default_factory=list)
    names: dict[str, str] = field(
        default_factory=dict
    )  # lower -> as written: identifiers, attributes, kwargs
    values: dict[str, str] = field(
        default_factory=dict
    )  # lower -> as written: identifier-like strings

    def name(self, text: str) -> None:
        self.names.setdefault(text.lower(), text)

    seen: set[Path] = field(default_factory=set)


def _docstrings(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                ids.add(id(body[0].value))
    return ids


def _stdlib_bindings(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(module aliases, imported names) that come from the standard library."""
    modules: set[str] = set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(
                a.asname or a.name.split(".")[0]
                for a in node.names
                if a.name.split(".")[0] in sys.stdlib_module_names
            )
        elif (
            isinstance(node, ast.ImportFrom)
            and not node.level
            and node.module
            and node.module.split(".")[0] in sys.stdlib_module_names
        ):
            names.update(a.asname or a.name for a in node.names)
    return modules, names


def _engine_call(node: ast.Call) -> str | None:
    """``LLM(``, ``vllm.LLM(``, ``AsyncLLM.from_engine_args(`` -> how it is written."""
    func = node.func
    if isinstance(func, ast.Name) and func.id in ENGINE_CLASSES:
        return f"{func.id}("
    if isinstance(func, ast.Attribute):
        if func.attr in ENGINE_CLASSES:
            return f"{func.attr}("
        if (
            isinstance(func.value, ast.Name)
            and func.value.id in ENGINE_CLASSES
            and func.attr.startswith("from_")
        ):
            return f"{func.value.id}.{func.attr}("
    return None


def _serve_args(node: ast.List | ast.Tuple) -> bool:
    words = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return any(a.endswith("vllm") and b == "serve" for a, b in zip(words, words[1:]))


def _helper_paths(node: ast.Import | ast.ImportFrom, here: Path, root: Path) -> list[Path]:
    """Files an import may load: sibling modules, dotted paths from the root, relative ones."""
    if isinstance(node, ast.Import):
        dotted = [a.name for a in node.names]
        bases = [here.parent, root]
    else:
        base = here.parent
        for _ in range(max(node.level - 1, 0)):
            base = base.parent
        prefix = node.module or ""
        dotted = [prefix] + [f"{prefix}.{a.name}".lstrip(".") for a in node.names]
        bases = [base] if node.level else [here.parent, root]
    paths = []
    for name in filter(None, dotted):
        rel = Path(*name.split("."))
        for b in bases:
            paths += [b / rel.with_suffix(".py"), b / rel / "__init__.py"]
    return paths


def _scan(
    source: str, where: str, here: Path, root: Path, tests_root: Path, facts: _Facts, depth: int
) -> None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    skip = _docstrings(tree)
    std_modules, std_names = _stdlib_bindings(tree)
    helpers: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (built := _engine_call(node)):
            facts.builds.append(f"{built} in {where}")
        elif isinstance(node, (ast.List, ast.Tuple)) and _serve_args(node):
            facts.builds.append(f"vllm serve in {where}")
            facts.name("api_server")
        elif isinstance(node, ast.Name) and node.id not in std_names:
            facts.name(node.id)
        elif isinstance(node, ast.Attribute) and not (
            isinstance(node.value, ast.Name) and node.value.id in std_modules
        ):
            facts.name(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            facts.name(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            helpers += _helper_paths(node, here, root)
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
        ):
            text = node.value
            if _SERVE.search(text):
                facts.builds.append(f"vllm serve in {where}")
                facts.name("api_server")
            if "\n" in text.strip():
                _scan(text, f"a code string in {where}", here, root, tests_root, facts, depth)
            elif _TOKEN.fullmatch(text.strip()):
                token = text.strip().lstrip("-")
                for form in (token, token.replace("-", "_"), token.rsplit("/", 1)[-1]):
                    facts.values.setdefault(form.lower(), f'"{text.strip()}"')
                if token.endswith(".py"):
                    helpers += [here.parent / token, root / token]
    if depth >= _MAX_DEPTH:
        return
    for path in helpers:
        _follow(path, root, tests_root, facts, depth + 1)


def _follow(path: Path, root: Path, tests_root: Path, facts: _Facts, depth: int) -> None:
    """Read a helper only when it is a file inside the test folder (never the plugin)."""
    try:
        resolved = path.resolve()
        resolved.relative_to(tests_root.resolve())
    except (OSError, ValueError):
        return
    if resolved in facts.seen or not resolved.is_file():
        return
    facts.seen.add(resolved)
    where = resolved.relative_to(root.resolve()).as_posix()
    try:
        text = read_source_text(resolved)
    except OSError:  # not a regular file, or over the size cap
        return
    _scan(text, where, resolved, root, tests_root, facts, depth)


def engine_use(path: Path, root: Path, tests_root: Path) -> EngineUse | None:
    """How the test file at ``path`` builds an engine, or None when it builds none."""
    facts = _Facts()
    _follow(path, root, tests_root, facts, 0)
    if not facts.builds:
        return None
    found = facts.values | {k: v for k, v in facts.names.items() if k not in VALUE_ONLY}
    features = tuple(
        (name, tuple(sorted({found[k] for k in signals & found.keys()})))
        for name, signals in sorted(FEATURE_SIGNALS.items())
        if signals & found.keys()
    )
    return EngineUse(tuple(dict.fromkeys(facts.builds)), features or ((DEFAULT_FEATURE, ()),))
