"""Prompt-lookup drafts without a model: the matcher, and verification against a fake sampler."""

from __future__ import annotations

from typing import Any

import pytest

from tooldialect.engine.in_process import drafts
from tooldialect.engine.in_process.drafts import DraftOptions, PromptLookup, verify_draft
from tooldialect.errors import OptionError

PROMPT = [1, 10, 11, 12, 13, 14, 15, 2, 20, 11, 12, 30, 31, 99, 40]


def test_proposes_what_followed_the_matched_span() -> None:
    lookup = PromptLookup(PROMPT, options=DraftOptions(min_match=2, max_draft=3))
    assert lookup.propose([7, 13, 14], room=10) == [15, 2, 20]
    assert lookup.propose([7, 13, 14], room=2) == [15, 2]  # never more than the room


def test_no_draft_below_the_minimum_match() -> None:
    lookup = PromptLookup(PROMPT, options=DraftOptions(min_match=3))
    assert lookup.propose([5, 13, 14], room=8) == []  # only two tokens match
    assert lookup.propose([14], room=8) == []  # shorter than the minimum
    assert lookup.propose([12, 13, 14], room=8) == [15, 2, 20, 11, 12, 30, 31, 99]
    assert lookup.propose([12, 13, 14], room=0) == []


def test_picks_the_occurrence_sharing_the_longest_context() -> None:
    # "11 12" occurs twice: after 10 (then 13) and after 20 (then 30)
    lookup = PromptLookup(PROMPT, options=DraftOptions(min_match=2, max_draft=2))
    assert lookup.propose([10, 11, 12], room=5) == [13, 14]
    assert lookup.propose([20, 11, 12], room=5) == [30, 31]
    assert lookup.propose([0, 11, 12], room=5) == [30, 31]  # a tie goes to the latest


def test_a_stop_token_ends_the_draft() -> None:
    lookup = PromptLookup(PROMPT, options=DraftOptions(min_match=2), stop_tokens={99})
    assert lookup.propose([11, 12], room=8) == [30, 31]


def test_rejects_empty_options() -> None:
    with pytest.raises(ValueError, match="min_match"):
        PromptLookup(PROMPT, options=DraftOptions(min_match=0))


class FakeLlama:
    """What verify_draft reads of a Llama: its token count and the KV cache's removals."""

    def __init__(self, n_tokens: int) -> None:
        self.n_tokens = n_tokens
        self.removed: list[int] = []
        outer = self

        class Ctx:
            def kv_cache_seq_rm(self, seq: int, start: int, end: int) -> bool:
                outer.removed.append(start)
                return True

        self._ctx = Ctx()


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    batches: list[list[int]] = []

    def fake_decode(llama: Any, tokens: list[int], *, n_logits: int) -> bool:
        batches.append(list(tokens))
        llama.n_tokens += len(tokens)
        return True

    monkeypatch.setattr(drafts, "decode_with_logits", fake_decode)
    return batches


def run(
    llama: FakeLlama,
    pending: list[int],
    draft: list[int],
    model: list[int],
    forced: dict[int, list[int]] | None = None,
) -> Any:
    """Verify ``draft`` where the model's next tokens are ``model`` (by batch index after
    ``pending``) and the grammar forces ``forced[token]`` after a token."""
    taken: list[int] = []

    def sample(idx: int) -> int:
        return model[idx - (len(pending) - 1)]

    def take(token: int, accepted: int) -> list[int]:
        taken.append(token)
        return (forced or {}).get(token, [])

    verdict = verify_draft(llama, pending, draft, sample=sample, is_eog=lambda t: t == 0, take=take)
    return verdict, taken


def test_keeps_the_agreeing_prefix_and_samples_the_first_disagreement(
    decoded: list[list[int]],
) -> None:
    llama = FakeLlama(100)
    verdict, taken = run(llama, [5], [6, 7, 8, 9], model=[6, 7, 42, 43, 44])
    assert decoded == [[5, 6, 7, 8, 9]]
    assert verdict.emit == [6, 7, 42] and verdict.pending == [42] and verdict.accepted == 2
    assert taken == [6, 7, 42]
    assert llama.n_tokens == 103  # 5, 6, 7 stay; 8, 9 are dropped
    assert llama.removed == [103]


