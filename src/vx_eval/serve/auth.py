"""Who is asking: people (argon2-hashed passwords, signed session cookies), API keys, guests; and what each may do.

The users file (JSON, written by `vx-eval users`) holds people with a role, a password hash and a session
epoch, and API keys as SHA-256 hashes of random tokens (a key is shown once, when it is made). A key lives
no longer than its person's standing: it acts with the lesser of its own role and its person's current one,
and ends when its person leaves the file, signs out everywhere or changes password (the key is bound to the
epoch it was made in), or when it is revoked (`vx-eval users key revoke`). A users file that cannot be read
is `UsersUnreadable`: the server answers 503 with the reason, never a 500. Roles grant
actions; the golden file goes further: only an admin signed in as a person may download it, never a key,
not even the server's own admin key, so every download names a person in the access log.

A session names the person, the epoch it was made in and when: signing out, a new password or
`vx-eval users signout` moves the person's epoch on, which ends every session made before, and a session
ends `SESSION_HOURS` after it was made however busy it is. Password checks are throttled per person, per
address and per both, with lockouts that double and stop at a ceiling (an attacker can slow a person's
sign-in from elsewhere, never shut it for good), and at most `CHECKS_AT_ONCE` run at a time (argon2 holds
64 MiB per check).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vx_eval.core.config.jsonio import JsonInputError, read_json
from vx_eval.core.errors import ConfigError

READ = frozenset({"evaluation.read", "dataset.list"})
RUN = READ | {"evaluation.start", "evaluation.cancel", "dataset.write"}
ROLES: dict[str, frozenset[str]] = {
    "guest": frozenset({"evaluation.read"}),
    "reader": READ,
    "rater": READ | {"grade"},  # grades (question, passage) pairs on the grading page: reads their text
    "runner": RUN,  # starts and cancels runs, manages datasets; never reads a question's text
    "admin": RUN | {"golden.download", "dataset.read", "grade"},
}
KEY_PREFIX = "vxk_"
SESSION_HOURS = 12
CHECKS_AT_ONCE = 2
"""Password checks (argon2: 64 MiB and ~50 ms each) that may run at once; the rest wait their turn."""
CHECK_WAIT_S = 10.0
"""How long a sign-in waits for a turn before the server says it is busy."""

Role = Literal["reader", "rater", "runner", "admin"]


def _hasher() -> Any:
    try:
        # lazy: an optional dependency (vx-eval[serve]), loaded only where it is used
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
    key_id: str | None = None
    """Which API key, for a key (its id, never the secret)."""

    def may(self, action: str) -> bool:
        """Whether this caller may do `action`; question text (the golden download, a dataset's rows, the
        grading page) also needs a person, not a key."""
        if action in ("golden.download", "dataset.read", "grade") and self.kind != "person":
            return False
        return action in ROLES.get(self.role, frozenset())

    @property
    def admin(self) -> bool:
        return self.role == "admin"

    def describe(self) -> str:
        return {"person": f"{self.name} (signed in)", "key": f"API key of {self.name}", "guest": "a guest"}[self.kind]


GUEST = Principal("guest", None, "guest")


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Person(_Entry):
    role: Role
    password: str
    """The argon2 hash."""
    epoch: int = 0
    """Sessions made in an earlier epoch are over (signed out, password changed)."""


class Key(_Entry):
    name: str
    role: Role
    sha256: str
    epoch: int = 0
    """The person's epoch when the key was made: once it moved on (signed out, a new password), the key is over."""


class UsersFile(_Entry):
    people: dict[str, Person] = Field(default_factory=dict)
    keys: dict[str, Key] = Field(default_factory=dict)


class Session(BaseModel):
    """What the signed session cookie holds."""

    person: str
    epoch: int
    made: float
    """Unix time of the sign-in."""


def _key_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


RANK = {"guest": 0, "reader": 1, "rater": 1, "runner": 2, "admin": 3}
"""A key acts with the lesser of its role and its person's; grading needs a person, so a rater's key reads."""


class UsersUnreadable(ConfigError):
    """The users file is there but cannot be read (damaged, or not a users file)."""


def _check_role(role: str) -> Role:
    if role not in ("reader", "rater", "runner", "admin"):
        raise ConfigError(f"no role '{role}'; roles: reader, rater, runner, admin")
    return role  # type: ignore[return-value]


