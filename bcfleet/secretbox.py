"""Secrets at rest: provider tokens sealed with the operator's key (Fernet), and a value that hides itself.

The key comes from the operator's configuration (FleetSettings.secret_key:
``BCFLEET_SECRET_KEY``, or ``secret_key`` / ``secret_key_file`` in fleet.toml).
It is one Fernet key, or several separated by commas: the first seals, every one
opens, so a key can be rotated by putting the new one first. A key is made with
``python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"``.

:class:`Secret` carries a plaintext through the code without it showing up in
a repr, a log line or an error message; only :meth:`Secret.reveal` gives it.
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from bcfleet.errors import InvalidInputError, UnauthenticatedError

KEY_HELP = (
    "the operator must set BCFLEET_SECRET_KEY (or secret_key / secret_key_file in fleet.toml) "
    "to a Fernet key before provider tokens can be stored"
)


class Secret:
    """A secret value whose repr and str never show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('********')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


class SecretBox:
    """Seals and opens secrets with the operator's key(s)."""

    def __init__(self, keys: str) -> None:
        try:
            self._fernet = MultiFernet([Fernet(k.strip()) for k in keys.split(",") if k.strip()])
        except ValueError:
            raise InvalidInputError(
                "the secret key is not a Fernet key (32 url-safe base64-encoded bytes); "
                + KEY_HELP,
                {"setting": "BCFLEET_SECRET_KEY"},
            ) from None

    def __repr__(self) -> str:
        return "SecretBox(keys='********')"

    def seal(self, secret: Secret) -> str:
        """The ciphertext to store (url-safe base64 text)."""
        return self._fernet.encrypt(secret.reveal().encode()).decode("ascii")

    def open(self, sealed: str) -> Secret:
        """The secret; UNAUTHENTICATED when no configured key opens it (the key changed)."""
        try:
            return Secret(self._fernet.decrypt(sealed.encode("ascii")).decode())
        except (InvalidToken, UnicodeError):
            raise UnauthenticatedError(
                "the stored provider token cannot be read with the operator's secret key "
                "(was BCFLEET_SECRET_KEY changed?); set the token again",
                {"reason": "secret_key_mismatch"},
            ) from None


def secret_box(key: str | None) -> SecretBox | None:
    """The box for a configured key, or None when the operator set none."""
    return SecretBox(key) if key else None


def require_box(key: str | None) -> SecretBox:
    """The box, or INVALID_INPUT saying the operator must configure a key (never store plaintext)."""
    box = secret_box(key)
    if box is None:
        raise InvalidInputError(KEY_HELP, {"setting": "BCFLEET_SECRET_KEY"})
    return box


def open_sealed(key: str | None, sealed: str) -> Secret:
    """A stored secret unsealed; UNAUTHENTICATED when no key is configured or none opens it."""
    box = secret_box(key)
    if box is None:
        raise UnauthenticatedError(
            "the stored provider token cannot be read: the operator's BCFLEET_SECRET_KEY is not set",
            {"reason": "secret_key_missing"},
        )
    return box.open(sealed)
