"""Release drift kinds: starred unpackings, calls of removed callables, duties of replacements."""

from arctic_inference.patching import ArcticPatch
from vllm import releasekinds
from vllm.releasekinds import Engine, kept


class EnginePatch(ArcticPatch[Engine]):
    _orig_split = Engine.split
    _orig_pair = Engine.pair

    def split(self, x):
        # RK310: split's tuple grew from 2 to 3 elements at 1.1.0.
        first, *rest = self._orig_split(x)
        return first, *rest

    def pair(self, x):
        first, *rest = self._orig_pair(x)  # ok: RK310
        return first, *rest

    # RK312: start replaces Engine.start, whose 1.1.0 version assigns self.aggregator.
    def start(self):
        self.size = 2

    def stop(self):  # ok: RK312
        self.size = -2


def work(x):
    # RK311: helper was deleted at 1.1.0.
    y = releasekinds.helper(x)
    return y + kept(x)  # ok: RK311
