"""The wire schemas of proto-schemas/, loaded once, and checks against them.

The schemas refer to each other by relative file name, so they go into one
`referencing` registry keyed by file name, and a message is checked against
``{"$ref": "<type>.schema.json"}``.
"""

import json
import pathlib

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SCHEMA_DIR = pathlib.Path(__file__).resolve().parents[2] / "proto-schemas"


def load_schemas():
    """Every schema file by name."""
    return {p.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(SCHEMA_DIR.glob("*.schema.json"))}


SCHEMAS = load_schemas()
REGISTRY = Registry().with_resources(
    (name, Resource.from_contents(schema, default_specification=DRAFT202012)) for name, schema in SCHEMAS.items())
_validators = {}


def validator(ref):
    """A validator for ``ref``: a file name, optionally with a #fragment."""
    if ref not in _validators:
        _validators[ref] = Draft202012Validator({"$ref": ref}, registry=REGISTRY)
    return _validators[ref]


def errors(instance, ref):
    """The schema violations of ``instance`` against ``ref``, as readable lines."""
    return [f"{e.json_path}: {e.message}" for e in validator(ref).iter_errors(instance)]


def assert_valid(message, ref=None):
    """Fails unless ``message`` satisfies its type's schema (or ``ref``)."""
    if ref is None:
        kind = message.get("type") if isinstance(message, dict) else None
        ref = f"{kind}.schema.json"
        assert ref in SCHEMAS, f"no schema for message type {kind!r}: {_short(message)}"
    error = best_match(validator(ref).iter_errors(message))
    if error is not None:
        raise AssertionError(f"{ref}: {error.json_path}: {error.message}\n  in {_short(message)}")


def _short(value, limit=600):
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "…"
