"""Writes that cannot lose work: atomic files, all-or-nothing port, kept line ends and
encodings, refusals on conflict markers, dirty git trees and foreign --write targets."""

from __future__ import annotations

import errno
import os
import stat

import git
import pytest
from deep_helpers import copy_fixtures
from safety_helpers import cli, snapshot

from rebasekit import atomic
from rebasekit.atomic import WriteError, replace_all, write_text

PORT_FILES = (
    "runner.py",
    "mathx_fork.py",
)  # what a port from upstream_old to upstream_new rewrites


def _port(fx, *extra):
    return cli(
        "port",
        "--to",
        fx / "upstream_new",
        "--from",
        fx / "upstream_old",
        "--plugin",
        fx / "plugin" / "deepplug",
        *extra,
    )


def _originals(plugin):
    return {name: (plugin / name).read_bytes() for name in PORT_FILES}


def test_atomic_write_keeps_mode_and_leaves_no_temp(tmp_path):
    target = tmp_path / "script.sh"
    target.write_text("old\n")
    target.chmod(0o750)
    write_text(target, "new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert [p.name for p in tmp_path.iterdir()] == ["script.sh"]


def test_replace_all_rolls_back_when_a_rename_fails(tmp_path, monkeypatch):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_bytes(b"A old\n")
    b.write_bytes(b"B old\n")
    real_replace = os.replace

    def replace(src, dst):
        if os.fspath(dst) == os.fspath(b):
            raise OSError(errno.EIO, "I/O error")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(WriteError, match="cannot write"):
        replace_all({a: b"A new\n", b: b"B new\n"})
    assert a.read_bytes() == b"A old\n" and b.read_bytes() == b"B old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a.py",
        "b.py",
    ]  # no temp or kept copy left


def test_port_full_disk_on_second_file_leaves_every_original(tmp_path, monkeypatch):
    fx = copy_fixtures(tmp_path)
    plugin = fx / "plugin" / "deepplug"
    before = snapshot(plugin)
    real_stage = atomic._stage

    def stage(path, data):
        if path.name == PORT_FILES[1] and path.parent == plugin:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_stage(path, data)

    monkeypatch.setattr(atomic, "_stage", stage)
    res = _port(fx)
    assert res.exit_code == 2, res.output
    assert "No space left on device" in res.output and "left as it was" in res.output
    assert snapshot(plugin) == before  # the first file was not changed either, and no temp is left


def test_port_rename_failure_on_second_file_leaves_every_original(tmp_path, monkeypatch):
    fx = copy_fixtures(tmp_path)
    plugin = fx / "plugin" / "deepplug"
    before = snapshot(plugin)
    real_replace = os.replace

    def replace(src, dst):
        if os.fspath(dst) == os.fspath(plugin / PORT_FILES[1]):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    assert _port(fx).exit_code == 2
    assert snapshot(plugin) == before


def test_port_keeps_a_backup_and_says_where(tmp_path):
    fx = copy_fixtures(tmp_path)
    plugin = fx / "plugin" / "deepplug"
    originals = _originals(plugin)
    res = _port(fx)
    assert res.exit_code == 1, res.output  # one conflict remains
    backups = list((fx / "plugin" / ".rebasekit-backup").glob("port-*"))
    assert len(backups) == 1 and f"originals kept in {backups[0]}" in res.output
    assert {name: (backups[0] / "deepplug" / name).read_bytes() for name in PORT_FILES} == originals
    assert "not in a git repository" in res.output


def test_port_keeps_crlf_line_ends(tmp_path):
    lf_fx, crlf_fx = copy_fixtures(tmp_path / "lf"), copy_fixtures(tmp_path / "crlf")
    for path in (crlf_fx / "plugin" / "deepplug").glob("*.py"):
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert _port(lf_fx).exit_code == _port(crlf_fx).exit_code == 1
    for name in PORT_FILES:
        lf = (lf_fx / "plugin" / "deepplug" / name).read_bytes()
        crlf = (crlf_fx / "plugin" / "deepplug" / name).read_bytes()
        assert crlf == lf.replace(b"\n", b"\r\n"), name


