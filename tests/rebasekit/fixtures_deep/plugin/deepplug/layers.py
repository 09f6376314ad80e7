from arctic_inference.patching import ArcticPatch
from vllm.layers.linear import Linear
from vllm.layers.quant import Fp8Method, pick_method, split_rows, split_scales


class LinearPatch(ArcticPatch[Linear]):
    def __init__(self, size, quant_config):
        # RK301: LinearBase.__init__ gained a required `dtype` at 1.1.0.
        super(Linear, self).__init__(size)
        self.quant_config = quant_config
        # RK301: Fp8Method now needs the layer; upstream builds it in create_weights.
        self.quant_method = Fp8Method(quant_config)
        # RK301: `strict` was removed from pick_method.
        self.method_name = pick_method("fp8", strict=True)
        # RK302: split_scales returns one ScaleSplit object at 1.1.0.
        head, tail = split_scales([1.0, 2.0])
        # negative: split_rows still returns a pair (it only gained an optional arg).
        first, rest = split_rows([1, 2, 3])  # ok: RK301,RK302
        self.scales = (head, tail, first, rest)
