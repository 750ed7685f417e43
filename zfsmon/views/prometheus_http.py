"""The exporter's HTTP server: ``prometheus_client``'s /metrics handler behind a server that bounds its threads.

``prometheus_client.start_http_server`` starts a thread per connection and keeps it for as long as the
client keeps the connection open, with a listen backlog of 5: a burst of connections waits in SYN retries,
and 500 idle clients hold 500 threads. Here:

- the listen backlog is :data:`BACKLOG` (the kernel caps it at ``net.core.somaxconn``);
- one selector thread reads every request's head (request line and headers, at most :data:`MAX_HEAD`
  bytes), and a connection whose head is not all there ``request_timeout`` seconds after it was accepted is
  closed: a silent client, one that stops half-way, one that trickles a byte every few seconds (slowloris)
  alike (and when more than ``max_waiting`` wait, the oldest goes first);
- a fixed pool of ``workers`` threads answers whole requests only, each write with ``request_timeout`` to
  go (a client that does not read its answer frees its worker); so no client holds a worker while it sends;
- what the standard library's request handler refuses is answered, not crashed on: a head over
  :data:`MAX_HEAD` (414 if its request line alone is, else 431), more than 100 headers (431), a method other
  than GET/HEAD (501).

So the threads are ``workers + 2`` whatever the clients do, the memory of waiting requests at most
``max_waiting`` x :data:`MAX_HEAD`, and a slow or silent client never delays a scrape.

Rendering a large host costs real CPU (seconds for a thousand leaves: bench/bench_exporter.py), and the values only
change when the sampler adds a sample: with ``version`` (a callable returning something that changes on
every update, :meth:`LatestValues.version`), a plain scrape reuses the last rendering of the same format
until the version changes or ``max_age`` seconds pass, so a second Prometheus (an HA pair) or a scrape
faster than ``--interval`` costs nothing. A ``?name[]=`` scrape (prometheus_client's filter) is rendered for
its request, with the whole families it names (:class:`Only`).
"""

from __future__ import annotations

import gzip
import io
import selectors
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import HTTPServer
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union
from urllib.parse import parse_qs, urlsplit

from prometheus_client.exposition import MetricsHandler, choose_encoder, gzip_accepted
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector, CollectorRegistry

#: listen backlog asked of the kernel (Linux caps it at net.core.somaxconn, 4096 on current kernels)
BACKLOG = 1024
#: the most a request's head may hold, request line and headers (a Prometheus scrape's is under 1 KiB)
MAX_HEAD = 16 * 1024
#: the answer to a head over MAX_HEAD: its request line alone is (414), or its headers are (431)
_TOO_LONG = {line: f"HTTP/1.0 {line}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode("ascii")
             for line in ("414 URI Too Long", "431 Request Header Fields Too Large")}


class _Handler(MetricsHandler):
    """prometheus_client's handler (its class attributes: the registry), answering GET and HEAD itself: gzip,
    ``?name[]=`` filters, the rendering cache; quiet. It reads the request from the head the server's selector
    read, and writes with a socket timeout."""

    timeout = 10.0  # StreamRequestHandler sets it on the socket: each write of the answer has this long
    protocol_version = "HTTP/1.0"  # one request per connection: a worker is never parked on a keep-alive

    #: set per server: its rendering cache; None = render every scrape
    cache: Optional[_RenderCache] = None

    def __init__(self, request: socket.socket, client_address: Tuple[str, int], server: HTTPServer,
                 head: bytes = b"") -> None:
        self.head = head
        super().__init__(request, client_address, server)

    def setup(self) -> None:
        super().setup()
        self.rfile.close()
        self.rfile = io.BytesIO(self.head)  # the request as the selector read it: the socket is never read here

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        accept = self.headers.get("Accept") or ""
        gz = gzip_accepted(self.headers.get("Accept-Encoding") or "")
        wanted = parse_qs(urlsplit(self.path).query).get("name[]")
        if wanted is not None:  # ?name[]=a&name[]=b: only those families, rendered for this request
            body, ctype = render(Only(self.registry, wanted), accept, gz)
        elif self.cache is not None:
            body, ctype = self.cache.get(self.registry, accept, gz)
        else:
            body, ctype = render(self.registry, accept, gz)
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        if gz:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:  # noqa: N802 (http.server's naming)
        self.do_GET()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's signature)
        pass  # no line per scrape on stderr


class _RenderCache:
    """The last rendering per (format, gzip), valid while ``version()`` is unchanged and younger than ``max_age``."""

    def __init__(self, version: Callable[[], object], max_age: float) -> None:
        self.version = version
        self.max_age = max_age
        self._lock = threading.Lock()
        self._cached: Dict[Tuple[str, bool], Tuple[object, float, bytes]] = {}
        self.renders = 0  # how many times the registry was rendered (tests, benchmarks)

    def get(self, registry: Collector, accept: str, gz: bool) -> Tuple[bytes, str]:
        """(body, content type) for this Accept and compression, rendered again only when stale."""
        ctype = choose_encoder(accept)[1]
        key = (ctype, gz)
        with self._lock:  # one rendering at a time: concurrent scrapers wait for it instead of repeating it
            v, now = self.version(), time.monotonic()
            hit = self._cached.get(key)
            if hit is not None and hit[0] == v and now - hit[1] <= self.max_age:
                return hit[2], ctype
            body, ctype = render(registry, accept, gz)
            self.renders += 1
            self._cached[key] = (v, now, body)
            return body, ctype


def render(registry: Collector, accept: str, gz: bool) -> Tuple[bytes, str]:
    """(body, content type): the registry in the format the Accept header asks for, gzipped if ``gz``."""
    encoder, ctype = choose_encoder(accept)
    body = encoder(registry)
    return (gzip.compress(body) if gz else body), ctype


