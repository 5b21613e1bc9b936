"""Retrievers given from Python, searched like any engine: a function, an object with a ``search`` method, a
LangChain retriever, a LlamaIndex retriever, or an engine handle opened by the caller.

Each becomes one target with one setup (`RETRIEVER`): its own ranking, timed as a caller sees it. Whatever
it returns is read as hits: a `Hit`, an ``(id, score)`` pair, a bare id (scored by its place), a mapping with
``id`` (and ``score``, ``text``), a LangChain ``Document`` or a LlamaIndex ``NodeWithScore``. The text a
result carries is kept, so the run's rerankers can read it. An ``async def`` retriever is awaited on one
event loop of its own, as many at once as the run's executor searches.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from vx_eval import hookimpl
from vx_eval.plugin import (
    PASSAGES,
    RERANKER_PREFIX,
    RETRIEVER,
    Document,
    EngineError,
    EngineHandle,
    Hit,
    Query,
    TargetDescription,
    quoted,
)

TEXT = "text"
"""Where a hit keeps the text its retriever returned (`Hit.fields`), for rerankers."""


class RetrieverHandle:
    """An `EngineHandle` over a function from (question, k) to results: the one ranking it gives."""

    def __init__(
        self,
        name: str,
        fetch: Callable[[str, int], Any],
        *,
        kind: str,
        id_field: str = "id",
        described: str = "",
        rerank: str | None = None,
    ) -> None:
        self.name, self.fetch, self.kind, self.id_field = name, fetch, kind, id_field
        self.described, self.rerank = described, rerank
        self._loop: _Loop | None = None

    def capabilities(self) -> frozenset[str]:
        extra = {RERANKER_PREFIX + self.rerank} if self.rerank else set()
        return frozenset({RETRIEVER, PASSAGES, *extra})

    def describe(self) -> TargetDescription:
        return TargetDescription(collection=self.name, version=self.described or None, details={"adapter": self.kind})

    def search(self, query: Query) -> list[Hit]:
        found = self.fetch(query.text, query.k)
        if inspect.isawaitable(found):
            if self._loop is None:
                self._loop = _Loop()
            found = self._loop.run(found)
        if found is None:
            return []
        return [self._hit(item, rank) for rank, item in enumerate(list(found)[: query.k], start=1)]

    def _hit(self, item: Any, rank: int) -> Hit:
        """One result as a hit; the place scores it where the retriever gives no score (1 / place)."""
        if isinstance(item, Hit):
            return item
        if isinstance(item, str | int):
            return Hit(str(item), 1.0 / rank)
        if isinstance(item, tuple) and len(item) == 2:
            return Hit(str(item[0]), float(item[1]))
        if isinstance(item, Mapping) and self.id_field in item:
            text = item.get(TEXT)
            return Hit(str(item[self.id_field]), _score(item.get("score"), rank), fields=_text(text))
        node = getattr(item, "node", None)
        if node is not None and hasattr(item, "score"):  # LlamaIndex: NodeWithScore
            return Hit(self._node_id(node), _score(item.score, rank), fields=_text(_content(node)))
        if hasattr(item, "page_content"):  # LangChain: Document
            return Hit(
                self._document_id(item),
                _score((item.metadata or {}).get("score"), rank),
                fields=_text(item.page_content),
            )
        raise EngineError(
            f"{self.name} returned {type(item).__name__} {quoted(repr(item)[:60])}: return Hit, (id, score), an id, "
            f"a mapping with {quoted(self.id_field)}, a LangChain Document or a LlamaIndex NodeWithScore"
        )

    def _document_id(self, document: Any) -> str:
        metadata = document.metadata or {}
        if self.id_field in metadata:
            return str(metadata[self.id_field])
        if getattr(document, "id", None):
            return str(document.id)
        raise EngineError(
            f"{self.name} returned a LangChain Document with no id: set Document.id, or name the metadata field "
            f"that holds it (id_field, now {quoted(self.id_field)})"
        )

    def _node_id(self, node: Any) -> str:
        metadata = getattr(node, "metadata", None) or {}
        if self.id_field in metadata:
            return str(metadata[self.id_field])
        return str(getattr(node, "ref_doc_id", None) or node.node_id)

    def passages(self, hits: Sequence[Hit]) -> list[str]:
        return [str(h.fields.get(TEXT) or "") for h in hits]

    def missing(self, doc_ids: Iterable[str]) -> set[str]:
        return set()  # a retriever lists nothing: what it cannot find, it does not return

    def document_ids(self) -> list[str]:
        return []

    def documents(self, doc_ids: Iterable[str]) -> list[Document]:
        return []

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None


class _Loop:
    """An event loop on a thread of its own, for awaiting a retriever's coroutines from any search thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="vx-eval-retriever-loop", daemon=True)
        self.thread.start()

    def run(self, awaitable: Awaitable[Any]) -> Any:
        async def wait() -> Any:
            return await awaitable

        return asyncio.run_coroutine_threadsafe(wait(), self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()


def _score(value: Any, rank: int) -> float:
    return float(value) if isinstance(value, int | float) and value == value else 1.0 / rank


def _text(text: Any) -> dict[str, Any]:
    return {TEXT: text} if isinstance(text, str) and text else {}


def _content(node: Any) -> str:
    get = getattr(node, "get_content", None)
    return str(get()) if callable(get) else str(getattr(node, "text", "") or "")


def _from(obj: Any, package: str, class_name: str) -> bool:
    """Whether `obj` is an instance of `package`'s `class_name` (by its class's ancestry: nothing imported)."""
    return any(
        c.__name__ == class_name
        and c.__module__.split(".")[0] == package.split(".")[0]
        and c.__module__.startswith(package)
        for c in type(obj).__mro__
    )


def _takes_k(fn: Callable[..., Any]) -> bool:
    """Whether a function takes the number of results as well as the question."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in parameters)


def _options(options: Mapping[str, Any]) -> dict[str, Any]:
    """What a retriever target may set: ``id_field`` (where results keep their ids) and ``rerank`` (a
    cross-encoder to rerank its results with, a second setup)."""
    unknown = set(options) - {"id_field", "rerank"}
    if unknown:
        raise EngineError(f"unknown retriever option {quoted(sorted(unknown)[0])}; options: id_field, rerank")
    return {"id_field": str(options.get("id_field", "id")), "rerank": options.get("rerank")}


def _describe(obj: Any) -> str:
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


class HandleAdapter:
    """An engine handle the caller opened (any registered engine, opened from Python): searched as it is."""

    name: ClassVar[str] = "handle"

    def accepts(self, obj: Any) -> bool:
        return isinstance(obj, EngineHandle)

    def handle(self, obj: Any, name: str, options: Mapping[str, Any]) -> EngineHandle:
        if options.get("rerank") or options.get("id_field", "id") != "id":
            raise EngineError(f"{name} is an engine handle: its setups come from its capabilities, not options")
        return _Borrowed(obj)


class _Borrowed:
    """A caller's handle, which the run searches but does not close (its owner does)."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        engine = getattr(handle, "engine", None)  # `vx_eval.open_engine` names it
        self.kind = engine if isinstance(engine, str) else "handle"

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    def capabilities(self) -> frozenset[str]:
        return self._handle.capabilities()

    def search(self, query: Query) -> list[Hit]:
        return self._handle.search(query)

    def close(self) -> None:
        return None


class LangChainAdapter:
    """A LangChain retriever (``langchain_core.retrievers.BaseRetriever``): ``invoke(question)``, its
    documents' ids from ``Document.id`` or the metadata field `id_field` names."""

    name: ClassVar[str] = "langchain"

    def accepts(self, obj: Any) -> bool:
        return _from(obj, "langchain_core", "BaseRetriever")

    def handle(self, obj: Any, name: str, options: Mapping[str, Any]) -> EngineHandle:
        if isinstance(getattr(obj, "search_kwargs", None), dict):  # a vector store's retriever: ask for k
            fetch: Callable[[str, int], Any] = lambda text, k: obj.invoke(text, k=k)  # noqa: E731
        else:
            fetch = lambda text, k: obj.invoke(text)  # noqa: E731
        return RetrieverHandle(name, fetch, kind=self.name, described=_describe(obj), **_options(options))


class LlamaIndexAdapter:
    """A LlamaIndex retriever (``llama_index.core`` ``BaseRetriever``): ``retrieve(question)``, each node's id
    from the metadata field `id_field` names, else its source document's id, else the node's."""

    name: ClassVar[str] = "llamaindex"

    def accepts(self, obj: Any) -> bool:
        return _from(obj, "llama_index.core", "BaseRetriever")

    def handle(self, obj: Any, name: str, options: Mapping[str, Any]) -> EngineHandle:
        return RetrieverHandle(
            name, lambda text, k: obj.retrieve(text), kind=self.name, described=_describe(obj), **_options(options)
        )


class SearchMethodAdapter:
    """Any object with a ``search(question, k)`` method (a client for your own service)."""

    name: ClassVar[str] = "search-method"

    def accepts(self, obj: Any) -> bool:
        return callable(getattr(obj, "search", None)) and not isinstance(obj, type)

    def handle(self, obj: Any, name: str, options: Mapping[str, Any]) -> EngineHandle:
        search = obj.search
        fetch = search if _takes_k(search) else (lambda text, k: search(text))
        return RetrieverHandle(name, fetch, kind=self.name, described=_describe(obj), **_options(options))


class CallableAdapter:
    """A function ``search(question, k)`` (or ``search(question)``), plain or ``async``."""

    name: ClassVar[str] = "callable"

    def accepts(self, obj: Any) -> bool:
        return callable(obj) and not isinstance(obj, type)

    def handle(self, obj: Any, name: str, options: Mapping[str, Any]) -> EngineHandle:
        fetch = obj if _takes_k(obj) else (lambda text, k: obj(text))
        label = getattr(obj, "__qualname__", None) or _describe(obj)
        return RetrieverHandle(name, fetch, kind=self.name, described=label, **_options(options))


@hookimpl
def vx_eval_register_adapters(register):
    for adapter in (HandleAdapter, LangChainAdapter, LlamaIndexAdapter, SearchMethodAdapter, CallableAdapter):
        register.add(adapter)
