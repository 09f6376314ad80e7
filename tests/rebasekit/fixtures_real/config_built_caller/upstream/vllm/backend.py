class Backend:
    @classmethod
    def shape(cls, blocks, dtype="auto"):
        return (blocks,)

    @classmethod
    def block_dim(cls, dtype):
        return cls.shape(1, dtype=dtype)
