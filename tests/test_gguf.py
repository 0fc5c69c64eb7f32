"""ModelInfo from a GGUF header (tiny files written here, and the three real test models)."""

from __future__ import annotations

from pathlib import Path

import gguf
import pytest

from conftest import read_template
from tooldialect.errors import ModelMetadataError
from tooldialect.gguf import ModelInfo, read_gguf_metadata

TOKENS = ["<unk>", "<s>", "</s>", "hello", "wörld"]


def write_gguf(path: Path, *, template: str | None, named: dict[str, str] | None = None) -> None:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("Tiny Test")
    writer.add_context_length(4096)
    writer.add_token_list(TOKENS)
    writer.add_token_scores([0.0] * len(TOKENS))
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(4)
    if template is not None:
        writer.add_chat_template(template)
    for name, text in (named or {}).items():
        writer.add_string(f"tokenizer.chat_template.{name}", text)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_reads_a_written_header(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    write_gguf(path, template="{{ messages }}", named={"tool_use": "{{ tools }}", "rag": "R"})
    assert read_gguf_metadata(path) == ModelInfo(
        path=str(path),
        architecture="llama",
        name="Tiny Test",
        chat_template="{{ messages }}",
        chat_templates={"tool_use": "{{ tools }}", "rag": "R"},
        bos_token="<s>",
        eos_token="wörld",
        bos_token_id=1,
        eos_token_id=4,
        context_length=4096,
    )


def test_missing_template_is_none(tmp_path: Path) -> None:
    path = tmp_path / "none.gguf"
    write_gguf(path, template=None)
    info = read_gguf_metadata(path)
    assert (info.chat_template, info.chat_templates) == (None, {})


@pytest.mark.parametrize(
    "content",
    [None, b"", b"GGUF", b"not a gguf file at all, just text"],
    ids=["missing", "empty", "truncated", "not-gguf"],
)
def test_unreadable_file_quotes_path(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "bad.gguf"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ModelMetadataError, match=r"bad\.gguf"):
        read_gguf_metadata(path)


class FakeVocab:
    def token_get_text(self, token: int) -> str:
        return TOKENS[token]


class FakeLlama:
    """The seam ModelInfo.from_llama reads: metadata (strings only) plus the vocabulary."""

    model_path = "/models/tiny.gguf"
    _model = FakeVocab()

    def __init__(self) -> None:
        self.metadata: dict[str, str] = {
            "general.architecture": "llama",
            "general.name": "Tiny Test",
            "llama.context_length": "4096",
            "tokenizer.ggml.bos_token_id": "1",
            "tokenizer.ggml.eos_token_id": "4",
            "tokenizer.chat_template": "T",
            "tokenizer.chat_template.tool_use": "U",
        }

    def token_bos(self) -> int:
        return 1

    def token_eos(self) -> int:
        return 4


def test_from_llama_without_llama_cpp() -> None:
    assert ModelInfo.from_llama(FakeLlama()) == ModelInfo(
        path="/models/tiny.gguf",
        architecture="llama",
        name="Tiny Test",
        chat_template="T",
        chat_templates={"tool_use": "U"},
        bos_token="<s>",
        eos_token="wörld",
        bos_token_id=1,
        eos_token_id=4,
        context_length=4096,
    )


@pytest.mark.model
def test_smollm2(smollm2_path: Path) -> None:
    info = read_gguf_metadata(smollm2_path)
    assert info.chat_template == read_template("SmolLM2-135M-Instruct.jinja")
    assert (info.architecture, info.bos_token, info.eos_token) == (
        "llama",
        "<|im_start|>",
        "<|im_end|>",
    )
    assert info.context_length == 8192


@pytest.mark.model
def test_qwen(qwen_path: Path) -> None:
    info = read_gguf_metadata(qwen_path)
    assert info.chat_template == read_template("Qwen2.5-Coder-0.5B-Instruct.jinja")
    assert (info.architecture, info.eos_token, info.eos_token_id) == ("qwen2", "<|im_end|>", 151645)
    assert (info.bos_token, info.context_length) == ("<|endoftext|>", 32768)


@pytest.mark.model
def test_gemma3_has_no_template(gemma3_path: Path) -> None:
    info = read_gguf_metadata(gemma3_path)
    assert info.chat_template is None
    assert (info.architecture, info.bos_token, info.eos_token) == ("gemma3", "<bos>", "<eos>")


@pytest.mark.model
def test_from_llama_matches_header(qwen_path: Path) -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    llama = llama_cpp.Llama(str(qwen_path), vocab_only=True, verbose=False, n_threads=2)
    assert ModelInfo.from_llama(llama) == read_gguf_metadata(qwen_path)
