"""Every finding code rebasekit can emit: severity, title and what it means.

Codes are stable: a code, once shipped, keeps its meaning. Ranges: RK0xx input and
meta, RK1xx imports, RK2xx patch targets, override signatures and ``_orig_`` aliases,
RK3xx calls, returns and attributes, RK4xx bypassed and mirrored code.
"""

from __future__ import annotations

from dataclasses import dataclass

from rebasekit.findings import Severity


@dataclass(frozen=True)
class Code:
    code: str
    severity: Severity
    title: str  # short kebab-case name, used as the SARIF rule name
    explanation: str


CODES: dict[str, Code] = {}


def define(code: str, severity: Severity, title: str, explanation: str) -> Code:
    if code in CODES:
        raise ValueError(f"finding code {code} defined twice")
    CODES[code] = Code(code, severity, title, explanation)
    return CODES[code]


def get(code: str) -> Code:
    return CODES[code]


E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO  # noqa: E741 (table shorthand)

# -- RK0xx: input and meta ------------------------------------------------------------
define(
    "RK001",
    E,
    "plugin-syntax-error",
    "A plugin file does not parse; it was skipped and the rest of the plugin was scanned.",
)
define(
    "RK002",
    W,
    "patch-target-unresolved",
    "A patch class's target is not a name the plugin imports from upstream, so it cannot be checked.",
)
define(
    "RK003",
    I,
    "unused-suppression",
    "A '# rebasekit: ignore[...]' comment suppresses nothing; remove it.",
)

# -- RK1xx: imports -------------------------------------------------------------------
define(
    "RK101",
    E,
    "import-module-missing",
    "The plugin imports an upstream module that the target tree does not have.",
)
define(
    "RK102",
    E,
    "import-symbol-missing",
    "The plugin imports a name the upstream module does not define or re-export, and no "
    "other definition of it was found.",
)
define(
    "RK103",
    E,
    "import-symbol-moved",
    "The imported name is gone from that module but is defined elsewhere in the tree; the "
    "finding suggests the new import line.",
)
define(
    "RK104",
    E,
    "import-symbol-renamed",
    "The imported name is gone and a definition with the same body shape exists under a new "
    "name next to where it was; the finding suggests the new name.",
)
define(
    "RK105",
    E,
    "import-symbol-deleted",
    "The imported name existed in the old tree and is gone from the new one without a replacement.",
)

# -- RK2xx: patch targets, override signatures, _orig_ aliases ------------------------
define(
    "RK201",
    E,
    "patch-target-missing",
    "The class or module a patch applies to no longer exists in the tree.",
)
define(
    "RK202",
    E,
    "patch-target-moved",
    "The patch target is gone from where the plugin imports it but is defined elsewhere; "
    "the finding suggests where.",
)
define(
    "RK203",
    W,
    "override-target-removed",
    "An override replaced an upstream attribute in the old tree; the new tree no longer has "
    "it, so the patch now only adds a dead attribute.",
)
define(
    "RK210",
    E,
    "override-param-added",
    "The upstream definition gained a parameter the override does not accept; callers that "
    "pass it will fail (warning when upstream gives it a default).",
)
define(
    "RK211",
    W,
    "override-param-removed",
    "The override accepts a parameter the upstream definition no longer has.",
)
define(
    "RK212",
    E,
    "override-param-renamed",
    "A parameter at the same position has a different name upstream; keyword callers break.",
)
define(
    "RK213",
    E,
    "override-params-reordered",
    "The override and upstream take the same parameters in a different positional order.",
)
define(
    "RK214",
    E,
    "override-param-kind-changed",
    "A parameter changed kind (positional-only, keyword-only, *args, **kwargs) upstream.",
)
define(
    "RK215",
    W,
    "override-default-changed",
    "A parameter's default differs between the override and upstream.",
)
define(
    "RK216",
    E,
    "override-member-kind-changed",
    "The override's kind (method, property, staticmethod, classmethod, attribute) differs "
    "from what upstream defines under that name.",
)
define(
    "RK220",
    E,
    "orig-alias-missing",
    "A '_orig_' alias captures an attribute the target no longer has; the patch fails "
    "when its class body runs.",
)

# -- RK3xx: calls into upstream, return shapes, instance attributes (deep drift) -------
define(
    "RK301",
    E,
    "call-does-not-bind",
    "A plugin call into an upstream function, method or constructor (including "
    "'_orig_' and super() delegation) no longer binds to its signature: a new required "
    "argument, a removed keyword, too many positionals. Where upstream now makes the "
    "same call from another method, the finding says where.",
)
define(
    "RK302",
    E,
    "return-shape-changed",
    "The plugin unpacks an upstream call's result ('a, b = f()'); upstream's returns no "
    "longer give a tuple of that length (changed arity or a single object).",
)
define(
    "RK303",
    E,
    "instance-attribute-gone",
    "An override reads 'self.X' on a patched instance but the target class (with its "
    "bases) no longer assigns or defines X (an error when the base pin did; a warning "
    "worded 'not defined upstream' when neither pin does).",
)
define(
    "RK304",
    W,
    "instance-attribute-kind-changed",
    "The target class still assigns 'self.X', but from a different kind of value than "
    "before (e.g. a CPU/GPU buffer wrapper became a plain tensor), so accessors the "
    "plugin uses on it may break.",
)

