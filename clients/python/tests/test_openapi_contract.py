"""The client cannot drift from the gateway: every operation it sends is a route of
``/openapi.json`` with the same method, path parameters, query parameters and status, every
field it sends is a field of the route's request schema (of a type the schema takes), and every
field it reads is one the answer's schema promises (required where the client requires it, of
types the client accepts)."""

from __future__ import annotations

import re
import types
import typing
from typing import Any, Literal, Union

import httpx
import pytest
from pydantic import BaseModel

from tollgate._ops import REGISTRY, Spec
from tollgate.models import Answer, Body

ALL = {"string", "integer", "number", "boolean", "object", "array", "null"}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    import os

    url = os.environ.get("TOLLGATE_URL")
    token = os.environ.get("TOLLGATE_ADMIN_TOKEN")
    if not url or not token:
        pytest.skip("TOLLGATE_URL and TOLLGATE_ADMIN_TOKEN are set by tests/python_client.rs")
    answer = httpx.get(url + "/openapi.json", headers={"Authorization": f"Bearer {token}"})
    answer.raise_for_status()
    return answer.json()


def resolve(schema: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**doc["components"]["schemas"][name], **rest}
    return schema


def gateway_types(schema: dict[str, Any], doc: dict[str, Any]) -> set[str]:
    schema = resolve(schema, doc)
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return set().union(*(gateway_types(s, doc) for s in schema[key]))
    if "allOf" in schema:
        return gateway_types(schema["allOf"][0], doc)
    kind = schema.get("type")
    if kind is None:
        if "enum" in schema:
            return {"null" if v is None else _json_type(v) for v in schema["enum"]}
        return set(ALL) if "properties" not in schema else {"object"}
    found = {kind} if isinstance(kind, str) else set(kind)
    if "number" in found:
        found.add("integer")
    return found


def _json_type(value: Any) -> str:
    return {str: "string", bool: "boolean", int: "integer", float: "number", dict: "object", list: "array"}[type(value)]


