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

from rebasekit.astutil import dotted, first_param
from rebasekit.corpus import version_gates
from rebasekit.corpus.discovery import (
    copier_bases,
    installed_attributes,
    registered_classes,
    returned_class_names,
    subscripted_bases,
)
from rebasekit.corpus.models import (
    RULE_ASSIGNMENT,
    RULE_CONFIGURED,
    RULE_GENERIC,
    RULE_ORIG,
    RULE_REGISTRY,
    OrigAlias,
    PatchAttr,
    PatchClass,
    PluginCorpus,
    PluginFile,
    PluginImport,
    SelfRead,
    UpstreamCall,
)
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


def plugin_files(plugin_dir: Path) -> list[Path]:
    """The ``.py`` files extraction reads, in its order (hidden folders and caches left out)."""
    plugin_dir = plugin_dir.resolve()
    return [
        path
        for path in sorted(plugin_dir.rglob("*.py"))
        if not any(
            part.startswith(".") or part == "__pycache__"
            for part in path.relative_to(plugin_dir).parts
        )
    ]


def read_plugin(plugin_dir: Path) -> list[tuple[str, bytes | SkippedFile]]:
    """Each plugin file's path relative to the package's parent and its bytes (or why not)."""
    root = plugin_dir.resolve().parent
    found: list[tuple[str, bytes | SkippedFile]] = []
    for path in plugin_files(plugin_dir):
        try:
            source: bytes | SkippedFile = read_source_bytes(path)
        except SkippedFile as skipped:
            source = skipped
        found.append((path.relative_to(root).as_posix(), source))
    return found


def extract_corpus(
    plugin_dir: Path,
    patch_bases: Iterable[str],
    upstream_package: str = "vllm",
    platform_functions: Iterable[str] = (),
    files: list[tuple[str, bytes | SkippedFile]] | None = None,
) -> PluginCorpus:
    """Parse every ``.py`` file under ``plugin_dir`` (a package folder).

    Configured ``patch_bases`` name the patch classes' base; with none, the bases are
    discovered (:mod:`rebasekit.corpus.discovery`). The other rules always run.
    ``platform_functions`` are the ``module:function`` entry points vLLM calls for the
    name of a platform class to load (a registration the registry rule follows).
    ``files`` is what :func:`read_plugin` returns, when the caller has read it already.
    """
    plugin_dir = plugin_dir.resolve()
    corpus = PluginCorpus(
        root=plugin_dir.parent,
        package=plugin_dir.name,
        upstream_package=upstream_package,
        patch_bases=tuple(patch_bases),
    )
    parsed: list[tuple[str, str, ast.Module]] = []
    for relpath, source in read_plugin(plugin_dir) if files is None else files:
        if isinstance(source, SkippedFile):
            corpus.degradations.append(source.degradation(relpath))
            continue
        tree = parse_file(corpus, relpath, source)
        if tree is not None:
            parsed.append((relpath, module_name(relpath), tree))
    _visit_all(corpus, parsed, tuple(platform_functions))
    return corpus


def module_name(relpath: str) -> str:
    parts = relpath[:-3].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def extract_file(corpus: PluginCorpus, relpath: str, source: bytes) -> None:
    """Add one file's patches, imports, calls and comments to ``corpus``."""
    tree = parse_file(corpus, relpath, source)
    if tree is not None:
        _visit_all(corpus, [(relpath, module_name(relpath), tree)])


def parse_file(corpus: PluginCorpus, relpath: str, source: bytes) -> ast.Module | None:
    """Record one file's text, comments and syntax tree (None: it does not parse)."""
    modname = module_name(relpath)
    corpus.sources[relpath] = SourceText.from_bytes(source).text
    try:
        tree = ast.parse(source, filename=relpath)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        corpus.files.append(PluginFile(relpath, modname, f"{getattr(exc, 'msg', exc)}", line))
        return None
    corpus.files.append(PluginFile(relpath, modname))
    corpus.comments[relpath] = _comments(source)
    corpus.modules[relpath] = tree
    corpus._by_type.pop(relpath, None)  # its node table is rebuilt from this tree
    return tree


