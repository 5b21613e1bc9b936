"""The Azure Blob store: ``https://<account>.blob.core.windows.net/<container>/<name>``.

Credentials: a connection string named in the config (``stores: {azure-blob: {connection_string: {env:
VAR}}}``) or in ``AZURE_STORAGE_CONNECTION_STRING``, when it is for the location's account; otherwise
`DefaultAzureCredential` (azure-identity: a managed identity, the Azure CLI's login, environment
variables). The emulator (Azurite) is addressed path-style, ``http://127.0.0.1:10000/devstoreaccount1/
<container>/<name>``, with its connection string. A blob upload is committed whole, so nothing is ever
seen half-written.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, ClassVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from vx_eval import hookimpl
from vx_eval.plugin import (
    Change,
    SecretRef,
    StoreDenied,
    StoreError,
    StoreNotFound,
    conditional_update,
    on_first_use,
    remember_secret,
)
from vx_eval.plugins.reach import cannot_reach

_az_errors = on_first_use("azure.core.exceptions", "blob")
_az_core = on_first_use("azure.core", "blob")

PUBLIC = ".blob.core.windows.net"
REACH_SECONDS = 5.0
"""How long an account's host has to answer before the store says it cannot be reached."""


def connection_endpoint(connection_string: str) -> str | None:
    """The blob endpoint a connection string names (explicitly, or from its account and suffix)."""
    fields = dict(p.split("=", 1) for p in connection_string.split(";") if "=" in p)
    if fields.get("BlobEndpoint"):
        return fields["BlobEndpoint"].rstrip("/")
    if fields.get("AccountName"):
        protocol = fields.get("DefaultEndpointsProtocol", "https")
        return f"{protocol}://{fields['AccountName']}.blob.{fields.get('EndpointSuffix', 'core.windows.net')}"
    return None


