# ok: RK403 (declared fork, upstream unchanged)
"""Declared in pyproject as a fork of vllm/utils/text.py@1.0.0 (unchanged upstream)."""


def normalize(text):
    return " ".join(text.split()).strip()