def _visit_all(
    corpus: PluginCorpus,
    parsed: list[tuple[str, str, ast.Module]],
    platform_functions: tuple[str, ...] = (),
) -> None:
    """Run every rule over the parsed files; the ones that look across files come last."""
    copiers = frozenset() if corpus.patch_bases else copier_bases({m: t for _, m, t in parsed})
    visitors = [_FileVisitor(corpus, relpath, modname, copiers) for relpath, modname, _ in parsed]
    for visitor, (_, _, tree) in zip(visitors, parsed):
        visitor.run(tree)
    functions = {v.modname: v.top_functions for v in visitors}
    for visitor, (_, _, tree) in zip(visitors, parsed):
        visitor.assignment_patches(tree, functions)
    registered: dict[str, int] = {}
    for visitor, (_, _, tree) in zip(visitors, parsed):
        for qualname, line in registered_classes(
            tree, visitor.bindings, visitor.expand, visitor.is_upstream, visitor.modname
        ):
            registered.setdefault(qualname, line)
    for entry in platform_functions:
        module, _, name = entry.partition(":")
        function = functions.get(module.strip(), {}).get(name.strip())
        for qualname, line in returned_class_names(function) if function is not None else ():
            registered.setdefault(qualname, line)
    for visitor, (_, _, tree) in zip(visitors, parsed):
        visitor.registry_patches(tree, registered)
    for visitor, (_, _, tree) in zip(visitors, parsed):
        visitor.collect_calls(tree)
    taken = {p.base for p in corpus.patches}
    corpus.base_candidates = tuple(
        sorted({name for v in visitors for name in v.subscripted_upstream} - taken)
    )


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
    def __init__(
        self,
        corpus: PluginCorpus,
        relpath: str,
        modname: str,
        copiers: frozenset[str] = frozenset(),
    ) -> None:
        self.corpus = corpus
        self.relpath = relpath
        self.modname = modname
        self.copiers = copiers  # plugin classes that copy their subclasses onto a target
        self.is_package = relpath.endswith("__init__.py")
        self.bindings: dict[str, str] = {}  # local name -> absolute dotted target
        self.patch_names: dict[str, PatchClass] = {}
        self.top_functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.top_classes: dict[str, ast.ClassDef] = {}
        self.subscripted_upstream: set[str] = set()  # Base of class X(Base[upstream])

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
        self._node_gates = version_gates.node_gates(tree)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.top_functions.setdefault(node.name, node)
            elif isinstance(node, ast.ClassDef):
                self.top_classes.setdefault(node.name, node)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                self._maybe_patch(node)

    def collect_calls(self, tree: ast.Module) -> None:
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
        for base_name, base in subscripted_bases(node):
            last = base_name.split(".")[-1]
            target = self.expand(dotted(base.slice))
            upstream = target is not None and self.is_upstream(target)
            if upstream:
                self.subscripted_upstream.add(last)
            if self.corpus.patch_bases:
                if last not in self.corpus.patch_bases:
                    continue
                rule = RULE_CONFIGURED
            elif upstream and self._qualify(base_name) in self.copiers:
                rule = RULE_GENERIC
            else:
                continue
            self._add_class_patch(node, last, ast.unparse(base.slice), target, rule)
            return
        self._maybe_orig_capture(node)

    def _qualify(self, name: str) -> str:
        """The absolute name of a class the file names: imported, or defined here."""
        expanded = self.expand(name)
        if expanded is not None:
            return expanded
        return f"{self.modname}.{name}"

    def _add_class_patch(
        self, node: ast.ClassDef, base: str, target_expr: str, target: str | None, rule: str
    ) -> PatchClass:
        patch = PatchClass(
            node.name,
            self.relpath,
            self.modname,
            node.lineno,
            node.end_lineno or node.lineno,
            base,
            target_expr,
            target,
            rule=rule,
        )
        patch.version_gate = self._node_gates.get(id(node))
        self._patch_body(patch, node)
        self.corpus.patches.append(patch)
        self.patch_names[node.name] = patch
        return patch

    def _maybe_orig_capture(self, node: ast.ClassDef) -> None:
        """``class C: _orig_x = Target.x``: C patches the one upstream owner it captures from."""
        owners: dict[str, str] = {}
        for stmt in node.body:
            if not (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id.startswith(ORIG_PREFIX)
            ):
                continue
            owner = _capture_owner(stmt.value)
            target = self.expand(owner)
            if owner is not None and target is not None and self.is_upstream(target):
                owners[target] = owner
        if len(owners) == 1:
            ((target, spelled),) = owners.items()
            self._add_class_patch(node, "", spelled, target, RULE_ORIG)

    # -- patches installed by assignment, and registered classes ---------------------------
    def assignment_patches(
        self,
        tree: ast.Module,
        functions: dict[str, dict[str, ast.FunctionDef | ast.AsyncFunctionDef]],
    ) -> None:
        """One patch per upstream target this file assigns onto (``Target.x = f``)."""
        by_target: dict[str, PatchClass] = {}
        for site in installed_attributes(
            tree, self.bindings, self._function_scopes, self.expand, self.is_upstream
        ):
            function, kind = site.function, site.kind
            if function is None and isinstance(site.value, ast.Name):
                # a function imported from another plugin module: read its signature there
                origin = self.expand(site.value.id, site.scope) or ""
                module, _, name = origin.rpartition(".")
                function = functions.get(module, {}).get(name)
                kind = "method" if function is not None else kind
            patch = by_target.get(site.target)
            if patch is None:
                patch = by_target[site.target] = PatchClass(
                    site.target_expr.rsplit(".", 1)[-1],
                    self.relpath,
                    self.modname,
                    site.lineno,
                    site.lineno,
                    "",
                    site.target_expr,
                    site.target,
                    rule=RULE_ASSIGNMENT,
                )
                self.corpus.patches.append(patch)
            patch.lineno = min(patch.lineno, site.lineno)
            patch.end_lineno = max(patch.end_lineno, site.lineno)
            if patch.attribute(site.name) is not None:
                continue  # assigned twice (say, in two version-gated branches): the first wins
            local = function is not None and site.function is not None
            sig = signature_of(function) if function is not None else None
            patch.attributes.append(
                PatchAttr(
                    site.name,
                    kind,
                    function.lineno if local else site.lineno,
                    (function.end_lineno or function.lineno) if local else site.lineno,
                    sig,
                    tuple(ast.unparse(d) for d in function.decorator_list) if function else (),
                    (),
                    _passthrough(sig, ()) if sig is not None else False,
                    source=self._qualname(tree, function) if local else None,
                    installed_at=f"{self.relpath}:{site.lineno}",
                )
            )
            if local and kind == "method" and first_param(function) == "self":
                self._self_reads(patch, function)

    @staticmethod
    def _qualname(tree: ast.Module, function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
        """The function's name among the file's definitions (top level or a class member)."""
        if function in tree.body:
            return function.name
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and function in node.body:
                return f"{node.name}.{function.name}"
        return None  # nested in a function: its signature is checked, its body is not

    def registry_patches(self, tree: ast.Module, registered: dict[str, int]) -> None:
        """A registered plugin class that subclasses an upstream class patches that class."""
        for name, node in self.top_classes.items():
            if f"{self.modname}.{name}" not in registered or name in self.patch_names:
                continue
            if len(node.bases) != 1:
                continue  # mixins and interfaces besides: the instance is not the target's
            for base in node.bases:
                spelled = dotted(base)
                target = self.expand(spelled)
                if spelled is not None and target is not None and self.is_upstream(target):
                    self._add_class_patch(node, "", spelled, target, RULE_REGISTRY)
                    break

    def _patch_body(
        self,
        patch: PatchClass,
        node: ast.ClassDef | ast.If,
        body: list[ast.stmt] | None = None,
        gate: str | None = None,
    ) -> None:
        for stmt in node.body if body is None else body:
            branches = version_gates.gate(stmt.test) if isinstance(stmt, ast.If) else None
            if isinstance(stmt, ast.If) and branches:
                # members defined per vLLM release: each carries the releases it exists at
                then_gate, else_gate = branches
                self._patch_body(patch, stmt, stmt.body, version_gates.combine(gate, then_gate))
                self._patch_body(patch, stmt, stmt.orelse, version_gates.combine(gate, else_gate))
                continue
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
                    gate,
                )
                existing = patch.attribute(stmt.name)
                if existing is None or (existing.version_gate and existing.version_gate != gate):
                    patch.attributes.append(attr)  # twins in gated branches: one per release
                elif _is_overload(existing.decorators) and not _is_overload(decorators):
                    # the implementation after its @overload stubs is what gets installed
                    patch.attributes[patch.attributes.index(existing)] = attr
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
                version_gate=self._node_gates.get(id(call)),
            )
        )


def _is_overload(decorators: tuple[str, ...]) -> bool:
    return any(d.split(".")[-1] == "overload" for d in decorators)


def _capture_owner(value: ast.expr) -> str | None:
    """``Target`` of ``Target.x``, ``Target.x.__func__`` or ``getattr(Target, "x")``."""
    if isinstance(value, ast.Call) and dotted(value.func) == "getattr" and len(value.args) >= 2:
        return dotted(value.args[0])
    chain = (dotted(value) or "").split(".") if isinstance(value, ast.Attribute) else []
    while len(chain) > 2 and chain[-1] in ("__func__", "__wrapped__", "fget"):
        chain.pop()
    return ".".join(chain[:-1]) or None


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
