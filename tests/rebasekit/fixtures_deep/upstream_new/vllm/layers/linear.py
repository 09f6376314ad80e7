from vllm.layers.quant import Fp8Method


class LinearBase:
    def __init__(self, size, dtype):
        self.size = size
        self.dtype = dtype


class Linear(LinearBase):
    def __init__(self, size, quant_config):
        super().__init__(size, "float16")
        self.quant_config = quant_config

    def create_weights(self):
        self.weight = [0.0] * self.size
        self.quant_method = Fp8Method(self.quant_config, self)
