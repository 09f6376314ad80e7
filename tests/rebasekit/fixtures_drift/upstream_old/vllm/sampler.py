class Sampler:
    def sample(self, logits, temperature):
        logits = logits / temperature
        probs = logits.softmax(dim=-1)
        top = probs.argmax(dim=-1)
        return top
