"""Agent text in notifications (issue 31, finding 5): a command, an instance name or an
allocation that holds a URL is shown defused in the plain-text e-mail, its subject, its
HTML and the Slack body, so that no mail client or chat tool makes it a link."""

from __future__ import annotations

from typing import Any

import pytest

from approvals.messages import defused, email_message, slack_body

EVIL = "https://login.evil.example/reset?u=alice"
SHOWN = "hxxps[:]//login[.]evil[.]example/reset?u=alice"


def approval(**changes: Any) -> dict[str, Any]:
    return {
        "id": "6f1c",
        "status": "pending",
        "operation": {"kind": "shell", "command": f"echo {EVIL}"},
        "normalised": f"echo {EVIL}",
        "agentType": "data-agent",
        "agentInstance": "www.evil.example",
        "contextId": "ctx-1",
        "allocation": "http://10.0.0.5/x",
        "risk": "low",
        "deadline": "2026-12-03T20:00:00+00:00",
        "riskNotes": [f'names allocation "{EVIL}"'],
        "approvalsRequired": 1,
        "edit": None,
        **changes,
    }


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (EVIL, SHOWN),
        ("curl http://user@10.0.0.5:8080/p", "curl hxxp[:]//user[@]10[.]0[.]0[.]5:8080/p"),
        ("HTTP://X.Y", "HxxP[:]//X[.]Y"),
        ("ftp://files.example/a", "ftp[:]//files[.]example/a"),
        ("see www.evil.example", "see www[.]evil.example"),
        # Not a link: left as written.
        ("cat data.csv && ls ./src", "cat data.csv && ls ./src"),
    ],
)
def test_a_url_in_agent_text_is_defused(text: str, shown: str) -> None:
    assert defused(text) == shown


def test_the_e_mail_shows_no_clickable_agent_url() -> None:
    message = email_message(
        event="approval.created",
        approval=approval(),
        url="https://cs.example/approvals/6f1c/",
        approve_url="https://cs.example/approvals/6f1c/link/a",
        deny_url="https://cs.example/approvals/6f1c/link/d",
    )

    assert message["subject"] == (
        f"[Context Service] Approval needed: shell echo {SHOWN} (data-agent)"
    )
    for body in (message["text"], message["html"]):
        assert "evil.example/" not in body
        assert "10.0.0.5" not in body
        assert f"echo {SHOWN}" in body
        assert "data-agent / www[.]evil.example" in body
        assert "hxxp[:]//10[.]0[.]0[.]5/x" in body
    # The service's own links stay links.
    assert "Review it: https://cs.example/approvals/6f1c/\n" in message["text"]
    assert "Approve: https://cs.example/approvals/6f1c/link/a\n" in message["text"]


def test_the_slack_body_shows_no_clickable_agent_url() -> None:
    body = slack_body(
        event="approval.created", approval=approval(), url="https://cs.example/approvals/6f1c/"
    )

    everything = repr(body)
    assert "evil.example/" not in everything
    assert "10.0.0.5" not in everything
    assert body["text"] == (
        f"Approval needed: shell `echo {SHOWN}` (data-agent / www[.]evil.example, context "
        "ctx-1) <https://cs.example/approvals/6f1c/|Review>"
    )
    assert body["blocks"][1]["elements"][0]["elements"] == [
        {"type": "text", "text": f"echo {SHOWN}"}
    ]
