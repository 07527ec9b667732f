"""Type stubs of the native module (rhizome._rhizome); see the docstrings
of each class at runtime for the details."""

import os
from typing import Any, BinaryIO, Dict, Iterator, List, Optional, Sequence, Tuple, Union

__version__: str

_Path = Union[str, "os.PathLike[str]"]
Subject = Union["NamedNode", "BlankNode"]
Term = Union["NamedNode", "BlankNode", "Literal"]
GraphName = Union["NamedNode", "BlankNode", "DefaultGraph"]

class NamedNode:
    """An IRI. ValueError if ``value`` is not an absolute IRI."""
    def __init__(self, value: str) -> None: ...
    @property
    def value(self) -> str: ...
    def __hash__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...

class BlankNode:
    """A blank node; ``BlankNode()`` makes a fresh one."""
    def __init__(self, value: Optional[str] = None) -> None: ...
    @property
    def value(self) -> str: ...
    def __hash__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...

class Literal:
    """A literal with a datatype or a language tag (xsd:string without)."""
    def __init__(self, value: str, *, datatype: Optional[NamedNode] = None, language: Optional[str] = None) -> None: ...
    @property
    def value(self) -> str: ...
    @property
    def datatype(self) -> NamedNode: ...
    @property
    def language(self) -> Optional[str]: ...
    def __hash__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...

class DefaultGraph:
    """The default graph of a dataset."""
    def __init__(self) -> None: ...
    @property
    def value(self) -> str: ...

class Variable:
    """A SPARQL variable (name without ``?``)."""
    def __init__(self, value: str) -> None: ...
    @property
    def value(self) -> str: ...

class Triple:
    """subject, predicate, object; unpacks as a 3-tuple."""
    def __init__(self, subject: Subject, predicate: NamedNode, object: Term) -> None: ...
    @property
    def subject(self) -> Subject: ...
    @property
    def predicate(self) -> NamedNode: ...
    @property
    def object(self) -> Term: ...
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> Any: ...

class Quad:
    """subject, predicate, object, graph_name (DefaultGraph() when left out); unpacks as a 4-tuple."""
    def __init__(self, subject: Subject, predicate: NamedNode, object: Term, graph_name: Optional[GraphName] = None) -> None: ...
    @property
    def subject(self) -> Subject: ...
    @property
    def predicate(self) -> NamedNode: ...
    @property
    def object(self) -> Term: ...
    @property
    def graph_name(self) -> GraphName: ...
    @property
    def triple(self) -> Triple: ...
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> Any: ...

class QuadIterator(Iterator[Quad]):
    """Quads of a pattern, read lazily from a snapshot taken when it was made."""
    def __iter__(self) -> "QuadIterator": ...
    def __next__(self) -> Quad: ...

class QuerySolution:
    """A SELECT row: ``row["x"]``, ``row[Variable("x")]``, ``row[0]``; None when unbound."""
    def __getitem__(self, key: Union[int, str, Variable]) -> Optional[Term]: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Optional[Term]]: ...

class QuerySolutions(Iterator[QuerySolution]):
    """The rows of a SELECT query."""
    @property
    def variables(self) -> List[Variable]: ...
    def __iter__(self) -> "QuerySolutions": ...
    def __next__(self) -> QuerySolution: ...
    def __len__(self) -> int: ...

class QueryTriples(Iterator[Triple]):
    """The triples of a CONSTRUCT or DESCRIBE query."""
    def __iter__(self) -> "QueryTriples": ...
    def __next__(self) -> Triple: ...
    def __len__(self) -> int: ...

