import vllm


def vllm_version_is(version: str) -> bool:
    return vllm.__version__ == version
