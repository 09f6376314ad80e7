"""The forest bench's report: medians, per-repetition ratios, traffic estimate (no GPU)."""

from __future__ import annotations

import json
import os
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


def _phases(**tokens_per_s: list[float]) -> list[dict]:
    """Runs of each named configuration, one per repetition in list order."""
    return [
        _run(rep, config, float(tps))
        for config, values in tokens_per_s.items()
        for rep, tps in enumerate(values)
    ]


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
    assert entry["forest"] == {
        "median": 121.0,
        "min": 108.0,
        "max": 150.0,
        "n": 3,
        "spread": pytest.approx(42 / 121),
    }
    assert entry["forest_vs_flash"]["median"] == pytest.approx(1.2)  # 1.5, 1.1, 1.2
    assert (entry["forest_vs_flash"]["min"], entry["forest_vs_flash"]["max"]) == pytest.approx(
        (1.1, 1.5)
    )
    assert "cascade" not in entry and "cascade_vs_flash" not in entry
    assert (
        "| noshare | 100 (90-110) | - | 121 (108-150) | - | x1.20 (1.10-1.50) | - | 4, 10.5 s | 0, 0, 21 |"
        in forest_speed.markdown(summary)
    )
    # The ratios 1.5, 1.1, 1.2 spread by 0.4 / 1.2; these runs kept no round times.
    assert "- noshare: forest / flash 33%, flash stalls unknown, forest stalls unknown" in (
        forest_speed.markdown(summary)
    )


def test_stalls_are_reported_per_configuration_from_the_phases_round_times():
    runs = _phases(flash=[100, 100, 100], forest=[100, 100, 100])
    for run, share in zip(runs, (0.0, 0.2, 0.0, 0.05, 0.0, 0.1)):
        run["stall_share"] = share
    summary = forest_speed.summarize({"noshare": {"rounds": 2, "runs": runs}}, {}, model="unused")
    entry = summary["workloads"]["noshare"]
    assert (entry["flash_stall_share_max"], entry["forest_stall_share_max"]) == (0.2, 0.1)
    assert "flash stalls 20%, forest stalls 10%" in forest_speed.markdown(summary)


def test_forest_is_set_against_vllms_cascade_within_each_repetition():
    """The one-prefix target is forest >= cascade: its ratio, like the others, is taken
    per repetition. Here the ratio of the medians (130 / 100 = 1.3) is not the median of
    the per-repetition ratios (1.6, 1.0, 1.4), so a report that divided medians fails."""
    runs = _phases(flash=[200, 200, 200], cascade=[100, 130, 90], forest=[160, 130, 126])
    summary = forest_speed.summarize({"sysprompt": {"rounds": 3, "runs": runs}}, {}, model="unused")
    ratio = summary["workloads"]["sysprompt"]["forest_vs_cascade"]
    assert (ratio["median"], ratio["min"], ratio["max"]) == pytest.approx((1.4, 1.0, 1.6))
    assert "| x0.65 (0.63-0.80) | x1.40 (1.00-1.60) |" in forest_speed.markdown(summary)


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
    unseeded = {"seeded_sampling": False}
    full_mp = {"forest_full_graphs": True, "engine_core_process": True, **unseeded}
    records = {
        "rollouts": {"forest_full_graphs": True, "engine_core_process": True, **unseeded},
        "noshare": {},  # written before any setting was recorded: in-process, dynamic, seeded
        "sysprompt": {"forest_full_graphs": True, **unseeded},
    }
    assert forest_speed.mismatched_runs(records, full_mp) == ["noshare", "sysprompt"]
    in_process_full = {"forest_full_graphs": True, "engine_core_process": False, **unseeded}
    assert forest_speed.mismatched_runs(records, in_process_full) == ["noshare", "rollouts"]
    old_default = {"forest_full_graphs": False, "engine_core_process": False, **unseeded}
    assert forest_speed.mismatched_runs(records, old_default) == [
        "noshare",
        "rollouts",
        "sysprompt",
    ]
    old_bench = {
        "forest_full_graphs": False,
        "engine_core_process": False,
        "seeded_sampling": True,
        "pinned_cpus": 0,
    }
    assert forest_speed.mismatched_runs(records, old_bench) == ["rollouts", "sysprompt"]
    assert forest_speed.mismatched_runs({}, full_mp) == []


