"""The HTTP library the installed openai SDK is built on (httpx2 for openai>=3, httpx before)."""

try:  # pragma: no cover - depends on the installed SDK
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx  # type: ignore[no-redef, import-not-found, unused-ignore]

__all__ = ["httpx"]
