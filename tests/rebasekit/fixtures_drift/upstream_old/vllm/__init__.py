"""Stand-in for vLLM used by the drift-kind fixtures (release 1.0.0)."""
