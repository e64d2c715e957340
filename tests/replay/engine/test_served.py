"""The model name a run sends, settled from the endpoint's own list (replay.engine.served): given,
the profile's, the endpoint's only model, or none guessed among several."""

from __future__ import annotations

import pytest

from replay.engine import ModelChoice, ModelNotServed, choose_model

URL = "http://127.0.0.1:8000"
PROFILE = "moonshotai/Kimi-K3"


@pytest.mark.parametrize(
    ("asked", "served", "name", "source"),
    [
        ("mine", ("a",), "mine", "option"),  # --model is sent as given, whatever is listed
        ("mine", ("a", "b"), "mine", "option"),
        (None, None, PROFILE, "profile"),  # no list: the engine's answer decides
        (None, (), PROFILE, "profile"),
        (None, ("other", PROFILE), PROFILE, "profile"),  # listed among others
        (None, ("SmolLM2-135M-Instruct",), "SmolLM2-135M-Instruct", "served"),  # the only one
    ],
)
def test_the_name_and_how_it_was_settled(
    asked: str | None, served: tuple[str, ...] | None, name: str, source: str
) -> None:
    choice = choose_model(asked, PROFILE, served, endpoint=URL)
    assert (choice.name, choice.source, choice.profile_name) == (name, source, PROFILE)


def test_among_several_none_is_guessed_and_all_are_listed_up_to_ten() -> None:
    served = tuple(f"m{i}" for i in range(12))
    with pytest.raises(ModelNotServed) as refused:
        choose_model(None, PROFILE, served, endpoint=URL)
    assert str(refused.value) == (
        f"{URL} does not serve the profile's model name 'moonshotai/Kimi-K3'; it serves 12 models "
        "(m0, m1, m2, m3, m4, m5, m6, m7, m8, m9 …): pass --model NAME with the one to measure"
    )
    # a run started with --skip-preflight keeps the profile's name: each turn's answer says the rest
    assert choose_model(None, PROFILE, served, endpoint=URL, strict=False) == ModelChoice(PROFILE, "profile", PROFILE)