def test_the_runs_a_bench_saves_record_how_it_sampled():
    class Args:
        forest_full_graphs, in_process, pin_cpus, with_fork = True, False, 4, True

    setting = forest_speed.run_setting(Args)
    assert setting["seeded_sampling"] is False and setting["pinned_cpus"] == 4
    assert setting["fork_engine"] is True
    # Runs saved before the fork engine existed had none: a run with it does not resume them.
    assert forest_speed.mismatched_runs({"rollouts": {**setting, "fork_engine": False}}, setting)
    del setting["fork_engine"]
    assert forest_speed.mismatched_runs({"rollouts": setting}, {**setting, "fork_engine": True})


def test_the_fork_engine_is_the_plugin_on_without_a_forest_config():
    """``fork`` must differ from ``flash`` in the plugin alone: plugin on, no forest
    knobs, vLLM's cascade off, the same memory share as every other engine."""
    import forest_engine

    fork, flash = (forest_engine.engine_kwargs(c, "m", None, 0.21) for c in ("fork", "flash"))
    assert fork == flash and fork["additional_config"] == {"arctic": {}}
    assert fork["disable_cascade_attn"] is True
    assert forest_speed._env("fork")["ARCTIC_INFERENCE_ENABLED"] == "1"
    assert forest_speed._env("flash")["ARCTIC_INFERENCE_ENABLED"] == "0"
    assert forest_speed.bench_configs(False) == ("flash", "cascade", "forest")
    assert forest_speed.bench_configs(True) == ("flash", "cascade", "forest", "fork")
    assert [forest_speed.default_gpu_util(n) for n in (3, 4)] == [0.28, 0.21]


def test_a_report_shows_the_fork_engine_only_when_it_ran():
    three = [_run(0, "flash", 100.0), _run(0, "forest", 110.0)]
    text = forest_speed.markdown(
        forest_speed.summarize({"noshare": {"rounds": 2, "runs": three}}, {}, model="unused")
    )
    assert "fork" not in text
    four = _phases(flash=[100, 100], fork=[90, 80], forest=[99, 100])
    summary = forest_speed.summarize({"rollouts": {"rounds": 2, "runs": four}}, {}, model="unused")
    entry = summary["workloads"]["rollouts"]
    assert entry["fork_vs_flash"]["median"] == pytest.approx(0.85)  # 0.9, 0.8
    assert entry["forest_vs_fork"]["median"] == pytest.approx(1.175)  # 1.1, 1.25
    text = forest_speed.markdown(summary)
    header = next(line for line in text.splitlines() if line.startswith("| workload"))
    assert "| fork |" in header and "| fork / flash | forest / fork |" in header
    row = next(line for line in text.splitlines() if line.startswith("| rollouts"))
    assert row.count("|") == header.count("|")
    assert "| x0.85 (0.80-0.90) | x1.18 (1.10-1.25) |" in row


