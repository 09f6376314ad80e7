"""The README's sequence-parallelism table names every option, its env variable and default."""

from __future__ import annotations

from pathlib import Path

from arctic_inference.vllm.ulysses.sp_args import ARGS

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_table_lists_each_option() -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Arctic Ulysses sequence parallelism") :]
    section = section[: section.index("\n## ")]
    rows = [line for line in section.splitlines() if line.startswith("| `--")]
    assert len(rows) == len(ARGS)
    for arg, row in zip(ARGS, rows, strict=True):
        assert row.startswith(f"| `{arg.flag}")
        assert f"`{arg.env}`" in row
        default = {False: "off", 1: "1 (off)"}.get(arg.default, str(arg.default))
        assert f"| {default} |" in row
