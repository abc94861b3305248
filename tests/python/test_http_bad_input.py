"""Bad HTTP requests to the coordinator's stats port (issue 9, point 6): a
request that is not HTTP, a header past the size limit and a flood of
headers each get 400 and a closed connection, and the endpoint goes on
serving /stats, and the cluster its clients."""

import socket
import urllib.parse
import urllib.request

import pytest

from harness import Client

CASES = {
    "not HTTP": b"GARBAGE\r\n\r\n",
    "a 200 KB header": b"GET /stats HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n",
    "20,000 headers": b"GET /stats HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(20_000)) + b"\r\n",
    "a bad request line": b"GET /stats HTTP/9.9 extra\r\n\r\n",
}


def _exchange(url, data):
    """Sends raw bytes to the HTTP endpoint; returns the response head and whether the server closed."""
    u = urllib.parse.urlparse(url)
    with socket.create_connection((u.hostname, u.port), timeout=10) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may close before reading it all; its answer is still there
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                return out, True
            out += chunk


@pytest.mark.parametrize("name", list(CASES))
def test_bad_http_request_gets_400_and_the_endpoint_keeps_serving(cluster, name):
    head, closed = _exchange(cluster.stats_url, CASES[name])
    assert head.startswith(b"HTTP/1.1 400 "), head[:200]
    assert closed
    with urllib.request.urlopen(cluster.stats_url, timeout=10) as r:
        assert r.status == 200
    with Client(cluster.endpoint) as c:
        assert c.ping()["servedShards"] == [0, 1, 2, 3]
