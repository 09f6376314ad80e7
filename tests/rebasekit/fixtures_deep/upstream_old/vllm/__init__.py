"""Tiny stand-in for vLLM used by rebasekit's deep-drift tests (release 1.0.0)."""
