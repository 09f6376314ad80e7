"""Read a plugin package's source into a :class:`PluginCorpus` (no upstream needed).

A file that does not parse is recorded with its error and skipped; the rest of the
package is still read, so one broken file never hides drift in the others.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterable
from pathlib import Path

from rebasekit.astutil import dotted
from rebasekit.corpus import filecache, version_gates
from rebasekit.corpus.models import (
    OrigAlias,
    PatchAttr,
    PatchClass,
    PluginCorpus,
    PluginFile,
    PluginImport,
    SelfRead,
    UpstreamCall,
)
from rebasekit.index.cache import DataStore
from rebasekit.index.models import ParamKind
from rebasekit.index.visitor import (
    absolute_module,
    guards_import_errors,
    is_type_checking_test,
    signature_of,
)
from rebasekit.sourcefile import SkippedFile, SourceText, read_source_bytes

# The patch vocabulary, shared with the runtime patch framework of the plugin being read
# (tests/rebasekit/test_patch_vocabulary.py checks that the two agree).
ORIG_PREFIX = "_orig_"
# Names every class body carries (or the patch machinery owns); never "set" on a target.
CLASS_MACHINERY = frozenset(
    {
        "__module__",
        "__qualname__",
        "__doc__",
        "__dict__",
        "__weakref__",
        "__orig_bases__",
        "__parameters__",
        "__annotations__",
        "__slots__",
        "__init_subclass__",
        "__class_getitem__",
        "__classcell__",
        "__firstlineno__",
        "__static_attributes__",
        "__annotate__",
        "__annotate_func__",
        "__annotations_cache__",
    }
)


def extract_corpus(
    plugin_dir: Path,
    patch_bases: Iterable[str],
    upstream_package: str = "vllm",
    store: DataStore | None = None,
) -> PluginCorpus:
    """Parse every ``.py`` file under ``plugin_dir`` (a package folder).

    ``store`` keeps each file's records by content (:mod:`rebasekit.corpus.filecache`);
    None reads every file afresh.
    """
    plugin_dir = plugin_dir.resolve()
    corpus = PluginCorpus(
        root=plugin_dir.parent,
        package=plugin_dir.name,
        upstream_package=upstream_package,
        patch_bases=tuple(patch_bases),
    )
    for path in sorted(plugin_dir.rglob("*.py")):
        if any(
            part.startswith(".") or part == "__pycache__"
            for part in path.relative_to(plugin_dir).parts
        ):
            continue
        relpath = path.relative_to(corpus.root).as_posix()
        try:
            source = read_source_bytes(path)
        except SkippedFile as skipped:
            corpus.degradations.append(skipped.degradation(relpath))
            continue
        if store is None:
            extract_file(corpus, relpath, source)
        elif not filecache.load(store, corpus, relpath, source):
            before = filecache.sizes(corpus)
            extract_file(corpus, relpath, source)
            filecache.save(store, corpus, relpath, source, before)
    return corpus


def module_name(relpath: str) -> str:
    parts = relpath[:-3].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def extract_file(corpus: PluginCorpus, relpath: str, source: bytes) -> None:
    """Add one file's patches, imports, calls and comments to ``corpus``."""
    modname = module_name(relpath)
    corpus.sources[relpath] = SourceText.from_bytes(source).text
    try:
        tree = ast.parse(source, filename=relpath)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        corpus.files.append(PluginFile(relpath, modname, f"{getattr(exc, 'msg', exc)}", line))
        return
    corpus.files.append(PluginFile(relpath, modname))
    corpus.comments[relpath] = _comments(source)
    corpus.modules[relpath] = tree
    corpus._by_type.pop(relpath, None)  # its node table is rebuilt from this tree
    _FileVisitor(corpus, relpath, modname).run(tree)


def _comments(source: bytes) -> dict[int, str]:
    found: dict[int, str] = {}
    try:
        for tok in tokenize.tokenize(io.BytesIO(source).readline):
            if tok.type == tokenize.COMMENT:
                found[tok.start[0]] = tok.string
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


