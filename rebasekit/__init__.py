"""rebasekit: keep a vLLM-patching plugin alive across vLLM releases."""

__version__ = "0.1.0"
