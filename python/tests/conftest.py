import pytest

import rhizome

EX = "http://example.com/"


def ex(name):
    return rhizome.NamedNode(EX + name)


@pytest.fixture
def store():
    return rhizome.Store()


@pytest.fixture
def folder(tmp_path):
    with rhizome.open(tmp_path / "data") as f:
        yield f
