from vllm.ops import chunk_gated_delta_rule


def forward(q, k, v):
    return chunk_gated_delta_rule(q, k, v, prebuilt_meta=None, head_first=False)
