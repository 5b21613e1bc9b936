"""Golden files from other tools' formats: Amazon Bedrock's evaluation conversations.

(BEIR folders and TREC topics + qrels are read in `sources`.) Each importer gives golden JSONL bytes, or one
`GoldenError` that names the line and what is wrong.
"""

from __future__ import annotations

from typing import Any

from vx_eval.core.config.jsonio import JsonInputError, jsonl_lines, read_json
from vx_eval.core.errors import GoldenError
from vx_eval.core.golden.files import dump_rows


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
    for number, line in enumerate(jsonl_lines(raw.decode("utf-8-sig")), start=1):
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
