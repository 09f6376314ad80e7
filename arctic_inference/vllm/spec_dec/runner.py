"""V1 model-runner patches that drive the arctic proposer.

vLLM 0.26.0's ``GPUModelRunner`` picks its drafter by method name in
``__init__`` and dispatches by method name in ``propose_draft_token_ids``;
"arctic" is neither. The patched ``__init__`` lets vLLM set speculative
decoding up as for suffix decoding (the other CPU-token method: the drafter
runs after bookkeeping on the sampled token lists, rejection sampler and
buffers sized by ``num_speculative_tokens``) and then installs the
:class:`~.proposer.ArcticProposer`; the patched ``propose_draft_token_ids``
hands arctic steps to it. A suffix-decoding step whose batch has reached
``disable_by_batch_size`` makes no drafts; its cache catches up with those
steps' tokens when drafting resumes (``suffix_follow.DeferredFollow``). Other
methods, and engines without the arctic method in the same process, run vLLM's
code unchanged.
"""

from __future__ import annotations

from vllm.v1.worker.gpu_model_runner import GPUModelRunner

from arctic_inference.patching import ArcticPatch
from arctic_inference.vllm.spec_dec.spec_config import (
    ARCTIC_METHOD,
    SUFFIX_METHOD,
    capped_suffix,
    over_batch_cap,
    uses_arctic,
)

# The method vLLM builds its speculative-decoding state for while an arctic
# runner is constructed (see the module docstring).
STAND_IN_METHOD = SUFFIX_METHOD


def _deferred_follow(runner: GPUModelRunner):
    """The runner's record of tokens its suffix cache has not seen (made on first use)."""
    follow = runner.__dict__.get("_arctic_deferred_follow")
    if follow is None:
        from arctic_inference.vllm.spec_dec.suffix_follow import DeferredFollow

        follow = runner._arctic_deferred_follow = DeferredFollow(runner.drafter.suffix_cache)
    return follow


# rebasekit: ignore[RK401] the plugin forces the V1 runner (runner_choice.force_v1_model_runner)
class GPUModelRunnerArcticPatch(ArcticPatch[GPUModelRunner]):
    """Build and call the arctic proposer for ``method="arctic"``."""

    _orig___init__ = GPUModelRunner.__init__
    _orig_propose_draft_token_ids = GPUModelRunner.propose_draft_token_ids

    def __init__(self, vllm_config, device):
        spec = vllm_config.speculative_config
        if not uses_arctic(spec):
            GPUModelRunnerArcticPatch._orig___init__(self, vllm_config, device)
            return
        spec.method = STAND_IN_METHOD
        try:
            GPUModelRunnerArcticPatch._orig___init__(self, vllm_config, device)
        finally:
            spec.method = ARCTIC_METHOD
        if hasattr(self, "drafter"):  # only the last pipeline stage drafts
            from arctic_inference.vllm.spec_dec.proposer import ArcticProposer

            self.drafter = ArcticProposer(self.vllm_config, self.device, self)

    def propose_draft_token_ids(
        self,
        scheduler_output,
        sampled_token_ids,
        sampling_metadata,
        hidden_states,
        sample_hidden_states,
        aux_hidden_states,
        spec_decode_metadata,
        common_attn_metadata,
        slot_mappings,
    ):
        spec = self.speculative_config
        if capped_suffix(spec):
            follow = _deferred_follow(self)
            if over_batch_cap(spec.disable_by_batch_size, len(sampled_token_ids)):
                self._draft_probs = None
                self._draft_prob_req_ids = None
                follow.defer(self.input_batch, sampled_token_ids)
                return [[] for _ in sampled_token_ids]
            follow.catch_up(self.input_batch)
        if not uses_arctic(self.speculative_config):
            return GPUModelRunnerArcticPatch._orig_propose_draft_token_ids(
                self,
                scheduler_output,
                sampled_token_ids,
                sampling_metadata,
                hidden_states,
                sample_hidden_states,
                aux_hidden_states,
                spec_decode_metadata,
                common_attn_metadata,
                slot_mappings,
            )
        self._draft_probs = None
        self._draft_prob_req_ids = None
        return self.drafter.propose(
            sampled_token_ids, sample_hidden_states, spec_decode_metadata, self.input_batch
        )
