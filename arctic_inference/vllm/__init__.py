"""The vLLM side of Arctic Inference: plugin entry point, patch set, Arctic args.

Nothing is imported here on purpose: vLLM imports ``arctic_inference.vllm.plugin``
in every process, and that import must stay cheap and side-effect free.
"""
