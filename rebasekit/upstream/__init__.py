"""Upstream source trees: folders, registry releases (cached) and git refs.

``open_tree(spec)`` is the one entry point; everything downstream only sees the
:class:`UpstreamTree` interface, whose paths are relative to the folder that contains
the package directory (``vllm/...``).
"""

from rebasekit.upstream.spec import open_folder, open_tree
from rebasekit.upstream.tree import FolderTree, GitTree, UpstreamTree

__all__ = ["FolderTree", "GitTree", "UpstreamTree", "open_folder", "open_tree"]