class _FileVisitor:
    def __init__(self, corpus: PluginCorpus, relpath: str, modname: str) -> None:
        self.corpus = corpus
        self.relpath = relpath
        self.modname = modname
        self.is_package = relpath.endswith("__init__.py")
        self.bindings: dict[str, str] = {}  # local name -> absolute dotted target
        self.patch_names: dict[str, PatchClass] = {}

    # -- helpers ---------------------------------------------------------------------
    def is_upstream(self, dotted_name: str) -> bool:
        up = self.corpus.upstream_package
        return dotted_name == up or dotted_name.startswith(up + ".")

    def expand(self, text: str | None, scope: dict[str, str] | None = None) -> str | None:
        """Map a dotted expression's first segment through the import bindings."""
        if text is None:
            return None
        head, _, rest = text.partition(".")
        table = scope if scope is not None else self.bindings
        target = table.get(head, self.bindings.get(head))
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    # -- module scope ----------------------------------------------------------------
    def run(self, tree: ast.Module) -> None:
        self._collect_imports(tree.body, None, None, self.bindings)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                self._maybe_patch(node)
        self._collect_calls(tree)

    def _collect_imports(
        self,
        body: list[ast.stmt],
        guard: str | None,
        func: str | None,
        into: dict[str, str],
        gate: str | None = None,
    ) -> None:
        def collect(inner_body, inner_guard, inner_func, inner_into, inner_gate=gate):
            self._collect_imports(inner_body, inner_guard, inner_func, inner_into, inner_gate)

        for stmt in body:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    into[bound] = alias.name if alias.asname else alias.name.split(".")[0]
                    if self.is_upstream(alias.name):
                        self.corpus.imports.append(
                            PluginImport(
                                self.relpath,
                                alias.name,
                                None,
                                bound,
                                stmt.lineno,
                                guard,
                                func,
                                gate,
                            )
                        )
            elif isinstance(stmt, ast.ImportFrom):
                module = absolute_module(self.modname, self.is_package, stmt.level, stmt.module)
                for alias in stmt.names:
                    if alias.name == "*":
                        if self.is_upstream(module):
                            self.corpus.imports.append(
                                PluginImport(
                                    self.relpath, module, "*", "*", stmt.lineno, guard, func, gate
                                )
                            )
                        continue
                    bound = alias.asname or alias.name
                    gated = self._gated_bindings.setdefault(id(into), set())
                    if gate is None or bound not in gated:
                        # bound in several version-gated branches: the first one wins
                        # (usually the branch for the release the plugin was written for)
                        into[bound] = f"{module}.{alias.name}"
                    if gate is not None:
                        gated.add(bound)
                    if self.is_upstream(module):
                        self.corpus.imports.append(
                            PluginImport(
                                self.relpath,
                                module,
                                alias.name,
                                bound,
                                stmt.lineno,
                                guard,
                                func,
                                gate,
                            )
                        )
            elif isinstance(stmt, ast.If):
                inner = "type_checking" if is_type_checking_test(stmt.test) else guard
                branches = version_gates.gate(stmt.test)
                then_gate, else_gate = branches if branches else (None, None)
                collect(stmt.body, inner, func, into, version_gates.combine(gate, then_gate))
                collect(stmt.orelse, guard, func, into, version_gates.combine(gate, else_gate))
            elif isinstance(stmt, ast.Try):
                inner = "try" if guards_import_errors(stmt) else guard
                collect(stmt.body, inner, func, into)
                for handler in stmt.handlers:
                    collect(handler.body, inner, func, into)
                collect(stmt.orelse, inner, func, into)
                collect(stmt.finalbody, guard, func, into)
            elif isinstance(stmt, (ast.With, ast.For, ast.While, ast.AsyncWith, ast.AsyncFor)):
                collect(stmt.body, guard, func, into)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                local: dict[str, str] = {}
                collect(
                    stmt.body, guard, stmt.name if func is None else f"{func}.{stmt.name}", local
                )
                self._function_scopes[id(stmt)] = local
            elif isinstance(stmt, ast.ClassDef):
                collect(stmt.body, guard, func, into)

    @property
    def _gated_bindings(self) -> dict[int, set[str]]:
        """Per binding scope, the names bound by an import under a version gate."""
        if not hasattr(self, "_gated"):
            self._gated: dict[int, set[str]] = {}
        return self._gated

    @property
    def _function_scopes(self) -> dict[int, dict[str, str]]:
        if not hasattr(self, "_scopes"):
            self._scopes: dict[int, dict[str, str]] = {}
        return self._scopes

    # -- patch classes -----------------------------------------------------------------
    def _maybe_patch(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            if not isinstance(base, ast.Subscript):
                continue
            base_name = dotted(base.value)
            if base_name is None or base_name.split(".")[-1] not in self.corpus.patch_bases:
                continue
            target_expr = ast.unparse(base.slice)
            target = self.expand(dotted(base.slice))
            patch = PatchClass(
                node.name,
                self.relpath,
                self.modname,
                node.lineno,
                node.end_lineno or node.lineno,
                base_name.split(".")[-1],
                target_expr,
                target,
            )
            self._patch_body(patch, node)
            self.corpus.patches.append(patch)
            self.patch_names[node.name] = patch
            return

    def _patch_body(self, patch: PatchClass, node: ast.ClassDef) -> None:
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._self_reads(patch, stmt)
                if stmt.name in CLASS_MACHINERY:
                    continue
                decorators = tuple(ast.unparse(d) for d in stmt.decorator_list)
                sig = signature_of(stmt)
                attr = PatchAttr(
                    stmt.name,
                    _member_kind(decorators),
                    stmt.lineno,
                    stmt.end_lineno or stmt.lineno,
                    sig,
                    decorators,
                    tuple(self._orig_calls(stmt, patch.name)),
                    _passthrough(sig, decorators),
                )
                existing = patch.attribute(stmt.name)
                if existing is None:
                    patch.attributes.append(attr)
            elif isinstance(stmt, ast.ClassDef):
                patch.attributes.append(
                    PatchAttr(stmt.name, "class", stmt.lineno, stmt.end_lineno or stmt.lineno)
                )
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    if not isinstance(target, ast.Name) or target.id in CLASS_MACHINERY:
                        continue
                    if target.id.startswith(ORIG_PREFIX):
                        patch.orig_aliases.append(_orig_alias(target.id, stmt))
                    elif stmt.value is not None or isinstance(stmt, ast.Assign):
                        patch.attributes.append(
                            PatchAttr(
                                target.id, "attribute", stmt.lineno, stmt.end_lineno or stmt.lineno
                            )
                        )

    @staticmethod
    def _orig_calls(func: ast.FunctionDef | ast.AsyncFunctionDef, patch_name: str) -> list[str]:
        found: list[str] = []
        for node in ast.walk(func):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr.startswith(ORIG_PREFIX)
            ):
                owner = dotted(node.func.value) or ""
                if owner in (patch_name, "self", "cls") or owner.endswith("." + patch_name):
                    if node.func.attr not in found:
                        found.append(node.func.attr)
        return found

    @staticmethod
    def _self_reads(patch: PatchClass, func: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if not func.args.args:
            return
        if any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in func.decorator_list):
            return  # the first parameter is an ordinary argument, not the instance
        self_name = func.args.args[0].arg
        parents = {id(c): p for p in ast.walk(func) for c in ast.iter_child_nodes(p)}
        lines: dict[str, int] = {}
        accessors: dict[str, list[str]] = {}
        for node in ast.walk(func):
            if not (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Load)
                and isinstance(node.value, ast.Name)
                and node.value.id == self_name
            ):
                continue
            if node.attr not in lines or node.lineno < lines[node.attr]:
                lines[node.attr] = node.lineno
            seen = accessors.setdefault(node.attr, [])
            parent = parents.get(id(node))
            if (
                isinstance(parent, ast.Attribute)
                and parent.value is node
                and parent.attr not in seen
            ):
                seen.append(parent.attr)
        patch.self_reads += [
            SelfRead(attr, line, func.name, tuple(accessors[attr])) for attr, line in lines.items()
        ]

    # -- calls ---------------------------------------------------------------------------
    def _collect_calls(self, tree: ast.Module) -> None:
        stack: list[tuple[ast.AST, str | None, PatchClass | None, dict[str, str]]] = [
            (tree, None, None, self.bindings)
        ]
        while stack:
            node, func, patch, scope = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    inner = {**scope, **self._function_scopes.get(id(child), {})}
                    qual = child.name if func is None else f"{func}.{child.name}"
                    if patch is not None and func == patch.name:
                        qual = f"{patch.name}.{child.name}"
                    stack.append((child, qual, patch, inner))
                    continue
                if isinstance(child, ast.ClassDef):
                    stack.append(
                        (
                            child,
                            child.name if func is None else f"{func}.{child.name}",
                            self.patch_names.get(child.name, patch),
                            scope,
                        )
                    )
                    continue
                if isinstance(child, ast.Call):
                    self._record_call(child, func, patch, scope)
                stack.append((child, func, patch, scope))

    def _record_call(
        self, call: ast.Call, func: str | None, patch: PatchClass | None, scope: dict[str, str]
    ) -> None:
        via_orig = None
        callee = None
        through_self = False
        if (
            isinstance(call.func, ast.Attribute)
            and call.func.attr.startswith(ORIG_PREFIX)
            and patch is not None
        ):
            alias = next((a for a in patch.orig_aliases if a.alias == call.func.attr), None)
            if alias is not None and patch.target:
                callee, via_orig = f"{patch.target}.{alias.attr}", alias.alias
                # the patch copies the alias onto the target too: through the instance it
                # is a bound method, so the instance is not among the arguments
                receiver = call.func.value
                through_self = isinstance(receiver, ast.Name) and receiver.id == "self"
        if callee is None:
            callee = self.expand(dotted(call.func), scope)
            if callee is None or not self.is_upstream(callee):
                return
        keywords = tuple(k.arg for k in call.keywords if k.arg is not None)
        self.corpus.calls.append(
            UpstreamCall(
                self.relpath,
                call.lineno,
                callee,
                positional=sum(1 for a in call.args if not isinstance(a, ast.Starred)),
                keywords=keywords,
                star_args=any(isinstance(a, ast.Starred) for a in call.args),
                star_kwargs=any(k.arg is None for k in call.keywords),
                in_function=func,
                via_orig=via_orig,
                patch=patch.name if patch else None,
                through_self=through_self,
            )
        )


