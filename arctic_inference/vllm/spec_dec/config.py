"""What an Arctic speculator checkpoint's ``config.json`` says, parsed and checked once.

The public checkpoints use ``model_type: "mlp_speculator"`` (so vLLM reads them
with its ``MLPSpeculatorConfig``, keeping unknown fields as attributes) and one
of three architectures:

* ``ArcticMLPSpeculatorPreTrainedModel``: the token-and-embedding MLP
  speculator. ``emb_dim`` is the target's hidden size, ``inner_dim`` the
  speculator's width (0 means ``emb_dim``).
* ``ArcticLSTMSpeculatorPreTrainedModel`` and its older name
  ``MLPVariantSpeculatorPreTrainedModel``: ``input_hidden_dim`` is the target's
  hidden size; ``emb_dim``/``inner_dim``/``proj_dim`` may be an int, a list or
  a dotted string (``"4096.4096"``, one entry per stage); ``method`` is
  ``sum_lstm`` (a gated recurrent step) or ``sum_rnn`` (the MLP step; the
  default); ``tie_lstm_embs`` shares one token embedding among the four gates.

Common fields: ``vocab_size``, ``n_predict`` (heads trained), ``tie_weights``
(one set of stage weights reused after the first projection), ``scale_input``
(normalise the target's hidden state first) and ``base_model_archs`` (the
target architectures the speculator was trained for).

Only single-stage dims are served; a multi-stage ``sum_rnn`` checkpoint is
refused with a message rather than served with a guessed layout.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

MLP_ARCH = "ArcticMLPSpeculatorPreTrainedModel"
LSTM_ARCH = "ArcticLSTMSpeculatorPreTrainedModel"
LEGACY_LSTM_ARCH = "MLPVariantSpeculatorPreTrainedModel"
ARCHITECTURES = (MLP_ARCH, LSTM_ARCH, LEGACY_LSTM_ARCH)
MODEL_TYPE = "mlp_speculator"

Method = Literal["sum_rnn", "sum_lstm"]
METHODS: tuple[str, ...] = ("sum_rnn", "sum_lstm")


class SpeculatorConfigError(ValueError):
    """A speculator checkpoint config that cannot be served as written."""


@dataclasses.dataclass(frozen=True)
class SpeculatorSpec:
    """The validated shape of one speculator.

    ``hidden_dim`` is the target hidden size the speculator reads, ``width``
    the size of its recurrent state (the LM head's input), ``proj_dim`` the
    per-gate projection width (equal to ``width`` for the MLP step).
    """

    architecture: str
    method: Method
    vocab_size: int
    n_predict: int
    hidden_dim: int
    width: int
    emb_dim: int
    proj_dim: int
    tie_weights: bool
    tie_lstm_embs: bool
    scale_input: bool
    base_model_archs: tuple[str, ...] | None

    @property
    def is_lstm(self) -> bool:
        return self.method == "sum_lstm"

    def max_heads(self) -> int | None:
        """How many draft tokens the weights can produce (``None``: any, weights are tied)."""
        return None if self.tie_weights else self.n_predict

    @property
    def state_weight(self) -> float:
        # The trained mixing weights of state and token embedding (arXiv:2404.19124).
        return 0.5 ** (0.5 / self.n_predict)

    @property
    def emb_weight(self) -> float:
        return ((1 - self.state_weight**2) * (self.width / 2)) ** 0.5

    @property
    def emb_scale(self) -> float:
        """The factor on the token embedding when it is added to the projected state."""
        return self.emb_weight / self.state_weight


def _as_dict(config: Any) -> dict[str, Any]:
    if isinstance(config, Mapping):
        return dict(config)
    if hasattr(config, "to_dict"):
        return dict(config.to_dict())
    return dict(vars(config))


def parse_dims(value: Any, field: str) -> tuple[int, ...]:
    """One int, a list of ints, or a dotted string of ints, as a tuple."""
    if isinstance(value, bool):
        raise SpeculatorConfigError(f"speculator config: {field} must be a size, got {value!r}.")
    try:
        if isinstance(value, int):
            dims: tuple[int, ...] = (value,)
        elif isinstance(value, str):
            dims = tuple(int(part) for part in value.split("."))
        elif isinstance(value, Sequence):
            dims = tuple(int(part) for part in value)
        else:
            raise TypeError
    except (TypeError, ValueError):
        raise SpeculatorConfigError(
            f"speculator config: {field}={value!r} is not a size; use an int, a list of "
            'ints or a dotted string such as "4096".'
        ) from None
    if not dims or any(d < 0 for d in dims):
        raise SpeculatorConfigError(f"speculator config: {field}={value!r} must be positive.")
    return dims


def _single(dims: tuple[int, ...], field: str) -> int:
    if len(dims) != 1:
        raise SpeculatorConfigError(
            f"speculator config: {field}={'.'.join(map(str, dims))} has {len(dims)} stages; "
            "only single-stage speculators are supported (one size per field)."
        )
    return dims[0]


def _positive_int(raw: dict[str, Any], field: str) -> int:
    value = raw.get(field)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpeculatorConfigError(
            f"speculator config: {field} must be a positive integer, got {value!r}."
        )
    return value


def _archs(raw: dict[str, Any]) -> tuple[str, ...] | None:
    value = raw.get("base_model_archs")
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise SpeculatorConfigError(
        f"speculator config: base_model_archs={value!r} must be a list of architecture names."
    )


def parse_speculator_config(config: Any) -> SpeculatorSpec:
    """Validate a checkpoint config (dict or ``PretrainedConfig``) into a spec."""
    raw = _as_dict(config)
    archs = raw.get("architectures") or []
    if len(archs) != 1 or archs[0] not in ARCHITECTURES:
        raise SpeculatorConfigError(
            f"speculator config: architectures={archs!r} names no Arctic speculator; "
            f"expected exactly one of {', '.join(ARCHITECTURES)}."
        )
    arch = archs[0]
    vocab_size = _positive_int(raw, "vocab_size")
    n_predict = _positive_int(raw, "n_predict")
    tie = bool(raw.get("tie_weights", False))
    if tie and n_predict < 2:
        raise SpeculatorConfigError(
            "speculator config: tie_weights=true needs n_predict >= 2 (one head has "
            "nothing to tie to); set tie_weights to false."
        )
    common = dict(
        architecture=arch,
        vocab_size=vocab_size,
        n_predict=n_predict,
        tie_weights=tie,
        scale_input=bool(raw.get("scale_input", False)),
        base_model_archs=_archs(raw),
    )
    if arch == MLP_ARCH:
        hidden = _single(parse_dims(raw.get("emb_dim"), "emb_dim"), "emb_dim")
        inner = _single(parse_dims(raw.get("inner_dim", 0), "inner_dim"), "inner_dim") or hidden
        return SpeculatorSpec(
            method="sum_rnn",
            hidden_dim=hidden,
            width=inner,
            emb_dim=inner,
            proj_dim=inner,
            tie_lstm_embs=False,
            **common,
        )
    method = raw.get("method", "sum_rnn")
    if method not in METHODS:
        raise SpeculatorConfigError(
            f"speculator config: method={method!r} is unknown; use one of {', '.join(METHODS)}."
        )
    hidden = _positive_int(raw, "input_hidden_dim")
    inner = _single(parse_dims(raw.get("inner_dim"), "inner_dim"), "inner_dim")
    emb = _single(parse_dims(raw.get("emb_dim", inner), "emb_dim"), "emb_dim")
    proj = _single(parse_dims(raw.get("proj_dim", inner), "proj_dim"), "proj_dim")
    if inner == 0:
        raise SpeculatorConfigError("speculator config: inner_dim must be positive.")
    if len({inner, emb, proj}) != 1:
        raise SpeculatorConfigError(
            f"speculator config: emb_dim={emb}, proj_dim={proj} and inner_dim={inner} must be "
            "equal (the token embedding is added to the projected state of that width)."
        )
    if method == "sum_lstm" and not tie:
        raise SpeculatorConfigError(
            "speculator config: method=sum_lstm is trained with tie_weights=true; "
            "a checkpoint with untied LSTM stages is not a known format."
        )
    return SpeculatorSpec(
        method=method,
        hidden_dim=hidden,
        width=inner,
        emb_dim=emb,
        proj_dim=proj,
        tie_lstm_embs=bool(raw.get("tie_lstm_embs", True)),
        **common,
    )


def check_base_model(spec: SpeculatorSpec, target_archs: Sequence[str], *, skip: bool) -> None:
    """Refuse a speculator trained for another target architecture (unless ``skip``)."""
    if skip:
        return
    from arctic_inference import envs

    fix = f"set {envs.SKIP_SPEC_MODEL_CHECK}=1 to serve it anyway"
    if spec.base_model_archs is None:
        raise SpeculatorConfigError(
            "speculator config has no base_model_archs, so it cannot be matched to the "
            f"target ({', '.join(target_archs)}); add the field or {fix}."
        )
    if not set(target_archs) & set(spec.base_model_archs):
        raise SpeculatorConfigError(
            f"speculator was trained for {', '.join(spec.base_model_archs)} but the target is "
            f"{', '.join(target_archs)}; use a speculator trained for this target or {fix}."
        )
