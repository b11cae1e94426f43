"""The client's tests run against a real gateway that tests/python_client.rs starts:

- ``TOLLGATE_URL``: the gateway, serving examples/support.yaml;
- ``TOLLGATE_TOKEN``: an agent's credential (agent ``support``, within ``org:acme``);
- ``TOLLGATE_APPROVER_TOKEN``: an approver's (``team-lead``);
- ``TOLLGATE_ADMIN_TOKEN``: the owner's.

Without them the tests are skipped (they are not unit tests of a mock).
"""

from __future__ import annotations

import itertools
import os

import pytest

from tollgate import Tollgate

_counter = itertools.count(1)


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.skip(f"{name} is not set: tests/python_client.rs starts a gateway and sets it")
    return value


@pytest.fixture
def url() -> str:
    return _env("TOLLGATE_URL")


@pytest.fixture
def agent(url: str) -> Tollgate:
    with Tollgate(url, _env("TOLLGATE_TOKEN")) as client:
        yield client


@pytest.fixture
def approver(url: str) -> Tollgate:
    with Tollgate(url, _env("TOLLGATE_APPROVER_TOKEN")) as client:
        yield client


@pytest.fixture
def admin(url: str) -> Tollgate:
    with Tollgate(url, _env("TOLLGATE_ADMIN_TOKEN")) as client:
        yield client


@pytest.fixture
def task() -> str:
    return f"py-{os.getpid()}-{next(_counter)}"


SCOPE = "org:acme/support"
