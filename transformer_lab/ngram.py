"""Character n-gram language model with add-k smoothing (the Lab 1 baselines).

P(c | context) = (count(context, c) + k) / (count(context) + k * |V|), with counts taken from the
training split only. Each n-gram is packed into one integer in base |V|, so counting is a sort.
"""

from __future__ import annotations

import numpy as np


class NGramModel:
    def __init__(self, order: int, k: float, vocab_size: int = 65):
        if order < 1:
            raise ValueError(f"order must be at least 1, got {order}")
        if k <= 0:
            raise ValueError(f"add-k smoothing needs k > 0, got {k}")
        if vocab_size**order >= 2**62:
            raise ValueError(f"order {order} over {vocab_size} symbols overflows int64 keys")
        self.order, self.k, self.vocab_size = order, k, vocab_size

    def _keys(self, ids: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """Packed n-gram ending at each target position: ids[p - order + 1 .. p]."""
        keys = np.zeros(len(targets), dtype=np.int64)
        for j in range(self.order - 1, -1, -1):
            keys = keys * self.vocab_size + ids[targets - j]
        return keys

    def fit(self, train_ids) -> NGramModel:
        ids = np.asarray(train_ids, dtype=np.int64)
        keys = self._keys(ids, np.arange(self.order - 1, len(ids)))
        self.ngrams, self.ngram_counts = np.unique(keys, return_counts=True)
        self.contexts, self.context_counts = np.unique(keys // self.vocab_size, return_counts=True)
        return self

    @staticmethod
    def _lookup(table: np.ndarray, counts: np.ndarray, keys: np.ndarray) -> np.ndarray:
        where = np.searchsorted(table, keys).clip(max=len(table) - 1)
        return np.where(table[where] == keys, counts[where], 0)

    def log_probs(self, ids, start: int, end: int) -> np.ndarray:
        """ln P(ids[p] | the order-1 characters before p) for p in [start, end).

        The context is read from the text before p, which may lie outside the scored range.
        """
        ids = np.asarray(ids, dtype=np.int64)
        if start < self.order - 1:
            raise ValueError(
                f"position {start} has fewer than {self.order - 1} characters before it"
            )
        keys = self._keys(ids, np.arange(start, end))
        joint = self._lookup(self.ngrams, self.ngram_counts, keys)
        context = self._lookup(self.contexts, self.context_counts, keys // self.vocab_size)
        return np.log(joint + self.k) - np.log(context + self.k * self.vocab_size)
