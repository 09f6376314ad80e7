"""Build the forest benchmark's model: small-llama's shape, random weights, >= 8k context.

Runs ``mk_tiny_model.py --size small`` (``.gpu2/mk_tiny_model.py`` on the device, see
``../shared/gpu/README.md``) and makes sure the checkpoint's context is at least
``--max-len`` tokens (the rollout workload needs 4096 + 256), raising it in
``config.json`` when the builder wrote less.

    python3 bench/forest/build_model.py --out /opt/models/small-llama-8k
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

BUILDERS = (Path(".gpu2/mk_tiny_model.py"), Path("../shared/gpu/mk_tiny_model.py"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--max-len", type=int, default=8192)
    parser.add_argument("--builder", type=Path, default=None)
    args = parser.parse_args()
    builder = args.builder or next((b for b in BUILDERS if b.is_file()), None)
    if builder is None:
        print(
            f"error: mk_tiny_model.py not found at {', '.join(map(str, BUILDERS))}; pass --builder",
            file=sys.stderr,
        )
        return 2
    config = args.out / "config.json"
    if not config.is_file():
        subprocess.run(
            [sys.executable, str(builder), "--size", "small", "--out", str(args.out)], check=True
        )
    data = json.loads(config.read_text())
    if data.get("max_position_embeddings", 0) < args.max_len:
        data["max_position_embeddings"] = args.max_len
        config.write_text(json.dumps(data, indent=2))
    print(
        f"{args.out}: {data['num_hidden_layers']} layers, hidden {data['hidden_size']}, "
        f"heads {data['num_attention_heads']}/{data['num_key_value_heads']}, "
        f"context {data['max_position_embeddings']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