class Users:
    """The users file: read at every check (so `vx-eval users` changes apply at once), written atomically."""

    def __init__(self, path: str | Path, checks_at_once: int = CHECKS_AT_ONCE) -> None:
        self.path = Path(path)
        self._checks = threading.BoundedSemaphore(checks_at_once)
        self._write = threading.Lock()

    def load(self) -> UsersFile:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return UsersFile()
        except OSError as exc:
            raise UsersUnreadable(f"cannot read the users file {self.path}: {exc.strerror or exc}") from None
        try:
            return UsersFile.model_validate(read_json(raw))
        except JsonInputError as exc:
            raise UsersUnreadable(f"{self.path} is not a users file ({exc.message})") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(p) for p in first["loc"])
            raise UsersUnreadable(f"{self.path} is not a users file ({at}: {first['msg']})") from None

    def _save(self, data: UsersFile) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(data.model_dump_json(indent=1))
        os.replace(tmp, self.path)

    def _change(self, change: Callable[[UsersFile], None]) -> None:
        with self._write:
            data = self.load()
            change(data)
            self._save(data)

    def add_person(self, name: str, password: str, role: str) -> None:
        """Add a person, or change their role and password (which ends their sessions); the password is kept
        only as an argon2 hash."""
        checked = _check_role(role)
        if len(password) < 8:
            raise ConfigError("a password needs at least 8 characters")
        hashed = _hasher().hash(password)

        def change(data: UsersFile) -> None:
            before = data.people.get(name)
            epoch = before.epoch + 1 if before is not None else 0
            data.people[name] = Person(role=checked, password=hashed, epoch=epoch)

        self._change(change)

    def sign_out_everywhere(self, name: str) -> None:
        """End every session `name` has (signing out does this; so does a new password)."""

        def change(data: UsersFile) -> None:
            person = data.people.get(name)
            if person is None:
                raise ConfigError(f"no person '{name}' in {self.path}")
            data.people[name] = person.model_copy(update={"epoch": person.epoch + 1})

        self._change(change)

    def add_key(self, name: str, role: str | None = None) -> str:
        """A new API key for `name` (a person already in the file), with their role unless told; shown once."""
        key_id = secrets.token_hex(4)
        token = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(24)}"

        def change(data: UsersFile) -> None:
            person = data.people.get(name)
            if person is None:
                raise ConfigError(f"no person '{name}' in {self.path}; add them first: vx-eval users add {name}")
            data.keys[key_id] = Key(
                name=name, role=_check_role(role or person.role), sha256=_key_hash(token), epoch=person.epoch
            )

        self._change(change)
        return token

    def list_keys(self) -> list[tuple[str, Key, str]]:
        """Every key (its id, never its secret), and whether it acts now: "active", or why not."""
        data = self.load()
        return [(key_id, key, _standing(key, data.people.get(key.name))) for key_id, key in sorted(data.keys.items())]

    def revoke_key(self, key_id: str) -> Key:
        """Remove the key with this id (as `keys` lists it); it stops acting at once."""
        removed: list[Key] = []

        def change(data: UsersFile) -> None:
            key = data.keys.pop(key_id, None)
            if key is None:
                raise ConfigError(f"no key '{key_id}' in {self.path}; `vx-eval users key list` shows them")
            removed.append(key)

        self._change(change)
        return removed[0]

    def remove_person(self, name: str) -> int:
        """Remove a person, and every key made for them; how many keys went with them."""
        gone: list[str] = []

        def change(data: UsersFile) -> None:
            if data.people.pop(name, None) is None:
                raise ConfigError(f"no person '{name}' in {self.path}")
            gone.extend(k for k, key in data.keys.items() if key.name == name)
            for key_id in gone:
                del data.keys[key_id]

        self._change(change)
        return len(gone)

    def sign_in(self, name: str, password: str) -> Session | None:
        """A new session when the password matches the person's hash; None otherwise (the same answer,
        after the same work, for an unknown name). Raises `Busy` when no check could start in time."""
        person = self.load().people.get(name)
        hasher = _hasher()
        if not self._checks.acquire(timeout=CHECK_WAIT_S):
            raise Busy("too many sign-ins at once; try again in a few seconds")
        try:
            if person is None:
                hasher.hash(password)  # as slow as a real check, so timing does not tell who exists
                return None
            try:
                hasher.verify(person.password, password)
            except Exception:  # argon2 raises VerifyMismatchError / InvalidHashError
                return None
        finally:
            self._checks.release()
        return Session(person=name, epoch=person.epoch, made=time.time())

    def person(self, session: Session, now: float | None = None) -> Principal | None:
        """The person a session is for, while it lasts: not after `SESSION_HOURS`, not once their epoch
        moved on, not once they left the file."""
        if (time.time() if now is None else now) - session.made > SESSION_HOURS * 3600:
            return None
        person = self.load().people.get(session.person)
        if person is None or person.epoch != session.epoch:
            return None
        return Principal("person", session.person, person.role)

    def key(self, token: str, admin_key: str | None = None) -> Principal | None:
        """The principal of an API key; the server's own admin key is an admin key, never a person."""
        if admin_key and hmac.compare_digest(token.encode(), admin_key.encode()):
            return Principal("key", "server admin key", "admin", "server-admin-key")
        if not token.startswith(KEY_PREFIX):
            return None
        key_id = token[len(KEY_PREFIX) :].split("_", 1)[0]
        data = self.load()
        entry = data.keys.get(key_id)
        if entry is None or not hmac.compare_digest(entry.sha256, _key_hash(token)):
            return None
        person = data.people.get(entry.name)
        if _standing(entry, person) != "active" or person is None:
            return None
        role = min(entry.role, person.role, key=RANK.__getitem__)  # never more than its person may do now
        return Principal("key", entry.name, role, key_id)


