from vllm import envs

V2_RUNNER_ARCHITECTURES = frozenset({"LlamaForCausalLM", "QwenForCausalLM"})


class Config:
    def __init__(self, architectures, block_size):
        self.architectures = architectures
        self.block_size = block_size

    @property
    def use_v2_runner(self):
        if envs.VLLM_USE_V2_RUNNER:
            return True
        return any(a in V2_RUNNER_ARCHITECTURES for a in self.architectures)
