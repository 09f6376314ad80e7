from typing import TYPE_CHECKING

if TYPE_CHECKING:
    VLLM_USE_V1: bool = True
    VLLM_OLD_FLAG: bool = False

environment_variables = {
    "VLLM_USE_V1": lambda: True,
    "VLLM_OLD_FLAG": lambda: False,
}


def __getattr__(name):
    return environment_variables[name]()
