"""`traces show`: the exact request body of one turn, as replay will send it, with the request
parameters of the profile the shards were built for unless another is asked for."""

from __future__ import annotations

from typing import Any

from ..errors import ShardError
from ..profiles import Profile, get_profile, profiles
from ..requests import request_body
from .reader import Shards, iter_prompts

#: The profile shown when the shards do not say which model they were built for.
DEFAULT_PROFILE = "kimi-k3"


def uses_tokenizer(profile: Profile, tokenizer: str) -> bool:
    """Whether shards counted with `tokenizer` (the manifest's name of it) were counted for
    `profile`: the same tokenizer kind (`kimi`, `qwen3.6`), or a local model folder (`hf:NAME`)
    named like the profile's served model."""
    kind, _, folder = tokenizer.partition(":")
    if kind == "hf":  # a model folder's name, or a Hub id ORG/NAME[@REVISION] from the local cache
        name = folder.partition("@")[0].rpartition("/")[2]
        return name.lower() == profile.served_model_name.rpartition("/")[2].lower()
    return kind == profile.tokenizer.partition(":")[0]


def shards_profile(shards: Shards, *, quiet_without_tokenizer: bool = False) -> tuple[Profile, str | None]:
    """The default profile of `traces show` and `replay run`: the one the shards' token columns
    were counted for, and a one-line note when the shards do not name exactly one (then
    `DEFAULT_PROFILE`, or the first of the candidates). `quiet_without_tokenizer`: no note for
    shards built without a tokenizer (a replay's usual case; the run records its profile)."""
    tok = shards.manifest.tokenizer
    how = "choose another with --profile (`trajbench profiles` lists them)"
    if tok is None:
        return get_profile(DEFAULT_PROFILE), None if quiet_without_tokenizer else (
            f"the shards do not say which model they were built for (built without --tokenizer); "
            f"showing the {DEFAULT_PROFILE} profile's request; {how}"
        )
    found = [p for p in profiles().values() if uses_tokenizer(p, tok.name)]
    if len(found) == 1:
        return found[0], None
    if not found:
        return get_profile(DEFAULT_PROFILE), (
            f"no profile uses the tokenizer the shards were counted with ({tok.name}); "
            f"showing the {DEFAULT_PROFILE} profile's request; {how}"
        )
    names = [p.name for p in found]
    chosen = DEFAULT_PROFILE if DEFAULT_PROFILE in names else names[0]
    return get_profile(chosen), (
        f"the shards' tokenizer ({tok.name}) is shared by the profiles {', '.join(names)}; "
        f"showing the {chosen} profile's request; {how}"
    )


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
