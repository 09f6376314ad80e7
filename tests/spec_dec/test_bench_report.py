"""The speculator bench's summary: per-repetition ratios against that repetition's baseline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "spec"))
import gpu_speed  # noqa: E402
from phase import Phase  # noqa: E402

from tests.spec_dec.conftest import ManualClock  # noqa: E402


def _row(wl, config, rep, tps, drafts=0, drafted=0, accepted=0, ms=None, withheld=None):
    return dict(workload=wl, config=config, rep=rep, tok_per_s=tps, seconds=10.0 + rep,
                drafts=drafts, drafted=drafted, accepted=accepted, propose_ms=ms,
                withheld_share=withheld,
                undrafted_share=None if withheld is None else withheld / 2)  # fmt: skip


def test_ratios_are_taken_per_repetition():
    rows = []
    for wl in gpu_speed.WORKLOADS:
        rows += [_row(wl, "none", 0, 100), _row(wl, "none", 1, 200), _row(wl, "none", 2, 100)]
        rows += [
            _row(
                wl, "arctic-mlp", 0, 300, drafts=10, drafted=30, accepted=15, ms=1.0, withheld=0.9
            ),
            _row(
                wl, "arctic-mlp", 1, 300, drafts=10, drafted=30, accepted=15, ms=3.0, withheld=0.1
            ),
            _row(
                wl, "arctic-mlp", 2, 250, drafts=20, drafted=60, accepted=30, ms=2.0, withheld=0.5
            ),
        ]
    s = gpu_speed.summarise(rows, ["none", "arctic-mlp"])["one/arctic-mlp"]
    assert (s["speedup_median"], s["speedup_min"], s["speedup_max"]) == (2.5, 1.5, 3.0)
    assert s["accepted_per_step"] == 1 + 60 / 40 and s["draft_acceptance"] == 0.5
    assert s["propose_ms_median"] == 2.0 and s["phase_seconds_min"] == 10.0
    assert s["withheld_share_median"] == 0.5 and s["undrafted_share_median"] == 0.25
    assert gpu_speed.summarise(rows, ["none"])["batch32/none"]["accepted_per_step"] is None
    # Spreads over the repetitions: speedups 3.0, 1.5, 2.5; rates 300, 300, 250.
    assert s["speedup_spread"] == pytest.approx(1.5 / 2.5)
    assert s["tok_per_s_spread"] == pytest.approx(50 / 300)
    # These rows kept no round times: their stalls are unknown, not zero.
    assert s["stall_share_max"] is None
    for row, share in zip((r for r in rows if r["config"] == "arctic-mlp"), (0.1, 0.3, 0.0) * 2):
        row["stall_share"] = share
    timed = gpu_speed.summarise(rows, ["none", "arctic-mlp"])["one/arctic-mlp"]
    assert timed["stall_share_max"] == 0.3


def test_configs_offer_every_row_and_the_batch_cap():
    class Args:
        mlp, lstm, suffix_tokens, disable_by_batch_size = "/m", "/l", 16, 24

    configs = gpu_speed.spec_configs(Args)
    assert list(configs) == [
        "none", "none-sync", "arctic-mlp", "arctic-lstm", "suffix", "suffix-piecewise", "hybrid",
        "arctic-mlp-always", "hybrid-always", "arctic-mlp-never",
    ]  # fmt: skip
    # Never drafting: the speculator's engine with a batch cap of one, whatever the run's cap.
    never = dict(configs["arctic-mlp-never"])
    assert never.pop("disable_by_batch_size") == 1
    assert never == {k: v for k, v in configs["arctic-mlp"].items() if k != "disable_by_batch_size"}
    # The cost rule's pairs: the same engine with the rule off, nothing else changed.
    for name in ("arctic-mlp", "hybrid"):
        always = dict(configs[f"{name}-always"])
        assert always.pop("disable_by_cost") is False and always == configs[name]
        assert "disable_by_cost" not in configs[name]
    assert configs["suffix-piecewise"] == configs["suffix"]
    assert configs["suffix-piecewise"] is not configs["suffix"]
    piecewise = {"compilation_config": {"cudagraph_mode": "FULL_AND_PIECEWISE"}}
    assert gpu_speed.ENGINE_ARGS["suffix-piecewise"] == piecewise
    assert configs["none-sync"] is None
    assert gpu_speed.ENGINE_ARGS["none-sync"] == {"async_scheduling": False}
    assert configs["hybrid"]["enable_suffix_decoding"] is True
    assert configs["hybrid"]["model"] == "/m"  # the MLP, as the GPU tests' hybrid
    assert configs["arctic-mlp"]["disable_by_batch_size"] == 24
    assert configs["suffix"]["disable_by_batch_size"] == 24 and configs["none"] is None


def test_configs_selects_rows_in_run_order_and_keeps_the_baseline():
    class Args:
        mlp, lstm, suffix_tokens, disable_by_batch_size = None, None, 16, 32

    offered = gpu_speed.spec_configs(Args)
    assert list(offered) == ["none", "none-sync", "suffix", "suffix-piecewise"]  # no arctic
    picked = gpu_speed.select_configs(offered, "suffix,none")
    assert list(picked) == ["none", "suffix"]
    assert gpu_speed.select_configs(offered, "") is offered


def test_configs_without_the_baseline_or_with_a_typo_exit_2(tmp_path, capsys):
    out = tmp_path / "o.json"
    assert gpu_speed.main(["--model", "m", "--out", str(out), "--configs", "suffix"]) == 2
    assert "must name none" in capsys.readouterr().err
    assert gpu_speed.main(["--model", "m", "--out", str(out), "--configs", "none,sufix"]) == 2
    assert "unknown sufix; this run offers none, none-sync" in capsys.readouterr().err
    assert not (tmp_path / "o.logs").exists()


def test_missing_arguments_exit_2(capsys):
    assert gpu_speed.main([]) == 2
    assert "--model and --out are required" in capsys.readouterr().err


def test_unknown_workload_exits_2_before_starting_engines(tmp_path, capsys):
    assert (
        gpu_speed.main(["--model", "m", "--out", str(tmp_path / "o.json"), "--workloads", "x"]) == 2
    )
    assert "--workloads names none of one, batch32" in capsys.readouterr().err
    assert not (tmp_path / "o.logs").exists()


def test_no_prompt_is_served_twice_across_rounds_and_repetitions():
    # A replayed prompt lets a suffix cache draft its earlier answer whole.
    seen = set()
    for rep_seed in (0, 1, 2):
        for k in range(50):
            for p in gpu_speed.prompts_for(348, 4, 32, gpu_speed.round_seed(rep_seed, k)):
                seen.add(tuple(p))
    assert len(seen) == 3 * 50 * 4


def test_a_repetition_cut_short_is_left_out_of_the_summary():
    names = ["none", "arctic-mlp"]
    rows = [
        _row("one", "none", 0, 100), _row("one", "arctic-mlp", 0, 200),
        _row("one", "none", 1, 100),  # rep 1 cut before arctic-mlp ran
    ]  # fmt: skip
    done = [r for r in rows if gpu_speed._complete(rows, r, names)]
    assert [(r["config"], r["rep"]) for r in done] == [("none", 0), ("arctic-mlp", 0)]
    summary = gpu_speed.summarise(done, names, gpu_speed._measured(done, gpu_speed.WORKLOADS))
    assert set(summary) == {"one/none", "one/arctic-mlp"}
    assert summary["one/arctic-mlp"]["speedup_median"] == 2.0


def test_a_resumed_run_measures_only_the_repetitions_it_lacks(tmp_path):
    names = ["none", "arctic-mlp"]
    run_args = {"model": "m", "reps": "3"}
    rows = [
        _row("one", "none", 0, 100), _row("one", "arctic-mlp", 0, 200),
        _row("one", "none", 1, 100),  # rep 1 was cut before arctic-mlp ran
    ]  # fmt: skip
    out = tmp_path / "o.json"
    out.write_text(json.dumps({"args": run_args, "rows": rows}))
    kept = gpu_speed.earlier_rows(out, run_args, names)
    assert [(r["config"], r["rep"]) for r in kept] == [("none", 0), ("arctic-mlp", 0)]
    todo = gpu_speed.missing_repetitions({"one": 1, "batch32": 32}, 3, kept)
    assert todo == [("one", 1), ("one", 2), ("batch32", 0), ("batch32", 1), ("batch32", 2)]


def test_resuming_a_run_with_other_arguments_exits_2(tmp_path, capsys):
    out = tmp_path / "o.json"
    out.write_text(json.dumps({"args": {"model": "other"}, "rows": []}))
    assert gpu_speed.main(["--model", "m", "--out", str(out), "--workloads", "one"]) == 2
    assert "holds a run with other arguments" in capsys.readouterr().err
    assert not (tmp_path / "o.logs").exists()


def test_no_earlier_run_means_every_repetition(tmp_path):
    assert gpu_speed.earlier_rows(tmp_path / "none.json", {}, ["none"]) == []


def _fake_engines(
    clock: ManualClock,
    started: list[str],
    argvs: list[list[str]],
    commands: list | None = None,
    warmup_s: float = 0.0,
):
    """Engines that answer at once (a warm-up, ``min_seconds=0``, in ``warmup_s``); each
    command lands in ``commands`` as (name, phase length or "profile", prompt seed)."""
    commands = [] if commands is None else commands

    class FakeEngine:
        def __init__(self, name, argv, log):
            started.append(name)
            argvs.append(argv)
            clock.now += 5.0

        def run(self, min_seconds=0.0, profile=False, **cmd):
            commands.append((self.name, "profile" if profile else min_seconds, cmd["seed"]))
            if profile:
                return {"profile": {"steps": 3, "wall_ms_per_step_under_cprofile": 4.0,
                                    "by_self_time": [{"function": f"{self.name}.py:1:step",
                                                      "self_ms_per_step": 1.5}],
                                    "by_total_time": []}}  # fmt: skip
            clock.now += min_seconds or warmup_s
            tps = 100.0 * (1 + (self.name != "none"))
            # A phase as the engine reports it: one round of min_seconds (a warm-up: 0 s).
            phase = Phase(tokens=int(tps * min_seconds), round_seconds=(min_seconds,),
                          seconds=min_seconds or 1.0)  # fmt: skip
            return dict(phase.record(), propose_ms=None, drafts=0.0, drafted=0.0, accepted=0.0)

        def close(self):
            pass

    def make(name, argv, log, cpus=None):
        engine = FakeEngine(name, argv, log)
        engine.name = name
        return engine

    return make


def test_a_budget_stops_before_a_repetition_and_the_same_command_resumes(
    tmp_path, monkeypatch, capsys
):
    clock, started, argvs = ManualClock(), [], []  # phases move it by min_seconds
    monkeypatch.setattr(gpu_speed, "EngineProcess", _fake_engines(clock, started, argvs))
    monkeypatch.setattr(gpu_speed.time, "perf_counter", clock)
    out = tmp_path / "run.json"
    argv = ["--model", "m", "--out", str(out), "--workloads", "one", "--reps", "5",
            "--min-phase", "10", "--budget", "130", "--configs", "none,none-sync,suffix"]  # fmt: skip
    # Three of the four configs offered: 30 s a repetition after 15 s of startup.
    assert gpu_speed.main(argv) == gpu_speed.RESUMABLE
    first = json.loads(out.read_text())
    reps_first = sorted({r["rep"] for r in first["rows"]})
    assert reps_first == [0, 1, 2]  # 15 + 3 x 30 = 105; a fourth would end at 135 > 130
    assert "budget of 130 s reached" in capsys.readouterr().out
    clock.now = 0.0
    assert gpu_speed.main(argv) == 0
    rows = json.loads(out.read_text())["rows"]
    assert sorted((r["rep"], r["config"]) for r in rows) == sorted(
        (rep, c) for rep in range(5) for c in ("none", "none-sync", "suffix")
    )
    summary = json.loads(out.read_text())["summary"]
    assert summary["one/suffix"]["speedup_median"] == 2.0
    # The none-sync engine is built with async scheduling off, the others with vLLM's choice.
    by_name = dict(zip(started, argvs))
    assert json.loads(by_name["none-sync"][-1]) == {"async_scheduling": False}
    assert json.loads(by_name["none"][-1]) == {} and json.loads(by_name["suffix"][-1]) == {}


def test_a_call_whose_budget_cannot_hold_start_up_and_one_repetition_starts_no_engine(
    tmp_path, monkeypatch, capsys
):
    clock, started, argvs = ManualClock(), [], []
    monkeypatch.setattr(gpu_speed, "EngineProcess", _fake_engines(clock, started, argvs))
    monkeypatch.setattr(gpu_speed.time, "perf_counter", clock)
    out = tmp_path / "run.json"
    argv = ["--model", "m", "--out", str(out), "--workloads", "one", "--reps", "5",
            "--min-phase", "10", "--configs", "none,none-sync,suffix"]  # fmt: skip
    assert gpu_speed.main([*argv, "--budget", "100"]) == gpu_speed.RESUMABLE
    assert sorted({r["rep"] for r in json.loads(out.read_text())["rows"]}) == [0, 1]
    # 15 s of start-up (three engines, 5 s each), then 30 s a repetition.
    assert json.loads(out.read_text())["timing"] == {
        "startup_s": 15.0,
        "warmup_s": 0.0,
        "rep_s": 30.0,
    }
    kept = out.read_text()
    started.clear()
    capsys.readouterr()
    clock.now = 0.0
    assert gpu_speed.main([*argv, "--budget", "44"]) == 2
    err = capsys.readouterr().err
    assert "give at least 45 s" in err and "Traceback" not in err
    assert started == [] and out.read_text() == kept
    # 45 s holds exactly one more repetition.
    assert gpu_speed.main([*argv, "--budget", "45"]) == gpu_speed.RESUMABLE
    assert sorted({r["rep"] for r in json.loads(out.read_text())["rows"]}) == [0, 1, 2]
    assert started == ["none", "none-sync", "suffix"]


def test_a_warm_up_counts_once_a_call_not_in_every_repetition(tmp_path, monkeypatch, capsys):
    """A warm-up counted in the first repetition's time made the budget expect every
    repetition to be that long, stopping a call a repetition early; a resumed call warms
    up again, so its budget must hold start-up, warm-up and one repetition."""
    clock, started, argvs = ManualClock(), [], []
    fake = _fake_engines(clock, started, argvs, warmup_s=10.0)
    monkeypatch.setattr(gpu_speed, "EngineProcess", fake)
    monkeypatch.setattr(gpu_speed.time, "perf_counter", clock)
    out = tmp_path / "run.json"
    argv = ["--model", "m", "--out", str(out), "--workloads", "one", "--reps", "5",
            "--min-phase", "10", "--configs", "none,none-sync,suffix"]  # fmt: skip
    # 15 s of start-up, 30 s of warm-up (10 s an engine), then 30 s a repetition: the
    # second repetition ends at 105 s, a third would end at 135 s.
    assert gpu_speed.main([*argv, "--budget", "130"]) == gpu_speed.RESUMABLE
    report = json.loads(out.read_text())
    assert sorted({r["rep"] for r in report["rows"]}) == [0, 1]
    assert report["timing"] == {"startup_s": 15.0, "warmup_s": 30.0, "rep_s": 30.0}
    capsys.readouterr()
    clock.now = 0.0
    assert gpu_speed.main([*argv, "--budget", "74"]) == 2
    assert "give at least 75 s" in capsys.readouterr().err
    clock.now = 0.0
    assert gpu_speed.main([*argv, "--budget", "75"]) == gpu_speed.RESUMABLE
    assert sorted({r["rep"] for r in json.loads(out.read_text())["rows"]}) == [0, 1, 2]


def test_pinning_more_cores_than_there_are_exits_2_before_starting_engines(tmp_path, capsys):
    out = tmp_path / "o.json"
    argv = ["--model", "m", "--out", str(out), "--workloads", "one", "--pin-cpus", "1000"]
    assert gpu_speed.main(argv) == 2
    err = capsys.readouterr().err
    assert "--pin-cpus" in err and "pin fewer cores per engine" in err
    assert not (tmp_path / "o.logs").exists()


def test_device_script_names_runs_of_other_rows_apart_and_passes_the_exit_code(tmp_path):
    """Two runs of one model and workload with other --configs must not share a file (a
    resumed run refuses other arguments, exit 2, which would cost a device call); and
    the script must hand gpu_speed.py's exit status to the session runner."""
    root = Path(__file__).resolve().parents[2]
    env = dict(
        os.environ,
        OUT=str(tmp_path / "out"),
        SPEC_RUNS=str(tmp_path / "runs"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )

    def bench(*args: str) -> subprocess.CompletedProcess:
        command = ["bash", "bench/spec/device_bench.sh", "bench", "copy-llama", "one", *args]
        return subprocess.run(
            command, cwd=root, env=env, capture_output=True, text=True, timeout=120
        )

    # A typo in the rows: gpu_speed.py refuses before it starts an engine (exit 2).
    first = bench("--configs", "none,sufix")
    second = bench("--configs=none,hybird")
    assert first.returncode == 2 and second.returncode == 2, first.stdout + second.stdout
    logs = sorted(p.name for p in (tmp_path / "out").glob("*.log"))
    assert logs == ["spec-copy-one-none-hybird.log", "spec-copy-one-none-sufix.log"]
    assert "unknown sufix" in (tmp_path / "out" / "spec-copy-one-none-sufix.log").read_text()


def test_host_profiles_follow_the_timed_phases_and_a_resumed_run_takes_only_the_missing(
    tmp_path, monkeypatch, capsys
):
    clock, started, argvs, commands = ManualClock(), [], [], []
    monkeypatch.setattr(gpu_speed, "EngineProcess", _fake_engines(clock, started, argvs, commands))
    monkeypatch.setattr(gpu_speed.time, "perf_counter", clock)
    out = tmp_path / "run.json"
    argv = ["--model", "m", "--out", str(out), "--workloads", "one", "--reps", "2",
            "--min-phase", "10", "--configs", "none,suffix", "--host-profile"]  # fmt: skip
    assert gpu_speed.main(argv) == 0
    report = json.loads(out.read_text())
    assert sorted(report["host_profiles"]) == ["one/none", "one/suffix"]
    # Every profile after the last timed phase, on prompts no timed phase served.
    last_timed = max(i for i, c in enumerate(commands) if c[1] == 10)
    profiled = [(i, c) for i, c in enumerate(commands) if c[1] == "profile"]
    assert [c[0] for _, c in profiled] == ["none", "suffix"]
    assert all(i > last_timed for i, _ in profiled)
    timed_seeds = {c[2] for c in commands if c[1] != "profile"}
    assert all(c[2] not in timed_seeds for _, c in profiled)
    printed = capsys.readouterr().out
    assert "host profile one/suffix: 4.00 ms a step under cProfile over 3 steps" in printed
    assert "suffix.py:1:step 1.50" in printed

    # Complete: the same command starts nothing.
    started.clear()
    assert gpu_speed.main(argv) == 0
    assert started == []

    # Profiles lost (a call cut short after the phases): only the profiles run again.
    del report["host_profiles"]["one/suffix"]
    out.write_text(json.dumps(report))
    commands.clear()
    assert gpu_speed.main(argv) == 0
    assert [c[1] for c in commands] == [0, "profile"]  # the suffix engine: warm-up, profile
    assert {c[0] for c in commands} == {"suffix"}
    # The warm-up must not serve the profiled prompts (suffix decoding would cache them).
    assert commands[0][2] != commands[1][2]
    assert sorted(json.loads(out.read_text())["host_profiles"]) == ["one/none", "one/suffix"]


def test_a_profile_that_saw_no_step_is_reported_as_not_profiled():
    line = gpu_speed.profile_line({"error": "the profiled run made no steps"})
    assert line == "not profiled (the profiled run made no steps)"
