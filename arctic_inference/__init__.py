"""Arctic Inference: speed features for vLLM, delivered as a vLLM plugin."""

__version__ = "0.1.0"
