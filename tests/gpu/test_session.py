"""The device-session runner (`tests/gpu/session.sh`) on this machine: no GPU needed.

What it must get right, because a device call cannot be redone: steps run once, in order,
only when their estimate fits the call; a failure is reported and not retried; a
resumable step runs again; the plan is not eaten by a step that reads stdin.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("session.sh")


def _call(tmp_path: Path, budget: int, plan: str) -> subprocess.CompletedProcess:
    plan_file = tmp_path / "steps.plan"
    plan_file.write_text(plan)
    env = dict(os.environ, OUT=str(tmp_path / "out"), GPU_SESSION_STATE=str(tmp_path / "state"))
    return subprocess.run(
        ["bash", str(SCRIPT), str(budget), str(plan_file)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )


def test_steps_run_once_in_order_and_a_later_call_skips_them(tmp_path):
    plan = f"# comment\none 1 echo one >> {tmp_path}/order\n\ntwo 1 echo two >> {tmp_path}/order\n"
    first = _call(tmp_path, 30, plan)
    assert first.returncode == 0, first.stdout + first.stderr
    again = _call(tmp_path, 30, plan)
    assert again.returncode == 0
    assert (tmp_path / "order").read_text().split() == ["one", "two"]
    assert (tmp_path / "out" / "session" / "one.log").is_file()


def test_a_step_that_does_not_fit_waits_for_the_next_call(tmp_path):
    plan = (
        f"quick 1 sleep 2; echo quick >> {tmp_path}/order\nlong 20 echo long >> {tmp_path}/order\n"
    )
    first = _call(tmp_path, 21, plan)  # after quick's 2 s, 19 s are left: long waits
    assert first.returncode == 1
    assert "long: needs ~20 s" in first.stdout
    assert (tmp_path / "order").read_text().split() == ["quick"]
    second = _call(tmp_path, 25, plan)
    assert second.returncode == 0
    assert (tmp_path / "order").read_text().split() == ["quick", "long"]


def test_a_failed_step_is_reported_not_retried_and_later_steps_still_run(tmp_path):
    plan = f"bad 1 echo ran >> {tmp_path}/bad; exit 3\nafter 1 echo after >> {tmp_path}/order\n"
    first = _call(tmp_path, 30, plan)
    assert first.returncode == 2
    assert "bad: FAILED (exit 3)" in first.stdout
    assert (tmp_path / "order").read_text().split() == ["after"]
    second = _call(tmp_path, 30, plan)
    assert second.returncode == 2
    assert "failed steps: bad" in second.stdout
    assert (tmp_path / "bad").read_text().split() == ["ran"]


def test_a_resumable_step_runs_again_until_it_finishes(tmp_path):
    counter = tmp_path / "count"
    plan = f'resumable 1 echo x >> {counter}; [ "$(wc -l < {counter})" -ge 2 ] && exit 0; exit 75\n'
    assert _call(tmp_path, 30, plan).returncode == 1
    assert _call(tmp_path, 30, plan).returncode == 0
    assert _call(tmp_path, 30, plan).returncode == 0
    assert len(counter.read_text().split()) == 2


def test_a_step_reading_stdin_does_not_eat_the_plan(tmp_path):
    plan = f"reader 1 cat > /dev/null\nnext 1 echo next >> {tmp_path}/order\n"
    result = _call(tmp_path, 30, plan)
    assert result.returncode == 0
    assert (tmp_path / "order").read_text().split() == ["next"]


def test_a_step_longer_than_the_call_waits_for_a_larger_budget(tmp_path):
    plan = f"huge 50 touch {tmp_path}/ran\n"
    result = _call(tmp_path, 10, plan)
    assert result.returncode == 1
    assert "exceeds this call's budget" in result.stdout
    assert not (tmp_path / "ran").exists()
    assert _call(tmp_path, 60, plan).returncode == 0
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    "name",
    ["next.plan", "sp2.plan", "hybrid-check.plan", "regime-check.plan", "evidence-check.plan"],
)
def test_the_session_plans_parse_and_fit_a_call(name: str):
    """Every step of a committed plan has a name, an estimate under one call, a command."""
    plan = Path(__file__).with_name("plans") / name
    steps = [
        line.split(maxsplit=2)
        for line in plan.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert len(steps) >= 3
    assert all(len(s) == 3 and 0 < int(s[1]) <= 560 for s in steps)
    assert len({s[0] for s in steps}) == len(steps)


# Host cores of the machine each committed plan is written for (the device tool's kinds:
# nvidia-h200 has 16, nvidia-h200-x2 has 32).
PLAN_HOST_CORES = {
    "next.plan": 16,
    "sp2.plan": 32,
    "hybrid-check.plan": 16,
    "regime-check.plan": 16,
    "evidence-check.plan": 16,
}
BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench_module(relative: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(Path(relative).stem, BENCH / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pinned_engines(command: str) -> list[tuple[str, int, int]]:
    """(bench, engines run side by side, cores pinned per engine) for each pinning bench
    call in a step's command, counted the way the benches themselves count them."""
    import argparse
    import shlex

    found = []
    for part in command.split("&&"):
        words = shlex.split(part.split(">")[0])
        if "--pin-cpus" not in words:
            continue
        pin = int(words[words.index("--pin-cpus") + 1])
        if "bench/forest/device_bench.sh" in words:
            forest = _bench_module("forest/forest_speed.py")
            engines = len(forest.bench_configs("--with-fork" in words))
            found.append(("forest", engines, pin))
        elif "bench/spec/device_bench.sh" in words:
            spec = _bench_module("spec/gpu_speed.py")
            # device_bench.sh passes both speculators; --configs picks among them.
            args = argparse.Namespace(mlp="m", lstm="l", suffix_tokens=8, disable_by_batch_size=0)
            wanted = words[words.index("--configs") + 1] if "--configs" in words else ""
            found.append(("spec", len(spec.select_configs(spec.spec_configs(args), wanted)), pin))
        else:
            raise AssertionError(f"--pin-cpus in a command this test does not know: {part}")
    return found


@pytest.mark.parametrize("name", sorted(PLAN_HOST_CORES))
def test_the_plans_pinned_engines_fit_the_device_host(name: str):
    """A bench refuses, on the device, engines x pinned cores that leave no core for its
    parent; a step asking for that wastes a device call. Checked here with the benches'
    own engine counts and core split, against the host the plan is for."""
    core_sets = _bench_module("engine_proc.py").core_sets
    plan = Path(__file__).with_name("plans") / name
    cores = range(PLAN_HOST_CORES[name])
    for line in plan.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        step, _, command = line.split(maxsplit=2)
        for bench, engines, pin in _pinned_engines(command):
            try:
                core_sets(engines, pin, cores)
            except ValueError as err:
                pytest.fail(f"{name}: step {step} ({bench} bench): {err}")


def test_the_pinning_check_catches_four_engines_of_four_cores_on_sixteen():
    """The step that failed on the device: noshare with the fork engine at --pin-cpus 4."""
    command = "bash bench/forest/device_bench.sh 540 noshare --no-profile --pin-cpus 4 --with-fork"
    assert _pinned_engines(command) == [("forest", 4, 4)]
    with pytest.raises(ValueError, match="do not fit"):
        _bench_module("engine_proc.py").core_sets(4, 4, range(16))
    spec = (
        "bash bench/spec/device_bench.sh bench small-llama one --configs none,hybrid --pin-cpus 2"
    )
    assert _pinned_engines(spec) == [("spec", 2, 2)]
