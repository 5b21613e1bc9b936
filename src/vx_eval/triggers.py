"""Cloud triggers: re-run the evaluation when the golden file changes in S3 or Azure Blob Storage.

Both handlers call the same logic as `vx-eval watch` (`core.run.watch.Watcher.check_once`): settle, never
twice for the same content. The config is packaged with the function and named by ``VX_EVAL_CONFIG``
(a path); ``VX_EVAL_SETTLE`` sets the settle time in seconds (default 60). An event about any object other
than the config's golden file is ignored.

AWS Lambda (S3 event notification, ``s3:ObjectCreated:*`` on the golden file's bucket and prefix)::

    handler: vx_eval.triggers.aws_lambda_handler

Azure Functions (Event Grid trigger, ``Microsoft.Storage.BlobCreated`` on the storage account)::

    import azure.functions as func
    from vx_eval.triggers import azure_function_handler

    app = func.FunctionApp()

    @app.event_grid_trigger(arg_name="event")
    def golden_changed(event: func.EventGridEvent) -> None:
        azure_function_handler(event)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

from vx_eval.core.config.experiment import load_config
from vx_eval.core.errors import ConfigError
from vx_eval.core.plugins import load_plugins
from vx_eval.core.usecases.pipeline import RunOptions
from vx_eval.core.usecases.watch import Watcher


def _watcher() -> Watcher:
    config = os.environ.get("VX_EVAL_CONFIG")
    if not config:
        raise ConfigError("set VX_EVAL_CONFIG to the path of the experiment config packaged with the function")
    settle = float(os.environ.get("VX_EVAL_SETTLE", "60"))
    return Watcher(Path(config), load_plugins(), settle, options=RunOptions())


def _handle(changed: list[str]) -> dict[str, Any]:
    watcher = _watcher()
    golden = load_config(watcher.config, watcher.plugins).config.golden_source.path
    if golden not in changed:
        return {"action": "ignored", "golden": golden, "changed": changed}
    outcome = watcher.check_once()
    return {"action": outcome.action, "golden": golden, "sha256": outcome.sha256, "run": outcome.run_id}


def aws_lambda_handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    """An S3 event notification: the objects it names, as ``s3://bucket/key``."""
    changed = [
        f"s3://{r['s3']['bucket']['name']}/{unquote_plus(r['s3']['object']['key'])}"
        for r in event.get("Records", [])
        if "s3" in r
    ]
    return _handle(changed)


def azure_function_handler(event: Any) -> dict[str, Any]:
    """An Event Grid event (``azure.functions.EventGridEvent`` or its JSON as a dict): the blob's URL."""
    data = event.get_json() if hasattr(event, "get_json") else (event.get("data") or {})
    return _handle([data["url"]] if data.get("url") else [])
