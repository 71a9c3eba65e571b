"""What a notification says, built from a request as the API shows it (shapes.
approval_json): the JSON webhook body, the Slack-compatible body, and the e-mail. Pure
functions of their arguments (and the e-mail templates)."""

from __future__ import annotations

import re
from typing import Any

from django.template.loader import render_to_string

from approvals.models import NotificationEvent

# Past this, a message shows the operation cut (the request's page has all of it).
MAX_SHOWN = 2000

HEADLINES = {
    NotificationEvent.CREATED: "Approval needed",
    NotificationEvent.ESCALATED: "Escalated: still waiting for a decision",
    NotificationEvent.TEST: "Test message from Context Service",
}


def headline(event: str, approval: dict[str, Any] | None) -> str:
    if event == NotificationEvent.DECIDED and approval is not None:
        status = approval["status"]
        by = approval.get("decidedBy")
        edited = " (edited)" if approval.get("edit") else ""
        return f"{status.capitalize()}{edited}" + (
            f" by {by}" if by and status != "expired" else ""
        )
    return HEADLINES.get(NotificationEvent(event), event)


def shown(text: str, limit: int = MAX_SHOWN) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# A scheme and the authority after it (user@host:port), and "www." anywhere.
_URL = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*)://([^\s/?#<>\"'`]*)")
_WWW = re.compile(r"\b(www)\.", re.IGNORECASE)


def defused(text: str) -> str:
    """Agent text (a command, an instance name, an allocation) as a message shows it, with
    no URL a mail client or Slack would turn into a link: ``https://evil.example/x`` is
    ``hxxps[:]//evil[.]example/x`` — the convention incident reports use, readable, never
    clickable. The request's page has the exact text."""

    def url(match: re.Match[str]) -> str:
        scheme = re.sub("tt", "xx", match.group(1), flags=re.IGNORECASE)
        authority = match.group(2).replace(".", "[.]").replace("@", "[@]")
        return f"{scheme}[:]//{authority}"

    return _WWW.sub(r"\1[.]", _URL.sub(url, text))


def webhook_body(
    *, event: str, delivery_id: str, approval: dict[str, Any] | None, url: str | None, at: str
) -> dict[str, Any]:
    """The JSON a webhook receives; ``X-Context-Service-Signature`` signs it."""
    return {"event": event, "delivery": delivery_id, "sentAt": at, "url": url, "approval": approval}


def _slack_escape(text: str) -> str:
    # The three characters Slack's mrkdwn gives meaning to (links, mentions): as entities.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_body(*, event: str, approval: dict[str, Any] | None, url: str | None) -> dict[str, Any]:
    """An incoming-webhook message (Slack, and the chat tools that accept its format): a
    plain ``text`` fallback and Block Kit blocks. The operation goes in a preformatted
    rich-text element, which Slack never interprets, so no command can format or mention."""
    title = headline(event, approval)
    if approval is None:
        return {"text": title, "blocks": [_slack_section(title)]}
    operation = defused(shown(approval["normalised"]))
    who = _who(approval)
    fields = [
        ("Agent", who),
        ("Context", defused(approval["contextId"])),
        ("Risk", approval["risk"]),
        ("Deadline", approval["deadline"]),
    ]
    if approval.get("allocation"):
        fields.insert(2, ("Allocation", defused(approval["allocation"])))
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": title}},
        {
            "type": "rich_text",
            "elements": [
                {
                    "type": "rich_text_preformatted",
                    "elements": [{"type": "text", "text": operation}],
                }
            ],
        },
        {
            "type": "section",
            "fields": [
                {"type": "mrkdwn", "text": f"*{name}*\n{_slack_escape(value)}"}
                for name, value in fields
            ],
        },
    ]
    notes = approval.get("riskNotes") or []
    if notes:
        blocks.append(
            {
                "type": "context",
                "elements": [
                    {
                        "type": "mrkdwn",
                        "text": "\n".join(f"• {_slack_escape(defused(n))}" for n in notes),
                    }
                ],
            }
        )
    if url:
        blocks.append(
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "text": {"type": "plain_text", "text": "Review"},
                        "url": url,
                    }
                ],
            }
        )
    text = f"{title}: {approval['operation']['kind']} `{_slack_escape(shown(operation, 200))}`"
    text += f" ({_slack_escape(who)}, context {_slack_escape(defused(approval['contextId']))})"
    if url:
        text += f" <{url}|Review>"
    return {"text": text, "blocks": blocks}


def _who(approval: dict[str, Any]) -> str:
    """The agent type (an admin's profile name) and the instance the agent named."""
    instance = approval.get("agentInstance")
    return approval["agentType"] + (f" / {defused(instance)}" if instance else "")


def _slack_section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "plain_text", "text": text}}


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())  # no newline may reach a header
    return shown(flat, limit)


def email_message(
    *,
    event: str,
    approval: dict[str, Any],
    url: str,
    approve_url: str | None,
    deny_url: str | None,
) -> dict[str, str]:
    """Subject, plain text and HTML of an e-mail to one approver (the links are theirs)."""
    title = headline(event, approval)
    kind = approval["operation"]["kind"]
    subject = (
        f"[Context Service] {title}: {kind} {_one_line(defused(approval['normalised']), 80)} "
        f"({approval['agentType']})"
    )
    context = {
        "title": title,
        "approval": approval,
        "operation": defused(shown(approval["normalised"])),
        "who": _who(approval),
        "context_id": defused(approval["contextId"]),
        "allocation": defused(approval.get("allocation") or ""),
        "notes": [defused(note) for note in approval.get("riskNotes") or []],
        "url": url,
        "approve_url": approve_url,
        "deny_url": deny_url,
    }
    return {
        "subject": subject,
        "text": render_to_string("approvals/email/request.txt", context),
        "html": render_to_string("approvals/email/request.html", context),
    }
