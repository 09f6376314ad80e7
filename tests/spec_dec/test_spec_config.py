"""``speculative_config={"method": "arctic", ...}`` on vLLM 0.26.0's real ``SpeculativeConfig``."""

from __future__ import annotations

import json

import pytest

from arctic_inference import envs
from tests.spec_dec.conftest import HIDDEN, VOCAB, make_spec_ckpt

pytestmark = pytest.mark.usefixtures("registered")


@pytest.fixture
def arctic_config(reverted_patches):
    from arctic_inference.vllm.spec_dec.spec_config import (
        SpeculativeConfigArcticPatch,
        extend_speculative_config,
    )

    SpeculativeConfigArcticPatch.apply()
    extend_speculative_config()


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    """A config-only Llama with the speculators' hidden size and vocabulary."""
    from transformers import LlamaConfig

    path = tmp_path_factory.mktemp("target")
    cfg = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
    )
    cfg.architectures = ["LlamaForCausalLM"]
    cfg.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def target_config(target):
    from vllm.config import ModelConfig

    return ModelConfig(
        model=str(target), skip_tokenizer_init=True, max_model_len=256, dtype="float32"
    )


@pytest.fixture(scope="module")
def mlp(spec_root):
    return make_spec_ckpt(spec_root, "sc-mlp", kind="mlp", tie_weights=False)


def build(target_config, **spec):
    from vllm.config import ParallelConfig, SpeculativeConfig

    return SpeculativeConfig(
        target_model_config=target_config, target_parallel_config=ParallelConfig(), **spec
    )


def test_arctic_method_builds_the_draft_config(arctic_config, target_config, mlp):
    cfg = build(target_config, method="arctic", model=str(mlp))
    assert cfg.method == "arctic"
    assert cfg.num_speculative_tokens == 3  # n_predict of the checkpoint
    assert cfg.draft_model_config.architectures == ["ArcticMLPSpeculatorPreTrainedModel"]
    assert cfg.enable_suffix_decoding is False and cfg.disable_by_batch_size is None
    assert cfg.disable_by_cost is None  # the cost rule is on unless set false


def test_the_cost_rule_is_on_unless_set_false(arctic_config, target_config, mlp):
    from arctic_inference.vllm.spec_dec.spec_config import gated_by_cost

    def cfg(**extra):
        return build(target_config, method="arctic", model=str(mlp), **extra)

    assert gated_by_cost(cfg()) and gated_by_cost(cfg(disable_by_cost=True))
    assert not gated_by_cost(cfg(disable_by_cost=False))


def test_hybrid_fields_and_batch_cap(arctic_config, target_config, mlp):
    from arctic_inference.vllm.spec_dec.spec_config import arctic_draft_tokens, is_hybrid

    cfg = build(
        target_config,
        method="arctic",
        model=str(mlp),
        enable_suffix_decoding=True,
        disable_by_batch_size=16,
        suffix_decoding_max_tree_depth=12,
    )
    assert is_hybrid(cfg) and cfg.disable_by_batch_size == 16
    # Suffix may draft to its tree depth; the speculator drafts its three heads.
    assert cfg.num_speculative_tokens == 12 and arctic_draft_tokens(cfg) == 3


def test_tied_speculator_drafts_more_than_n_predict(arctic_config, target_config, spec_root):
    tied = make_spec_ckpt(spec_root, "sc-tied", kind="lstm")
    cfg = build(target_config, method="arctic", model=str(tied), num_speculative_tokens=5)
    assert cfg.num_speculative_tokens == 5


@pytest.mark.parametrize(
    "spec, needle",
    [
        (dict(method="arctic", model="/no/such/speculator"), "no speculator checkpoint at"),
        (dict(method="arctic", num_speculative_tokens=4), "at most 3"),
        (dict(method="arctic", disable_by_batch_size=0), "disable_by_batch_size=0"),
        (
            dict(method="ngram", num_speculative_tokens=2, enable_suffix_decoding=True),
            "set method='arctic'",
        ),
        (
            dict(method="ngram", num_speculative_tokens=2, disable_by_batch_size=8),
            "disable_by_batch_size is honoured for method 'arctic' or 'suffix', not 'ngram'",
        ),
        (
            dict(method="suffix", num_speculative_tokens=4, disable_by_cost=False),
            "disable_by_cost is the Arctic speculator's cost rule; method='suffix'",
        ),
        (dict(method="arcitc"), "Input should be"),
        (dict(method="arctic", enable_suffix_decodin=True), "Unexpected keyword argument"),
    ],
)
def test_bad_arctic_options_are_refused(arctic_config, target_config, mlp, spec, needle):
    if spec["method"] not in ("ngram", "suffix"):
        spec = {"model": str(mlp), **spec}
    with pytest.raises(Exception, match=needle):
        build(target_config, **spec)


def test_missing_model_is_refused(arctic_config, target_config):
    with pytest.raises(Exception, match="needs model=PATH"):
        build(target_config, method="arctic")


