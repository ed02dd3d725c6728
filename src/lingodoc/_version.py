"""The version of lingodoc."""

__version__ = "0.1.0"
