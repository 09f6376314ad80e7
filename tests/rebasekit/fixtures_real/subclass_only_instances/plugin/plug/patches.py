import vllm.sampling as sampling

from plug.sampler import reject

sampling.reject = reject
