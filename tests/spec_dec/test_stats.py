"""Per-position acceptance in vLLM's real ``SpecDecodingLogging`` with the patch in."""

from __future__ import annotations

import pytest

from arctic_inference.vllm.spec_dec.stats import SpecDecodingLoggingPatch, per_position_rates


def _stats(drafts: list[tuple[int, int]], width: int = 8):
    from vllm.v1.spec_decode.metrics import SpecDecodingStats

    stats = SpecDecodingStats.new(width)
    for drafted, accepted in drafts:
        stats.observe_draft(num_draft_tokens=drafted, num_accepted_tokens=accepted)
    return stats


def _logged_rates(steps) -> str:
    from vllm.v1.spec_decode.metrics import SpecDecodingLogging

    logging = SpecDecodingLogging()
    for step in steps:
        logging.observe(_stats(step))
    lines = []
    logging.log(lambda fmt, *args: lines.append(fmt % tuple(args)))
    (line,) = lines
    return line.split("Per-position acceptance rate: ")[1].split(", Avg")[0]


def test_varying_lengths_divide_by_the_drafts_reaching_each_position(reverted_patches):
    SpecDecodingLoggingPatch.apply()
    # A 3-token draft with 2 accepted and an 8-token draft with all 8 accepted.
    rates = _logged_rates([[(3, 2), (8, 8)]])
    assert rates == "1.000, 1.000, 0.500, 1.000, 1.000, 1.000, 1.000, 1.000"


def test_unpatched_vllm_understates_the_long_positions(reverted_patches):
    assert _logged_rates([[(3, 2), (8, 8)]]).endswith("0.500, 0.500, 0.500")


@pytest.mark.parametrize("patched", [False, True])
def test_fixed_length_numbers_are_vllms(reverted_patches, patched):
    if patched:
        SpecDecodingLoggingPatch.apply()
    assert (
        _logged_rates([[(4, 4), (4, 1)], [(4, 2)]])
        == "1.000, 0.667, 0.333, 0.333, 0.000, 0.000, 0.000, 0.000"
    )


def test_positions_never_drafted_rate_zero():
    assert per_position_rates([[1, 0, 0]], [[1, 0, 0]]).tolist() == [1.0, 0.0, 0.0]
