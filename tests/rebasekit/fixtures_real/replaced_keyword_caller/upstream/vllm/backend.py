class Backend:
    def shape(self, blocks, dtype="auto"):
        return (blocks,)

    def block_dim(self):
        return self.shape(1, dtype="auto")
