"""The forest bench's report: medians, per-repetition ratios, traffic estimate (no GPU)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "forest"))
import forest_speed  # noqa: E402


def _run(rep, config, tps, seconds=10.5):
    return {
        "rep": rep,
        "config": config,
        "tokens_per_s": tps,
        "elapsed_s": seconds,
        "forest_planned_steps": 7 if config == "forest" else 0,
    }


def test_ratios_are_taken_within_each_repetition():
    runs = [
        _run(0, "flash", 100.0),
        _run(0, "forest", 150.0),
        _run(1, "flash", 110.0),
        _run(1, "forest", 121.0, seconds=12.0),
        _run(2, "flash", 90.0),
        _run(2, "forest", 108.0),
    ]
    summary = forest_speed.summarize({"noshare": {"rounds": 4, "runs": runs}}, {}, model="unused")
    entry = summary["workloads"]["noshare"]
    assert entry["forest"] == {"median": 121.0, "min": 108.0, "max": 150.0, "n": 3}
    assert entry["forest_vs_flash"]["median"] == pytest.approx(1.2)  # 1.5, 1.1, 1.2
    assert (entry["forest_vs_flash"]["min"], entry["forest_vs_flash"]["max"]) == pytest.approx(
        (1.1, 1.5)
    )
    assert "cascade" not in entry and "cascade_vs_flash" not in entry
    assert (
        "| noshare | 100 (90-110) | - | 121 (108-150) | - | x1.20 (1.10-1.50) | 4, 10.5 s | 0, 0, 21 |"
        in forest_speed.markdown(summary)
    )


def test_forest_reads_each_prompt_once_per_group(tmp_path):
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "num_hidden_layers": 1,
                "num_key_value_heads": 1,
                "hidden_size": 64,
                "num_attention_heads": 1,
            }
        )
    )
    per_token = 1 * 2 * 1 * 64 * 2
    flash = forest_speed.kv_bytes_per_step(str(tmp_path), "flash") / per_token
    forest = forest_speed.kv_bytes_per_step(str(tmp_path), "forest") / per_token
    # 8 prompts of 4096 tokens, 16 samples, 128 generated tokens mid-way; 4080 shared.
    assert flash == 128 * (4096 + 128)
    assert forest == 8 * 4080 + 128 * (4096 - 4080 + 128)


def test_the_forest_engine_passes_the_full_graphs_key_only_when_asked():
    import forest_engine

    from arctic_inference.vllm.attention.forest_config import parse_forest_config

    def knobs(config, **kw):
        arctic = forest_engine.engine_kwargs(config, "m", None, 0.3, **kw)["additional_config"]
        return arctic["arctic"].get("forest_cascade_attn_configs")

    assert parse_forest_config(knobs("forest", forest_full_graphs=True)).full_cuda_graphs
    assert parse_forest_config(knobs("forest")).full_cuda_graphs is False
    assert knobs("flash", forest_full_graphs=True) is None  # baselines stay vLLM's own


def test_a_resumed_report_never_mixes_forest_settings():
    records = {"rollouts": {"forest_full_graphs": True}, "noshare": {}, "sysprompt": {}}
    assert forest_speed.mismatched_runs(records, True) == ["noshare", "sysprompt"]
    assert forest_speed.mismatched_runs(records, False) == ["rollouts"]
    assert forest_speed.mismatched_runs({}, True) == []
