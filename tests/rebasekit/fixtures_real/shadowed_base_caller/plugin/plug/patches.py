from vllm.parsers import Parser


def step(self, text, request):
    return text


def run(self, text):
    # the base's run (the only caller of step) is shadowed on Parser by this one
    return self.step(text, None)


Parser.step = step
Parser.run = run
