"""Where did a name go? Shared "moved"/"renamed" searches for import and target checks."""

from __future__ import annotations

from rebasekit.index import CodeIndex, Symbol


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("."), b.split(".")):
        if x != y:
            break
        n += 1
    return n


def moved_candidates(
    index: CodeIndex, name: str, near: str, kinds=("class", "function", "variable")
) -> list[Symbol]:
    """Definitions of ``name`` elsewhere in ``index``, closest to module ``near`` first."""
    found = [s for s in index.find_definitions(name, kinds) if s.module != near]
    found.sort(
        key=lambda s: (
            -_common_prefix(s.module, near),
            s.module.startswith(
                tuple(f"{index.tree.package}.{p}" for p in ("third_party", "vllm_flash_attn"))
            ),
            s.module,
        )
    )
    return found


def renamed_candidate(new: CodeIndex, old: CodeIndex, old_sym: Symbol) -> Symbol | None:
    """A definition new in ``old_sym``'s module with the same body shape (name aside)."""
    if old_sym.kind not in ("class", "function"):
        return None
    shape = old.body_shape(old_sym)
    if shape is None:
        return None
    for modname in dict.fromkeys([old_sym.module]):
        new_facts, old_facts = new.module(modname), old.module(modname)
        if new_facts is None or old_facts is None:
            continue
        for name, fact in new_facts.defs.items():
            if name in old_facts.defs or fact.kind != old_sym.kind:
                continue
            cand = new.resolve(f"{modname}.{name}")
            if cand is not None and new.body_shape(cand) == shape:
                return cand
    return None
