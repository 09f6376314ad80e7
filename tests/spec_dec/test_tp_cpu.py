"""Tensor parallelism: a speculator sharded over two ranks drafts what one rank drafts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import _free_port
from tests.spec_dec.conftest import HIDDEN, VOCAB, build_speculator, make_spec_ckpt

pytestmark = pytest.mark.usefixtures("registered", "one_rank_group")
WORKER = Path(__file__).with_name("tp_worker.py")


@pytest.mark.parametrize("kind", ["mlp", "lstm"])
def test_two_rank_drafts_equal_one_rank_drafts(spec_root, tmp_path, kind):
    ckpt = make_spec_ckpt(spec_root, f"tp-{kind}", kind=kind, tie_weights=kind == "lstm")
    out = tmp_path / "tp.json"
    subprocess.run(
        [sys.executable, str(WORKER), str(ckpt), str(_free_port()), "4", str(out)],
        check=True,
        timeout=600,
    )
    got = json.loads(out.read_text())
    # 300 tokens padded to 320 for vLLM's vocab layers: rank 0 holds ids 0..159 only.
    assert got["tp"] == 2 and got["all_loaded"] and got["shard"] == [0, 160]
    assert got["rows"] == 160
    # Per rank, the two shared choices: rank 0 sent 0 then 1, rank 1 the opposite.
    assert got["choices"] == [[0, 1], [0, 1]]

    model, _ = build_speculator(ckpt)
    g = torch.Generator().manual_seed(4)
    ids = torch.randint(0, VOCAB, (9,), generator=g)
    hidden = torch.randn(9, HIDDEN, generator=g) * 3
    expected = model.generate_proposals(ids, hidden, 3)
    assert got["drafts"] == expected.tolist()
    assert (expected >= 160).any() and (expected < 160).any()  # both shards win somewhere
