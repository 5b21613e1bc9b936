"""MkDocs hooks: the reference pages generated from the code when the site is built (`mkdocs build`), never
written by hand and never checked in: every command's help (click), the experiment config's fields (the
pydantic models and their attribute docstrings), the measure registry, the report's schema, the Python API
(`vx_eval.__all__`) and the plugin SDK (`vx_eval.plugin.__all__`)."""

from __future__ import annotations

import ast
import inspect
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from mkdocs.structure.files import File, Files


def on_files(files: Files, config: Any) -> Files:
    pages = {
        "reference/generated/cli.md": cli_page(),
        "reference/generated/config.md": config_page(),
        "reference/generated/measure-registry.md": measures_page(),
        "reference/generated/report-schema.md": report_page(),
        "reference/generated/python-api.md": names_page("vx_eval", "The Python API"),
        "reference/generated/plugin-sdk.md": names_page("vx_eval.plugin", "The plugin SDK"),
    }
    for uri, content in pages.items():
        files.append(File.generated(config, uri, content=content))
    return files


def _commands(command: click.Command, path: list[str], parent: click.Context | None) -> Iterator[tuple[str, str]]:
    ctx = click.Context(command, info_name=path[-1], parent=parent)
    yield " ".join(path), command.get_help(ctx)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _commands(sub, [*path, name], ctx)


def cli_page() -> str:
    from vx_eval.cli import cli

    out = ["# Command line (generated)\n", "Every command's `--help`, as it prints it.\n"]
    for name, text in _commands(cli, ["vx-eval"], None):
        out += [f"## `{name}`\n", "```text", text.rstrip(), "```\n"]
    return "\n".join(out)


def _docstrings(module: Any) -> dict[tuple[str, str], str]:
    """Attribute docstrings: the string that follows a class's field, by (class, field)."""
    tree = ast.parse(Path(inspect.getfile(module)).read_text(encoding="utf-8"))
    found: dict[tuple[str, str], str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        body = node.body
        for field, after in itertools.pairwise(body):
            if (
                isinstance(field, ast.AnnAssign)
                and isinstance(field.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                found[node.name, field.target.id] = " ".join(after.value.value.split())
    return found


def _type_text(annotation: Any) -> str:
    """A field's type as a person reads it: ``list[TargetConfig]``, ``str | GoldenSource``, ``'dense' | 'hybrid'``."""
    import types
    import typing

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_text(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_text(a) for a in args)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(_type_text(a) for a in args)}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def _default_text(field: Any) -> str:
    from pydantic import BaseModel

    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    return f"(its defaults: `{type(value).__name__}`)" if isinstance(value, BaseModel) else f"`{value!r}`"


def _models_page(title: str, intro: str, models: list[type], module: Any) -> str:
    docs = _docstrings(module)
    out = [f"# {title}\n", intro + "\n"]
    for model in models:
        out.append(f"## `{model.__name__}`\n")
        if model.__doc__:
            out.append(" ".join(inspect.cleandoc(model.__doc__).split()) + "\n")
        out += ["| field | type | default | what it is |", "|---|---|---|---|"]
        for name, field in model.model_fields.items():  # type: ignore[attr-defined]
            kind = _type_text(field.annotation).replace("|", "\\|")
            default = _default_text(field).replace("|", "\\|")
            said = docs.get((model.__name__, name), "").replace("|", "\\|")
            out.append(f"| `{name}` | `{kind}` | {default} | {said} |")
        out.append("")
    return "\n".join(out)


def _models_of(module: Any, first: str) -> list[type]:
    """The pydantic models a module defines, `first` first, then in the order they are written."""
    from pydantic import BaseModel

    models = [
        obj
        for _, obj in inspect.getmembers(module, inspect.isclass)
        if issubclass(obj, BaseModel) and obj.__module__ == module.__name__ and obj.model_fields
    ]
    return sorted(models, key=lambda m: (m.__name__ != first, inspect.getsourcelines(m)[1]))


def config_page() -> str:
    from vx_eval.core.config import experiment

    intro = (
        "The experiment YAML's blocks, from the pydantic models that check it (`vx_eval.core.config.experiment`); "
        "each engine's `options:` block is its plugin's own `Options` model (see the engines' pages)."
    )
    models = _models_of(experiment, "ExperimentConfig")
    return _models_page("Configuration fields (generated)", intro, models, experiment)


def report_page() -> str:
    from vx_eval.core.report import schema

    intro = "What `report.json` holds, from the typed `Report` (`vx_eval.core.report.schema`) every reader uses."
    return _models_page("The report's schema (generated)", intro, _models_of(schema, "Report"), schema)


def measures_page() -> str:
    from vx_eval.core.measures import metrics, trec_only  # noqa: F401 (trec_only registers its measures)

    out = [
        "# The measure registry (generated)\n",
        "Every registered measure: its name, the other spellings that parse to it, whether it takes a cut-off "
        "(`@k`), its own parameter, and its definition.\n",
        "| measure | also parsed from | cut-off | parameter | definition |",
        "|---|---|---|---|---|",
    ]
    for name, d in sorted(metrics.REGISTRY.items()):
        spellings = ", ".join(f"`{s}`" for s in dict.fromkeys((*d.aliases, *d.trec)))
        param = f"`{d.param[0]}` = {d.param[1]:g}" if d.param else ("a list of values" if d.values else "")
        doc = " ".join(d.doc.split()).replace("|", "\\|")
        out.append(f"| `{name}` | {spellings} | {d.cutoff} | {param} | {doc} |")
    return "\n".join(out) + "\n"


def names_page(module_name: str, title: str) -> str:
    import importlib

    module = importlib.import_module(module_name)
    out = [f"# {title} (generated)\n", f"`{module_name}.__all__`, each name with its signature and docstring.\n"]
    for name in module.__all__:
        obj = getattr(module, name)
        if name.startswith("__"):
            continue
        try:
            signature = f"{name}{inspect.signature(obj)}" if callable(obj) else f"{name} = {obj!r}"
        except (TypeError, ValueError):
            signature = name
        out += [f"## `{name}`\n", "```python", signature, "```\n"]
        doc = inspect.getdoc(obj) if inspect.isclass(obj) or callable(obj) or inspect.ismodule(obj) else None
        if doc and not (doc.startswith("str(object") or doc.startswith("dict() ")):
            out.append(doc + "\n")
    return "\n".join(out)
