"""Rhizome in process."""
from ._rhizome import __version__

__all__ = ["__version__"]
