#!/usr/bin/env python3
"""A stranger at the launchers' rendezvous port (test_multinode.py, StrangersTests): what a
process on the network that is not one of the job's launchers may send there.

    stranger.py connect HOST PORT MODE [TOKEN]   one connection that behaves as MODE
    stranger.py fake-main PORT TOKEN             listens as machine 0 without the job's token
    stranger.py relay PORT HOST TO_PORT ALTER    a man in the middle (see relay())

MODE:
    no-token     a well-formed hello for machine 1, without a proof
    wrong-token  the same hello with a proof made with TOKEN (not the job's)
    random       8 MiB of random bytes
    prefix       a 4 GB length prefix (ff ff ff ff), then 16 MiB without a newline
    newlines     16 MiB of empty lines, as fast as it can
    slow         "hello" one byte a second
    flood        50 silent connections at once
    flood-hold   (the processes' store) 100 silent connections, each dropped one opened again, for 12 s
    store-set    (the processes' store) the start of a TCPStore SET with a 4 GB key, then silence

Prints one JSON line: the mode, what the other side sent back, and how many seconds passed
until it closed the connection (null: still open when the stranger gave up).
"""
import hashlib
import hmac
import json
import os
import socket
import sys
import threading
import time

GIVE_UP = 30.0
HELLO = "hello machine=1 machines=2 processes=4 restarts=0 host=stranger nonce=" + "0" * 32


def read_line(sock):
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").strip()


def until_closed(sock, started):
    """Reads until the other side closes; returns (text received, seconds until then)."""
    sock.settimeout(max(0.1, GIVE_UP - (time.time() - started)))
    got = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return got.decode(errors="replace"), time.time() - started
            got += chunk
    except ConnectionResetError:
        return got.decode(errors="replace"), time.time() - started
    except socket.timeout:
        return got.decode(errors="replace"), None


def send_all_until_refused(sock, data):
    """Sends `data` in pieces; stops when the other side closes. Returns bytes sent."""
    sent = 0
    try:
        for i in range(0, len(data), 65536):
            sock.sendall(data[i:i + 65536])
            sent += len(data[i:i + 65536])
    except (BrokenPipeError, ConnectionResetError):
        pass
    return sent


def is_closed(sock):
    """True when the other side closed `sock` (after whatever it sent first)."""
    sock.setblocking(False)
    try:
        while sock.recv(65536):
            pass
        return True
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def connect(host, port, mode, token):
    started = time.time()
    if mode == "flood-hold":
        socks, dropped, until = [], 0, time.time() + 12.0
        while time.time() < until:
            while len(socks) < 100 and time.time() < until:
                try:
                    socks.append(socket.create_connection((host, port), timeout=5))
                except OSError:
                    time.sleep(0.05)
            time.sleep(0.2)
            alive = [s for s in socks if not is_closed(s)]
            dropped += len(socks) - len(alive)
            socks = alive
        return {"mode": mode, "dropped": dropped}
    if mode == "flood":
        socks, refused = [], 0
        for _ in range(50):
            try:
                socks.append(socket.create_connection((host, port), timeout=5))
            except OSError:  # machine 0 stopped listening: the job started meanwhile
                refused += 1
        time.sleep(1.0)
        closed = sum(is_closed(s) for s in socks)
        return {"mode": mode, "connections": len(socks), "closed": closed, "refused": refused}
    sock = socket.create_connection((host, port), timeout=5)
    challenge = read_line(sock)
    extra = {"challenge": challenge}
    if mode in ("no-token", "wrong-token"):
        line = HELLO
        if mode == "wrong-token":
            nonce = challenge.split("nonce=", 1)[1]
            proof = hmac.new(token.encode(), f"hello {nonce} machine=1".encode(), hashlib.sha256).hexdigest()
            line += " proof=" + proof
        sock.sendall((line + "\n").encode())
    elif mode == "random":
        extra["sent"] = send_all_until_refused(sock, os.urandom(8 << 20))
    elif mode == "newlines":
        extra["sent"] = send_all_until_refused(sock, b"\n" * (16 << 20))
    elif mode == "prefix":
        extra["sent"] = send_all_until_refused(sock, b"\xff\xff\xff\xff" + b"x" * (16 << 20))
    elif mode == "store-set":
        extra["challenge_ok"] = challenge.startswith("accelerate-store 1 challenge=")
        try:  # during a flood the store may turn the connection away at once
            sock.sendall(b"\x00" + (1 << 32).to_bytes(8, "little"))
        except OSError:
            pass
    elif mode == "slow":
        sock.setblocking(False)
        for c in b"hello machine=1 " * 4:
            try:
                sock.send(bytes([c]))
                if sock.recv(4096) == b"":
                    break
            except BlockingIOError:
                pass
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(1.0)
        sock.setblocking(True)
    reply, closed_after = until_closed(sock, started)
    return dict(extra, mode=mode, reply=reply.strip(), closed_after=closed_after)


