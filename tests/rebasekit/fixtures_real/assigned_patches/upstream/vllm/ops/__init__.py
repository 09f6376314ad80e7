from vllm.ops.chunk import chunk_gated_delta_rule
