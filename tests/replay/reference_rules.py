"""The reference client's request rules, restated independently of trajbench's code, so the parity
tests compare what trajbench sends with what the rules derive from the source rows.

- the messages of client turn t: the system message (the first non-empty `system` in turn order),
  then every earlier row and the turn's own row; a tool row is one message per result, every other
  row one message; fields in the reference's message type order (role, content, name, tool_calls,
  tool_call_id, reasoning_content), absent or null fields left out;
- tools: the row's own, else those of the conversation's first user row;
- salt: "[salt: R]\\n\\n" + system + "\\n\\n[salt: C]" with R, C the 2-byte BLAKE2b hex of the
  repeat number and of the source id;
- bytes: compact JSON, UTF-8, keys in the order above and, inside values, the dataset's order.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

FIELDS = ("role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content")


def _blake(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=2).hexdigest()


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def read_rows(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Rows per conversation, in file order (json keeps each object's key order)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.setdefault(row["conversation_id"], []).append(row)
    return out


def expected_requests(
    rows_by_conv: dict[str, list[dict[str, Any]]], repeats: int = 1, *, salt: bool = True
) -> dict[tuple[str, int], tuple[bytes, bytes | None]]:
    """{(logical id, turn): (messages bytes, tools bytes or None)} of every client turn."""
    out: dict[tuple[str, int], tuple[bytes, bytes | None]] = {}
    for cid, unsorted in rows_by_conv.items():
        rows = sorted(unsorted, key=lambda r: r["turn"])
        system = next((r["system"] for r in rows if isinstance(r.get("system"), str) and r["system"]), None)
        first_user_tools = next((r.get("tools") for r in rows if r["role"] == "user"), None)
        for repeat in range(1, repeats + 1):
            history: list[dict[str, Any]] = []
            if system:
                content = f"[salt: {_blake(str(repeat))}]\n\n{system}\n\n[salt: {_blake(cid)}]" if salt else system
                history.append({"role": "system", "content": content})
            logical = cid if repeat == 1 else f"{cid}__repeat_{repeat}"
            for row in rows:
                if row["role"] == "tool":
                    msgs = [
                        {"role": "tool", "content": r["content"], "tool_call_id": r["tool_call_id"]}
                        for r in row["tool_results"]
                    ]
                else:
                    msgs = [{k: row[k] for k in FIELDS if row.get(k) is not None}]
                if row["role"] in ("user", "tool"):
                    tools = row.get("tools") if row.get("tools") is not None else first_user_tools
                    out[(logical, row["turn"])] = (dumps(history + msgs), None if tools is None else dumps(tools))
                history.extend(msgs)
    return out


def top_level_spans(body: bytes) -> dict[str, bytes]:
    """The exact bytes of each top-level value of a JSON object (the wire request body)."""
    text = body.decode("utf-8")
    decoder = json.JSONDecoder()
    spans: dict[str, bytes] = {}
    i = text.index("{") + 1
    while True:
        while text[i] in " \n\r\t,":
            i += 1
        if text[i] == "}":
            return spans
        key, i = decoder.raw_decode(text, i)
        i = text.index(":", i) + 1
        while text[i] in " \n\r\t":
            i += 1
        start = i
        _, i = decoder.raw_decode(text, i)
        spans[key] = text[start:i].encode("utf-8")
