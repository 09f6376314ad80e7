from vllm.parallel_state import _SP, get_tp_group


def groups():
    return _SP, get_tp_group()
