"""A TCP relay whose connections a test can cut, as a proxy or a network dropping them
would: for the clients' tests that a dropped event stream resumes with nothing lost."""

from __future__ import annotations

import contextlib
import socket
import threading
from urllib.parse import urlsplit


class Relay:
    """A TCP relay to the server on a loopback port of its own, whose connections the test
    can cut at any moment, as a proxy or a network dropping them would."""

    def __init__(self, target: str) -> None:
        address = urlsplit(target)
        self._target = (address.hostname or "127.0.0.1", address.port or 80)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self.accepted = 0
        self.hung_up = 0
        """Connections the client closed itself (not cut by the relay)."""
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._cut: set[socket.socket] = set()
        self._open: list[socket.socket] = []
        self._all: list[socket.socket] = []
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self._listener.accept()
            except OSError:  # closed
                return
            upstream = socket.create_connection(self._target)
            with self._lock:
                self.accepted += 1
                self._open += [downstream, upstream]
                self._all += [downstream, upstream]
            for source, sink in ((downstream, upstream), (upstream, downstream)):
                client = source is downstream
                pump = threading.Thread(target=self._pump, args=(source, sink, client), daemon=True)
                self._threads.append(pump)
                pump.start()

    def _pump(self, source: socket.socket, sink: socket.socket, client: bool) -> None:
        with contextlib.suppress(OSError):  # (cut)
            while data := source.recv(65536):
                sink.sendall(data)
            with self._changed:
                if client and source not in self._cut:  # the client closed it
                    self.hung_up += 1
                    self._changed.notify_all()
        with self._lock:  # (the other direction's end: not the client's doing)
            self._cut.update((source, sink))
        for end in (source, sink):
            _shut(end)

    def wait_hung_up(self, count: int, timeout: float = 30) -> bool:
        """Whether the client closed `count` connections (itself) within `timeout` s."""
        with self._changed:
            return self._changed.wait_for(lambda: self.hung_up >= count, timeout)

    def cut(self) -> None:
        """Break every connection open now."""
        with self._lock:
            cutting, self._open = self._open, []
            self._cut.update(cutting)
        for end in cutting:
            _shut(end)

    def close(self) -> None:
        _shut(self._listener)  # wakes the accept() waiting on it
        self._listener.close()
        self.cut()
        for thread in self._threads:
            thread.join(timeout=10)
        for end in self._all:
            end.close()


def _shut(end: socket.socket) -> None:
    with contextlib.suppress(OSError):  # (shut already)
        end.shutdown(socket.SHUT_RDWR)