define(
    "RK310",
    W,
    "starred-return-length-changed",
    "The plugin unpacks an upstream call's tuple with a star ('a, b, *rest = f()'); "
    "upstream's tuple changed length between the pins, so the starred rest (and any "
    "name whose element moved) holds other values. An error when the tuple became "
    "shorter than the names before the star.",
)

define(
    "RK311",
    E,
    "called-target-gone",
    "A plugin function calls an upstream function or class that existed at the base but "
    "is gone at NEW (deleted, or its module removed). The import is reported where it "
    "is written; this finding marks each function whose call has to be rewritten.",
)

define(
    "RK312",
    W,
    "replaced-method-new-attribute",
    "A patch replaces an upstream method without calling it; upstream's new version of "
    "that method assigns 'self.X' (the old one did not) and another upstream method of "
    "the class reads it, so the replacement must assign it too.",
)

define(
    "RK313",
    W,
    "config-default-changed",
    "A plugin class reads an upstream config field (or compares against members of the "
    "enum it holds) whose dataclass default, or the default a config's __post_init__ "
    "fills in when it is unset, changed between the pins: with the same settings the plugin now runs "
    "another path. The finding names the field, its old and new values and the "
    "upstream place.",
)

define(
    "RK314",
    W,
    "positional-argument-shifted",
    "A plugin call into upstream (also through an attribute holding an upstream object, "
    "'self.proc(...)' built as 'self.proc = Processor(...)') passes an argument by "
    "position into a parameter upstream removed between the pins. The call still binds, "
    "so nothing fails: the value now fills the next parameter.",
)

define(
    "RK315",
    W,
    "instance-attribute-wrapped",
    "A patch reaches into 'self.X' (reads or sets an attribute of it) and upstream now "
    "also assigns 'self.X = Wrapper(self.X, ...)', which OLD never did: on that path the "
    "patch works on the wrapper. The finding names the upstream method that unwraps it, "
    "when the class has one.",
)

# -- RK4xx: bypassed, mirrored and forked code ----------------------------------------
define(
    "RK401",
    W,
    "parallel-implementation",
    "Upstream has a second class with the patched class's name in another module, and "
    "a switch that selects it; configurations taking that branch silently bypass the "
    "patch. The finding names the class and the selecting condition.",
)
define(
    "RK402",
    W,
    "mirrored-body-drift",
    "The upstream method an override replaces changed its body between the two pins; "
    "the override still carries (or wraps) the old behaviour. The upstream diff is "
    "attached; 'rebasekit port' can merge it.",
)
define(
    "RK403",
    W,
    "forked-file-drift",
    "A plugin file declared as a fork of an upstream file ('# rebasekit: fork-of "
    "path@version' or [tool.rebasekit.forks]) has upstream changes since the recorded "
    "version in definitions it carries.",
)
define(
    "RK404",
    W,
    "undeclared-fork",
    "A plugin module shares most definitions (names and bodies) with one upstream "
    "file but declares no fork; it is checked as a fork of the old pin and the "
    "declaration to add is suggested.",
)

define(
    "RK406",
    W,
    "copied-class-signature-drift",
    "A plugin class copies an upstream class without inheriting from it (its name is the "
    "upstream name with words inserted, it defines the same methods); a method whose "
    "parameters matched the upstream method's at OLD no longer matches at NEW, where "
    "upstream callers pass the new parameters.",
)

# -- drift kinds read from upstream's own definitions and call sites -------------------
define(
    "RK217",
    E,
    "override-misses-caller-keyword",
    "Upstream code calls the overridden method with a keyword argument the override "
    "does not accept; the finding names that upstream call site.",
)
define(
    "RK218",
    E,
    "override-forwards-removed-param",
    "The override forwards one of its parameters by position to the original (or "
    "super()), but upstream removed that parameter: the value now lands in another one.",
)
define(
    "RK221",
    E,
    "captured-attribute-missing",
    "Plugin code outside a patch class captures an upstream attribute "
    "('_orig = Target.attr', at module level or in a function) that the tree no longer has.",
)
define(
    "RK305",
    E,
    "self-call-does-not-bind",
    "A patch or plugin subclass calls an inherited upstream method on self; the method "
    "no longer accepts that call, or upstream removed or renamed it.",
)
define(
    "RK306",
    E,
    "dataclass-field-gone",
    "A constructor call to an upstream dataclass passes a field the dataclass no longer "
    "declares (or omits a new required one); the fields are read from its definition.",
)
define(
    "RK307",
    E,
    "subclass-super-call-does-not-bind",
    "A plugin subclass of an upstream class (not a patch) calls super().__init__(...) or "
    "another super() method whose upstream signature no longer accepts the call.",
)
define(
    "RK308",
    E,
    "envs-attribute-missing",
    "The plugin reads an attribute of vllm.envs that the tree no longer defines (neither "
    "in environment_variables nor as a module attribute).",
)
define(
    "RK405",
    W,
    "copied-subclass-body-drift",
    "A plugin subclass method copies the upstream method it overrides (similar to the "
    "OLD body, no super() call) and that upstream body changed between OLD and NEW; the "
    "diff is attached.",
)
