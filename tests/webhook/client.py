#!/usr/bin/python3
"""Misbehaving and careful clients for the webhook's end-to-end tests (stdlib only).

  client.py garbage HOST PORT                 raw bytes that are not TLS
  client.py tls-garbage HOST PORT CA          a TLS session that sends bytes that are not HTTP
  client.py http10 HOST PORT CA FILE          POST /validate over HTTP/1.0
  client.py hold HOST PORT N GO              open N TCP connections, send nothing, until file GO exists
  client.py slow-body HOST PORT CA FILE GO    send half the body, print "half", wait for file GO, send the rest
  client.py apply-patch OBJECT_FILE REVIEW_RESPONSE_FILE   apply the response's patch with python3-jsonpatch
"""
import base64
import json
import socket
import ssl
import sys


def tls(host, port, ca):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False
    raw = socket.create_connection((host, int(port)), timeout=10)
    return ctx.wrap_socket(raw, server_hostname=host)


def read_response(s):
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except (socket.timeout, ConnectionError, ssl.SSLError):
            break
        if not chunk:
            break
        data += chunk
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep:
            length = 0
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v.strip())
            if len(body) >= length:
                break
    return data


def wait_for(path, limit=60.0):
    import os
    import time
    waited = 0.0
    while not os.path.exists(path) and waited < limit:
        time.sleep(0.01)
        waited += 0.01


def request_bytes(path, body, version="HTTP/1.1"):
    return (f"POST {path} {version}\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


def main():
    cmd = sys.argv[1]
    if cmd == "garbage":
        s = socket.create_connection((sys.argv[2], int(sys.argv[3])), timeout=10)
        s.sendall(b"\x16\x03\x01\x00\xffthis is not a TLS hello" + bytes(range(256)) * 4)
        try:
            s.recv(1024)
        except (ConnectionError, socket.timeout):
            pass
        print("closed")
    elif cmd == "tls-garbage":
        s = tls(sys.argv[2], sys.argv[3], sys.argv[4])
        s.sendall(b"\x00\x01\x02 GARBAGE \xff\xfe\r\n\r\n")
        print(read_response(s).split(b"\r\n")[0].decode(errors="replace"))
    elif cmd == "http10":
        s = tls(sys.argv[2], sys.argv[3], sys.argv[4])
        body = open(sys.argv[5], "rb").read()
        s.sendall(request_bytes("/validate", body, "HTTP/1.0"))
        resp = read_response(s)
        head, _, payload = resp.partition(b"\r\n\r\n")
        print(head.split(b"\r\n")[0].decode())
        print(payload.decode())
    elif cmd == "hold":
        conns = [socket.create_connection((sys.argv[2], int(sys.argv[3])), timeout=30) for _ in range(int(sys.argv[4]))]
        print("holding", len(conns), flush=True)
        wait_for(sys.argv[5])
        for c in conns:
            c.close()
    elif cmd == "slow-body":
        s = tls(sys.argv[2], sys.argv[3], sys.argv[4])
        body = open(sys.argv[5], "rb").read()
        req = request_bytes("/validate", body)
        half = len(req) - len(body) // 2
        s.sendall(req[:half])
        print("half", flush=True)
        wait_for(sys.argv[6])
        s.sendall(req[half:])
        resp = read_response(s)
        head, _, payload = resp.partition(b"\r\n\r\n")
        print(head.split(b"\r\n")[0].decode())
        print(payload.decode())
    elif cmd == "apply-patch":
        import jsonpatch
        obj = json.load(open(sys.argv[2]))
        response = json.load(open(sys.argv[3]))["response"]
        patch = json.loads(base64.b64decode(response["patch"]))
        print(json.dumps(jsonpatch.apply_patch(obj, patch), sort_keys=True))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