def test_port_keeps_a_latin1_encoding(tmp_path):
    fx = copy_fixtures(tmp_path)
    runner_py = fx / "plugin" / "deepplug" / "runner.py"
    text = runner_py.read_text()
    latin = "# -*- coding: latin-1 -*-\n# caf\u00e9\n" + text
    runner_py.write_bytes(latin.encode("latin-1"))
    assert _port(fx).exit_code == 1
    data = runner_py.read_bytes()
    assert b"caf\xe9" in data  # still latin-1, not re-encoded as UTF-8
    assert "self.prepare(batch) * 2" in data.decode("latin-1")


def test_port_refuses_leftover_conflict_markers(tmp_path):
    fx = copy_fixtures(tmp_path)
    plugin = fx / "plugin" / "deepplug"
    assert _port(fx).exit_code == 1  # writes markers into runner.py
    before = snapshot(plugin)
    again = _port(fx)
    assert again.exit_code == 2, again.output
    assert "unresolved conflict markers" in again.output and "runner.py:" in again.output
    assert "nothing to port" not in again.output
    assert snapshot(plugin) == before


def _git_fixture(tmp_path):
    fx = copy_fixtures(tmp_path)
    repo = git.Repo.init(fx)
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "t")
        cfg.set_value("user", "email", "t@example.com")
    repo.git.add(A=True)
    repo.index.commit("fixtures")
    return fx


def test_port_refuses_uncommitted_changes_unless_forced(tmp_path):
    fx = _git_fixture(tmp_path)
    plugin = fx / "plugin" / "deepplug"
    runner_py = plugin / "runner.py"
    runner_py.write_text(runner_py.read_text() + "\n# work in progress\n")
    before = snapshot(plugin)
    res = _port(fx)
    assert res.exit_code == 2, res.output
    assert (
        "uncommitted changes in plugin/deepplug/runner.py" in res.output and "--force" in res.output
    )
    assert snapshot(plugin) == before
    forced = _port(fx, "--force")
    assert forced.exit_code == 1, forced.output
    assert "# work in progress" in runner_py.read_text() and "return []" in runner_py.read_text()


def test_port_in_a_clean_git_tree_writes(tmp_path):
    fx = _git_fixture(tmp_path)
    res = _port(fx)
    assert res.exit_code == 1, res.output
    assert "not in a git repository" not in res.output
    assert "return []" in (fx / "plugin" / "deepplug" / "runner.py").read_text()


def test_corpus_lock_failed_write_keeps_the_old_lock(tmp_path, monkeypatch):
    fx = copy_fixtures(tmp_path)
    lock = tmp_path / "rebasekit.lock.json"
    lock.write_text('{"old": "lock"}\n')
    monkeypatch.setattr(
        atomic,
        "_stage",
        lambda path, data: (_ for _ in ()).throw(OSError(errno.ENOSPC, "disk full")),
    )
    res = cli(
        "corpus",
        "lock",
        "--plugin",
        fx / "plugin" / "deepplug",
        "--vllm",
        fx / "upstream_old",
        "--lock",
        lock,
    )
    assert res.exit_code == 2 and "disk full" in res.output
    assert lock.read_text() == '{"old": "lock"}\n'
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_write_guard_refuses_files_rebasekit_did_not_generate(tmp_path):
    notes = tmp_path / "NOTES.md"
    notes.write_text("# my notes\n")
    with pytest.raises(WriteError, match="not generated by rebasekit"):
        atomic.check_replaceable(notes, "--write", force=False)
    atomic.check_replaceable(notes, "--write", force=True)
    generated = tmp_path / "EVOLUTION.md"
    generated.write_text(
        "# vLLM pin evolution\n\nGenerated by `rebasekit compare-pins --write EVOLUTION.md`.\n"
    )
    atomic.check_replaceable(generated, "--write", force=False)
    atomic.check_replaceable(tmp_path / "new.md", "--write", force=False)


def test_compare_pins_write_refuses_a_foreign_file(tmp_path):
    repo = git.Repo.init(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "t")
        cfg.set_value("user", "email", "t@example.com")
    repo.git.add(A=True)
    repo.index.commit("init")
    notes = tmp_path / "NOTES.md"
    notes.write_text("hand-written\n")
    res = cli("compare-pins", "--repo", tmp_path, "--write", notes)
    assert res.exit_code == 2, res.output
    assert "not generated by rebasekit" in res.output and "--force" in res.output
    assert notes.read_text() == "hand-written\n"
