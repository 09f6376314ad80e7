from typing import Generic, TypeVar

T = TypeVar("T")


class Patch(Generic[T]):
    """Marker base: class X(Patch[Target]) copies every attribute of X onto Target."""