class BlobStore:
    """Blobs in Azure Storage (or Azurite)."""

    name: ClassVar[str] = "azure-blob"

    class Options(BaseModel):
        """``stores: {azure-blob: {connection_string: {env: VARIABLE}}}``: the account's connection string, by
        reference (else ``AZURE_STORAGE_CONNECTION_STRING``, else `DefaultAzureCredential`)."""

        model_config = ConfigDict(extra="forbid", frozen=True)
        connection_string: SecretRef | None = None

    def __init__(self, options: Options | None = None) -> None:
        options = options or self.Options()
        given = options.connection_string.value() if options.connection_string else None
        self.connection_string = given or os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
        if self.connection_string:
            remember_secret(self.connection_string)
            for part in self.connection_string.split(";"):
                if part.startswith("AccountKey="):
                    remember_secret(part.removeprefix("AccountKey="))
        self.endpoint = connection_endpoint(self.connection_string) if self.connection_string else None
        self._services: dict[str, Any] = {}

    def handles(self, location: str) -> bool:
        if not location.startswith(("https://", "http://")):
            return False
        if (urlsplit(location).hostname or "").endswith(PUBLIC):
            return True
        return self.endpoint is not None and location.startswith(self.endpoint + "/")

    def _parts(self, location: str) -> tuple[str, str, str]:
        """(account URL, container, blob name) of a location."""
        if self.endpoint and location.startswith(self.endpoint + "/"):
            account, rest = self.endpoint, location[len(self.endpoint) + 1 :]
        else:
            parts = urlsplit(location)
            account, rest = f"{parts.scheme}://{parts.netloc}", parts.path.lstrip("/")
        container, _, name = rest.partition("/")
        if not container:
            raise StoreError(f"{location} names no container: write {account}/<container>/<name>")
        return account, container, name

    def _service(self, account: str) -> Any:
        if account not in self._services:
            why = cannot_reach(account, REACH_SECONDS)
            if why is not None:  # said now, not after the credential chain's and the client's own retries
                raise StoreError(f"cannot reach {account}: {why}")
            try:
                # lazy: an optional dependency (vx-eval[blob]), loaded only where it is used
                from azure.storage.blob import BlobServiceClient
            except ImportError:
                raise StoreError("Azure Blob locations need azure-storage-blob: pip install 'vx-eval[blob]'") from None
            if self.connection_string and self.endpoint == account:
                self._services[account] = BlobServiceClient.from_connection_string(self.connection_string)
            else:
                try:
                    # lazy: an optional dependency (vx-eval[blob]), loaded only where it is used
                    from azure.identity import DefaultAzureCredential
                except ImportError:
                    raise StoreError(
                        f"no connection string for {account}: set AZURE_STORAGE_CONNECTION_STRING, or install "
                        "azure-identity (pip install 'vx-eval[blob]') to sign in with DefaultAzureCredential"
                    ) from None
                self._services[account] = BlobServiceClient(account, credential=DefaultAzureCredential())
        return self._services[account]

    def _call(self, location: str, action: str, work: Any) -> Any:

        try:
            return work()
        except _az_errors.ResourceNotFoundError as exc:
            if getattr(exc, "error_code", None) == "ContainerNotFound":
                raise StoreNotFound(f"the container of {location} does not exist") from None
            raise StoreNotFound(f"{location} does not exist") from None
        except _az_errors.ClientAuthenticationError as exc:
            if type(exc).__name__ == "CredentialUnavailableError" or "failed to retrieve a token" in str(exc):
                raise StoreDenied(
                    f"no credential was found to {action} {location}: set AZURE_STORAGE_CONNECTION_STRING (or the "
                    "store's connection_string), or sign in for DefaultAzureCredential (az login, a managed identity)"
                ) from None
            raise StoreDenied(
                f"the credentials in use may not {action} {location}: check the connection string or the "
                "identity's role on the container (Storage Blob Data Reader to read, Contributor to write)"
            ) from None
        except _az_errors.HttpResponseError as exc:
            if exc.status_code == 403:
                raise StoreDenied(f"the credentials in use may not {action} {location} (403)") from None
            raise StoreError(f"could not {action} {location}: {exc.reason or exc.status_code}") from None
        except _az_errors.ServiceRequestError as exc:
            raise StoreError(f"could not reach {location} to {action} it: {exc}") from None

    def _blob(self, location: str) -> Any:
        account, container, name = self._parts(location)
        return self._service(account).get_blob_client(container, name)

    def read(self, location: str) -> bytes:
        return self._call(location, "read", lambda: self._blob(location).download_blob().readall())

    def write(self, location: str, data: bytes) -> None:
        self._call(location, "write", lambda: self._blob(location).upload_blob(data, overwrite=True))

    def update(self, location: str, change: Change) -> None:
        """A read-modify-write through the blob's ETag: the upload is on condition that the blob is unchanged
        (or still absent), tried again from a fresh read where another writer came between."""
        blob = self._blob(location)

        def read() -> tuple[bytes | None, str | None]:
            try:
                downloaded = self._call(location, "read", lambda: blob.download_blob())
            except StoreNotFound as exc:
                if "container" in str(exc):
                    raise
                return None, None
            return downloaded.readall(), downloaded.properties.etag

        def write_if(data: bytes, etag: str | None) -> bool:
            def upload() -> bool:
                try:
                    if etag is None:
                        blob.upload_blob(data, overwrite=False)
                    else:
                        unchanged = _az_core.MatchConditions.IfNotModified
                        blob.upload_blob(data, overwrite=True, etag=etag, match_condition=unchanged)
                except (_az_errors.ResourceModifiedError, _az_errors.ResourceExistsError):
                    return False  # another writer came between: read again
                return True

            written: bool = self._call(location, "write", upload)
            return written

        conditional_update(location, read, write_if, change)

    def delete(self, location: str) -> None:

        with contextlib.suppress(StoreNotFound, _az_errors.ResourceNotFoundError):
            self._call(location, "delete", lambda: self._blob(location).delete_blob())

    def exists(self, location: str) -> bool:
        """A blob at the location, or any blob below it as a folder."""
        account, container, name = self._parts(location)
        if self._call(location, "read", lambda: self._blob(location).exists()):
            return True
        client = self._service(account).get_container_client(container)
        prefix = name.rstrip("/") + "/"
        return self._call(location, "list", lambda: any(True for _ in client.list_blobs(name_starts_with=prefix)))

    def list(self, prefix: str) -> list[str]:
        """What sits directly below `prefix` as a folder: blobs and sub-folders, as full locations."""
        account, container, name = self._parts(prefix)
        client = self._service(account).get_container_client(container)
        folder = name.rstrip("/") + "/" if name else ""
        base = f"{account}/{container}/"
        items = self._call(prefix, "list", lambda: list(client.walk_blobs(name_starts_with=folder, delimiter="/")))
        out = {base + item.name.rstrip("/") for item in items}
        return sorted(o for o in out if not o.rsplit("/", 1)[-1].startswith("."))


@hookimpl
def vx_eval_register_stores(register):
    register.add(BlobStore)
