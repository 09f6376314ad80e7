"""Brute-force reference for the suffix tree: scans the raw sequences."""

from __future__ import annotations

import heapq
import math


class BruteTree:
    """Counts substrings (length <= depth) by scanning every sequence."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.seqs: dict[int, list[int]] = {}

    def extend(self, seq_id: int, tokens: list[int]) -> None:
        self.seqs.setdefault(seq_id, []).extend(tokens)

    def remove(self, seq_id: int) -> bool:
        return self.seqs.pop(seq_id, None) is not None

    def count(self, path: list[int]) -> int:
        n = len(path)
        if n > self.depth:
            return 0
        if n == 0:
            return sum(len(s) for s in self.seqs.values())
        return sum(
            1 for s in self.seqs.values() for i in range(len(s) - n + 1) if s[i : i + n] == path
        )

    def continuations(self, path: list[int]) -> dict[int, int]:
        if len(path) >= self.depth:
            return {}
        out: dict[int, int] = {}
        n = len(path)
        for s in self.seqs.values():
            for i in range(len(s) - n):
                if s[i : i + n] == path:
                    out[s[i + n]] = out.get(s[i + n], 0) + 1
        return out

    def longest_match(self, pattern: list[int]) -> int:
        best = 0
        for L in range(1, min(len(pattern), self.depth) + 1):
            if self.continuations(pattern[len(pattern) - L :]):
                best = L
        return best

    def budget(self, L: int, max_spec: int, factor: float, offset: float) -> int:
        lim = math.floor(factor * L + offset)
        return max(0, min(max_spec, self.depth - L, lim))

    def expand_path(self, path: list[int], budget: int, min_prob: float):
        toks, probs, p = [], [], 1.0
        path = list(path)
        for _ in range(budget):
            cont = self.continuations(path)
            if not cont:
                break
            total = sum(cont.values())
            tok = min(cont, key=lambda t: (-cont[t], t))
            q = p * cont[tok] / total
            if q < min_prob:
                break
            toks.append(tok)
            probs.append(q)
            p = q
            path.append(tok)
        return toks, probs

    def expand_tree(self, path: list[int], budget: int, min_prob: float):
        heap: list = []

        def push(ctx: list[int], p: float) -> None:
            cont = self.continuations(ctx)
            total = sum(cont.values())
            for tok, c in cont.items():
                q = p * c / total
                if q >= min_prob:
                    heapq.heappush(heap, (-q, tok, ctx + [tok]))

        push(list(path), 1.0)
        probs = []
        while heap and len(probs) < budget:
            negq, _, ctx = heapq.heappop(heap)
            probs.append(-negq)
            push(ctx, -negq)
        return probs

    def candidates(
        self, pattern: list[int], max_spec: int, factor: float, offset: float
    ) -> list[int]:
        """Match lengths the policy considers (longest, longest with room, middle)."""
        lmax = self.longest_match(pattern)
        if lmax == 0 or max_spec <= 0:
            return []
        b = lambda L: self.budget(L, max_spec, factor, offset)  # noqa: E731
        lfit = lmax
        while lfit > 1 and b(lfit) < min(max_spec, b(lfit - 1)):
            lfit -= 1
        out = []
        for L in (lmax, lfit, (lmax + lfit) // 2):
            if L >= 1 and L not in out and b(L) > 0:
                out.append(L)
        return out
