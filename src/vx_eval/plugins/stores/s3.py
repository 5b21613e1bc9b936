"""The S3 store: ``s3://bucket/key`` through boto3, with its default credential chain.

An S3 object is written whole or not at all (a PUT is atomic), so a report or golden copy is never seen
half-written. A server other than AWS's (MinIO, moto, LocalStack) is named by `endpoint_url` in the
config's ``stores: {s3: {endpoint_url: …}}``, or by boto3's own ``AWS_ENDPOINT_URL_S3`` /
``AWS_ENDPOINT_URL``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from vx_eval import hookimpl
from vx_eval.plugin import Change, StoreDenied, StoreError, StoreNotFound, conditional_update, on_first_use

_boto_errors = on_first_use("botocore.exceptions", "s3")

CHANGED = {"412", "PreconditionFailed", "409", "ConditionalRequestConflict"}
"""What S3 answers a conditional PUT when the object changed (or appeared) since it was read."""
NOT_FOUND = {"404", "NoSuchKey", "NoSuchBucket", "NotFound"}
DENIED = {"403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "AllAccessDisabled"}


def split(location: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` -> (``bucket``, ``a/b``)."""
    rest = location.removeprefix("s3://")
    bucket, _, key = rest.partition("/")
    if not bucket:
        raise StoreError(f"{location} names no bucket: write s3://bucket/key")
    return bucket, key


class S3Store:
    """Objects in S3 (or an S3-compatible server)."""

    name: ClassVar[str] = "s3"

    class Options(BaseModel):
        """``stores: {s3: {…}}``: where an S3-compatible server answers, the region, a named profile."""

        model_config = ConfigDict(extra="forbid", frozen=True)
        endpoint_url: str | None = None
        region: str | None = None
        profile: str | None = None

    def __init__(self, options: Options | None = None) -> None:
        options = options or self.Options()
        self.endpoint_url = options.endpoint_url
        self.region = options.region
        self.profile = options.profile
        self._client: Any = None

    @classmethod
    def handles(cls, location: str) -> bool:
        return location.startswith("s3://")

    @property
    def client(self) -> Any:
        if self._client is None:
            try:
                # lazy: an optional dependency (vx-eval[s3]), loaded only where it is used
                import boto3
            except ImportError:
                raise StoreError("s3:// locations need boto3: pip install 'vx-eval[s3]'") from None
            session = boto3.session.Session(profile_name=self.profile) if self.profile else boto3.session.Session()
            self._client = session.client("s3", endpoint_url=self.endpoint_url, region_name=self.region)
        return self._client

    def _call(self, location: str, action: str, method: str, **kwargs: Any) -> Any:

        try:
            return getattr(self.client, method)(**kwargs)
        except _boto_errors.NoCredentialsError:
            raise StoreDenied(
                f"no AWS credentials to {action} {location}: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, or run where an instance role applies"
            ) from None
        except _boto_errors.ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            bucket = kwargs.get("Bucket", "")
            if code == "NoSuchBucket":
                raise StoreNotFound(f"the bucket '{bucket}' of {location} does not exist") from None
            if code in NOT_FOUND:
                raise StoreNotFound(f"{location} does not exist") from None
            if code in DENIED:
                raise StoreDenied(
                    f"the AWS credentials in use may not {action} {location} ({code}); check the policy on "
                    f"bucket '{bucket}'"
                ) from None
            raise StoreError(f"could not {action} {location}: {code or exc}") from None
        except _boto_errors.BotoCoreError as exc:
            raise StoreError(f"could not {action} {location}: {exc}") from None

    def read(self, location: str) -> bytes:
        bucket, key = split(location)
        return self._call(location, "read", "get_object", Bucket=bucket, Key=key)["Body"].read()

    def write(self, location: str, data: bytes) -> None:
        bucket, key = split(location)
        self._call(location, "write", "put_object", Bucket=bucket, Key=key, Body=data)

    def update(self, location: str, change: Change) -> None:
        """A read-modify-write through S3's conditional writes: the PUT carries the ETag read (If-Match), or
        If-None-Match where nothing was there, and is tried again from a fresh read when S3 answers that the
        object changed meanwhile."""
        bucket, key = split(location)

        def read() -> tuple[bytes | None, str | None]:
            try:
                got = self._call(location, "read", "get_object", Bucket=bucket, Key=key)
            except StoreNotFound as exc:
                if "bucket" in str(exc):
                    raise
                return None, None
            return got["Body"].read(), got["ETag"]

        def write_if(data: bytes, etag: str | None) -> bool:
            condition = {"IfMatch": etag} if etag is not None else {"IfNoneMatch": "*"}
            try:
                self.client.put_object(Bucket=bucket, Key=key, Body=data, **condition)
            except _boto_errors.ClientError as exc:
                if str(exc.response.get("Error", {}).get("Code", "")) in CHANGED:
                    return False
                self._call(location, "write", "put_object", Bucket=bucket, Key=key, Body=data, **condition)
            return True

        conditional_update(location, read, write_if, change)

    def delete(self, location: str) -> None:
        bucket, key = split(location)
        self._call(location, "delete", "delete_object", Bucket=bucket, Key=key)

    def exists(self, location: str) -> bool:
        """An object at the location, or anything below it as a folder."""
        bucket, key = split(location)
        try:
            self._call(location, "read", "head_object", Bucket=bucket, Key=key)
            return True
        except StoreNotFound:
            pass
        listing = self._call(
            location, "list", "list_objects_v2", Bucket=bucket, Prefix=key.rstrip("/") + "/", MaxKeys=1
        )
        return bool(listing.get("KeyCount"))

    def list(self, prefix: str) -> list[str]:
        """What sits directly below `prefix` as a folder: objects and sub-folders, as full locations."""
        bucket, key = split(prefix)
        folder = key.rstrip("/") + "/" if key else ""
        out: set[str] = set()
        token = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": folder, "Delimiter": "/"}
            if token:
                kwargs["ContinuationToken"] = token
            page = self._call(prefix, "list", "list_objects_v2", **kwargs)
            out.update(f"s3://{bucket}/{p['Prefix'].rstrip('/')}" for p in page.get("CommonPrefixes", []))
            out.update(f"s3://{bucket}/{o['Key']}" for o in page.get("Contents", []) if o["Key"] != folder)
            token = page.get("NextContinuationToken")
            if not token:
                break
        return sorted(o for o in out if not o.rsplit("/", 1)[-1].startswith("."))


@hookimpl
def vx_eval_register_stores(register):
    register.add(S3Store)
