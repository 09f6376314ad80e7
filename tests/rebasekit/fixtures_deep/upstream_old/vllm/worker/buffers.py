class CpuGpuBuffer:
    def __init__(self, n):
        self.cpu = [0] * n
        self.gpu = [0] * n
        self.np = self.cpu
