#!/usr/bin/python3
"""Hostile clients for the webhook's hostile suite (tests/webhook/hostile_test.cpp), stdlib only.

Each attack runs for at most SECONDS and prints one JSON line of what it saw on stdout.

  attack.py slow-headers HOST PORT CA N INTERVAL SECONDS
      N TLS connections, each sending a request line one byte every INTERVAL s; a connection the
      server closes is opened again. Reports how long the longest-lived connection lasted.
  attack.py slow-body HOST PORT CA N INTERVAL SECONDS
      the same with the headers sent at once and the body trickled.
  attack.py idle HOST PORT CA N SECONDS
      N TLS connections that send nothing after the handshake (reopened when closed).
  attack.py stall-handshake HOST PORT N SECONDS
      N TCP connections that send half a ClientHello, then nothing (reopened when closed).
  attack.py header-flood HOST PORT CA LINES
      one request with LINES header lines, sent as fast as the server reads; reports the status
      line it got (if any) and how many bytes the server took before it stopped reading.
  attack.py long-line HOST PORT CA BYTES
      a header line of BYTES bytes without CRLF.
  attack.py raw HOST PORT CA FILE
      the bytes of FILE as they are (a crafted request, pipelined requests); prints every status
      line answered and whether the server closed the connection.
"""
import json
import os
import socket
import ssl
import sys
import time


def context(ca):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False
    return ctx


# The attacks come from 127.0.0.2 (GPUGUARD_ATTACK_SOURCE), the probe of the tests from 127.0.0.1:
# two clients, as an attacking pod and the API server are.
SOURCE = os.environ.get("GPUGUARD_ATTACK_SOURCE", "127.0.0.2")


def connect(host, port, ctx, timeout=5):
    raw = socket.create_connection((host, int(port)), timeout=timeout, source_address=(SOURCE, 0) if SOURCE else None)
    if ctx is None:
        return raw
    return ctx.wrap_socket(raw, server_hostname=host)


def closed_by_peer(s):
    """True when the server closed the connection (non-blocking check)."""
    try:
        s.setblocking(False)
        data = s.recv(4096)
        return data == b"" or bool(data)  # an answer (408/431) also ends it
    except (BlockingIOError, ssl.SSLWantReadError):
        return False
    except (OSError, ssl.SSLError):
        return True
    finally:
        try:
            s.setblocking(True)
        except OSError:
            pass


def trickle(host, port, ca, n, interval, seconds, payload, head=b""):
    """Keeps n connections sending `head` at once, then `payload` one byte per interval; reopens
    closed ones."""
    ctx = context(ca)
    end = time.monotonic() + seconds
    conns = []  # [socket, opened_at, payload, position]
    opened = 0
    failed_connects = 0
    longest = 0.0
    closed = 0

    def open_one():
        nonlocal opened, failed_connects
        try:
            s = connect(host, port, ctx)
            if head:
                s.sendall(head)
            opened += 1
            return [s, time.monotonic(), payload, 0]
        except (OSError, ssl.SSLError):
            failed_connects += 1
            return None

    for _ in range(n):
        c = open_one()
        if c:
            conns.append(c)
    while time.monotonic() < end:
        for i, c in enumerate(conns):
            if c is None:
                conns[i] = open_one()
                continue
            s, t0, payload, pos = c
            gone = False
            if pos < len(payload):
                try:
                    s.send(payload[pos:pos + 1])
                    c[3] += 1
                except (OSError, ssl.SSLError):
                    gone = True
            if not gone:
                gone = closed_by_peer(s)
            if gone:
                longest = max(longest, time.monotonic() - t0)
                closed += 1
                try:
                    s.close()
                except OSError:
                    pass
                conns[i] = open_one()
        time.sleep(interval)
    now = time.monotonic()
    still = [now - c[1] for c in conns if c]
    for c in conns:
        if c:
            c[0].close()
    print(json.dumps({"opened": opened, "closed_by_server": closed, "longest_closed": round(longest, 3),
                      "oldest_open": round(max(still) if still else 0, 3), "failed_connects": failed_connects}))


