from plug.patching import ArcticPatch
from plug.utils import vllm_version_is

if vllm_version_is("0.23.0"):
    from vllm.moe.layer import FusedMoE
else:
    # the module was renamed after 0.23.0; this branch never runs at the 0.23.0 pin
    from vllm.moe.fused_layer import FusedMoE


class FusedMoEPatch(ArcticPatch[FusedMoE]):
    _orig_forward = FusedMoE.forward

    def forward(self, hidden_states, router_logits):
        return FusedMoEPatch._orig_forward(self, hidden_states, router_logits)
