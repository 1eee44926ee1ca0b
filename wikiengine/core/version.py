"""The distribution's version, read by hatch at build time and by ``wiki --version``."""

__version__ = "0.1.0"
