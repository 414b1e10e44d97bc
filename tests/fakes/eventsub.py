"""EventSub payloads as Twitch sends them (``channel.chat.message``), for the fake Twitch and tests."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

#: the channel the fake Twitch serves (``tests.fakes.twitch`` uses the same ids)
OWNER_ID = "2002"
OWNER_LOGIN = "owner"


def now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def chat_event(
    *,
    user_id: str,
    login: str,
    text: str,
    broadcaster_id: str = OWNER_ID,
    broadcaster_login: str = OWNER_LOGIN,
    badges: tuple[str, ...] = (),
    message_id: str | None = None,
    cheer_bits: int | None = None,
    source_broadcaster_id: str | None = None,
    reply_to: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The ``event`` object of a ``channel.chat.message`` notification (every key TwitchIO reads);
    ``reply_to``: the parent message a reply in a thread answers (``thread_reply``)."""
    return {
        "broadcaster_user_id": broadcaster_id,
        "broadcaster_user_login": broadcaster_login,
        "broadcaster_user_name": broadcaster_login,
        "chatter_user_id": user_id,
        "chatter_user_login": login,
        "chatter_user_name": login.capitalize(),
        "message_id": message_id or str(uuid.uuid4()),
        "message": {
            "text": text,
            "fragments": [
                {"type": "text", "text": text, "cheermote": None, "emote": None, "mention": None}
            ],
        },
        "color": "#00FF00",
        "badges": [{"set_id": badge, "id": "1", "info": ""} for badge in badges],
        "message_type": "text",
        "cheer": {"bits": cheer_bits} if cheer_bits else None,
        "reply": reply_to,
        "channel_points_custom_reward_id": None,
        "channel_points_animation_id": None,
        "source_broadcaster_user_id": source_broadcaster_id,
        "source_broadcaster_user_login": "other" if source_broadcaster_id else None,
        "source_broadcaster_user_name": "Other" if source_broadcaster_id else None,
        "source_message_id": None,
        "source_badges": None,
        "is_source_only": None,
    }


def thread_reply(parent_id: str, parent_text: str, user_id: str, login: str) -> dict[str, str]:
    """The ``reply`` object of a message in the thread under ``parent_id``, said by ``login``."""
    return {
        "parent_message_id": parent_id,
        "parent_message_body": parent_text,
        "parent_user_id": user_id,
        "parent_user_login": login,
        "parent_user_name": login,
        "thread_message_id": parent_id,
        "thread_user_id": user_id,
        "thread_user_login": login,
        "thread_user_name": login,
    }
