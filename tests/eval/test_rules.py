"""docs/accuracy.md's extraction and scoring rules, one case per rule."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from eval import EvalError
from eval.rules import (
    action_score,
    command_actions,
    default_rules,
    intent_score,
    load_rules,
    message_actions,
    model_intent,
    tool_call_command,
)


def bash(command: str, key: str = "command", name: str = "bash") -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps({key: command})}}


# ---------------------------------------------------------------- bash actions


@pytest.mark.parametrize(
    ("command", "actions"),
    [
        ("grep -rn 'a|b' src | head -5", ["grep", "head"]),  # a quoted pipe does not split
        ('echo "x; rm -rf /" && ls', ["ls"]),  # quoted separator; echo is not in the table
        ("cat `which python` ; wc -l f", ["cat", "wc"]),  # backquoted span blanked
        ('grep "say \\"hi\\" | x" f', ["grep"]),  # escaped quotes inside double quotes
        ("VAR=1 python3.11 -m pytest", ["python"]),  # env assignment dropped, version suffix stripped
        ("A=1 B=2 pytest -q", ["pytest"]),  # several assignments
        ("cd x && sudo make", ["make"]),  # cd unknown, sudo wrapper dropped
        ("env FOO=bar time nice python -c 1", ["python"]),  # wrappers and assignments interleaved
        ("exec command git status", ["git"]),
        ("/usr/bin/Python3 x.py", ["python"]),  # basename and lowercase
        ("pip3.10 install -e .", ["pip"]),  # one-component version suffix
        ("python2.7.18 setup.py", ["python"]),  # two-component version suffix
        ("ls\nfind . -name x || true", ["ls", "find", "true"]),  # newline and || separators
        ("a; b; c", []),  # unknown commands ignored
        ("egrep x f; fgrep y f; rg z; ag w", ["grep", "grep", "grep", "grep"]),
        ("less f; more g", ["cat", "cat"]),
        ("wget http://h/x; apt-get install y; locate z", ["curl", "apt", "find"]),
        ("source venv/bin/activate; . env.sh", ["source", "source"]),
        ("sphinx-build -b html . out; sphinx-quickstart", ["sphinx", "sphinx"]),
        ("gawk '{print}' f", ["awk"]),
        ("sudo -E make", []),  # options after a wrapper are not skipped (reference behaviour)
        ("", []),
    ],
)
def test_command_actions(command: str, actions: list[str]) -> None:
    assert command_actions(command) == actions


def test_cmd_key_is_the_fallback() -> None:
    assert message_actions([bash("git diff", key="cmd")]) == ["git"]
    call = {"function": {"name": "bash", "arguments": {"command": "", "cmd": "ls"}}}  # dict arguments accepted
    assert tool_call_command(call) == "ls"


def test_only_bash_calls_with_readable_arguments_count() -> None:
    broken = {"function": {"name": "bash", "arguments": "{not json"}}
    other = bash("ls", name="str_replace_editor")
    assert message_actions([broken, other, "junk", bash("ls")]) == ["ls"]
    assert message_actions(None) == []


def test_actions_of_several_calls_keep_order() -> None:
    assert message_actions([bash("ls"), bash("cat a | grep b")]) == ["ls", "cat", "grep"]


# ---------------------------------------------------------------- action score


def test_action_score_is_multiset_intersection_over_union() -> None:
    assert action_score(["ls", "grep"], ["ls", "grep"]) == 1.0
    assert action_score(["grep", "grep"], ["grep"]) == 0.5  # multiset: {grep:2} vs {grep:1}
    assert action_score(["cat", "grep"], ["grep", "sed"]) == pytest.approx(1 / 3)


def test_no_model_action_scores_zero_and_no_recorded_action_is_excluded() -> None:
    assert action_score([], ["ls"]) == 0.0
    assert action_score(["ls"], []) is None


# ---------------------------------------------------------------- intents


def test_intent_in_reasoning_wins_over_content() -> None:
    assert model_intent("intent: I010", "intent: I020") == "I010"


def test_intent_in_content_when_reasoning_has_none() -> None:
    assert model_intent("thinking about it", "intent: I020 sure") == "I020"


def test_explicit_intent_is_case_insensitive_and_upper_cased() -> None:
    assert model_intent(None, "Intent:  i042") == "I042"


def test_explicit_intent_beats_a_bare_code_even_in_content() -> None:
    assert model_intent("maybe I001", "intent: I002") == "I002"


def test_several_bare_codes_give_the_last_one() -> None:
    assert model_intent(None, "I001 or I002, finally I003.") == "I003"


def test_bare_codes_in_reasoning_before_content() -> None:
    assert model_intent("I005", "I006") == "I005"


def test_bare_code_must_be_upper_case_and_a_whole_word() -> None:
    assert model_intent(None, "i042 XI0421 I04") is None


def test_no_intent() -> None:
    assert model_intent(None, None) is None
    assert intent_score(None, ["I001"]) == 0.0


def test_intent_score_is_set_membership() -> None:
    assert intent_score("I042", ["i042", "I001"]) == 1.0
    assert intent_score("I043", ["I042"]) == 0.0


# ---------------------------------------------------------------- data


def test_domain_rule() -> None:
    r = default_rules()
    assert r.domain("sim_017") == "workflow"
    assert r.domain("sim_x") == "coding"
    assert r.domain("django__django-16899") == "coding"


def test_default_rules_are_versioned_and_hashed() -> None:
    d = default_rules().describe()
    assert d["version"] and len(d["sha256"]) == 64 and d["source"] == "default"


def test_custom_rules_file_changes_the_alias_table(tmp_path) -> None:
    raw = json.loads(_default_text())
    raw["aliases"]["cd"] = "cd"
    raw["version"] = "local-1"
    p = tmp_path / "rules.json"
    p.write_text(json.dumps(raw))
    r = load_rules(p)
    assert command_actions("cd x && make", r) == ["cd", "make"]
    assert r.describe()["version"] == "local-1"


def test_broken_rules_file_names_what_is_missing(tmp_path) -> None:
    p = tmp_path / "rules.json"
    p.write_text('{"version": "x"}')
    with pytest.raises(EvalError, match=re.escape("rules.json: scoring rules lack workflow_id_regex")):
        load_rules(p)
    p.write_text("{")
    with pytest.raises(EvalError, match=re.escape("rules.json:1: scoring rules are not valid JSON")):
        load_rules(p)


def _default_text() -> str:
    from importlib import resources

    return resources.files("eval").joinpath("data/scoring.json").read_text("utf-8")