class Only(Collector):
    """The families of a registry that ``names`` name, by family name or by one of their series' names (all of
    the family's series then: a histogram's buckets never come without its count and sum)."""

    def __init__(self, registry: Collector, names: Iterable[str]) -> None:
        self.registry = registry
        self.names = frozenset(names)

    def collect(self) -> Iterator[Metric]:
        for fam in self.registry.collect():
            if fam.name in self.names or any(s.name in self.names for s in fam.samples):
                yield fam


@dataclass
class _Waiting:
    """A connection whose request head is still arriving."""

    addr: Tuple[str, int]
    since: float  # monotonic time it was accepted
    head: bytearray = field(default_factory=bytearray)


def head_verdict(head: Union[bytes, bytearray], before: int) -> Optional[bytes]:
    """What to do with a request head that has grown from ``before`` bytes: b"" = complete, hand it to a worker;
    an answer = refuse it with that; None = wait for more."""
    if head.find(b"\n\n", max(0, before - 1)) >= 0 or head.find(b"\n\r\n", max(0, before - 2)) >= 0:
        return b""
    if len(head) > MAX_HEAD:
        return _TOO_LONG["414 URI Too Long" if b"\n" not in head else "431 Request Header Fields Too Large"]
    return None


class BoundedHTTPServer(HTTPServer):
    """An HTTPServer whose threads are bounded: one thread reads requests, a pool answers them."""

    request_queue_size = BACKLOG
    allow_reuse_address = True

    def __init__(self, addr: Tuple[str, int], registry: CollectorRegistry, workers: int = 8,
                 request_timeout: float = 10.0, max_waiting: int = 4096,
                 version: Optional[Callable[[], object]] = None, max_age: float = 5.0) -> None:
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        self.cache = _RenderCache(version, max_age) if version is not None else None
        self.handler = type("ZfsmonMetricsHandler", (_Handler,), {"registry": registry, "timeout": request_timeout,
                                                                  "cache": self.cache})
        self.request_timeout = request_timeout
        self.max_waiting = max_waiting
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="zfsmon-http")
        self._lock = threading.Lock()
        self._incoming: List[Tuple[socket.socket, Tuple[str, int], float]] = []
        self._closing = threading.Event()
        self._waiter = threading.Thread(target=self._wait_loop, name="zfsmon-http-wait", daemon=True)
        super().__init__(addr, self.handler)  # binds: an OSError here calls server_close, which needs the above
        self._waiter.start()

    # socketserver calls this from serve_forever for each accepted connection
    def process_request(self, request, client_address) -> None:
        with self._lock:
            self._incoming.append((request, client_address, time.monotonic()))

    def _wait_loop(self) -> None:
        """Read each connection's request head; hand a whole one to a worker; close those not whole in time."""
        sel = selectors.DefaultSelector()
        waiting: Dict[socket.socket, _Waiting] = {}

        def drop(sock: socket.socket) -> None:
            sel.unregister(sock)
            del waiting[sock]
            self.shutdown_request(sock)

        try:
            while not self._closing.is_set():
                with self._lock:
                    incoming, self._incoming = self._incoming, []
                for sock, addr, since in incoming:
                    sock.setblocking(False)
                    waiting[sock] = _Waiting(addr, since)
                    sel.register(sock, selectors.EVENT_READ)
                for key, _ in sel.select(timeout=0.05) if waiting else ():
                    sock = key.fileobj  # type: ignore[assignment]
                    w = waiting[sock]
                    try:
                        chunk = sock.recv(MAX_HEAD + 1 - len(w.head))
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError:  # reset by the client
                        chunk = b""
                    if not chunk:
                        drop(sock)
                        continue
                    before = len(w.head)
                    w.head += chunk
                    verdict = head_verdict(w.head, before)
                    if verdict is not None:
                        sel.unregister(sock)
                        del waiting[sock]
                        self._pool.submit(self._work, sock, w.addr, bytes(w.head), verdict)
                if not waiting:
                    self._closing.wait(0.05)
                now = time.monotonic()
                expired = [s for s, w in waiting.items() if now - w.since > self.request_timeout]
                if len(waiting) - len(expired) > self.max_waiting:
                    by_age = sorted((w.since, id(s), s) for s, w in waiting.items() if s not in expired)
                    expired += [s for _t, _i, s in by_age[:len(waiting) - len(expired) - self.max_waiting]]
                for sock in expired:
                    drop(sock)
        finally:
            for sock in list(waiting):
                self.shutdown_request(sock)
            sel.close()

    def _work(self, request: socket.socket, client_address: Tuple[str, int], head: bytes, refusal: bytes) -> None:
        try:
            request.settimeout(self.request_timeout)
            if refusal:
                request.sendall(refusal)
            else:
                self.handler(request, client_address, self, head)
        except Exception:  # a client's misbehaviour (reset, timeout, garbage): drop that connection only
            pass
        finally:
            self.shutdown_request(request)

    def server_close(self) -> None:
        super().server_close()
        self._closing.set()
        if self._waiter.is_alive():
            self._waiter.join(timeout=5)
        self._pool.shutdown(wait=False, cancel_futures=True)


def start_server(host: str, port: int, registry: CollectorRegistry, **kw: object) -> BoundedHTTPServer:
    """Bind and serve in a daemon thread; ``server.shutdown()`` then ``server.server_close()`` stop it."""
    server = BoundedHTTPServer((host, port), registry, **kw)  # type: ignore[arg-type]
    threading.Thread(target=server.serve_forever, name="zfsmon-http", daemon=True).start()
    return server
