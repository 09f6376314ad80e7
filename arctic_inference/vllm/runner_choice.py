"""Pin vLLM to the V1 model runner, which is what the Arctic patches target.

vLLM 0.26.0 decides per engine in ``VllmConfig.use_v2_model_runner``
(vllm/config/vllm.py): ``VLLM_USE_V2_MODEL_RUNNER`` wins when set; otherwise
every dense generate model (Llama, Qwen3, ...) gets the V2 runner, whose
classes no V1 patch reaches.

Why setting the env variable from the plugin is early enough:

* ``vllm.envs`` reads variables lazily on each attribute access until
  ``enable_envs_cache()`` runs, which vLLM does only at the end of
  ``EngineCore.__init__`` and after worker start-up.
* The property is first consulted while ``EngineArgs.create_engine_config``
  builds the ``VllmConfig``; plugins are loaded before that, in
  ``EngineArgs.__post_init__`` (``LLM(...)``) or while ``vllm serve`` builds its
  parser (``AsyncEngineArgs.add_cli_args``).
* Engine-core and worker processes are started after that and inherit the
  environment (fork and spawn alike), and they load the plugin again, which
  re-asserts the value.
* If the cache is already on when the plugin runs (a process that loads it
  late), the cache is cleared so the next read sees the new value.
"""

from __future__ import annotations

import os

from vllm.logger import init_logger

V2_RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"

logger = init_logger(f"vllm.{__name__}")


def user_requested_v2() -> bool:
    """Whether the environment explicitly asks for the V2 runner."""
    # vLLM parses this variable as bool(int(value)).
    value = os.environ.get(V2_RUNNER_ENV, "").strip()
    try:
        return int(value) != 0
    except ValueError:
        return False


def force_v1_model_runner() -> None:
    """Set ``VLLM_USE_V2_MODEL_RUNNER=0``; warn if the user had asked for V2."""
    if user_requested_v2():
        logger.warning(
            "%s=%s was set, but Arctic Inference patches the V1 model runner; "
            "using V1. Unset ARCTIC_INFERENCE_ENABLED to run the V2 runner unpatched.",
            V2_RUNNER_ENV,
            os.environ[V2_RUNNER_ENV],
        )
    os.environ[V2_RUNNER_ENV] = "0"
    import vllm.envs

    cache_clear = getattr(vllm.envs.__getattr__, "cache_clear", None)
    if cache_clear is not None:
        cache_clear()
