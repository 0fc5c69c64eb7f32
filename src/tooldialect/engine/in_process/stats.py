"""``LlamaCppStats``: what only the in-process engine measures about one generation
(``GenerationResult.stats``), for tests, benchmarks and its users; nothing above the engine
reads it."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["LlamaCppStats"]


@dataclass
class LlamaCppStats:
    """The in-process engine's account of one generation (complete once it has been consumed)."""

    prefix_tokens: int = 0
    """Tokens of the prompt's tool prefix (0: none, or the engine keeps no checkpoints)."""
    checkpoint: str = ""
    """What the tool-prefix checkpoint did: ``"loaded"`` (the prefix was not decoded),
    ``"kept"`` (it was decoded and stays live, saved once a later prompt would overwrite it),
    ``"saved"`` (it was decoded and saved at once: memory that cannot be cut back), ``""``
    (neither: the KV cache already held it, or no store wants it)."""
    grammar_resamples: int = 0
    """Steps where the grammar rejected the freely sampled token and the step was resampled."""
    forced_tokens: int = 0
    """Completion tokens fast-forwarded (appended because the grammar forced them), not sampled."""
    forced_positions: list[int] = field(default_factory=list)
    """1-based completion-token positions that were forced (for per-token records: logprobs)."""
    draft_proposed: int = 0
    """Prompt-lookup draft tokens decoded (``drafts``)."""
    draft_accepted: list[int] = field(default_factory=list)
    """Draft tokens the sampler chain agreed with, per drafted batch (their sum is the tokens
    that took no step of their own)."""

    def then(self, later: LlamaCppStats, *, tokens_before: int) -> LlamaCppStats:
        """This account followed by a ``later`` run's, as one (a steered reply's runs): counts
        add up, ``later``'s forced positions move past the ``tokens_before`` decoded before it,
        the prompt's prefix account stays this first run's."""
        return LlamaCppStats(
            prefix_tokens=self.prefix_tokens,
            checkpoint=self.checkpoint,
            grammar_resamples=self.grammar_resamples + later.grammar_resamples,
            forced_tokens=self.forced_tokens + later.forced_tokens,
            forced_positions=[
                *self.forced_positions,
                *(p + tokens_before for p in later.forced_positions),
            ],
            draft_proposed=self.draft_proposed + later.draft_proposed,
            draft_accepted=[*self.draft_accepted, *later.draft_accepted],
        )
