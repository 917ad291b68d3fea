"""fedcheck: a verification-focused theory checker for federated optimization."""
__version__ = "0.1.0"
