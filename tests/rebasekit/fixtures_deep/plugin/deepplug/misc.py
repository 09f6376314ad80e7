# ok: RK404 (shares names, not bodies)
"""Shares names with vllm.utils.tokens but not their bodies: not a fork (RK404 negative)."""


def count_tokens(text):
    return len(text.encode("utf-8")) // 4


def join_tokens(tokens, sep=" "):
    return sep.join(map(repr, tokens)).upper()
