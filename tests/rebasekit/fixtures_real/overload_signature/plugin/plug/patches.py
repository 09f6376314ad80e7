from vllm.config import ModelConfig, config

from plug.patching import ArcticPatch


class ModelConfigPatch(ArcticPatch[ModelConfig]):
    _orig_get_head_size = ModelConfig.get_head_size

    def get_head_size(self) -> int:
        options = config(config={"extra": "forbid"})
        return ModelConfigPatch._orig_get_head_size(self), options
