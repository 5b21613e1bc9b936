"""How the `qdrant` plugin talks to Qdrant: BM25 term weights for the sparse vector, point ids, and every
client call by name under the remote policy (what it was doing named in its error)."""

from __future__ import annotations

import re
import uuid
import zlib
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vx_eval.plugin import STOPWORDS, RemotePolicy, on_first_use
from vx_eval.plugins.engines.remote import need

_client_errors = on_first_use("qdrant_client.common.client_exceptions", "qdrant")
_http_errors = on_first_use("qdrant_client.http.exceptions", "qdrant")

if TYPE_CHECKING:
    from vx_eval.plugins.engines.qdrant import QdrantOptions

WORD = re.compile(r"\w+", re.UNICODE)
K1, B = 1.2, 0.75


# ---------------------------------------------------------------------------------------------- BM25 terms


_STEMMER: Any = None


def terms(text: str) -> list[str]:
    """Lower-cased, Snowball-stemmed words, stop words dropped."""
    global _STEMMER
    if _STEMMER is None:
        _STEMMER = need("Stemmer", "qdrant").Stemmer("english")
    words = [w.lower() for w in WORD.findall(text)]
    return _STEMMER.stemWords([w for w in words if w not in STOPWORDS])


def term_id(term: str) -> int:
    return zlib.crc32(term.encode("utf-8")) & 0x7FFFFFFF


def bm25_documents(bodies: Sequence[str]) -> list[tuple[list[int], list[float]]]:
    """Each body's BM25 term weights without IDF (Qdrant's IDF modifier supplies it): tf saturated by k1, b."""
    counted = [Counter(terms(b)) for b in bodies]
    lengths = [sum(c.values()) for c in counted]
    average = (sum(lengths) / len(lengths)) if lengths else 1.0
    out = []
    for counts, length in zip(counted, lengths, strict=True):
        norm = K1 * (1 - B + B * length / (average or 1.0))
        merged: dict[int, float] = {}
        for term, tf in counts.items():
            merged[term_id(term)] = merged.get(term_id(term), 0.0) + tf * (K1 + 1) / (tf + norm)
        out.append((list(merged), list(merged.values())))
    return out


def bm25_query(text: str) -> tuple[list[int], list[float]]:
    ids = sorted({term_id(t) for t in terms(text)})
    return ids, [1.0] * len(ids)


def point_id(chunk_id: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"vx-eval:{chunk_id}"))


# ---------------------------------------------------------------------------------------------- calls


_TIMEOUTS = {"ReadTimeout", "ConnectTimeout", "WriteTimeout", "PoolTimeout", "RemoteProtocolError", "ReadError"}


def _cause(exc: BaseException) -> str:
    """The transport's own error under qdrant-client's (it wraps httpx's in `.source`)."""
    return type(getattr(exc, "source", None) or exc.__cause__ or exc).__name__


def policy(options: QdrantOptions, target: str, where: str) -> RemotePolicy:
    """qdrant-client's errors (a server's; local mode raises none of them): 429 and 502-504, timeouts and
    dropped connections tried again, 401/403 refused at once, a server that cannot be reached said once."""

    return RemotePolicy(
        target=target,
        where=where,
        retries=options.retries,
        errors=(
            _http_errors.ApiException,
            _http_errors.ResponseHandlingException,
            _client_errors.QdrantException,
        ),  # a 429 with Retry-After: the last
        transient=lambda exc: (
            isinstance(exc, _client_errors.ResourceExhaustedResponse)
            or getattr(exc, "status_code", None) in (429, 502, 503, 504)
            or _cause(exc) in _TIMEOUTS
        ),
        refused=lambda exc: getattr(exc, "status_code", None) in (401, 403),
        unreachable=lambda exc: _cause(exc) == "ConnectError",
        already_exists=lambda exc: getattr(exc, "status_code", None) == 409,
        credentials="the request",
        check="check the api_key the target names",
    )


def fingerprint_of(call: Caller, name: str) -> str | None:
    return (call("get_collection", name).config.metadata or {}).get("fingerprint")


DOING = {
    "collection_exists": "looking up collection {}",
    "get_collection": "reading collection {}",
    "delete_collection": "deleting collection {}",
    "create_collection": "creating collection {}",
    "create_payload_index": "indexing the doc_id field of {}",
    "upsert": "writing chunks to {}",
    "update_collection": "writing the fingerprint of {}",
    "query_points": "searching",
    "retrieve": "reading passages from {}",
    "scroll": "listing documents of {}",
}
"""What each client call is doing, for the error when it fails; the collection name fills the braces."""


class Caller:
    """Client calls by name, every one under the remote policy."""

    def __init__(self, client: Any, policy: RemotePolicy) -> None:
        self.client = client
        self.policy = policy

    def _what(self, method: str, args: tuple[Any, ...]) -> str:
        return DOING.get(method, method.replace("_", " ")).format(args[0] if args else "")

    def __call__(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self.policy(self._what(method, args), lambda: getattr(self.client, method)(*args, **kwargs))

    def create(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self.policy.create(self._what(method, args), lambda: getattr(self.client, method)(*args, **kwargs))
