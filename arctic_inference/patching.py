"""In-place patching of live vLLM classes and modules.

A patch is written as a class whose base names its target::

    class SchedulerPatch(ArcticPatch[Scheduler]):
        _orig_schedule = Scheduler.schedule      # the original, kept for wrapping

        def schedule(self):
            out = SchedulerPatch._orig_schedule(self)
            ...
            return out

    SchedulerPatch.apply()

``apply()`` copies every attribute the patch class defines onto the target
itself (``setattr``), so instances that already exist see the new behaviour
and vLLM keeps constructing its own classes. The target may also be a module
(``ArcticPatch[vllm.envs]``); attributes then become module globals.

Why this shape:

* ``rebasekit`` reads patches statically; ``class X(ArcticPatch[Target])`` is
  the single syntactic form it recognises, so every feature uses it.
* ``_orig_<name>`` aliases are evaluated when the patch class body runs, i.e.
  before any patch is applied, so a wrapper always reaches the real original.
  They are *not* copied onto the target (the target's namespace only gains
  what the feature needs); a wrapper calls the original through the patch
  class: ``SchedulerPatch._orig_schedule(self)``. At apply time each alias is
  checked against the target, so an upstream rename fails loudly instead of
  leaving a wrapper around nothing.
  For a classmethod, alias the plain function (``Target.make.__func__``)
  and call it with ``cls``; a staticmethod alias is already a plain function.
* Descriptors are copied from the class ``__dict__`` (never via ``getattr``),
  so a ``staticmethod``, ``classmethod`` or ``property`` stays one.
* Applying twice is a no-op: a patch is keyed by its defining module and
  qualified name, so even a re-imported copy of the same patch class cannot
  wrap a wrapper.
* Every application is recorded (:func:`applied_patches`) so the plugin can
  print what is active and tests can assert on it.
* ``revert()`` exists for tests only: the plugin never takes a patch out
  (other engines in the process may rely on it), but a test that patches a
  live vLLM class must hand the class back unchanged to the next test. It
  restores exactly what ``apply()`` found, in last-applied-first-reverted
  order, and refuses when a later patch still wraps the same attribute.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import threading
import types
from collections.abc import Iterator
from typing import ClassVar, Literal

__all__ = [
    "ArcticPatch",
    "AttributeChange",
    "PatchError",
    "PatchRecord",
    "applied_patches",
    "is_applied",
    "reverting_new_patches",
]

ORIG_PREFIX = "_orig_"

# Names Python (or this module) puts into every class body; never copied.
_CLASS_MACHINERY = frozenset(
    {
        "__module__",
        "__qualname__",
        "__doc__",
        "__dict__",
        "__weakref__",
        "__orig_bases__",
        "__parameters__",
        "__annotations__",
        "__annotate__",
        "__annotate_func__",
        "__annotations_cache__",
        "__firstlineno__",
        "__static_attributes__",
        "__classcell__",
        "__slots__",
        "__init_subclass__",
        "__class_getitem__",
        "_arctic_target",
    }
)

Action = Literal["replaced", "added"]


class PatchError(RuntimeError):
    """A patch cannot be applied to its target as written."""


@dataclasses.dataclass(frozen=True)
class AttributeChange:
    """One attribute a patch installed on its target."""

    name: str
    # "replaced": the target already resolved this name (own or inherited);
    # "added": the name is new on the target.
    action: Action
    # Descriptor kind as installed: "function", "staticmethod",
    # "classmethod", "property" or "value".
    kind: str


@dataclasses.dataclass(frozen=True)
class PatchRecord:
    """What one applied patch did; kept in the runtime registry."""

    patch: str  # qualified name of the patch class
    patch_module: str  # module that defined the patch class
    target: str  # dotted name of the target class or module
    target_kind: Literal["class", "module"]
    attributes: tuple[AttributeChange, ...]
    aliases: tuple[str, ...]  # names captured as ``_orig_<name>``
    # The live objects, for runtime checks; not part of equality or repr.
    target_object: object = dataclasses.field(default=None, compare=False, repr=False)
    patch_class: type | None = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def replaced(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes if a.action == "replaced")

    @property
    def added(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes if a.action == "added")

    def describe(self) -> str:
        """One line for logs: ``Patch -> target (replaced: a, b; added: c)``."""
        parts = []
        if self.replaced:
            parts.append("replaced: " + ", ".join(self.replaced))
        if self.added:
            parts.append("added: " + ", ".join(self.added))
        return f"{self.patch} -> {self.target} ({'; '.join(parts) or 'nothing'})"


_lock = threading.RLock()
_registry: dict[tuple[str, str], PatchRecord] = {}
# Per applied patch: (name, what the target's own namespace held before or
# _ABSENT, what apply() installed), in installation order; used by revert().
_ABSENT = object()
_undo: dict[tuple[str, str], list[tuple[str, object, object]]] = {}


def applied_patches() -> tuple[PatchRecord, ...]:
    """All patches applied in this process, in application order."""
    with _lock:
        return tuple(_registry.values())


def is_applied(patch: type[ArcticPatch]) -> bool:
    """Whether ``patch`` (or a re-imported copy of it) was applied here."""
    with _lock:
        return _patch_key(patch) in _registry


@contextlib.contextmanager
def reverting_new_patches() -> Iterator[None]:
    """Test-only: on exit, revert every patch applied inside the block, newest first.

    For tests that apply real patches to live vLLM classes in the pytest
    process; the classes are handed back exactly as they were found.
    """
    with _lock:
        before = set(_registry)
    try:
        yield
    finally:
        with _lock:
            new = [r for key, r in _registry.items() if key not in before]
        for record in reversed(new):
            assert record.patch_class is not None
            record.patch_class.revert()


def _patch_key(patch: type) -> tuple[str, str]:
    return (patch.__module__, patch.__qualname__)


def _target_name(target: object) -> str:
    if isinstance(target, types.ModuleType):
        return target.__name__
    return f"{target.__module__}.{target.__qualname__}"  # type: ignore[attr-defined]


def _descriptor_kind(value: object) -> str:
    if isinstance(value, staticmethod):
        return "staticmethod"
    if isinstance(value, classmethod):
        return "classmethod"
    if isinstance(value, property):
        return "property"
    if inspect.isfunction(value):
        return "function"
    return "value"


def _target_has(target: object, name: str) -> bool:
    if isinstance(target, type):
        # inspect.getattr_static: no descriptor is triggered by the check.
        try:
            inspect.getattr_static(target, name)
        except AttributeError:
            return False
        return True
    return name in vars(target)


class ArcticPatch:
    """Base of all patches; subscript it with the class or module to patch.

    ``ArcticPatch[Target]`` returns a base class bound to ``Target`` (one per
    target, cached); subclass it and call ``apply()`` on the subclass.
    """

    _arctic_target: ClassVar[object | None] = None
    _arctic_bases: ClassVar[dict[int, type[ArcticPatch]]] = {}

    def __class_getitem__(cls, target: object) -> type[ArcticPatch]:
        if cls is not ArcticPatch:
            raise TypeError(
                f"{cls.__qualname__} is already bound to a target; subscript "
                "ArcticPatch itself, e.g. class MyPatch(ArcticPatch[Target])."
            )
        if not isinstance(target, (type, types.ModuleType)):
            raise TypeError(
                "ArcticPatch[...] takes the class or module to patch, got "
                f"{target!r} ({type(target).__name__}). Import the target and "
                "write ArcticPatch[TheClass] or ArcticPatch[the_module]."
            )
        with _lock:
            base = cls._arctic_bases.get(id(target))
            if base is None or base._arctic_target is not target:
                base = type(
                    f"ArcticPatch[{_target_name(target)}]",
                    (ArcticPatch,),
                    {"_arctic_target": target, "__module__": __name__},
                )
                cls._arctic_bases[id(target)] = base
            return base

    @classmethod
    def target(cls) -> object:
        """The class or module this patch modifies."""
        if cls._arctic_target is None or _is_bound_base(cls):
            raise PatchError(
                f"{cls.__qualname__} is not a concrete patch; define "
                "class MyPatch(ArcticPatch[Target]) and call MyPatch.apply()."
            )
        return cls._arctic_target

    @classmethod
    def patch_attributes(cls) -> dict[str, object]:
        """Attributes this patch installs (aliases and class machinery excluded)."""
        return {
            name: value
            for name, value in vars(cls).items()
            if name not in _CLASS_MACHINERY and not name.startswith(ORIG_PREFIX)
        }

    @classmethod
    def orig_aliases(cls) -> dict[str, object]:
        """``_orig_<name>`` aliases, keyed by the target attribute name."""
        return {
            name[len(ORIG_PREFIX) :]: value
            for name, value in vars(cls).items()
            if name.startswith(ORIG_PREFIX)
        }

    @classmethod
    def apply(cls) -> PatchRecord:
        """Install this patch on its target once; later calls return the record."""
        target = cls.target()
        key = _patch_key(cls)
        with _lock:
            done = _registry.get(key)
            if done is not None:
                return done
            cls._check_aliases(target)
            cls._check_no_zero_arg_super()
            is_module = isinstance(target, types.ModuleType)
            changes = []
            undo: list[tuple[str, object, object]] = []
            for name, value in cls.patch_attributes().items():
                if is_module:
                    value = cls._module_value(name, value)
                action: Action = "replaced" if _target_has(target, name) else "added"
                changes.append(AttributeChange(name, action, _descriptor_kind(value)))
                undo.append((name, vars(target).get(name, _ABSENT), value))
                setattr(target, name, value)
            aliases = cls.orig_aliases()
            record = PatchRecord(
                patch=cls.__qualname__,
                patch_module=cls.__module__,
                target=_target_name(target),
                target_kind="module" if is_module else "class",
                attributes=tuple(changes),
                aliases=tuple(aliases),
                target_object=target,
                patch_class=cls,
            )
            _registry[key] = record
            _undo[key] = undo
            return record

    @classmethod
    def revert(cls) -> bool:
        """Test-only: undo ``apply()``; returns False if it was not applied.

        Each attribute gets back the exact object the target's own namespace
        held before (descriptors included); one the target only inherited, or
        did not have, is deleted again. The registry forgets the patch, so it
        can be applied again. Raises ``PatchError`` (changing nothing) when an
        installed attribute was replaced since, e.g. by a later patch that
        wraps it: revert that one first.
        """
        key = _patch_key(cls)
        with _lock:
            record = _registry.get(key)
            if record is None:
                return False
            target = record.target_object
            undo = _undo[key]
            moved = [name for name, _, new in undo if vars(target).get(name, _ABSENT) is not new]
            if moved:
                raise PatchError(
                    f"Cannot revert {cls.__module__}.{cls.__qualname__}: "
                    f"{', '.join(moved)} on {record.target} changed after it was "
                    "applied (a later patch wraps it?). Revert later patches first."
                )
            for name, old, _ in reversed(undo):
                if old is _ABSENT:
                    delattr(target, name)
                else:
                    setattr(target, name, old)
            del _registry[key]
            del _undo[key]
            return True

    @classmethod
    def _check_aliases(cls, target: object) -> None:
        missing = [n for n in cls.orig_aliases() if not _target_has(target, n)]
        if missing:
            names = ", ".join(f"{ORIG_PREFIX}{n}" for n in missing)
            raise PatchError(
                f"Patch {cls.__module__}.{cls.__qualname__} keeps {names} but "
                f"its target {_target_name(target)} has no attribute "
                f"{', '.join(repr(n) for n in missing)}. The target changed "
                "(renamed or removed upstream): update the alias to the "
                "attribute that exists now, or drop the wrapper."
            )

    @classmethod
    def _check_no_zero_arg_super(cls) -> None:
        # Zero-argument super() binds to the patch class, not the target, and
        # would raise TypeError on first call; refuse it up front instead.
        for name, value in cls.patch_attributes().items():
            func = getattr(value, "__func__", value)
            if isinstance(value, property):
                func = value.fget
            code = getattr(func, "__code__", None)
            if code is not None and "__class__" in code.co_freevars:
                raise PatchError(
                    f"Patch {cls.__module__}.{cls.__qualname__}.{name} uses "
                    "zero-argument super() or __class__, which would bind to "
                    "the patch class instead of the target. Call the parent "
                    "explicitly: super(TargetClass, self).method(...)."
                )

    @classmethod
    def _module_value(cls, name: str, value: object) -> object:
        # Module globals have no descriptor protocol: a staticmethod becomes
        # its function; classmethod/property would be meaningless there.
        if isinstance(value, staticmethod):
            return value.__func__
        if isinstance(value, (classmethod, property)):
            raise PatchError(
                f"Patch {cls.__module__}.{cls.__qualname__} defines {name!r} as "
                f"a {type(value).__name__}, but its target "
                f"{_target_name(cls.target())} is a module. Write a plain "
                "function instead."
            )
        return value


def _is_bound_base(cls: type) -> bool:
    return cls.__module__ == __name__ and cls.__qualname__.startswith("ArcticPatch[")
