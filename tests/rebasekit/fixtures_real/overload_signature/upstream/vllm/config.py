from typing import Any, overload


@overload
def config(cls: type) -> type: ...


@overload
def config(*, config: dict[str, Any] | None = None) -> Any: ...


def config(cls=None, *, config=None):
    """Decorator, bare (@config) or with options (@config(config={...}))."""
    if cls is None:
        return lambda c: c
    return cls


class ModelConfig:
    def get_head_size(self) -> int:
        return 64
