environment_variables: dict = {
    "VLLM_USE_V1": lambda: True,
    "VLLM_NEW_FLAG": lambda: False,
}


def __getattr__(name):
    return environment_variables[name]()
