from vllm.zeroer import Zeroer


class Runner:
    def init_zero(self, backend):
        self.zeroer = Zeroer()
        self.zeroer.init_meta(backend, "auto")
