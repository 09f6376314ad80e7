def reject(logits, temperature):
    return logits


class Sampler:
    def forward(self, logits):
        return reject(logits, temperature=1.0)