def request_line_payload():
    return b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


def slow_body_payload():
    body = b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}' * 4
    return body


def idle(host, port, ca, n, seconds, tls=True):
    ctx = context(ca) if tls else None
    end = time.monotonic() + seconds
    conns = []
    opened = 0
    closed = 0
    longest = 0.0
    failed = 0
    while time.monotonic() < end:
        while len(conns) < n and time.monotonic() < end:
            try:
                s = connect(host, port, ctx)
                if not tls:
                    # Half a TLS ClientHello: a record header that announces 512 bytes, and 5 of them.
                    s.send(bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03]))
                conns.append((s, time.monotonic()))
                opened += 1
            except (OSError, ssl.SSLError):
                failed += 1
                time.sleep(0.05)
        kept = []
        for s, t0 in conns:
            if closed_by_peer(s):
                closed += 1
                longest = max(longest, time.monotonic() - t0)
                s.close()
            else:
                kept.append((s, t0))
        conns = kept
        time.sleep(0.1)
    now = time.monotonic()
    oldest = max([now - t0 for _, t0 in conns], default=0)
    for s, _ in conns:
        s.close()
    print(json.dumps({"opened": opened, "closed_by_server": closed, "longest_closed": round(longest, 3),
                      "oldest_open": round(oldest, 3), "failed_connects": failed}))


def read_all(s, limit=1 << 20):
    data = b""
    s.settimeout(5)
    while len(data) < limit:
        try:
            chunk = s.recv(65536)
        except (socket.timeout, OSError, ssl.SSLError):
            break
        if not chunk:
            break
        data += chunk
    return data


def flood(host, port, ca, head, filler, total):
    """Sends head then filler up to total bytes, as fast as the server reads."""
    s = connect(host, port, context(ca), timeout=10)
    sent = 0
    error = None
    try:
        s.sendall(head)
        sent = len(head)
        while sent < total:
            n = s.send(filler[: min(len(filler), total - sent)])
            sent += n
    except (OSError, ssl.SSLError) as e:
        error = type(e).__name__
    answer = read_all(s)
    s.close()
    status = answer.split(b"\r\n", 1)[0].decode("latin-1") if answer else ""
    print(json.dumps({"sent": sent, "status": status, "error": error}))


def raw(host, port, ca, path):
    with open(path, "rb") as f:
        data = f.read()
    s = connect(host, port, context(ca), timeout=10)
    s.sendall(data)
    answer = read_all(s, 64 << 20)
    s.close()
    statuses = []
    rest = answer
    while rest.startswith(b"HTTP/1."):
        head, sep, rest = rest.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        statuses.append(lines[0].decode("latin-1"))
        length = 0
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v.strip())
        rest = rest[length:]
    print(json.dumps({"statuses": statuses, "bytes": len(answer)}))


def main():
    mode = sys.argv[1]
    a = sys.argv[2:]
    if mode == "slow-headers":
        trickle(a[0], a[1], a[2], int(a[3]), float(a[4]), float(a[5]), request_line_payload())
    elif mode == "slow-body":
        body = slow_body_payload()
        head = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
        trickle(a[0], a[1], a[2], int(a[3]), float(a[4]), float(a[5]), body, head)
    elif mode == "idle":
        idle(a[0], a[1], a[2], int(a[3]), float(a[4]))
    elif mode == "stall-handshake":
        idle(a[0], a[1], None, int(a[2]), float(a[3]), tls=False)
    elif mode == "header-flood":
        lines = int(a[3])
        head = b"POST /validate HTTP/1.1\r\nHost: localhost\r\n"
        filler = b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n" * 64
        flood(a[0], a[1], a[2], head, filler, len(head) + lines * (len(filler) // 64))
    elif mode == "long-line":
        head = b"POST /validate HTTP/1.1\r\nHost: localhost\r\nX-Long: "
        flood(a[0], a[1], a[2], head, b"a" * 65536, len(head) + int(a[3]))
    elif mode == "raw":
        raw(a[0], a[1], a[2], a[3])
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
