"""clgrad's version: a leaf module, so low layers (the kernel cache keys) can read it without importing the package."""
__version__ = "0.1.0"
