from __future__ import annotations

import hypothesis
import pytest
from hypothesis import strategies as st

from memory import identity


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Alice", "alice"),
        ("@Alice", "alice"),
        ("ＡＬＩＣＥ", "alice"),  # fullwidth → NFKC
        ("ali\u200bce", "alice"),  # zero-width space
        ("al\u00adice\u2060", "alice"),  # soft hyphen, word joiner
        ("bob\x07", "bob"),  # control character
        ("Straße_99", "strasse_99"),  # casefold
        ("carla-la tv!", "carlalatv"),  # outside the Twitch login charset
    ],
)
def test_normalize_login(raw: str, expected: str) -> None:
    assert identity.normalize_login(raw) == expected


@hypothesis.given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_an_ascii_login_is_normalized_as_by_the_full_rules(raw: str) -> None:
    """The ASCII fast path (every Twitch login; start-up registers 10,000 of them) agrees with
    NFKC + casefold + the invisible and control characters removed + the login charset."""
    assert identity.normalize_login(raw) == identity.normalize_login(raw + "\u200b")


def test_space_names_and_keys() -> None:
    assert identity.viewer_space("@Alice\u200b") == "viewer-alice"
    assert identity.stream_space("s1") == "stream-s1"
    # storage is keyed by the stable user id, so a rename keeps the memory
    assert identity.personal_key("1001") == "viewer:1001"
    assert identity.episodic_key("s1") == "stream:s1"


def test_temporary_stream_ids_are_unique_per_run() -> None:
    first, second = identity.temporary_stream_id(), identity.temporary_stream_id()
    assert first.startswith("tmp-") and first != second
