from __future__ import annotations

import pytest

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


def test_space_names_and_keys() -> None:
    assert identity.viewer_space("@Alice\u200b") == "viewer-alice"
    assert identity.stream_space("s1") == "stream-s1"
    # storage is keyed by the stable user id, so a rename keeps the memory
    assert identity.personal_key("1001") == "viewer:1001"
    assert identity.episodic_key("s1") == "stream:s1"


def test_temporary_stream_ids_are_unique_per_run() -> None:
    first, second = identity.temporary_stream_id(), identity.temporary_stream_id()
    assert first.startswith("tmp-") and first != second
