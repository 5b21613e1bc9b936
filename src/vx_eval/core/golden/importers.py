"""Golden files from other tools' formats: Amazon Bedrock's evaluation conversations, TREC topics + qrels.

(BEIR folders are read in `sources`.) Each importer gives golden JSONL bytes, or one `GoldenError` that
names the line and what is wrong.
"""

from __future__ import annotations

import re
from typing import Any

from vx_eval.core.config.jsonio import JsonInputError, read_json
from vx_eval.core.errors import GoldenError
from vx_eval.core.golden.files import LeftOut, dump_rows
from vx_eval.core.golden.sources import left_out_of, read_qrels


def _texts(block: Any) -> str:
    """The text of a Bedrock ``{"content": [{"text": …}, …]}`` block, its parts joined."""
    if not isinstance(block, dict) or not isinstance(block.get("content"), list):
        raise ValueError('expected {"content": [{"text": …}]}')
    return "\n".join(str(part.get("text", "")) for part in block["content"] if isinstance(part, dict)).strip()


def bedrock_golden_bytes(raw: bytes, source: str) -> tuple[bytes, int]:
    """Amazon Bedrock's evaluation dataset (one conversation a line, ``conversationTurns`` of ``prompt`` and
    ``referenceResponses``): a question per turn with its reference answer and no expected ids, so they are
    read and counted but not scored until somebody names the documents that answer them. Returns the
    golden bytes and how many questions."""
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(raw.decode("utf-8-sig").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = read_json(line)
            turns = data["conversationTurns"]
            if not isinstance(turns, list) or not turns:
                raise ValueError("conversationTurns is empty")
            for turn_no, turn in enumerate(turns, start=1):
                question = _texts(turn["prompt"])
                references = [_texts(r) for r in turn.get("referenceResponses") or []]
                row: dict[str, Any] = {
                    "id": f"bedrock-{number}" + (f"-{turn_no}" if len(turns) > 1 else ""),
                    "question": question,
                    "expected": [],
                    "reference": "\n\n".join(r for r in references if r) or None,
                }
                if len(turns) > 1:
                    row["metadata"] = {"conversation": number, "turn": turn_no}
                if not row["reference"]:
                    raise ValueError(f"turn {turn_no} has no referenceResponses text to keep it until it is labelled")
                rows.append(row)
        except JsonInputError as exc:
            raise GoldenError(f"{source}:{number}{f':{exc.column}' if exc.column else ''}: {exc.message}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise GoldenError(
                f"{source}:{number}: not a Bedrock evaluation conversation ({exc}); each line is "
                '{"conversationTurns": [{"prompt": {"content": [{"text": …}]}, "referenceResponses": […]}]}'
            ) from None
    if not rows:
        raise GoldenError(f"{source} holds no conversation")
    return dump_rows(rows), len(rows)


TOP = re.compile(r"<top>(.*?)</top>", re.S | re.I)
FIELD = re.compile(r"<(num|title|desc|narr)>(.*?)(?=<(?:num|title|desc|narr)>|$)", re.S | re.I)
CLOSING = re.compile(r"</\w+>")  # some collections close each field (Vaswani: <num>1</num>)
LABEL = re.compile(r"^\s*(number|description|narrative)\s*:\s*", re.I)


def read_topics(text: str, source: str, field: str = "title") -> dict[str, str]:
    """TREC topics: the classic ``<top> <num> <title> <desc> <narr> </top>`` format, or ``qid<TAB>text``
    lines (as TREC Deep Learning ships them). `field` picks title or desc from the classic format."""
    topics: dict[str, str] = {}
    if "<top>" in text.lower():
        for number, block in enumerate(TOP.findall(text), start=1):
            fields = {
                name.lower(): LABEL.sub("", " ".join(CLOSING.sub(" ", value).split()))
                for name, value in FIELD.findall(block)
            }
            if "num" not in fields or not fields.get(field):
                raise GoldenError(f"{source}: topic {number} has no <num> or no <{field}>")
            topics[fields["num"].strip()] = fields[field].strip()
        return topics
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        qid, sep, query = line.partition("\t")
        if not sep or not query.strip():
            raise GoldenError(f"{source}:{number}: a topic line is 'id<TAB>text' (or use the <top> format)")
        topics[qid.strip()] = query.strip()
    return topics


def trec_golden_bytes(
    topics_text: str, qrels_text: str, topics_source: str, qrels_source: str, field: str = "title"
) -> tuple[bytes, tuple[LeftOut, ...]]:
    """TREC topics + qrels: grade > 0 is expected, other grades kept in `grades`; topics no judgement
    finds relevant are left out (they could not be scored). Returns the golden bytes and what was left out."""
    topics = read_topics(topics_text, topics_source, field)
    qrels = read_qrels(qrels_text, qrels_source)
    rows = []
    for qid, text in topics.items():
        judged = qrels.get(qid, {})
        expected = [doc for doc, grade in judged.items() if grade > 0]
        if expected:
            rows.append(
                {
                    "id": qid,
                    "question": text,
                    "expected": expected,
                    "grades": {d: g for d, g in judged.items() if g != 1},
                }
            )
    if not rows:
        raise GoldenError(
            f"no topic of {topics_source} has a relevant judgement in {qrels_source}; are they the same track?"
        )
    return dump_rows(rows), left_out_of(topics, qrels, qrels_source, topics_source)
