#!/usr/bin/python3
"""Validates a JSON document against one of Chock's schemas (docs/schemas/).

   validate_json.py SCHEMA_DIR SCHEMA_NAME DOCUMENT_FILE

Every schema of the directory is known by its $id, so references between
them resolve without the network. Prints why and exits 1 when it does not
validate."""
import json
import pathlib
import sys

import jsonschema

schema_dir, name, document = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
schemas = {p.name: json.loads(p.read_text()) for p in schema_dir.glob("*.schema.json")}
schema = schemas[name]
instance = json.loads(pathlib.Path(document).read_text())
validator_class = jsonschema.validators.validator_for(schema)
validator_class.check_schema(schema)
try:
    from referencing import Registry, Resource  # jsonschema 4.18 and later

    registry = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas.values())
    validator = validator_class(schema, registry=registry)
except ImportError:  # Debian 12's jsonschema 4.10
    resolver = jsonschema.RefResolver.from_schema(schema, store={s["$id"]: s for s in schemas.values()})
    validator = validator_class(schema, resolver=resolver)
errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.path))
for e in errors:
    print(f"{name}: {'/'.join(map(str, e.path)) or '(top)'}: {e.message}", file=sys.stderr)
sys.exit(1 if errors else 0)