class Store:
    """An RDF store: ``Store()`` in memory, ``Store(path)`` on disk.

    A new store is a plain dataset unless ``mode="union"`` (the document
    model of ``rhizome serve``). One process opens a folder at a time
    (StoreLocked otherwise). Calls release the GIL.
    """
    def __init__(self, path: Optional[_Path] = None, *, mode: Optional[str] = None) -> None: ...
    @staticmethod
    def read_only(path: _Path) -> "Store":
        """Opens an existing store without writing anything; writes raise PermissionError."""
    @property
    def mode(self) -> str: ...
    def load(
        self,
        input: Union[_Path, bytes, BinaryIO, None] = None,
        format: Optional[str] = None,
        *,
        path: Optional[_Path] = None,
        base_iri: Optional[str] = None,
        to_graph: Optional[GraphName] = None,
        lenient: bool = False,
    ) -> Dict[str, Any]:
        """Bulk-loads RDF, all or nothing; SyntaxError (file, line, column) on bad input."""
    def add(self, quad: Union[Quad, Triple]) -> None:
        """Adds a quad in one durable transaction."""
    def extend(self, quads: Any) -> int:
        """Adds quads in one transaction; returns how many were new."""
    def remove(self, quad: Union[Quad, Triple]) -> None:
        """Removes a quad if present."""
    def quads_for_pattern(
        self,
        subject: Optional[Subject] = None,
        predicate: Optional[NamedNode] = None,
        object: Optional[Term] = None,
        graph_name: Optional[GraphName] = None,
    ) -> QuadIterator:
        """Quads matching a pattern (None: anything), lazily, from a snapshot."""
    def query(
        self,
        query: str,
        *,
        base_iri: Optional[str] = None,
        timeout_ms: Optional[int] = None,
        default_graph: Union[NamedNode, Sequence[NamedNode], None] = None,
    ) -> Union[QuerySolutions, bool, QueryTriples]:
        """SPARQL 1.1 query on a snapshot; SyntaxError with the position on bad SPARQL."""
    def update(self, update: str, *, base_iri: Optional[str] = None) -> Dict[str, int]:
        """SPARQL 1.1 update as one transaction."""
    def dump(
        self, output: Union[_Path, BinaryIO, None] = None, format: str = "nquads", *, from_graph: Optional[GraphName] = None
    ) -> Optional[bytes]:
        """Serializes the store or one graph; returns bytes when output is None."""
    def optimize(self) -> None:
        """Compacts the store and recounts its statistics."""
    def __len__(self) -> int: ...
    def __contains__(self, quad: Union[Quad, Triple]) -> bool: ...
    def __iter__(self) -> QuadIterator: ...

class Database:
    """A CouchDB-style database of a data folder."""
    @property
    def name(self) -> str: ...
    @property
    def store(self) -> Store:
        """The database's quads (every document's graph), a union dataset."""
    def get(
        self, doc_id: str, *, rev: Optional[str] = None, revs: bool = False, conflicts: bool = False, attachments: bool = False
    ) -> Dict[str, Any]:
        """A document; NotFound when missing or deleted."""
    def put(self, doc: Dict[str, Any], *, doc_id: Optional[str] = None) -> str:
        """Writes a document (``_rev`` to update); returns the new revision; Conflict on a stale ``_rev``."""
    def delete(self, doc_id: str, rev: str) -> str:
        """Deletes a document at ``rev``; returns the deletion's revision."""
    def bulk_docs(self, docs: Sequence[Dict[str, Any]], *, new_edits: bool = True) -> List[Dict[str, Any]]:
        """Writes documents in one transaction; one result per document, as CouchDB's _bulk_docs."""
    def all_docs(
        self,
        *,
        include_docs: bool = False,
        start_key: Optional[str] = None,
        end_key: Optional[str] = None,
        inclusive_end: bool = True,
        limit: Optional[int] = None,
        skip: int = 0,
        descending: bool = False,
        keys: Optional[List[str]] = None,
        conflicts: bool = False,
    ) -> Dict[str, Any]: ...
    def changes(
        self,
        *,
        since: int = 0,
        limit: Optional[int] = None,
        descending: bool = False,
        include_docs: bool = False,
        conflicts: bool = False,
        doc_ids: Optional[List[str]] = None,
        selector: Optional[Dict[str, Any]] = None,
        style: str = "main_only",
    ) -> Dict[str, Any]: ...
    def get_attachment(self, doc_id: str, name: str, *, rev: Optional[str] = None) -> Tuple[bytes, str]: ...
    def put_attachment(
        self, doc_id: str, name: str, data: bytes, content_type: str = "application/octet-stream", *, rev: Optional[str] = None
    ) -> str: ...
    def delete_attachment(self, doc_id: str, name: str, rev: str) -> str: ...
    def find(self, query: Dict[str, Any]) -> Dict[str, Any]:
        """A Mango query (the body of POST /{db}/_find)."""
    def view(self, ddoc: str, view: str, **options: Any) -> Dict[str, Any]:
        """Queries a view with CouchDB's options (key, start_key, reduce, group, limit, ...)."""
    def info(self) -> Dict[str, Any]: ...
    def __contains__(self, doc_id: str) -> bool: ...

class DataFolder:
    """A server's data folder (``rhizome.open``)."""
    @property
    def path(self) -> str: ...
    def database(self, name: str, *, create: bool = True) -> Database:
        """Database ``name``; StoreLocked while another process has it open."""
    def databases(self) -> List[str]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "DataFolder": ...
    def __exit__(self, *args: Any) -> bool: ...

def open(data_dir: _Path, *, read_only: bool = False) -> DataFolder:
    """Opens a data folder like ``rhizome serve --data``."""

class RhizomeError(Exception): ...
class Conflict(RhizomeError): ...
class Forbidden(RhizomeError): ...
class NotFound(KeyError): ...
class StoreLocked(OSError): ...