def _other_target(tmp_path, **changes):
    from transformers import LlamaConfig
    from vllm.config import ModelConfig

    fields = dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=128, num_hidden_layers=2)
    fields.update(changes)
    cfg = LlamaConfig(num_attention_heads=4, num_key_value_heads=2, **fields)
    cfg.architectures = [changes.pop("arch", "LlamaForCausalLM")]
    cfg.save_pretrained(tmp_path)
    return ModelConfig(model=str(tmp_path), skip_tokenizer_init=True, max_model_len=256)


def test_speculator_for_another_hidden_size_is_refused(arctic_config, mlp, tmp_path):
    with pytest.raises(Exception, match="hidden size is 128"):
        build(_other_target(tmp_path, hidden_size=128), method="arctic", model=str(mlp))


def test_speculator_for_another_vocabulary_is_refused(arctic_config, mlp, tmp_path):
    with pytest.raises(Exception, match=r"vocabulary \(300\) differs from the target's \(512\)"):
        build(_other_target(tmp_path, vocab_size=512), method="arctic", model=str(mlp))


def test_mismatched_base_model_is_refused_unless_overridden(
    arctic_config, target_config, spec_root, monkeypatch
):
    other = make_spec_ckpt(spec_root, "sc-qwen", base_model_archs=["Qwen2ForCausalLM"])
    with pytest.raises(
        Exception, match=f"trained for Qwen2ForCausalLM.*{envs.SKIP_SPEC_MODEL_CHECK}"
    ):
        build(target_config, method="arctic", model=str(other))
    monkeypatch.setenv(envs.SKIP_SPEC_MODEL_CHECK, "1")
    assert build(target_config, method="arctic", model=str(other)).method == "arctic"


def test_serve_flag_reaches_the_config(arctic_config, target, target_config, mlp, monkeypatch):
    """``vllm serve --speculative-config JSON`` goes through EngineArgs to the same validation."""
    from vllm.config import ParallelConfig
    from vllm.engine.arg_utils import EngineArgs
    from vllm.platforms import current_platform
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    # The parser builds a default DeviceConfig, which needs a device type on this GPU-less host.
    monkeypatch.setattr(current_platform, "device_type", "cpu")

    parser = EngineArgs.add_cli_args(FlexibleArgumentParser())
    spec = {"method": "arctic", "model": str(mlp), "enable_suffix_decoding": True}
    args = parser.parse_args(["--model", str(target), "--speculative-config", json.dumps(spec)])
    engine_args = EngineArgs.from_cli_args(args)
    cfg = engine_args.create_speculative_config(target_config, ParallelConfig())
    assert cfg.method == "arctic" and cfg.enable_suffix_decoding is True

    # The short flags too: --spec-method offers the extended method literal.
    args = parser.parse_args(
        ["--model", str(target), "--spec-method", "arctic", "--spec-model", str(mlp)]
    )
    cfg = EngineArgs.from_cli_args(args).create_speculative_config(target_config, ParallelConfig())
    assert cfg.method == "arctic" and cfg.num_speculative_tokens == 3


def test_other_methods_are_untouched(arctic_config, target_config):
    cfg = build(target_config, method="ngram", num_speculative_tokens=2)
    assert cfg.method == "ngram" and cfg.enable_suffix_decoding is False


def test_suffix_decoding_takes_the_batch_cap(arctic_config, target_config):
    cfg = build(target_config, method="suffix", num_speculative_tokens=4, disable_by_batch_size=8)
    assert cfg.method == "suffix" and cfg.disable_by_batch_size == 8


def test_config_patch_is_an_engine_feature_and_the_proposer_a_worker_feature(
    arctic_config, target_config, mlp
):
    from arctic_inference.vllm.patch_set import ENGINE_FEATURES, WORKER_FEATURES, PatchContext

    (engine,) = [f for f in ENGINE_FEATURES if f.name == "arctic-speculative-config"]
    assert engine.patches == (
        "arctic_inference.vllm.spec_dec.spec_config:SpeculativeConfigArcticPatch",
    )
    (worker,) = [f for f in WORKER_FEATURES if f.name == "arctic-proposer"]

    def enabled(spec) -> bool:
        class Cfg:
            speculative_config = spec

        return worker.enabled(PatchContext(side="worker", vllm_config=Cfg()))

    assert enabled(build(target_config, method="arctic", model=str(mlp)))
    # Suffix decoding needs the runner patch only for its batch cap, which the patch
    # applies: accepted by the config but left unpatched, the cap would be ignored.
    assert enabled(build(target_config, method="suffix", num_speculative_tokens=4,
                         disable_by_batch_size=8))  # fmt: skip
    assert not enabled(build(target_config, method="suffix", num_speculative_tokens=4))
    assert not enabled(build(target_config, method="ngram", num_speculative_tokens=2))
    assert not enabled(None)
