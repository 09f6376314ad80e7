from vllm import parallel_state

from plug.patching import ArcticPatch


class ParallelStatePatch(ArcticPatch[parallel_state]):
    # a module global the patch adds to vllm.parallel_state
    _SP = None

    def get_sp_group():
        return parallel_state._SP
