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


@pytest.mark.parametrize("name", ["next.plan", "sp2.plan"])
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
