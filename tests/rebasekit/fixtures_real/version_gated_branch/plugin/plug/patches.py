from plug.utils import vllm_version_is

if vllm_version_is("0.23.0"):
    from vllm.moe.layer import FusedMoE
else:
    # the module was renamed after 0.23.0; this branch never runs at the 0.23.0 pin
    from vllm.moe.fused_layer import FusedMoE


def forward(layer: FusedMoE, hidden_states, router_logits):
    return layer.forward(hidden_states, router_logits)
