class BaseParser:
    def step(self, text):
        return text

    def run(self, text):
        return self.step(text)


class Parser(BaseParser):
    pass
