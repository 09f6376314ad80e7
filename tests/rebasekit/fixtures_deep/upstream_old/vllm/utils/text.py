def normalize(text):
    return " ".join(text.split())
