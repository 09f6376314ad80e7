"""Load time of the index cache's entries: the data-only JSON format against pickle.

Takes every entry a warm scan left in a cache folder (``REBASEKIT_CACHE_DIR/index``),
decodes it, re-encodes the same values both ways in memory and times loading all of
them, the two formats interleaved, ``--repeat`` times each. File reads are left out on
purpose: both formats read one file per entry.

Usage: REBASEKIT_CACHE_DIR=DIR python bench/cache_format.py [--repeat N]
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import time

from rebasekit import datacodec
from rebasekit.paths import index_dir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    import rebasekit.analysis.attrs  # noqa: F401,E401 - register their records

    values = []
    for path in sorted(index_dir().rglob("*.json")):
        _, _, payload = path.read_bytes().partition(b"\n")
        values.append(datacodec.loads(payload))
    as_json = [datacodec.dumps(v).encode() for v in values]
    as_pickle = [pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL) for v in values]
    assert [datacodec.loads(b) for b in as_json] == [pickle.loads(b) for b in as_pickle] == values
    times: dict[str, list[float]] = {"json": [], "pickle": []}
    for _ in range(args.repeat):
        for name, blobs, load in (
            ("json", as_json, datacodec.loads),
            ("pickle", as_pickle, pickle.loads),
        ):
            t = time.perf_counter()
            for _ in range(10):
                for blob in blobs:
                    load(blob)
            times[name].append((time.perf_counter() - t) / 10)
    size = {"json": sum(map(len, as_json)), "pickle": sum(map(len, as_pickle))}
    print(f"{len(values)} entries; per full load, median (min, max) of {args.repeat}:")
    for name, values_ in times.items():
        print(
            f"  {name:>6}: {statistics.median(values_) * 1000:.1f} ms ({min(values_) * 1000:.1f}, "
            f"{max(values_) * 1000:.1f})  {size[name] / 1e6:.2f} MB"
        )
    print(
        f"  ratio json/pickle: {statistics.median(times['json']) / statistics.median(times['pickle']):.2f}"
    )


if __name__ == "__main__":
    main()
