#!/usr/bin/env python3
"""The test internet's servers, run inside its own network namespace by
chock-test-world: HTTP on port 80, HTTPS on 443 (a certificate of the test
CA), a small DNS server on 53 and a listener that only accepts on 9, all on
every address of the namespace.

    chock-test-servers WORLD_DIR

The DNS zone is WORLD_DIR/zone.json ({"name": {"A": [...], "AAAA": [...]}});
a name with "rebind": [first, then] answers `first` once and `then` after;
a name with "drop": true is never answered. Every query is a line of
WORLD_DIR/dns.log ("name TYPE"), every HTTP request a JSON line of
WORLD_DIR/http.log. WORLD_DIR/ready appears once all of them listen."""
import gzip
import http.server
import json
import os
import socket
import socketserver
import ssl
import struct
import sys
import threading
import time
import urllib.parse

WORLD = sys.argv[1]
LOCK = threading.Lock()
ZONE = json.load(open(os.path.join(WORLD, "zone.json")))
ASKED = {}
BOMB = gzip.compress(b"\0" * (64 << 20), compresslevel=9)
PAGE = b"""<!doctype html><html><head><title>Chock test page</title>
<style>body { color: red }</style><script>var secret = "script text";</script></head>
<body><h1>Heading one</h1><p>First   paragraph with <b>bold</b> words.</p>
<ul><li>item one</li><li>item two</li></ul><!-- a comment --><pre>  kept
  spacing</pre><p>bell\x07here</p></body></html>"""


def log(name, record):
    with LOCK, open(os.path.join(WORLD, name), "a") as f:
        f.write(record + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        local = self.connection.getsockname()[0]
        if local.startswith("::ffff:"):
            local = local[7:]
        log("http.log", json.dumps({"local": local, "path": self.path, "headers": dict(self.headers)}))
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        path = url.path
        if path == "/page.html":
            self.reply(200, PAGE, [("Content-Type", "text/html; charset=utf-8")])
        elif path.startswith("/redirect/"):
            n = int(path.split("/")[2])
            if n == 0:
                self.reply(200, b"arrived\n", [("Content-Type", "text/plain")])
            else:
                self.reply(302, b"moved\n", [("Location", "/redirect/%d" % (n - 1))])
        elif path.startswith("/redirect-hostile/"):
            n = int(path.split("/")[2])
            target = "/redirect-hostile/%d" % (n - 1) if n > 0 else "/\x1b]0;owned\x07\x1b[31mred"
            self.reply(302, b"", [("Location", target)])
        elif path == "/to":
            self.reply(302, b"", [("Location", query["u"][0])])
        elif path == "/big":
            self.reply(200, b"a" * int(query["n"][0]), [("Content-Type", "text/plain")])
        elif path == "/bomb":
            self.reply(200, BOMB, [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")])
        elif path == "/cookie":
            self.reply(302, b"", [("Set-Cookie", "chock_test=secret; Path=/"), ("Location", "/headers")])
        elif path == "/headers":
            body = "".join("%s: %s\n" % (k, v) for k, v in self.headers.items()).encode()
            self.reply(200, body, [("Content-Type", "text/plain")])
        elif path == "/slow":
            time.sleep(20)
            self.reply(200, b"late\n", [("Content-Type", "text/plain")])
        elif path == "/stream":
            # n bytes of a pattern that shows any byte lost, doubled or moved
            n = int(query["n"][0])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = bytes(range(256)) * 4096 + b"\x01"  # 1 MiB + 1: the pattern shifts each chunk
            sent = 0
            while sent < n:
                part = chunk[:min(len(chunk), n - sent)]
                self.wfile.write(part)
                sent += len(part)
        elif path.startswith("/repo.git/"):
            # git's dumb HTTP protocol: the bare repository's files as they are
            root = os.path.realpath(os.path.join(WORLD, "repo.git"))
            file = os.path.realpath(os.path.join(WORLD, path.lstrip("/")))
            if file.startswith(root + "/") and os.path.isfile(file):
                with open(file, "rb") as f:
                    self.reply(200, f.read(), [("Content-Type", "application/octet-stream")])
            else:
                self.reply(404, b"not here\n", [("Content-Type", "text/plain")])
        elif path == "/whoami":
            self.reply(200, ("served at %s\n" % local).encode(), [("Content-Type", "text/plain")])
        else:
            self.reply(404, b"not here\n", [("Content-Type", "text/plain")])


class DualStack(socketserver.ThreadingMixIn, http.server.HTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True
    request_queue_size = 1024

    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


def dns_answer(query):
    if len(query) < 12:
        return None
    ident, _, qd = struct.unpack("!HHH", query[:6])
    if qd != 1:
        return None
    labels, at = [], 12
    while at < len(query) and query[at] != 0:
        n = query[at]
        labels.append(query[at + 1:at + 1 + n].decode("ascii", "replace"))
        at += 1 + n
    at += 1
    qtype, _ = struct.unpack("!HH", query[at:at + 4])
    question = query[12:at + 4]
    name = ".".join(labels).lower()
    kind = {1: "A", 28: "AAAA"}.get(qtype, str(qtype))
    log("dns.log", "%s %s" % (name, kind))
    entry = ZONE.get(name)
    if entry and entry.get("drop"):
        return None
    if entry is None:
        return struct.pack("!HHHHHH", ident, 0x8183, 1, 0, 0, 0) + question
    records = entry.get(kind, [])
    if "rebind" in entry and kind == "A":
        with LOCK:
            count = ASKED.get(name, 0)
            ASKED[name] = count + 1
        records = [entry["rebind"][0] if count == 0 else entry["rebind"][1]]
    answers = b""
    for address in records:
        family = socket.AF_INET if kind == "A" else socket.AF_INET6
        data = socket.inet_pton(family, address)
        answers += struct.pack("!HHHIH", 0xC00C, qtype, 1, 1, len(data)) + data
    return struct.pack("!HHHHHH", ident, 0x8180, 1, len(records), 0, 0) + question + answers


def serve_dns(s):
    while True:
        query, peer = s.recvfrom(4096)
        try:
            answer = dns_answer(query)
        except Exception:  # a malformed query gets no answer
            answer = None
        if answer:
            s.sendto(answer, peer)


def serve_discard(s):
    """Port 9: accepts and closes at once, for the connect benchmark (bench/net_bench.cpp)."""
    while True:
        conn, _ = s.accept()
        conn.close()


def main():
    plain = DualStack(("::", 80), Handler)
    tls = DualStack(("::", 443), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(WORLD, "server.crt"), os.path.join(WORLD, "server.key"))
    tls.socket = context.wrap_socket(tls.socket, server_side=True)
    dns = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    dns.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    dns.bind(("::", 53))
    discard = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    discard.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    discard.bind(("::", 9))
    discard.listen(4096)
    for target, args in ((plain.serve_forever, ()), (tls.serve_forever, ()), (serve_dns, (dns,)),
                         (serve_discard, (discard,))):
        threading.Thread(target=target, args=args, daemon=True).start()
    open(os.path.join(WORLD, "ready"), "w").close()
    threading.Event().wait()


main()
