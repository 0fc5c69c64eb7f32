"""The prompt decode: what the KV cache lacks of a prompt, as ``Llama.generate`` decodes it, and
the tool-prefix checkpoints around it (``checkpoints``: kept live, saved before a prompt would
overwrite the prefix, loaded when a prompt falls short of it)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from .checkpoints import MIN_PREFIX_TOKENS, PrefixPoint, memory_cuts, prefix_key
from .prompt_cache import capture_state, common_prefix, load_captured

__all__ = ["PREFIXES_KEPT", "PromptDecoder"]

PREFIXES_KEPT = 8
"""Tool prefixes whose tokens are kept (a prefix text is tens of KB with many tools)."""


class PromptDecoder:
    """The engine's prompt decode (a base of ``generate.LlamaDecoder``, which sets these
    attributes)."""

    llama: Any
    _prefixes: OrderedDict[str, list[int]]
    """Tokens of recent tool prefixes (a prefix is tokenized once, not per request)."""
    _live: PrefixPoint | None = None
    """The tool prefix the KV cache holds, saved only once a prompt would overwrite it."""
    _cuts: bool | None = None
    """Whether the memory can be cut back partway (``memory_cuts``; ``None``: not asked)."""

    def tokenize_prompt(self, prompt: str) -> list[int]:
        """Tokens of a rendered prompt: special tokens parsed, one BOS when the model wants it."""
        llama = self.llama
        tokens: list[int] = llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        bos = int(llama.token_bos())
        if bos >= 0 and llama._model.add_bos_token() and (not tokens or tokens[0] != bos):
            tokens.insert(0, bos)
        return tokens

    def prefix_length(self, prefix: str, tokens: Sequence[int]) -> int:
        """How many of ``tokens`` are the tokens of ``prefix`` (a head of their text): the
        tokens both tokenizations share, short of the last prompt token (whose logits are
        sampled from), 0 below ``MIN_PREFIX_TOKENS``."""
        if not prefix:
            return 0
        head = self._prefixes.get(prefix)
        if head is None:
            head = self.tokenize_prompt(prefix)
            self._prefixes[prefix] = head
            while len(self._prefixes) > PREFIXES_KEPT:
                self._prefixes.popitem(last=False)
        else:
            self._prefixes.move_to_end(prefix)
        n = min(common_prefix(head, tokens), len(tokens) - 1)
        return n if n >= MIN_PREFIX_TOKENS else 0

    def _keep_live_prefix(self, tokens: Sequence[int]) -> None:
        """Before ``tokens`` overwrite the tool prefix the KV cache holds (they leave it before
        its end), cut the KV back to the prefix's end and save its state (see ``checkpoints``)."""
        live = self._live
        if live is None:
            return
        llama = self.llama
        ids = llama._input_ids
        if common_prefix(ids, tokens) >= live.length:
            return  # the prefix stays live
        self._live = None
        if len(ids) < live.length or prefix_key(ids[: live.length]) != live.key:
            return  # something else overwrote it (a plain completion): not ours to save
        if not live.store.wants(live.key):
            return
        if not llama._ctx.kv_cache_seq_rm(-1, live.length, -1):
            self._cuts = False  # save when decoded from now on
            return
        llama.n_tokens = live.length
        live.store.put(live.key, capture_state(llama))

    def _memory_cuts(self) -> bool:
        if self._cuts is None:
            self._cuts = memory_cuts(self.llama)
        return self._cuts

    def _decode_prompt(self, tokens: Sequence[int], point: PrefixPoint | None = None) -> int:
        """Decode what the KV cache lacks of ``tokens`` as ``Llama.generate`` would; returns the
        number of tokens decoded. With a checkpoint ``point`` (the tool prefix's length and
        store), a KV cache that falls short of the prefix loads its saved state instead of
        decoding it, or decodes it and keeps it (live, or saved where memory cannot be cut)."""
        llama = self.llama
        self._keep_live_prefix(tokens)
        # keep at least one token to decode: its logits are what we sample from
        reuse = min(common_prefix(llama._input_ids, tokens), len(tokens) - 1)
        # (a KV cache a few tokens short of the prefix decodes them: cheaper than a state copy)
        if (
            point is not None
            and point.length - reuse >= MIN_PREFIX_TOKENS
            and self._load_checkpoint(point)
        ):
            reuse = point.length
        elif reuse > 0 and llama._ctx.kv_cache_seq_rm(-1, reuse, -1):
            llama.n_tokens = reuse
        else:
            reuse = 0
            llama.reset()
            if point is not None and self._load_checkpoint(point):
                reuse = point.length
        llama._requires_eval = True
        if point is None:
            llama.eval(list(tokens[reuse:]))
            return len(tokens) - reuse
        decoded = reuse < point.length and point.store.wants(point.key)
        if decoded and not self._memory_cuts():
            llama.eval(list(tokens[reuse : point.length]))
            if point.store.put(point.key, capture_state(llama)):
                point.stats.checkpoint = "saved"
            llama.eval(list(tokens[point.length :]))
        else:
            llama.eval(list(tokens[reuse:]))
            if decoded:
                point.stats.checkpoint = "kept"
        self._live = point
        return len(tokens) - reuse

    def _load_checkpoint(self, point: PrefixPoint) -> bool:
        state = point.store.get(point.key)
        if state is None:
            return False
        load_captured(self.llama, state)
        point.stats.checkpoint = "loaded"
        return True
