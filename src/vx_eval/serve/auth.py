"""Who is asking: people (argon2-hashed passwords, signed session cookies), API keys, guests; and what each may do.

The users file (JSON, written by `vx-eval users`) holds people with a role and a password hash, and API keys
as SHA-256 hashes of random tokens (a key is shown once, when it is made). Roles grant actions; the golden
file goes further: only an admin signed in as a person may download it, never a key, not even the server's
own admin key, so every download names a person in the access log.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vx_eval.core.errors import ConfigError

ROLES: dict[str, frozenset[str]] = {
    "guest": frozenset({"evaluation.read"}),
    "reader": frozenset({"evaluation.read"}),
    "admin": frozenset({"evaluation.read", "golden.download"}),
}
KEY_PREFIX = "vxk_"


def _hasher() -> Any:
    try:
        from argon2 import PasswordHasher
    except ImportError:
        raise ConfigError('the server needs its extra: pip install "vx-eval[serve]"') from None
    return PasswordHasher()


@dataclass(frozen=True)
class Principal:
    """The caller: a person signed in, an API key (named after whom it was made for), or a guest."""

    kind: str  # "person", "key" or "guest"
    name: str | None
    role: str

    def may(self, action: str) -> bool:
        """Whether this caller may do `action`; the golden download also needs a person, not a key."""
        if action == "golden.download" and self.kind != "person":
            return False
        return action in ROLES.get(self.role, frozenset())

    def describe(self) -> str:
        return {"person": f"{self.name} (signed in)", "key": f"API key of {self.name}", "guest": "a guest"}[self.kind]


GUEST = Principal("guest", None, "guest")


def _key_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Users:
    """The users file: read at every check (so `vx-eval users` changes apply at once), written atomically."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def _load(self) -> dict[str, Any]:
        if not self.path.exists():
            return {"people": {}, "keys": {}}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{self.path} is not a users file ({exc.msg} at line {exc.lineno})") from None
        data.setdefault("people", {})
        data.setdefault("keys", {})
        return data

    def _save(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    def add_person(self, name: str, password: str, role: str) -> None:
        """Add or update a person; the password is kept only as an argon2 hash."""
        if role not in ROLES or role == "guest":
            raise ConfigError(f"no role '{role}'; roles: {', '.join(r for r in ROLES if r != 'guest')}")
        if len(password) < 8:
            raise ConfigError("a password needs at least 8 characters")
        data = self._load()
        data["people"][name] = {"role": role, "password": _hasher().hash(password)}
        self._save(data)

    def add_key(self, name: str, role: str | None = None) -> str:
        """A new API key for `name` (a person already in the file), with their role unless told; shown once."""
        data = self._load()
        person = data["people"].get(name)
        if person is None:
            raise ConfigError(f"no person '{name}' in {self.path}; add them first: vx-eval users add {name}")
        role = role or person["role"]
        if role not in ROLES or role == "guest":
            raise ConfigError(f"no role '{role}'; roles: {', '.join(r for r in ROLES if r != 'guest')}")
        key_id = secrets.token_hex(4)
        token = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(24)}"
        data["keys"][key_id] = {"name": name, "role": role, "sha256": _key_hash(token)}
        self._save(data)
        return token

    def sign_in(self, name: str, password: str) -> Principal | None:
        """The person, when the password matches its hash; None otherwise (same answer for an unknown name)."""
        person = self._load()["people"].get(name)
        hasher = _hasher()
        if person is None:
            hasher.hash(password)  # as slow as a real check, so timing does not tell who exists
            return None
        try:
            hasher.verify(person["password"], password)
        except Exception:  # argon2 raises VerifyMismatchError / InvalidHashError
            return None
        return Principal("person", name, person["role"])

    def person(self, name: str) -> Principal | None:
        """A person still in the file (a session of someone removed since is no longer valid)."""
        person = self._load()["people"].get(name)
        return Principal("person", name, person["role"]) if person else None

    def key(self, token: str, admin_key: str | None = None) -> Principal | None:
        """The principal of an API key; the server's own admin key is an admin key, never a person."""
        if admin_key and hmac.compare_digest(token.encode(), admin_key.encode()):
            return Principal("key", "server admin key", "admin")
        if not token.startswith(KEY_PREFIX):
            return None
        key_id = token[len(KEY_PREFIX) :].split("_", 1)[0]
        entry = self._load()["keys"].get(key_id)
        if entry is None or not hmac.compare_digest(entry["sha256"], _key_hash(token)):
            return None
        return Principal("key", entry["name"], entry["role"])


def session_secret(users_path: Path) -> str:
    """The key that signs session cookies: VX_EVAL_SECRET, else one made once and kept beside the users file."""
    if secret := os.environ.get("VX_EVAL_SECRET"):
        return secret
    path = users_path.with_name(users_path.name + ".secret")
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    secret = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(secret)
    return secret
