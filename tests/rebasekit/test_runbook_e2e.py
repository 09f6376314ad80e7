"""runbook: end-to-end tests found from the code that builds engines, and the serving model.

A synthetic project is written on the fly: GPU tests that build engines in helpers they run
or import, in a code string, or through ``vllm serve``, and GPU tests that only look like
it (names, docstrings, ``time.sleep``, ``path.suffix``). Findings come from the real scan
of two upstream trees.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from cli_runner import StrictRunner as CliRunner
from runbook_project import PLUGIN_SKELETON, write_tree

from rebasekit.cli import app
from rebasekit.runbook.e2e import engine_use

PROPOSER_OLD = "class EagleProposer:\n    def propose(self, ids):\n        return ids\n"
PROPOSER_NEW = "class EagleProposer:\n    def propose(self, ids, hidden):\n        return ids\n"
COORD_OLD = "class GroupCoordinator:\n    def all_reduce(self, x):\n        return x\n"
COORD_NEW = "class GroupCoordinator:\n    def all_reduce(self, x, group):\n        return x\n"

PROJECT = {
    **PLUGIN_SKELETON,
    # Plugin code is full of engine calls; it must never count as a test helper.
    "plug/spec_patch.py": """
        from arctic_inference.patching import ArcticPatch
        from vllm.v1.spec_decode.eagle import EagleProposer

        class ProposerPatch(ArcticPatch[EagleProposer]):
            def propose(self, ids):
                return ids
    """,
    "plug/parallel_patch.py": """
        from arctic_inference.patching import ArcticPatch
        from vllm.distributed.parallel_state import GroupCoordinator

        class CoordinatorPatch(ArcticPatch[GroupCoordinator]):
            def all_reduce(self, x):
                return x
    """,
    # Runs a sibling script in a subprocess; the engine and the spec config live there.
    "tests/gpu/test_spec.py": """
        import subprocess, sys
        from pathlib import Path
        import pytest
        pytestmark = pytest.mark.gpu
        SCRIPT = Path(__file__).with_name("spec_run.py")

        def test_lossless():
            subprocess.run([sys.executable, str(SCRIPT)], check=True)
    """,
    "tests/gpu/spec_run.py": """
        from vllm import LLM, SamplingParams
        llm = LLM("/models/tiny", speculative_config={"method": "suffix"})
        llm.generate(["a"], SamplingParams(max_tokens=4))
    """,
    # Imports a helper module that builds the engine and puts it to sleep.
    "tests/gpu/test_sleep.py": """
        import pytest
        from sleep_helpers import cycle

        @pytest.mark.gpu
        def test_sleep_wake():
            cycle()
    """,
    "tests/gpu/sleep_helpers.py": """
        from vllm import LLM
        import test_sleep  # a cycle back to the test must not loop

        def cycle():
            llm = LLM("/models/tiny")
            llm.sleep(level=2)
            llm.wake_up()
    """,
    # The engine is built by Python source held in a string, run with `python -c`.
    "tests/gpu/test_inline.py": '''
        import subprocess, sys
        import pytest
        pytestmark = pytest.mark.gpu
        WORKER = """
        from vllm import LLM
        llm = LLM("/models/tiny", tensor_parallel_size=2)
        """

        def test_tp():
            subprocess.run([sys.executable, "-c", WORKER], check=True)
    ''',
    "tests/gpu/test_openai.py": """
        import subprocess
        import pytest
        pytestmark = pytest.mark.gpu

        def test_server():
            subprocess.Popen(["vllm", "serve", "/models/tiny", "--port", "8001"])
    """,
    # Looks end-to-end (name, docstring, sleep, suffix) but builds no engine: a GPU unit test.
    "tests/gpu/test_e2e_generate_kernel.py": '''
        """Like LLM(model).generate with speculative_config, but only the kernel."""
        import time
        from pathlib import Path
        import pytest
        from plug.spec_patch import ProposerPatch

        @pytest.mark.gpu
        def test_kernel():
            time.sleep(0)
            assert Path("x.py").suffix == ".py"
    ''',
    "tests/test_cpu.py": "def test_cpu():\n    pass\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write_tree(tmp_path / "proj", PROJECT)
    for name, proposer, coord in (
        ("old", PROPOSER_OLD, COORD_OLD),
        ("new", PROPOSER_NEW, COORD_NEW),
    ):
        write_tree(
            tmp_path / name,
            {
                "vllm/__init__.py": "",
                "vllm/v1/__init__.py": "",
                "vllm/v1/spec_decode/__init__.py": "",
                "vllm/v1/spec_decode/eagle.py": proposer,
                "vllm/distributed/__init__.py": "",
                "vllm/distributed/parallel_state.py": coord,
            },
        )
    return tmp_path


def invoke(project: Path, *extra: str) -> tuple[int, str, str]:
    out = project / "RB.md"
    result = CliRunner().invoke(
        app,
        [
            "runbook",
            "--from",
            str(project / "old"),
            "--to",
            str(project / "new"),
            "--project",
            str(project / "proj"),
            "--write",
            str(out),
            *extra,
        ],
    )
    return result.exit_code, result.output, (out.read_text() if out.exists() else "")


def section(text: str, key: str) -> str:
    """The body of the phase whose key is ``key``."""
    match = re.search(rf"^### \d+\. .*\(`{re.escape(key)}`\)\n(.*?)(?=^### |\Z)", text, re.M | re.S)
    assert match, f"no phase {key} in:\n{text}"
    return match.group(1)


def phase_keys(text: str) -> list[str]:
    return re.findall(r"^### \d+\. .*\(`([^`]+)`\)$", text, re.M)


def test_engine_building_gpu_tests_land_in_their_feature_phases(project):
    code, output, text = invoke(project)
    assert code == 0, output
    assert phase_keys(text) == [
        "smoke",
        "cpu-unit",
        "gpu-unit",
        "e2e:engine",
        "e2e:memory",
        "e2e:parallelism",
        "e2e:spec-decode",
        "serving",
    ]
    spec = section(text, "e2e:spec-decode")
    assert "python -m pytest -q -m gpu tests/gpu/test_spec.py\n" in spec
    assert "Gap:" not in spec and "Runtime risks" in spec  # the proposer finding is covered
    assert (
        "`tests/gpu/test_spec.py`: builds an engine (LLM( in tests/gpu/spec_run.py); spec-decode via "
        '"suffix", speculative_config' in spec
    )
    memory = section(text, "e2e:memory")
    assert "-m gpu tests/gpu/test_sleep.py\n" in memory
    assert "LLM( in tests/gpu/sleep_helpers.py); memory via sleep, wake_up" in memory
    parallel = section(text, "e2e:parallelism")
    assert "-m gpu tests/gpu/test_inline.py\n" in parallel and "Gap:" not in parallel
    assert "LLM( in a code string in tests/gpu/test_inline.py" in parallel
    engine = section(text, "e2e:engine")  # only spec_run.py calls generate / SamplingParams
    assert "-m gpu tests/gpu/test_spec.py\n" in engine and "via SamplingParams, generate" in engine
    unit = section(text, "gpu-unit")
    assert "python -m pytest -q -m gpu tests/gpu/test_e2e_generate_kernel.py\n" in unit
    serving = section(text, "serving")
    assert "python -m pytest -q -m gpu tests/gpu/test_openai.py\n" in serving
    assert "vllm serve in tests/gpu/test_openai.py" in serving and "curl" not in serving


def test_classification_follows_the_helpers_not_the_names(project):
    """Edit only the helper scripts: the phases change with them."""
    proj = project / "proj"
    (proj / "tests/gpu/spec_run.py").write_text(
        "from vllm import LLM\nLLM('/models/tiny', tensor_parallel_size=2)\n"
    )
    (proj / "tests/gpu/sleep_helpers.py").write_text("def cycle():\n    return None\n")
    code, output, text = invoke(project)
    assert code == 0, output
    spec = section(text, "e2e:spec-decode")
    assert "Gap: no end-to-end test exercises spec-decode" in spec and "pytest" not in spec
    assert "-m gpu tests/gpu/test_inline.py tests/gpu/test_spec.py\n" in section(
        text, "e2e:parallelism"
    )
    assert "e2e:memory" not in phase_keys(text)
    assert "-m gpu tests/gpu/test_e2e_generate_kernel.py tests/gpu/test_sleep.py\n" in section(
        text, "gpu-unit"
    )


def test_gap_only_when_no_test_drives_the_feature(project):
    (project / "proj/tests/gpu/test_inline.py").unlink()
    code, output, text = invoke(project)
    assert code == 0, output
    parallel = section(text, "e2e:parallelism")
    assert "Gap: no end-to-end test exercises parallelism" in parallel
    assert "Likely breaks at: worker start-up" in parallel
    assert "Gap:" not in section(text, "e2e:spec-decode")


def scan_one(tmp_path: Path, files: dict[str, str], test: str = "tests/gpu/test_x.py"):
    write_tree(tmp_path, files)
    return engine_use(tmp_path / test, tmp_path, tmp_path / "tests")


@pytest.mark.parametrize(
    "source, features",
    [
        ("from vllm import LLM\nLLM('m').generate(['a'])\n", ["engine"]),
        ("import vllm\nvllm.LLM('m', enable_sleep_mode=True)\n", ["memory"]),
        (
            "from vllm.v1.engine.async_llm import AsyncLLM\nAsyncLLM.from_engine_args(a, speculative_config=c)\n",
            ["spec-decode"],
        ),
        (
            "from vllm import LLM\nLLM('m', speculative_config={'method': 'eagle'}, logprobs=5)\n",
            ["sampling", "spec-decode"],
        ),
        ("from vllm import LLM\nLLM('m')\n", ["engine"]),  # built, nothing else named
    ],
)
def test_features_from_code(tmp_path, source, features):
    use = scan_one(tmp_path, {"tests/gpu/test_x.py": source})
    assert use is not None and use.feature_names == features


@pytest.mark.parametrize(
    "source",
    [
        '"""Builds LLM(model) with speculative_config and vllm serve."""\ndef test():\n    pass\n',
        "import time\nfrom time import sleep\ndef test():\n    time.sleep(1)\n    sleep(1)\n",
        "def test(llm):\n    llm.generate(['a'])\n",  # an engine from a fixture elsewhere is not built here
    ],
)
def test_no_engine_built(tmp_path, source):
    assert scan_one(tmp_path, {"tests/gpu/test_x.py": source}) is None


def test_stdlib_sleep_and_path_suffix_are_not_features(tmp_path):
    source = (
        "import time\nfrom pathlib import Path\nfrom vllm import LLM\n"
        "LLM('m')\ntime.sleep(1)\nPath('a').suffix\n"
    )
    use = scan_one(tmp_path, {"tests/gpu/test_x.py": source})
    assert use is not None and use.feature_names == ["engine"]


def test_helpers_outside_the_test_folder_are_not_read(tmp_path):
    files = {
        "tests/gpu/test_x.py": "from plug.engine import run\nimport helper\nrun()\n",
        "plug/engine.py": "from vllm import LLM\nLLM('m')\n",
        "tests/gpu/helper.py": "from . import sub\n",
        "tests/gpu/sub.py": "from vllm import LLM\nLLM('m', tensor_parallel_size=2)\n",
    }
    use = scan_one(tmp_path, files)
    assert use is not None and use.builds == ("LLM( in tests/gpu/sub.py",)
    assert use.feature_names == ["parallelism"]


def serving(text: str) -> list[str]:
    return section(text, "serving").split("```bash\n")[1].split("```")[0].splitlines()


def test_serving_defaults_to_a_model_placeholder(project):
    (project / "proj/tests/gpu/test_openai.py").unlink()
    code, output, text = invoke(project)
    assert code == 0, output
    assert "Qwen" not in text and "huggingface" not in text.lower()
    assert "Before you start: `$MODEL` is a placeholder" in section(text, "serving")
    guard, serve, wait, curl, stop = serving(text)
    assert 'vllm serve "$MODEL" --port 8000' in serve
    unset = subprocess.run(
        ["bash", "-c", guard], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}
    )
    assert unset.returncode != 0 and "set MODEL to a local model directory" in unset.stderr
    # The request body, as bash expands it, is JSON naming the model the server runs.
    body = curl.split(" -d ", 1)[1]
    shown = subprocess.run(
        ["bash", "-c", f"printf %s {body}"],
        capture_output=True,
        text=True,
        env={"MODEL": "/opt/models/x y", "PATH": "/usr/bin:/bin"},
        check=True,
    )
    assert json.loads(shown.stdout)["model"] == "/opt/models/x y"


def test_serving_uses_the_model_given(project):
    (project / "proj/tests/gpu/test_openai.py").unlink()
    code, output, text = invoke(project, "--model", "/opt/models/tiny-llama")
    assert code == 0, output
    assert (
        "--model /opt/models/tiny-llama --write" in text.splitlines()[2]
    )  # the "Generated by" line
    assert "Before you start" not in text and "$MODEL" not in text
    serve, wait, curl, stop = serving(text)
    assert serve.startswith("vllm serve /opt/models/tiny-llama --port 8000")
    body = curl.split(" -d ", 1)[1]
    shown = subprocess.run(
        ["bash", "-c", f"printf %s {body}"], capture_output=True, text=True, check=True
    )
    assert json.loads(shown.stdout)["model"] == "/opt/models/tiny-llama"