def _member_kind(decorators: tuple[str, ...]) -> str:
    for dec in decorators:
        last = dec.split(".")[-1]
        if last in ("property", "cached_property") or dec.endswith((".setter", ".getter")):
            return "property"
        if dec == "staticmethod":
            return "staticmethod"
        if dec == "classmethod":
            return "classmethod"
    return "method"


def _passthrough(sig, decorators: tuple[str, ...]) -> bool:
    """``(self, *args, **kwargs)``: accepts whatever the original accepts."""
    params = list(sig.params)
    if (
        params
        and "staticmethod" not in decorators
        and params[0].kind is ParamKind.POSITIONAL_OR_KEYWORD
    ):
        params = params[1:]
    kinds = [p.kind for p in params]
    return kinds == [ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD]


_UNWRAP = ("__func__", "__wrapped__")


def _namespace_key(node: ast.expr) -> str | None:
    """``"m"`` for ``Target.__dict__["m"]`` or ``vars(Target)["m"]``, else None."""
    if not (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return None
    owner = node.value
    is_dict = isinstance(owner, ast.Attribute) and owner.attr == "__dict__"
    is_vars = isinstance(owner, ast.Call) and dotted(owner.func) == "vars" and len(owner.args) == 1
    return node.slice.value if is_dict or is_vars else None


def _orig_alias(name: str, stmt: ast.Assign | ast.AnnAssign) -> OrigAlias:
    value = stmt.value
    attr = name[len(ORIG_PREFIX) :]
    unwrapped = None
    if isinstance(value, ast.Attribute) and value.attr in _UNWRAP:
        key = _namespace_key(value.value)
        if key is not None:
            # ``Target.__dict__["meth"].__wrapped__``: the raw function under a descriptor
            return OrigAlias(name, key, stmt.lineno, ast.unparse(value), value.attr)
    if isinstance(value, ast.Attribute):
        chain = (dotted(value) or "").split(".")[1:]
        while len(chain) > 1 and chain[-1] in ("__func__", "__wrapped__", "fget"):
            unwrapped = chain.pop()  # ``Target.meth.__func__`` still captures ``meth``
        attr = chain[-1] if chain else value.attr
    elif (
        isinstance(value, ast.Call)
        and dotted(value.func) == "getattr"
        and len(value.args) >= 2
        and isinstance(value.args[1], ast.Constant)
        and isinstance(value.args[1].value, str)
    ):
        attr = value.args[1].value
    return OrigAlias(
        name, attr, stmt.lineno, ast.unparse(value) if value is not None else "", unwrapped
    )
