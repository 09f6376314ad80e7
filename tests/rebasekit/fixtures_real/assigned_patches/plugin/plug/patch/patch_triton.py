import vllm.ops

from plug.ops.chunk import chunk_gated_delta_rule

# the package attribute is replaced: later `from vllm.ops import ...` gets the plugin's
vllm.ops.chunk_gated_delta_rule = chunk_gated_delta_rule
