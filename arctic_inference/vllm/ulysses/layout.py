"""Rank coordinates and process groups of a DP x PP x SP x TP world (pure).

Rank order, outermost first: data parallel, pipeline stage, sequence parallel,
tensor parallel::

    rank = ((dp * PP + pp) * SP + sp) * TP + tp

Why this order:

* vLLM lays out ``DP x PP x PCP x TP`` with TP innermost, so the ranks of a TP
  group are adjacent (the same host, the fastest links). SP takes the slot of
  PCP: an SP x TP block is then ``SP * TP`` adjacent ranks, which is exactly a
  vLLM TP group of size ``SP * TP``. So vLLM's own group builder, asked for TP
  ``SP * TP``, produces the right PP, DP and EP groups for this world, and only
  the TP and SP groups have to be built on top (:mod:`.patches`).
* vLLM starts DP engines with their ranks offset by
  ``dp_rank * world_size`` (``init_distributed_environment``), i.e. DP is
  outermost, as here, once ``world_size`` counts SP.

The folded TP group (shift parallelism's small-batch layout) has the members
of an SP x TP block, ordered TP-major: folded rank ``tp * SP + sp``. With that
order the heads and weight rows a rank holds in folded TP are the same heads it
holds in the SP layout after the all-to-all (:mod:`.heads`), so both layouts
share one KV cache, and its weight shard is a slice of its TP shard
(:mod:`.shift`).
"""

from __future__ import annotations

import dataclasses
import itertools

Group = tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class RankCoords:
    """Where one rank sits in each dimension."""

    dp: int
    pp: int
    sp: int
    tp: int


@dataclasses.dataclass(frozen=True)
class ParallelLayout:
    """The sizes of the four dimensions; every method is a pure function of them."""

    dp: int = 1
    pp: int = 1
    sp: int = 1
    tp: int = 1

    def __post_init__(self) -> None:
        for name in ("dp", "pp", "sp", "tp"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} size must be a positive integer, got {value!r}.")

    @property
    def world_size(self) -> int:
        return self.dp * self.pp * self.sp * self.tp

    @property
    def engine_world_size(self) -> int:
        """Workers of one DP engine: what ``ParallelConfig.world_size`` must be."""
        return self.pp * self.sp * self.tp

    @property
    def folded_tp(self) -> int:
        """Size of the folded TP group (shift parallelism's small-batch layout)."""
        return self.sp * self.tp

    def rank(self, coords: RankCoords) -> int:
        for name, size in (("dp", self.dp), ("pp", self.pp), ("sp", self.sp), ("tp", self.tp)):
            value = getattr(coords, name)
            if not 0 <= value < size:
                raise ValueError(f"{name} coordinate {value} is outside 0..{size - 1}.")
        return ((coords.dp * self.pp + coords.pp) * self.sp + coords.sp) * self.tp + coords.tp

    def coords(self, rank: int) -> RankCoords:
        if not 0 <= rank < self.world_size:
            raise ValueError(f"rank {rank} is outside the world 0..{self.world_size - 1}.")
        rest, tp = divmod(rank, self.tp)
        rest, sp = divmod(rest, self.sp)
        dp, pp = divmod(rest, self.pp)
        return RankCoords(dp=dp, pp=pp, sp=sp, tp=tp)

    def folded_rank(self, coords: RankCoords) -> int:
        """Rank inside the folded TP group: TP-major (see the module docstring)."""
        return coords.tp * self.sp + coords.sp

    # --- groups: lists of world ranks, each in its group's rank order ---------

    def _groups(self, fixed: tuple[str, ...], varying: tuple[str, ...]) -> list[Group]:
        sizes = {"dp": self.dp, "pp": self.pp, "sp": self.sp, "tp": self.tp}
        groups = []
        for outer in itertools.product(*(range(sizes[n]) for n in fixed)):
            members = []
            for inner in itertools.product(*(range(sizes[n]) for n in varying)):
                values = dict(zip(fixed, outer, strict=True)) | dict(
                    zip(varying, inner, strict=True)
                )
                members.append(self.rank(RankCoords(**values)))
            groups.append(tuple(members))
        return groups

    def tp_groups(self) -> list[Group]:
        """Tensor-parallel groups of the SP layout (size TP, adjacent ranks)."""
        return self._groups(("dp", "pp", "sp"), ("tp",))

    def sp_groups(self) -> list[Group]:
        """Sequence-parallel groups: the all-to-all peers (size SP, stride TP)."""
        return self._groups(("dp", "pp", "tp"), ("sp",))

    def sp_tp_groups(self) -> list[Group]:
        """SP x TP blocks in world order (size SP * TP, adjacent ranks)."""
        return self._groups(("dp", "pp"), ("sp", "tp"))

    def folded_tp_groups(self) -> list[Group]:
        """The SP x TP blocks ordered by folded rank: shift's plain-TP groups."""
        return self._groups(("dp", "pp"), ("tp", "sp"))

    def pp_groups(self) -> list[Group]:
        return self._groups(("dp", "sp", "tp"), ("pp",))

    def dp_groups(self) -> list[Group]:
        return self._groups(("pp", "sp", "tp"), ("dp",))

    def groups_of(self, rank: int) -> dict[str, Group]:
        """The one group of each kind that ``rank`` belongs to."""
        kinds = {
            "tp": self.tp_groups(),
            "sp": self.sp_groups(),
            "sp_tp": self.sp_tp_groups(),
            "folded_tp": self.folded_tp_groups(),
            "pp": self.pp_groups(),
            "dp": self.dp_groups(),
        }
        return {kind: next(g for g in groups if rank in g) for kind, groups in kinds.items()}


def all_layouts(max_world: int) -> list[ParallelLayout]:
    """Every DP x PP x SP x TP split of every world size up to ``max_world``."""
    layouts = []
    for world in range(1, max_world + 1):
        for dp, pp, sp in itertools.product(range(1, world + 1), repeat=3):
            if world % (dp * pp * sp) == 0:
                layouts.append(ParallelLayout(dp=dp, pp=pp, sp=sp, tp=world // (dp * pp * sp)))
    return layouts
