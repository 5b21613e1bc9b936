"""Texts grouped by their words: TF-IDF vectors in k-means clusters (scikit-learn's), for drafting from passages
spread over a corpus (`core.golden.spread`). Imported only when drafting: scikit-learn's clustering and text
modules take over a second to import."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.cluster import KMeans
from sklearn.feature_extraction.text import TfidfVectorizer


def topic_groups(texts: Sequence[str], k: int, seed: int) -> np.ndarray | None:
    """Each text's group of at most `k` (None where no text has a word to count)."""
    try:
        vectors = TfidfVectorizer(sublinear_tf=True, stop_words="english", max_features=20_000).fit_transform(texts)
    except ValueError:  # an empty vocabulary: nothing but stop words or no words
        return None
    labels: np.ndarray = KMeans(n_clusters=min(k, vectors.shape[0]), n_init=1, random_state=seed).fit_predict(vectors)
    return labels