def test_a_fully_accepted_draft_samples_one_more(decoded: list[list[int]]) -> None:
    llama = FakeLlama(10)
    verdict, _ = run(llama, [5], [6, 7], model=[6, 7, 8])
    assert verdict.emit == [6, 7, 8] and verdict.pending == [8] and verdict.accepted == 2
    assert llama.n_tokens == 13 and llama.removed == []


def test_forced_text_after_a_kept_token_ends_the_draft(decoded: list[list[int]]) -> None:
    llama = FakeLlama(10)
    verdict, taken = run(llama, [5], [6, 7, 8], model=[6, 7, 8, 9], forced={6: [50, 51]})
    # 6 is kept (decoded), what the grammar forces after it is appended, not the draft's 7
    assert verdict.emit == [6, 50, 51] and verdict.pending == [50, 51] and verdict.accepted == 1
    assert taken == [6] and llama.n_tokens == 12


def test_an_end_token_ends_the_generation(decoded: list[list[int]]) -> None:
    llama = FakeLlama(10)
    verdict, taken = run(llama, [5], [6, 7], model=[6, 0, 9])
    assert verdict.ended and verdict.emit == [6] and verdict.pending == []
    assert taken == [6] and llama.n_tokens == 12


def test_no_draft_decodes_nothing(decoded: list[list[int]]) -> None:
    llama = FakeLlama(10)
    verdict, _ = run(llama, [5], [], model=[6])
    assert verdict is None and decoded == [] and llama.n_tokens == 10


def test_a_rejected_draft_shortens_the_next_and_pauses() -> None:
    lookup = PromptLookup(PROMPT, options=DraftOptions(min_match=2, judge_after=100))
    assert lookup.propose([11, 12], room=20) == [30, 31, 99, 40]  # where the prompt ends
    lookup.record(8, 0)
    assert lookup.propose([11, 12], room=20) == []  # paused for min_match proposals
    assert lookup.propose([11, 12], room=20) == []
    assert lookup.propose([13, 14], room=20) == [15, 2, 20, 11]  # 8 halved to 4
    lookup.record(4, 4)
    assert lookup.propose([13, 14], room=20) == [15, 2, 20, 11, 12, 30, 31, 99]  # doubled
    lookup.record(8, 2)
    assert lookup.propose([13, 14], room=20) == [15, 2, 20]  # one more than was kept


def test_drafts_stop_once_they_do_not_pay() -> None:
    options = DraftOptions(min_match=2, judge_after=10, min_acceptance=0.5)
    lookup = PromptLookup(PROMPT, options=options)
    lookup.record(6, 3)
    assert lookup.paying  # under judge_after proposed: not judged yet
    lookup.record(6, 2)  # 5 of 12
    assert not lookup.paying
    assert lookup.propose([13, 14], room=20) == []
    lookup.record(2, 2)  # 7 of 14: back at the share
    assert lookup.paying and lookup.propose([13, 14], room=20)


def test_min_acceptance_is_a_share() -> None:
    with pytest.raises(OptionError, match="min_acceptance"):
        PromptLookup(PROMPT, options=DraftOptions(min_acceptance=1.5))


def test_no_draft_until_min_words_of_the_match_are_words() -> None:
    # a tail of JSON punctuation and one word (": "The) matches the tool definitions: no draft
    options = DraftOptions(min_match=2, min_words=2)
    one_word = PromptLookup(PROMPT, options=options, is_word=lambda t: t != 13)
    two_words = PromptLookup(PROMPT, options=options, is_word=lambda t: t in (13, 14))
    uncounted = PromptLookup(PROMPT, options=options)
    assert one_word.propose([7, 13, 14], room=4) == []
    assert two_words.propose([7, 13, 14], room=4) == [15, 2, 20, 11]
    assert uncounted.propose([7, 13, 14], room=4) == [15, 2, 20, 11]  # not counted: all words


@pytest.mark.parametrize("min_words", [-1, 3])
def test_rejects_min_words_outside_the_match(min_words: int) -> None:
    with pytest.raises(OptionError, match="min_words"):
        PromptLookup(PROMPT, options=DraftOptions(min_match=2, min_words=min_words))


@pytest.mark.parametrize(
    ("piece", "word"),
    [
        (b"The", True),
        (b" 45", True),
        (b'": "', False),
        (b" ", False),
        (b"\xc3\xa9", True),
        (b"_", False),
        (b".com", True),
    ],
)
def test_holds_word(piece: bytes, word: bool) -> None:
    assert drafts.holds_word(piece) is word
