"""vLLM general-plugin entry point of Arctic Inference.

vLLM calls :func:`arctic_inference_plugin` in every process it starts (front
end, engine core, workers) and possibly several times per process. The steps,
in order:

a. do nothing unless ``ARCTIC_INFERENCE_ENABLED=1`` (a set variable that is
   a near miss of that name is logged, since nothing else would notice it);
b. validate every ``ARCTIC_*`` setting (:func:`arctic_inference.envs.validate_environment`):
   a bad value stops start-up with an error naming the variable;
c. require the CUDA platform (``ARCTIC_INFERENCE_SKIP_PLATFORM_CHECK=1`` skips);
d. require the pinned vLLM version ``VLLM_PATCH_VERSION``
   (``ARCTIC_INFERENCE_SKIP_VERSION_CHECK=1`` skips);
e. force the V1 model runner (see :mod:`arctic_inference.vllm.runner_choice`);
f. register every feature's Arctic args (their env variables are validated
   too; set ``ARCTIC_*`` variables nothing reads are logged with a
   did-you-mean), then apply the engine-side patch set
   (:data:`arctic_inference.vllm.patch_set.ENGINE_FEATURES`, in list order).
   Worker-side features are applied later, inside each worker
   (:mod:`arctic_inference.vllm.worker_hook`).

Steps b-f run once per process. This module imports nothing heavy at import
time: vLLM swallows (and only logs) an import error of a plugin module, which
would silently bypass every patch, so all real work happens inside the call.
"""

from __future__ import annotations

import threading

from arctic_inference import envs

VLLM_PATCH_VERSION = "0.26.0"

_lock = threading.Lock()
_loaded = False
_near_miss_warned = False


def arctic_inference_plugin() -> None:
    """Entry point registered under ``vllm.general_plugins``."""
    load_plugin()


def is_loaded() -> bool:
    """Whether the plugin patched this process."""
    return _loaded


def load_plugin(*, target_version: str = VLLM_PATCH_VERSION) -> bool:
    """Run the plugin steps; returns whether the plugin is active.

    ``target_version`` is the version the patch set was written for; tests
    pass another value to exercise the version gate against the real vLLM.
    """
    global _loaded
    if not envs.enabled():
        warn_near_miss_of_enabled()
        return False
    with _lock:
        if _loaded:
            return True
        envs.validate_environment()
        check_platform()
        check_version(target_version)

        from vllm.logger import init_logger

        from arctic_inference.vllm.args import registered_args
        from arctic_inference.vllm.patch_set import apply_side, register_feature_args
        from arctic_inference.vllm.runner_choice import force_v1_model_runner

        force_v1_model_runner()
        register_feature_args()
        for line in envs.validate_environment(registered_args()):
            init_logger(f"vllm.{__name__}").warning("%s", line)
        features = apply_side("engine")
        _loaded = True
        init_logger(f"vllm.{__name__}").debug(
            "Arctic Inference engine-side features applied: %s", ", ".join(features)
        )
        return True


def warn_near_miss_of_enabled() -> None:
    """Log (once per process) a set variable that looks like a misspelt
    ``ARCTIC_INFERENCE_ENABLED``."""
    import difflib
    import os

    global _near_miss_warned
    if _near_miss_warned:
        return
    _near_miss_warned = True
    for name in os.environ:
        if name != envs.ENABLED and difflib.get_close_matches(name, [envs.ENABLED], cutoff=0.9):
            from vllm.logger import init_logger

            init_logger(f"vllm.{__name__}").warning(
                "%s; Arctic Inference stays off.",
                envs.unknown_variable_message(name, [envs.ENABLED]),
            )


def check_platform() -> None:
    """Refuse non-CUDA platforms unless the operator opted out of the check."""
    if envs.skip_platform_check():
        return
    from vllm.platforms import current_platform

    if not current_platform.is_cuda():
        name = getattr(current_platform, "device_name", None) or type(current_platform).__name__
        raise RuntimeError(
            f"Arctic Inference supports NVIDIA CUDA GPUs only, but vLLM detected the "
            f"platform {name!r}. Run on a CUDA machine, unset "
            f"{envs.ENABLED} to use vLLM unpatched, or set "
            f"{envs.SKIP_PLATFORM_CHECK}=1 to load the patches anyway (untested)."
        )


def installed_vllm_version() -> str:
    """Version of the vLLM package this process imports."""
    import vllm

    return vllm.__version__


def versions_match(installed: str, target: str) -> bool:
    """Same release, ignoring a local build label such as ``+cu130``."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(installed).public == Version(target).public
    except InvalidVersion:
        return installed == target


def check_version(target_version: str) -> None:
    """Refuse a vLLM the patch set was not written for, with the three fixes."""
    installed = installed_vllm_version()
    if versions_match(installed, target_version):
        return
    if envs.skip_version_check():
        from vllm.logger import init_logger

        init_logger(f"vllm.{__name__}").warning(
            "Arctic Inference targets vLLM %s but vLLM %s is installed; patching "
            "anyway because %s=1.",
            target_version,
            installed,
            envs.SKIP_VERSION_CHECK,
        )
        return
    raise RuntimeError(
        f"Arctic Inference patches vLLM {target_version}, but vLLM {installed} is "
        f"installed. Fix one of: install the supported version "
        f"(pip install vllm=={target_version}); unset {envs.ENABLED} to run vLLM "
        f"without the plugin; or set {envs.SKIP_VERSION_CHECK}=1 to patch this "
        f"version anyway (unsupported)."
    )