def test_engines_keep_vllms_own_process_layout_unless_asked():
    """The bench must measure vLLM's default layout (engine core in its own process);
    in-process is the profiler's mode. The engine core must find the stats extension."""
    mp = forest_speed._env("forest")
    assert mp["VLLM_ENABLE_V1_MULTIPROCESSING"] == "1"
    assert str(forest_speed.HERE) in mp["PYTHONPATH"].split(os.pathsep)
    assert forest_speed._env("flash", in_process=True)["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    assert mp["ARCTIC_INFERENCE_ENABLED"] == "1"
    assert forest_speed._env("flash")["ARCTIC_INFERENCE_ENABLED"] == "0"


def test_the_engine_core_process_reads_forest_counters_through_the_extension():
    import forest_engine
    import forest_stats_ext

    from arctic_inference.vllm.attention.planner import STATS

    kwargs = forest_engine.engine_kwargs("forest", "m", None, 0.3, engine_core_process=True)
    module, _, name = kwargs["worker_extension_cls"].rpartition(".")
    assert (module, name) == ("forest_stats_ext", "ForestStatsExtension")
    assert "worker_extension_cls" not in forest_engine.engine_kwargs("forest", "m", None, 0.3)
    counters = forest_stats_ext.ForestStatsExtension().forest_stats()
    assert counters == dict(STATS) and "planned" in counters
    assert counters is not STATS  # a copy: the RPC answer must not alias live counters


def test_the_host_profile_finds_the_function_that_fills_the_step():
    """One round under cProfile, reported per decode step: a stand-in engine whose
    generate spends its time in one named function must show that function first by
    self time, with its calls divided by the decode steps."""
    import time
    from types import SimpleNamespace

    import forest_engine
    from vllm import SamplingParams  # noqa: F401 (imported, as in a running engine)

    def busy_host_work():
        end = time.perf_counter() + 0.002
        while time.perf_counter() < end:
            pass

    class Engine:
        def generate(self, prompts, params, use_tqdm):
            for _ in range(params.max_tokens):
                busy_host_work()
            return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=[0] * params.max_tokens)])]

    workload = SimpleNamespace(n=1, new_tokens=20, prompts=[[1, 2, 3]])
    from host_profile import host_profile  # bench/, on the path once forest_engine is in

    host = host_profile(lambda: forest_engine._round(Engine(), workload), steps=20)
    first = host["by_self_time"][0]
    assert first["function"].endswith(":busy_host_work")
    assert first["calls_per_step"] == 1.0 and first["total_ms_per_step"] >= 1.8
    assert host["wall_ms_per_step_under_cprofile"] >= first["total_ms_per_step"]
    summary = {
        "workloads": {},
        "rollouts_profile": {"forest": {"implied_gb_s": None, "host": host}},
    }
    assert "`test_bench_report.py:" in forest_speed.markdown(summary)


def test_a_report_names_the_workloads_it_resumed_instead_of_measuring():
    runs = [_run(0, "flash", 100.0), _run(0, "forest", 150.0)]
    summary = forest_speed.summarize({"noshare": {"rounds": 4, "runs": runs}}, {}, model="unused")
    assert "Not measured in this call" not in forest_speed.markdown(summary)
    summary["resumed"] = {"noshare": "2026-12-02 19:40 UTC"}
    text = forest_speed.markdown(summary)
    assert "**Not measured in this call**, resumed from saved runs: noshare (measured " in text
    assert "2026-12-02 19:40 UTC" in text


def test_a_call_with_every_workload_saved_reports_them_as_resumed(tmp_path, capsys):
    # No engine starts: every workload asked for is saved, and no profile is wanted.
    runs = tmp_path / "runs"
    runs.mkdir()
    record = {
        "workload": "noshare",
        "rounds": 4,
        "runs": [_run(0, "flash", 100.0), _run(0, "forest", 150.0)],
        "measured_at": "2026-12-01 10:00 UTC",
        "forest_full_graphs": False,
        "engine_core_process": False,
        "seeded_sampling": False,
        "pinned_cpus": 0,
    }
    (runs / "noshare.json").write_text(json.dumps(record))
    md = tmp_path / "r.md"
    argv = ["--model", "unused", "--runs", str(runs), "--workloads", "noshare", "--in-process",
            "--no-profile", "--md", str(md)]  # fmt: skip
    assert forest_speed.main(argv) == 0
    text = md.read_text()
    assert "resumed from saved runs: noshare (measured 2026-12-01 10:00 UTC)" in text


def test_pinning_more_cores_than_there_are_exits_2_before_starting_engines(tmp_path, capsys):
    argv = ["--model", "unused", "--runs", str(tmp_path / "runs"), "--pin-cpus", "1000"]
    assert forest_speed.main(argv) == 2
    err = capsys.readouterr().err
    assert "--pin-cpus" in err and "pin fewer cores per engine" in err
    assert not (tmp_path / "runs").exists()
