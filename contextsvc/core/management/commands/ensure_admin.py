"""``manage.py ensure_admin``: make sure an admin account exists and say how to log in."""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from contextsvc.core.services import audit_record

ACTOR = "system:ensure_admin"


class Command(BaseCommand):
    help = (
        "Create the admin user if missing. The password comes from CS_ADMIN_PASSWORD, or is "
        "generated and printed once. An existing user keeps its password unless "
        "CS_ADMIN_PASSWORD is set."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default=os.environ.get("CS_ADMIN_USERNAME", "admin"))
        parser.add_argument("--login-url", default="http://127.0.0.1:8000/login/")

    def handle(self, *args: Any, **options: Any) -> None:
        user_model = get_user_model()
        username: str = options["username"]
        password = os.environ.get("CS_ADMIN_PASSWORD") or None
        user = user_model.objects.filter(username=username).first()
        if user is not None and not password:
            self.stdout.write(
                f"Admin user {username!r} exists. Log in at {options['login_url']} with the "
                "password shown when it was created (set CS_ADMIN_PASSWORD to reset it)."
            )
            return
        shown = password is None
        password = password or secrets.token_urlsafe(12)
        with transaction.atomic():
            if user is None:
                user = user_model.objects.create_superuser(
                    username=username, email="", password=password
                )
                action = "Created"
            else:
                user.set_password(password)
                user.is_superuser = user.is_staff = user.is_active = True
                user.save()
                action = "Reset"
            audit_record(
                actor=ACTOR,
                action="user.create" if action == "Created" else "user.reset",
                target_type="user",
                target=username,
                payload={"role": "admin"},
            )
        self.stdout.write(f"{action} admin user {username!r}. Log in at {options['login_url']}")
        if shown:
            self.stdout.write(f"  username: {username}\n  password: {password}   (shown only once)")
