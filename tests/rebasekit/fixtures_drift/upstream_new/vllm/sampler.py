class Sampler:
    def sample(self, logits, temperature):
        logits = logits / temperature.clamp(min=1e-5)
        probs = logits.softmax(dim=-1)
        top = probs.argmax(dim=-1)
        return top
