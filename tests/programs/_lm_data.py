"""A tiny corpus for the language-model programs (pytorch/examples reads wikitext-2, not reachable here)."""
import numpy as np

WORDS = "the cat sat on a mat and the dog lay by the door while a bird sang".split()


def corpus(n=1200, seed=0):
    """Token ids of a repetitive text (a language model can learn it quickly) and the vocabulary size."""
    rng = np.random.default_rng(seed)
    ids = []
    while len(ids) < n:
        start = rng.integers(0, 4)
        ids += list(range(start, len(WORDS)))
    vocab = {w: i for i, w in enumerate(dict.fromkeys(WORDS))}
    return np.array([vocab[WORDS[i]] for i in ids[:n]], dtype=np.int64), len(vocab)
