"""Secrets the service must use again later (a webhook's signing secret, its URL), stored
encrypted: Fernet (AES-128-CBC with HMAC-SHA256) under a key derived from
``DJANGO_SECRET_KEY``. Rotating the secret key keeps them readable as long as the old key is
in ``SECRET_KEY_FALLBACKS``; whatever is sealed from then on uses the new one."""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

# Binds the derived key to this use: the same secret key signs sessions and links too.
PURPOSE = b"context-service sealed secrets v1"


class Unreadable(Exception):
    """A sealed value none of the configured keys opens (the secret key changed and the
    old one is not among the fallbacks)."""


def _fernet(secret_key: str) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=PURPOSE).derive(
        secret_key.encode()
    )
    return Fernet(base64.urlsafe_b64encode(key))


def _keys() -> MultiFernet:
    keys = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return MultiFernet([_fernet(key) for key in keys])


def seal(value: str) -> str:
    return _keys().encrypt(value.encode()).decode()


def unseal(sealed: str) -> str:
    try:
        return _keys().decrypt(sealed.encode()).decode()
    except InvalidToken:
        raise Unreadable("sealed with a secret key this service no longer has") from None