def _standing(key: Key, person: Person | None) -> str:
    """Whether a key acts now ("active"), or why not."""
    if person is None:
        return "its person is no longer in the file"
    if person.epoch != key.epoch:
        return "its person signed out everywhere or changed password since it was made"
    return "active"


class Busy(Exception):
    """No password check could start in time."""


@dataclass
class _Bucket:
    failures: int = 0
    last: float = 0.0
    locked_until: float = 0.0
    pending: int = 0
    """Checks admitted and not finished: past the free tries, one at a time (a flood cannot race past)."""


@dataclass(frozen=True)
class Limit:
    """After `free` failures in a row, each further one locks for `first` seconds, doubling up to `ceiling`;
    failures are forgotten `forget` seconds after the last."""

    free: int
    first: float
    ceiling: float
    forget: float = 900.0

    def lock(self, failures: int) -> float:
        over = failures - self.free
        return 0.0 if over < 0 else min(self.ceiling, self.first * 2 ** min(over, 30))


PER_PAIR = Limit(free=5, first=30.0, ceiling=900.0)
"""One address trying one person's password."""
PER_ADDRESS = Limit(free=20, first=30.0, ceiling=900.0)
"""One address trying any names."""
PER_PERSON = Limit(free=50, first=10.0, ceiling=60.0)
"""Many addresses trying one person: new addresses slowed to a try a minute at worst; an address the person
signed in from before is not held back at all, so an attack from elsewhere never locks them out."""
TRUSTED_FOR = 30 * 86400.0


@dataclass
class Throttle:
    """Failed sign-ins counted per (person, address), per address and per person (see the module)."""

    clock: Callable[[], float] = time.monotonic
    tracked: int = 10_000
    """Buckets (and trusted pairs) kept at most, the oldest dropped: memory stays bounded under a flood."""
    _buckets: dict[tuple[str, str], _Bucket] = field(default_factory=dict)
    _trusted: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _keys(self, name: str, address: str) -> list[tuple[tuple[str, str], Limit]]:
        pair = ("pair", f"{name}\0{address}")
        return [(pair, PER_PAIR), (("address", address), PER_ADDRESS), (("person", name), PER_PERSON)]

    def _trusted_now(self, name: str, address: str, now: float) -> bool:
        return now - self._trusted.get(f"{name}\0{address}", -TRUSTED_FOR) < TRUSTED_FOR

    def begin(self, name: str, address: str) -> float:
        """Admit one check of this person's password from this address (0), or say how many seconds to
        wait. An address the person signed in from before is not held back by failures from elsewhere.
        Every admitted check ends with `failed`, `succeeded` or `abandoned`."""
        now = self.clock()
        with self._lock:
            trusted = self._trusted_now(name, address, now)
            keys = [(k, limit) for k, limit in self._keys(name, address) if not (trusted and k[0] == "person")]
            wait = 0.0
            for key, limit in keys:
                bucket = self._buckets.get(key)
                if bucket is None or now - bucket.last > limit.forget:
                    continue
                wait = max(wait, bucket.locked_until - now)
                if bucket.pending and bucket.failures + bucket.pending >= limit.free:
                    wait = max(wait, 1.0)  # past the free tries: wait for the check in flight
            if wait > 0:
                return wait
            for key, _ in keys:
                self._bucket(key, now).pending += 1
            return 0.0

    def _bucket(self, key: tuple[str, str], now: float) -> _Bucket:
        bucket = self._buckets.pop(key, None) or _Bucket(last=now)
        self._buckets[key] = bucket  # newest last
        while len(self._buckets) > self.tracked:
            self._buckets.pop(next(iter(self._buckets)))
        return bucket

    def _end(self, name: str, address: str) -> list[tuple[tuple[str, str], Limit, _Bucket]]:
        now = self.clock()
        ended = []
        for key, limit in self._keys(name, address):
            bucket = self._bucket(key, now)
            bucket.pending = max(0, bucket.pending - 1)
            ended.append((key, limit, bucket))
        return ended

    def failed(self, name: str, address: str) -> None:
        now = self.clock()
        with self._lock:
            for _, limit, bucket in self._end(name, address):
                if now - bucket.last > limit.forget:
                    bucket.failures = 0
                bucket.failures += 1
                bucket.last = now
                bucket.locked_until = now + limit.lock(bucket.failures)

    def succeeded(self, name: str, address: str) -> None:
        with self._lock:
            for key, _, bucket in self._end(name, address):
                if key[0] != "person":  # one success somewhere does not forgive an attack from elsewhere
                    bucket.failures, bucket.locked_until = 0, 0.0
            pair = f"{name}\0{address}"
            self._trusted.pop(pair, None)
            self._trusted[pair] = self.clock()
            while len(self._trusted) > self.tracked:
                self._trusted.pop(next(iter(self._trusted)))

    def abandoned(self, name: str, address: str) -> None:
        """An admitted check that never ran (the server was busy): neither a failure nor a success."""
        with self._lock:
            self._end(name, address)


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
