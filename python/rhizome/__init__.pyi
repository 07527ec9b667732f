from ._rhizome import *  # noqa: F401,F403
from ._rhizome import __version__ as __version__
from ._rdflib import from_rdflib as from_rdflib, to_rdflib as to_rdflib
from ._ldp import Ldp as Ldp
