from vllm.backend import Backend

from plug.patching import ArcticPatch


class BackendPatch(ArcticPatch[Backend]):
    def shape(self, blocks):
        return (2, blocks)

    def block_dim(self):
        # the only upstream caller passing dtype= is replaced here too
        return 1
