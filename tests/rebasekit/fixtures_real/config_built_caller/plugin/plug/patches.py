from vllm.backend import Backend

from plug.patching import ArcticPatch


class BackendPatch(ArcticPatch[Backend]):
    @classmethod
    def shape(cls, blocks):
        return (2, blocks)
