"""``rebasekit scan``, ``scan-imports`` and ``scan-signatures``: one shell, three code sets."""

from __future__ import annotations

import typer

from rebasekit import report
from rebasekit.commands._common import (
    EXIT_BAD_INPUT,
    EXIT_CODES_HELP,
    AllowIncompleteOpt,
    FromOpt,
    IgnoreOpt,
    JsonOpt,
    PatchBaseOpt,
    PinTreeOpt,
    PluginOpt,
    SarifOpt,
    SelectOpt,
    ToOpt,
    VllmGitOpt,
    VllmOpt,
    VllmVersionOpt,
    emit,
    handle_errors,
    known_codes_check,
    out_console,
    pick_trees,
    pin_tree_pairs,
    split_codes,
    verdict,
    warn_degradations,
)
from rebasekit.errors import InputError
from rebasekit.scan import scan_plugin


def _run(
    base_select: tuple[str, ...],
    plugin,
    patch_base,
    vllm,
    vllm_version,
    vllm_git,
    from_,
    to,
    json_out,
    sarif_out,
    select,
    ignore,
    allow_incomplete,
    pin_tree=None,
) -> None:
    if json_out and sarif_out:
        raise InputError("--json and --sarif both given", hint="choose one output format")
    new_spec, old_spec = pick_trees(vllm, vllm_version, vllm_git, to, from_)
    selected = known_codes_check(split_codes(select), "--select")
    ignored = known_codes_check(split_codes(ignore), "--ignore")
    if base_select:
        selected = tuple(s for s in selected if s.startswith(base_select)) or base_select
    new_flag = next(
        flag
        for flag, value in (
            ("--vllm", vllm),
            ("--vllm-version", vllm_version),
            ("--vllm-git", vllm_git),
            ("--to", to),
        )
        if value
    )
    result = scan_plugin(
        new_spec,
        old=old_spec,
        plugin=plugin,
        patch_bases=patch_base,
        select=selected,
        ignore=ignored,
        new_reason=new_flag,
        old_reason="--from",
        pin_trees=dict(pin_tree_pairs(pin_tree, "--pin-tree")),
    )
    if json_out:
        emit(report.to_json(result))
    elif sarif_out:
        emit(report.to_sarif(result))
    else:
        report.render_table(result, out_console())
    if json_out or sarif_out:
        warn_degradations(result.degradations)
    if any(f.code == "RK001" for f in result.findings):
        raise typer.Exit(EXIT_BAD_INPUT)  # a plugin file does not parse: the input is malformed
    raise typer.Exit(verdict(bool(result.findings), result.degradations, allow_incomplete))


def _command(base_select: tuple[str, ...]):
    @handle_errors
    def command(
        plugin: PluginOpt = None,
        patch_base: PatchBaseOpt = None,
        vllm: VllmOpt = None,
        vllm_version: VllmVersionOpt = None,
        vllm_git: VllmGitOpt = None,
        from_: FromOpt = None,
        to: ToOpt = None,
        json_out: JsonOpt = False,
        sarif_out: SarifOpt = False,
        select: SelectOpt = None,
        ignore: IgnoreOpt = None,
        allow_incomplete: AllowIncompleteOpt = False,
        pin_tree: PinTreeOpt = None,
    ) -> None:
        _run(
            base_select,
            plugin,
            patch_base,
            vllm,
            vllm_version,
            vllm_git,
            from_,
            to,
            json_out,
            sarif_out,
            select,
            ignore,
            allow_incomplete,
            pin_tree,
        )

    return command


def register(app: typer.Typer) -> None:
    app.command("scan", help="Run every registered check.\n\n" + EXIT_CODES_HELP)(_command(()))
    app.command(
        "scan-imports",
        help="Check the plugin's upstream imports (RK0xx, RK1xx).\n\n" + EXIT_CODES_HELP,
    )(_command(("RK0", "RK1")))
    app.command(
        "scan-signatures",
        help="Check patch targets, overrides and _orig_ aliases (RK0xx, RK2xx).\n\n"
        + EXIT_CODES_HELP,
    )(_command(("RK0", "RK2")))