def fake_main(port, token):
    """Plays machine 0 without knowing the token: a challenge, then a start with no valid proof."""
    server = socket.create_server(("", port))
    server.settimeout(GIVE_UP)
    conn, _ = server.accept()
    conn.sendall(b"challenge nonce=" + b"1" * 32 + b"\n")
    hello = read_line(conn)
    conn.sendall(b"start proof=" + b"0" * 64 + b"\n")
    time.sleep(1.0)
    return {"mode": "fake-main", "hello_had_proof": " proof=" in hello, "token_in_hello": token in hello}


def pump(src, dst, alter=None):
    """Forwards src to dst until either side closes: bytes as they come, or (with `alter`)
    line by line, alter(line) being the line sent instead."""
    buf = b""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if alter is None:
                dst.sendall(data)
                continue
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                dst.sendall(alter(line.decode()).encode() + b"\n")
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def relay(port, host, to_port, alter):
    """Sits between a launcher and machine 0 (someone on the network path): forwards the
    store's port (PORT -> HOST:TO_PORT) as it is and the launchers' link (PORT+1 -> TO_PORT+1)
    line by line, altering one line: ALTER "hello" changes processes=4 to processes=2 in the
    hello (its proof untouched); "after-start" replaces machine 0's first line after start
    with a forged stop. Prints a line for each alteration; runs until killed."""
    state = {"started": False, "forged": False}

    def to_main(line):
        if alter == "hello" and line.startswith("hello ") and " processes=4 " in line:
            print("altered the hello", flush=True)
            return line.replace(" processes=4 ", " processes=2 ")
        if alter == "hello-append" and line.startswith("hello "):
            print("appended to the hello", flush=True)
            return line + " processes=2 host=evil"
        return line

    def from_main(line):
        if alter == "after-start" and state["started"] and not state["forged"]:
            state["forged"] = True
            print(f"forged a stop in place of: {line[:40]}", flush=True)
            return "stop attempt=0 reason=forged by a relay"
        state["started"] = state["started"] or line.startswith("start")
        return line

    def serve(listen_port, target_port, lines):
        server = socket.create_server(("", listen_port))
        while True:
            conn, _ = server.accept()
            up = socket.create_connection((host, target_port))
            threading.Thread(target=pump, args=(conn, up, to_main if lines else None), daemon=True).start()
            threading.Thread(target=pump, args=(up, conn, from_main if lines else None), daemon=True).start()

    threading.Thread(target=serve, args=(port, to_port, False), daemon=True).start()
    threading.Thread(target=serve, args=(port + 1, to_port + 1, True), daemon=True).start()
    print("listening", flush=True)
    time.sleep(3600)


def main():
    if sys.argv[1] == "relay":
        relay(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5])
        return
    if sys.argv[1] == "connect":
        host, port, mode = sys.argv[2], int(sys.argv[3]), sys.argv[4]
        result = connect(host, port, mode, sys.argv[5] if len(sys.argv) > 5 else "")
    else:
        result = fake_main(int(sys.argv[2]), sys.argv[3])
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
