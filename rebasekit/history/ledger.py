"""The ledger: probes evaluated on every column, plus the advisory anomaly flags.

Flags look only at the order of pins, so they are computed on *pin groups*: adjacent
columns declaring the same pin count once, through the rightmost of them (the branch over
the commit that first set the pin, the working tree over both). A "bump" is the step from
one group to the next.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rebasekit.degradation import Degradation
from rebasekit.history.columns import Column
from rebasekit.history.probes import Cell, Probe, evaluate

FLAG_RULES = {
    "STALLED": "the value changed on every earlier bump (at least two) "
    "but not on the last one: a probe that tracks vLLM was likely not updated",
    "VANISHED": "the value existed at some earlier pin and is missing at the newest",
    "REVERTED": "the newest value differs from the one before it and equals an older one",
}
MIN_PRIOR_BUMPS = 2


@dataclass(frozen=True)
class Flag:
    """An anomaly on one probe row; ``detail`` names the columns that show it."""

    code: str
    label: str
    detail: str


@dataclass
class Row:
    probe: Probe
    cells: dict[str, Cell]  # column id -> cell
    flags: list[Flag]


@dataclass
class Ledger:
    columns: list[Column]
    rows: list[Row]
    # What the ledger could not include (a shallow clone, an unreadable revision).
    degradations: list[Degradation] = field(default_factory=list)
    # What the reader should know that does not make the ledger incomplete.
    notes: list[str] = field(default_factory=list)

    @property
    def flags(self) -> list[Flag]:
        return [f for row in self.rows for f in row.flags]


def pin_groups(columns: list[Column]) -> list[Column]:
    """The rightmost column of each run of adjacent columns that share a pin."""
    reps: list[Column] = []
    for column in columns:
        same = reps and column.pin and reps[-1].pin and reps[-1].pin.version == column.pin.version
        if same:
            reps[-1] = column
        else:
            reps.append(column)
    return reps


def flags_for(label: str, seq: list[tuple[str, str | None]]) -> list[Flag]:
    """Apply the rules in :data:`FLAG_RULES` to ``(column id, value)`` pairs in pin order."""
    flags: list[Flag] = []
    values = [v for _, v in seq]
    ids = [c for c, _ in seq]
    if len(values) < 2:
        return flags
    last, prev = values[-1], values[-2]
    if last is None and any(v is not None for v in values[:-1]):
        had = max(i for i, v in enumerate(values[:-1]) if v is not None)
        flags.append(Flag("VANISHED", label, f"present at {ids[had]}, missing at {ids[-1]}"))
    if last is not None and last != prev and last in values[:-2]:
        old = values.index(last)
        flags.append(
            Flag(
                "REVERTED", label, f"{ids[-1]} equals {ids[old]} again (was {prev!r} at {ids[-2]})"
            )
        )
    prior = len(values) - 2  # bumps before the last one
    if (
        prior >= MIN_PRIOR_BUMPS
        and last is not None
        and last == prev
        and all(values[i] != values[i - 1] for i in range(1, len(values) - 1))
    ):
        flags.append(
            Flag(
                "STALLED",
                label,
                f"changed on each of {prior} earlier bumps, unchanged {ids[-2]} -> {ids[-1]}",
            )
        )
    return flags


# A probe's cell in one column; the default reads the column's files.
CellFn = Callable[[Probe, Column], Cell]


def file_cell(probe: Probe, column: Column) -> Cell:
    return evaluate(probe, column.snapshot.read, column.pin.version if column.pin else None)


def build_ledger(columns: list[Column], probes: list[Probe], cell: CellFn = file_cell) -> Ledger:
    """Evaluate every probe on every column and flag each row."""
    reps = pin_groups(columns)
    rows = []
    for probe in probes:
        cells = {c.cid: cell(probe, c) for c in columns}
        seq = [(c.cid, cells[c.cid].value) for c in reps]
        rows.append(Row(probe, cells, flags_for(probe.label, seq)))
    return Ledger(columns, rows)
