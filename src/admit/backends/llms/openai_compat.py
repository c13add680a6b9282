"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, llama.cpp server, Ollama, LiteLLM, ...) via the ``openai`` SDK.

Structured output: the first call asks for ``response_format={"type": "json_schema", ...}``; a server that
rejects it (llama.cpp's server answers 500 "Input should be 'text' or 'json_object'") is asked next with
llama.cpp's ``{"type": "json_object", "schema": ...}`` grammar, then plain JSON mode, then the prompt alone.
The mode that worked is remembered for the following calls.

Errors are wrapped at this boundary: a timeout becomes :class:`~admit.errors.BackendTimeout`, anything else
:class:`~admit.errors.BackendError`. 429 and 5xx answers and refused connections are retried with bounded
exponential backoff (``Retry-After`` honoured up to ``max_backoff_s``). The API key is read from the
environment variable named by ``api_key_env`` and never logged.

``timeout`` is a total deadline for the whole call, not a per-read one: every attempt (connecting, sending,
the status line, the headers, ``100 Continue`` lines, the body) and every backoff between attempts must end
within it; a ``Retry-After`` that would end past it is not waited for. A watchdog shuts down the socket the
attempt is using when the deadline passes, whatever phase it is in (a server that drips its headers, or one
byte of its body every 0.2 s, cannot hold a worker); the transport also checks the clock after every piece of
the body, and refuses a body larger than ``max_reply_bytes`` (the read stops there). Both end in
:class:`~admit.errors.BackendTimeout` / :class:`~admit.errors.BackendError`, which the pruners turn into their
recorded ``on_error`` fallback.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Unpack

from admit.backends.llms.base import CompleteOptions, LLMReply, StructuredMode
from admit.backends.llms.spec import LLMSpec
from admit.errors import BackendError, BackendTimeout, ConfigError, MissingExtraError
from admit.types import Message

__all__ = ["DEFAULT_API_KEY_ENV", "MAX_REPLY_BYTES", "SPEC", "OpenAICompatLLM"]

logger = logging.getLogger(__name__)

DEFAULT_API_KEY_ENV = "ADMIT_LLM_API_KEY"
_MODES: tuple[StructuredMode, ...] = ("json_schema", "json_object_schema", "json_object", "prompt")
_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
_FORMAT_HINTS = ("response_format", "json_schema", "json_object", "schema")
MAX_REPLY_BYTES = 1_048_576
"""The largest HTTP body read from the server by default (a grader's answer is a few kB)."""
_DEADLINE: ContextVar[float | None] = ContextVar("admit_llm_deadline", default=None)


class ReplyTooLarge(Exception):
    """The server's body passed the byte cap (raised inside the transport, wrapped by the SDK)."""


def _deadline_transport(max_bytes: int, client_cls: type) -> Any:
    """A transport for ``client_cls`` (the SDK's httpx-style client) that enforces the attempt's total deadline
    (``_DEADLINE``) and a body-size cap."""
    import importlib

    httpx = importlib.import_module(client_cls.__module__.split(".")[0])  # httpx, or the SDK's httpx2 fork

    stream_base: Any = httpx.SyncByteStream
    transport_base: Any = httpx.BaseTransport

    class _Capped(stream_base):  # type: ignore[misc]
        def __init__(self, inner: Any, request: Any, deadline: float | None, sock: Any) -> None:
            self._inner, self._request, self._deadline = inner, request, deadline
            self._timer: threading.Timer | None = None
            if deadline is not None and sock is not None:
                # a watchdog: at the deadline, shut the socket down so a read blocked on a dripping server
                # returns at once (the per-read timeout alone would let each slow byte restart the clock)
                self._timer = threading.Timer(max(deadline - time.monotonic(), 0.0), _shutdown, (sock,))
                self._timer.daemon = True
                self._timer.start()

        def _late(self) -> bool:
            return self._deadline is not None and time.monotonic() >= self._deadline

        def __iter__(self) -> Iterator[bytes]:
            got = 0
            try:
                for piece in self._inner:
                    if self._late():
                        raise httpx.ReadTimeout("total deadline passed while reading the body", request=self._request)
                    got += len(piece)
                    if got > max_bytes:
                        raise ReplyTooLarge(f"the reply is larger than {max_bytes} bytes")
                    yield piece
            except (ReplyTooLarge, httpx.ReadTimeout):
                self.close()
                raise
            except Exception as exc:  # the watchdog cut the connection: report it as the timeout it is
                self.close()
                if self._late():
                    raise httpx.ReadTimeout(
                        "total deadline passed while reading the body", request=self._request
                    ) from exc
                raise
            finally:
                self._cancel()

        def _cancel(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def close(self) -> None:
            self._cancel()
            close = getattr(self._inner, "close", None)
            if close is not None:
                close()

    class _Transport(transport_base):  # type: ignore[misc]
        def __init__(self) -> None:
            self._inner = httpx.HTTPTransport()
            pool = getattr(self._inner, "_pool", None)
            backend = getattr(pool, "_network_backend", None)
            if backend is not None:  # every socket the pool opens reports to the attempt that uses it
                pool._network_backend = _WatchedBackend(backend)  # type: ignore[union-attr]

        def handle_request(self, request: Any) -> Any:
            deadline = _DEADLINE.get()
            if deadline is None:
                return self._wrap(self._inner.handle_request(request), request, None)
            left = deadline - time.monotonic()
            if left <= 0:
                raise httpx.ConnectTimeout("total deadline passed before the request", request=request)
            t = dict(request.extensions.get("timeout") or {})
            for k in ("connect", "read", "write", "pool"):
                t[k] = min(float(t.get(k) or left), left)
            request.extensions["timeout"] = t
            # until the body starts, the watchdog is the attempt's: at the deadline it shuts down whichever socket
            # the attempt is reading (a server dripping its status line, its headers or "100 Continue" lines)
            attempt = _Attempt()
            _ATTEMPT.current = attempt
            timer = threading.Timer(left, attempt.expire)
            timer.daemon = True
            timer.start()
            try:
                resp = self._inner.handle_request(request)
            except Exception as exc:
                if attempt.expired or time.monotonic() >= deadline:
                    raise httpx.ReadTimeout("total deadline passed before the headers", request=request) from exc
                raise
            finally:
                timer.cancel()
                _ATTEMPT.current = None
            if attempt.expired:
                with contextlib.suppress(Exception):
                    resp.close()
                raise httpx.ReadTimeout("total deadline passed before the headers", request=request)
            return self._wrap(resp, request, deadline)

        def _wrap(self, resp: Any, request: Any, deadline: float | None) -> Any:
            sock = None
            with contextlib.suppress(Exception):
                sock = resp.extensions["network_stream"].get_extra_info("socket")
            return httpx.Response(
                status_code=resp.status_code,
                headers=resp.headers,
                stream=_Capped(resp.stream, request, deadline, sock),
                extensions=resp.extensions,
                request=request,
            )

        def close(self) -> None:
            self._inner.close()

    return _Transport()


class OpenAICompatLLM:
    """A chat model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Example:
        >>> llm = OpenAICompatLLM("gpt-4o-mini")  # doctest: +SKIP  (key from $ADMIT_LLM_API_KEY)
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = DEFAULT_API_KEY_ENV,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        structured: StructuredMode | str = "auto",
        http_client: Any = None,
        sleep: Callable[[float], None] = time.sleep,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> None:
        """Create the client.

        Args:
            model: Model name sent to the server.
            base_url: Endpoint base URL (``http://127.0.0.1:8080/v1``); ``None`` means api.openai.com.
            api_key_env: NAME of the environment variable holding the API key. Without a key a custom
                ``base_url`` gets a placeholder (local servers need none); api.openai.com is a ConfigError.
            timeout: Default total deadline of one HTTP attempt in seconds (connect, wait and body together).
            max_retries: Retries on 429/5xx/refused connections (0..10).
            backoff_s: First backoff; doubled each retry, with jitter.
            max_backoff_s: Ceiling of one backoff (and of a server's ``Retry-After``).
            structured: ``auto`` (try the modes in order), or force one of ``json_schema``,
                ``json_object_schema``, ``json_object``, ``prompt``.
            http_client: An ``httpx.Client`` for the SDK (proxies, custom TLS); optional. Its own transport is
                used as given: the total deadline and the size cap then rest on that client.
            sleep: Sleep function (tests replace it).
            max_reply_bytes: The largest HTTP body read (default 1 MiB); a larger one is an error.
        """
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise MissingExtraError("openai", "llm") from exc
        if not model:
            raise ConfigError("OpenAICompatLLM: `model` is empty; give the model name the server serves.")
        if not 0 <= int(max_retries) <= 10:
            raise ConfigError(f"OpenAICompatLLM: max_retries must be in 0..10, got {max_retries}.")
        if structured != "auto" and structured not in _MODES:
            raise ConfigError(f"OpenAICompatLLM: structured must be 'auto' or one of {_MODES}, got {structured!r}.")
        if timeout <= 0:
            raise ConfigError(f"OpenAICompatLLM: timeout must be > 0 seconds, got {timeout}.")
        key = os.environ.get(api_key_env)
        if not key:
            if base_url is None:
                raise ConfigError(
                    f"No API key: set the environment variable {api_key_env} (or pass api_key_env= naming the "
                    "variable that holds it), or give base_url= for a local server that needs none."
                )
            key = "not-needed"
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self._forced = structured != "auto"
        self._mode: StructuredMode = structured if structured != "auto" else "json_schema"
        self._lock = threading.Lock()
        self._sleep = sleep
        self._openai = openai
        kwargs: dict[str, Any] = {"api_key": key, "timeout": self.timeout, "max_retries": 0}
        if base_url is not None:
            kwargs["base_url"] = base_url
        if int(max_reply_bytes) < 1024:
            raise ConfigError(f"OpenAICompatLLM: max_reply_bytes must be >= 1024, got {max_reply_bytes}.")
        if http_client is None:
            client_cls = openai.DefaultHttpxClient
            base = next((c for c in client_cls.__mro__[1:] if c.__name__ == "Client"), client_cls)
            http_client = client_cls(transport=_deadline_transport(int(max_reply_bytes), base))
        kwargs["http_client"] = http_client
        self._client = openai.OpenAI(**kwargs)

    def __repr__(self) -> str:
        """Describe the backend without the key."""
        return f"OpenAICompatLLM(model={self.model!r}, base_url={self.base_url!r}, api_key_env={self.api_key_env!r})"

    @property
    def structured_mode(self) -> StructuredMode:
        """The structured-output mode the next call will use."""
        return self._mode

    def complete(self, messages: Sequence[Message], **opts: Unpack[CompleteOptions]) -> LLMReply:
        """Return one chat completion; see the module docstring for modes, retries and errors."""
        json_schema, max_tokens = opts.get("json_schema"), opts.get("max_tokens", 512)
        temperature, timeout = opts.get("temperature", 0.0), opts.get("timeout")
        msgs = [{"role": m.role, "content": m.content} for m in messages]
        t0 = time.perf_counter()
        budget = float(timeout or self.timeout)
        end = time.monotonic() + budget  # one budget for every attempt and every backoff of this call
        attempts = 0
        retries = 0
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise BackendTimeout(
                    f"LLM {self.model!r}: the call's budget of {budget:.1f}s ran out after {attempts} attempt(s)."
                )
            mode: StructuredMode = self._mode if json_schema is not None else "prompt"
            kwargs: dict[str, Any] = {
                "model": self.model,
                "messages": msgs,
                "max_tokens": int(max_tokens),
                "temperature": float(temperature),
                "timeout": left,
            }
            if json_schema is not None:
                rf = _response_format(mode, json_schema)
                if rf is not None:
                    kwargs["response_format"] = rf
            attempts += 1
            token = _DEADLINE.set(end)
            try:
                resp = self._client.chat.completions.create(**kwargs)
            except self._openai.APITimeoutError as exc:
                raise BackendTimeout(
                    f"LLM {self.model!r} at {self.base_url or 'api.openai.com'} did not answer within {budget:.1f}s."
                ) from exc
            except self._openai.APIStatusError as exc:
                status = int(getattr(exc, "status_code", 0) or 0)
                body = _error_text(exc)
                if json_schema is not None and self._downgrade(mode, status, body):
                    continue
                if (
                    status in _RETRY_STATUS
                    and retries < self.max_retries
                    and self._backoff(retries + 1, _retry_after(exc), end)
                ):
                    retries += 1
                    continue
                raise BackendError(f"LLM {self.model!r} answered HTTP {status}: {body[:300]}") from exc
            except ReplyTooLarge as exc:
                raise BackendError(f"LLM {self.model!r} sent a reply over the size cap; not read further.") from exc
            except self._openai.APIConnectionError as exc:
                if _caused_by(exc, ReplyTooLarge):
                    raise BackendError(f"LLM {self.model!r} sent a reply over the size cap; not read further.") from exc
                if retries < self.max_retries and self._backoff(retries + 1, None, end):
                    retries += 1
                    continue
                raise BackendError(
                    f"LLM endpoint {self.base_url or 'api.openai.com'} unreachable after {attempts} attempt(s): {exc}"
                ) from exc
            except self._openai.OpenAIError as exc:
                raise BackendError(f"LLM {self.model!r} failed: {type(exc).__name__}: {exc}") from exc
            except ValueError as exc:  # an HTTP body that is not JSON (json.JSONDecodeError is a ValueError)
                raise BackendError(f"LLM {self.model!r} answered something that is not JSON: {exc}") from exc
            finally:
                _DEADLINE.reset(token)
            return self._reply(resp, mode, time.perf_counter() - t0, attempts)

    def _downgrade(self, mode: StructuredMode, status: int, body: str) -> bool:
        """Step down the structured-output ladder when the server rejected the response format."""
        if self._forced or mode == "prompt" or status not in {400, 422, 500}:
            return False
        low = body.lower()
        if not any(h in low for h in _FORMAT_HINTS):
            return False
        with self._lock:
            if self._mode == mode:
                self._mode = _MODES[_MODES.index(mode) + 1]
                logger.info("LLM %s rejected response format %s; using %s", self.model, mode, self._mode)
        return True

    def _backoff(self, retry: int, retry_after: float | None, end: float) -> bool:
        """Sleep before retry ``retry``; ``False`` (no sleep) when the wait would end past the call's budget."""
        delay = retry_after if retry_after is not None else self.backoff_s * 2 ** (retry - 1)
        delay = min(max(delay, 0.0), self.max_backoff_s)
        delay *= 1.0 if retry_after is not None else random.uniform(0.8, 1.2)
        if time.monotonic() + delay >= end:
            logger.info("LLM %s: no retry: a %.2fs wait would pass the call's budget", self.model, delay)
            return False
        logger.info("LLM %s: retry %d/%d in %.2fs", self.model, retry, self.max_retries, delay)
        self._sleep(delay)
        return True

    def _reply(self, resp: Any, mode: StructuredMode, latency: float, attempts: int) -> LLMReply:
        try:
            choice = resp.choices[0]
            text = choice.message.content or ""
            finish = getattr(choice, "finish_reason", None)
        except (AttributeError, IndexError, TypeError) as exc:
            raise BackendError(f"LLM {self.model!r} returned no choices.") from exc
        usage = getattr(resp, "usage", None)
        return LLMReply(
            text=text,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            latency_s=latency,
            model=str(getattr(resp, "model", None) or self.model),
            finish_reason=finish,
            structured=mode,
            attempts=attempts,
        )


_ATTEMPT = threading.local()


class _Attempt:
    """One HTTP attempt's socket, as last seen by the network stream, and whether its deadline has passed."""

    def __init__(self) -> None:
        self.sock: Any = None
        self.expired = False
        self._lock = threading.Lock()

    def bind(self, sock: Any) -> None:
        with self._lock:
            self.sock = sock
            late = self.expired
        if late:
            _shutdown(sock)

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            sock = self.sock
        if sock is not None:
            _shutdown(sock)


class _WatchedStream:
    """A network stream that tells the current attempt which socket it reads and writes."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def _bind(self) -> None:
        attempt = getattr(_ATTEMPT, "current", None)
        if attempt is not None:
            with contextlib.suppress(Exception):
                attempt.bind(self._inner.get_extra_info("socket"))

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self._bind()
        data: bytes = self._inner.read(max_bytes, timeout)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._bind()
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, *args: Any, **kwargs: Any) -> _WatchedStream:
        return _WatchedStream(self._inner.start_tls(*args, **kwargs))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _WatchedBackend:
    """The connection pool's network backend, its streams watched (:class:`_WatchedStream`)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect_tcp(self, *args: Any, **kwargs: Any) -> _WatchedStream:
        return _WatchedStream(self._inner.connect_tcp(*args, **kwargs))

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> _WatchedStream:
        return _WatchedStream(self._inner.connect_unix_socket(*args, **kwargs))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _shutdown(sock: Any) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _response_format(mode: StructuredMode, schema: Mapping[str, Any]) -> dict[str, Any] | None:
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "admit_output", "schema": dict(schema), "strict": True}}
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": dict(schema)}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def _error_text(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        err = body.get("error", body)
        msg = err.get("message") if isinstance(err, Mapping) else err
        return str(msg if msg is not None else body)
    return str(body if body is not None else exc)


def _retry_after(exc: Any) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


def _build(target: str, **kwargs: Any) -> OpenAICompatLLM:
    model, sep, base_url = target.partition("@")
    if sep and not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"LLM spec 'openai:{target}': the part after '@' must be a base URL (http://host:port/v1).")
    return OpenAICompatLLM(model, base_url=base_url or None, **kwargs)


SPEC = LLMSpec(
    name="openai",
    build=_build,
    usage="openai:MODEL, openai:MODEL@http://host:port/v1",
    summary="any OpenAI-compatible endpoint",
    needs_target=True,
)
"""The ``openai`` backend's spec."""
