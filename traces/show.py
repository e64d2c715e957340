"""`traces show`: the exact request body of one turn, as replay will send it."""

from __future__ import annotations

from typing import Any

from .errors import ShardError
from .profiles import Profile
from .request import request_body
from .shards import Shards, iter_prompts


def turn_body(
    shards_dir: str, trajectory_id: str, repeat: int, turn: int, profile: Profile, *, model: str | None = None
) -> dict[str, Any]:
    shards = Shards(shards_dir)
    instance = shards.find(trajectory_id, repeat)
    for prompt in iter_prompts(instance):
        if prompt.row.turn == turn:
            return request_body(prompt.messages, prompt.tools, profile, model=model)
    turns = [t.turn for t in instance.turns]
    raise ShardError(
        f"{trajectory_id} repeat {repeat}: turn {turn} is not a client turn; client turns are {turns[:8]}{' …' if len(turns) > 8 else ''}"
    )