def client_types(annotation: Any) -> tuple[set[str], set[Any] | None, type[BaseModel] | None, Any]:
    """(JSON types, enum values or None, nested model, list item annotation) of a field."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        kinds: set[str] = set()
        values: set[Any] | None = set()
        model = item = None
        for arg in typing.get_args(annotation):
            k, v, mdl, it = client_types(arg)
            kinds |= k
            values = None if values is None or v is None else values | v
            model = model or mdl
            item = item or it
        if kinds - {"null"} and values is not None and not values:
            values = None
        return kinds, values, model, item
    if origin is Literal:
        vals = set(typing.get_args(annotation))
        return {_json_type(v) for v in vals}, vals, None, None
    if annotation is type(None):
        return {"null"}, set(), None, None
    if annotation is Any:
        return set(ALL), None, None, None
    if origin is list:
        return {"array"}, None, None, typing.get_args(annotation)[0]
    if origin is dict or annotation is dict:
        return {"object"}, None, None, None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {"object"}, None, annotation, None
    base = {str: {"string"}, int: {"integer"}, float: {"number", "integer"}, bool: {"boolean"}}
    return base[annotation], None, None, None


def check_answer(model: type[BaseModel], schema: dict[str, Any], doc: dict[str, Any], where: str) -> list[str]:
    problems = []
    schema = resolve(schema, doc)
    props = schema.get("properties")
    if props is None:
        return [
            f"{where}: the gateway documents no fields (a bare object), the client reads {sorted(model.model_fields)}"
        ]
    required = set(schema.get("required", []))
    for name, field in model.model_fields.items():
        key = field.alias or name
        at = f"{where}.{key}"
        if key not in props:
            problems.append(f"{at}: the client reads a field the gateway does not document")
            continue
        if field.is_required() and key not in required:
            problems.append(f"{at}: the client requires it, the gateway may leave it out")
        sent = gateway_types(props[key], doc)
        kinds, values, nested, item = client_types(field.annotation)
        if not sent <= kinds:
            problems.append(f"{at}: the gateway sends {sorted(sent)}, the client takes {sorted(kinds)}")
        gw_enum = resolve(props[key], doc).get("enum")
        if values is not None and gw_enum is not None and not {v for v in gw_enum if v is not None} <= values:
            problems.append(
                f"{at}: the gateway may send {sorted(map(str, gw_enum))}, the client takes {sorted(map(str, values))}"
            )
        if nested is not None:
            problems += check_answer(nested, _object_member(props[key], doc), doc, at)
        if item is not None:
            _, _, item_model, _ = client_types(item)
            items = resolve(props[key], doc).get("items")
            if item_model is not None and items is not None:
                problems += check_answer(item_model, items, doc, at + "[]")
    return problems


def check_body(model: type[BaseModel], schema: dict[str, Any], doc: dict[str, Any], where: str) -> list[str]:
    problems = []
    schema = resolve(schema, doc)
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    fields = {(f.alias or n): f for n, f in model.model_fields.items()}
    for key in sorted(required - set(fields)):
        problems.append(f"{where}.{key}: the gateway requires it, the client cannot send it")
    for key, field in fields.items():
        at = f"{where}.{key}"
        if key not in props:
            problems.append(f"{at}: the client sends a field the gateway does not take")
            continue
        if key in required and not field.is_required():
            problems.append(f"{at}: the gateway requires it, the client may leave it out")
        taken = gateway_types(props[key], doc)
        kinds, values, nested, item = client_types(field.annotation)
        kinds.discard("null")  # a None is left out of the body, never sent
        if not kinds <= taken:
            problems.append(f"{at}: the client sends {sorted(kinds)}, the gateway takes {sorted(taken)}")
        gw_enum = resolve(props[key], doc).get("enum")
        if values is not None and gw_enum is not None and not {v for v in values if v is not None} <= set(gw_enum):
            problems.append(
                f"{at}: the client sends {sorted(map(str, values))}, the gateway takes {sorted(map(str, gw_enum))}"
            )
        if nested is not None:
            problems += check_body(nested, _object_member(props[key], doc), doc, at)
        if item is not None:
            _, _, item_model, _ = client_types(item)
            items = resolve(props[key], doc).get("items")
            if item_model is not None and items is not None:
                problems += check_body(item_model, items, doc, at + "[]")
    return problems


def _object_member(schema: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    """The object schema of a field that may also be null (``oneOf [null, {$ref}]``)."""
    schema = resolve(schema, doc)
    for key in ("oneOf", "anyOf"):
        for member in schema.get(key, []):
            member = resolve(member, doc)
            if member.get("type") != "null":
                return member
    return schema


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_operation_matches_the_gateway(name: str, document: dict[str, Any]) -> None:
    spec: Spec = REGISTRY[name]
    route = document["paths"].get(spec.path)
    assert route is not None, f"{name}: no route {spec.path} in /openapi.json"
    operation = route.get(spec.method.lower())
    assert operation is not None, f"{name}: {spec.path} takes no {spec.method}"
    assert operation.get("operationId") == spec.operation_id, (
        f"{name}: the gateway calls it {operation.get('operationId')}"
    )
    params = operation.get("parameters", [])
    path_params = {p["name"] for p in params if p["in"] == "path"}
    assert path_params == set(re.findall(r"{(\w+)}", spec.path)), f"{name}: path parameters {path_params}"
    query = {p["name"] for p in params if p["in"] == "query"}
    assert set(spec.query) <= query, f"{name}: query parameters {sorted(set(spec.query) - query)} are not the gateway's"
    for status in spec.statuses:
        assert str(status) in operation["responses"], f"{name}: the gateway never answers {status}"
    body = operation.get("requestBody")
    if spec.body is None:
        assert body is None or not body.get("required"), f"{name}: the gateway requires a body"
    else:
        assert body is not None, f"{name}: the gateway takes no body"
        problems = check_body(spec.body, body["content"]["application/json"]["schema"], document, name)
        assert not problems, "\n".join(problems)
    if spec.answer is not None:
        for status in spec.statuses:
            answer = operation["responses"][str(status)]["content"]["application/json"]["schema"]
            problems = check_answer(spec.answer, answer, document, f"{name} {status}")
            assert not problems, "\n".join(problems)


def test_every_model_is_a_body_or_an_answer() -> None:
    for spec in REGISTRY.values():
        assert spec.body is None or issubclass(spec.body, Body)
        assert spec.answer is None or issubclass(spec.answer, Answer)


def test_the_checker_catches_drift(document: dict[str, Any]) -> None:
    """A client model reading a field the gateway does not send, or sending one it does not
    take, is caught: the checks above can fail."""

    class Drifted(Answer):
        call_id: str
        verdict: str

    schema = document["paths"]["/v1/runs/{run_id}/tool-calls"]["post"]["responses"]["200"]["content"][
        "application/json"
    ]["schema"]
    assert any("verdict" in p for p in check_answer(Drifted, schema, document, "x"))

    class WrongType(Answer):
        seq: str

    receipt = {"$ref": "#/components/schemas/Receipt"}
    assert any("seq" in p for p in check_answer(WrongType, receipt, document, "x"))

    class Extra(Body):
        tool: str
        approve_myself: bool

    request = document["components"]["schemas"]["ToolCallRequest"]
    assert any("approve_myself" in p for p in check_body(Extra, request, document, "x"))
