from typing import Generic, TypeVar

T = TypeVar("T")


class ArcticPatch(Generic[T]):
    """Marker base: class X(ArcticPatch[Target]) copies every attribute of X onto Target."""
